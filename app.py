#!/usr/bin/env python3
"""Synthesize the reference platform described by ``platform.yaml`` (no AWS credentials needed)."""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import load_platform
from hyperpod_tenancy.stacks import PlatformStage


def main() -> None:
    """Load the policy and build one cluster stack plus one stack per team."""
    app = cdk.App()
    path = app.node.try_get_context("platform") or os.environ.get("PLATFORM_FILE", "platform.yaml")
    try:
        platform = load_platform(path)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1) from None
    PlatformStage(app, platform.name, platform=platform)
    app.synth()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthesize the reference platform described by ``platform.yaml`` (no AWS credentials needed).

The policy file is ``platform.yaml``, or ``cdk synth -c platform=<file>``, or ``$PLATFORM_FILE``. It is
validated before the CDK app exists, so a bad policy writes nothing. ``-c baseline=<deployed policy>`` (or
``$PLATFORM_BASELINE``) turns changes that CloudFormation would perform as replacements into warnings.
``-c teams=<name>,<name>`` (or ``$PLATFORM_TEAMS``) builds the shared stacks and those teams' stacks only: the
shared stacks are the same whichever teams are built, so deploying one team needs only its own synthesis.
"""

from __future__ import annotations

import json
import os
import sys

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import load_platform, select_teams


def _context() -> dict[str, str]:
    return dict(json.loads(os.environ.get("CDK_CONTEXT_JSON", "{}") or "{}"))


def _policy_path() -> str:
    return str(_context().get("platform") or os.environ.get("PLATFORM_FILE", "platform.yaml"))


def _baseline_path() -> str | None:
    path = _context().get("baseline") or os.environ.get("PLATFORM_BASELINE")
    return str(path) if path else None


def _team_selection() -> str | list[str] | None:
    selection: object = _context().get("teams", os.environ.get("PLATFORM_TEAMS"))
    if selection is None or isinstance(selection, list):
        return selection
    return str(selection)


def main() -> None:
    """Load the policy, then build one cluster stack plus one stack per team."""
    try:
        platform = load_platform(_policy_path())
        baseline_path = _baseline_path()
        baseline = load_platform(baseline_path) if baseline_path else None
        selection = _team_selection()
        teams = None if selection is None else [team.name for team in select_teams(platform, selection)]
    except (PolicyError, OSError) as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1) from None

    import aws_cdk as cdk  # noqa: PLC0415  (jsii starts only for a valid policy)

    from hyperpod_tenancy.stacks import PlatformStage  # noqa: PLC0415

    app = cdk.App()
    stage = PlatformStage(app, platform.name, platform=platform, baseline=baseline, teams=teams)
    app.synth()
    stage.progress.finish(f"{len(stage.team_stacks)} team stacks synthesized")


if __name__ == "__main__":
    main()

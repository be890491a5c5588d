"""Formats and service limits several rule modules check against."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import InstanceGroup, Platform

__all__ = [
    "DNS_LABEL",
    "HYPERPOD_NAME",
    "MAX_PRIORITY_CLASSES",
    "MAX_TEAM_NAME",
    "REGION",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "WEIGHT_RANGE",
    "valid_team_name",
]

#: Kubernetes versions this release is tested with (Task Governance needs >= 1.30; kubectl layer v1.33).
SUPPORTED_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33")
#: Task Governance allows at most 10 priority classes.
MAX_PRIORITY_CLASSES = 10
#: Longest team name whose derived names all fit in a 63-character label value.
MAX_TEAM_NAME = names.LABEL_VALUE_MAX - len(names.cluster_queue(""))
#: Range of priority-class weights and fair-share weights.
WEIGHT_RANGE = (0, 100)

#: A lowercase DNS label (RFC 1123).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: A SageMaker HyperPod cluster, instance group or Studio domain name.
HYPERPOD_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
#: An AWS account ID: 12 digits.
ACCOUNT = re.compile(r"^\d{12}$")
#: An AWS region name.
REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$")


def valid_team_name(name: str) -> bool:
    """Whether ``name`` passes ``HPT-TEAM-NAME`` (rules deriving names from it skip it otherwise)."""
    return bool(DNS_LABEL.match(name)) and len(name) <= MAX_TEAM_NAME


def disagreeing_groups(p: Platform, field: str) -> Iterator[tuple[int, InstanceGroup, InstanceGroup]]:
    """Yield ``(index, first, group)`` for each group whose ``field`` differs from the first group of its type's."""
    first: dict[str, InstanceGroup] = {}
    for i, g in enumerate(p.cluster.instance_groups):
        seen = first.setdefault(g.instance_type, g)
        if getattr(seen, field) != getattr(g, field):
            yield i, seen, g

"""Policies the fairness tests render: the reference platform and variants covering every sharing case.

Every platform goes through ``platform_from_dict``, so each one is a policy the loader accepts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from hyperpod_tenancy.policy import Platform, platform_from_dict

REPO = Path(__file__).resolve().parents[2]
PLATFORM_YAML = REPO / "platform.yaml"
#: A placeholder HyperPod cluster ARN matching the CloudFormation pattern.
CLUSTER_ARN = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdef123456"


def reference_data() -> dict[str, Any]:
    """The parsed ``platform.yaml``."""
    data = yaml.safe_load(PLATFORM_YAML.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _build(name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = copy.deepcopy(reference_data())
    if edit is not None:
        edit(data)
    return platform_from_dict(data, source=name)


def reference() -> Platform:
    """``platform.yaml`` as it is (Task Governance backend)."""
    return _build("reference")


def reference_kueue() -> Platform:
    """``platform.yaml`` with ``fairnessBackend: kueue``."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"

    return _build("reference-kueue", edit)


def idle_sharing_disabled() -> Platform:
    """Reference platform with ``idleResourceSharing: false``: nobody lends or borrows."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["scheduling"]["idleResourceSharing"] = False

    return _build("idle-sharing-disabled", edit)


def fair_share_disabled() -> Platform:
    """Reference platform with ``fairShare: false`` (classic preemption; Kueue may borrowWithinCohort)."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["scheduling"]["fairShare"] = False
        d["scheduling"]["checkpointEnforcement"] = "warn"

    return _build("fair-share-disabled", edit)


def _team(name: str, gid: int, quotas: dict[str, int], classes: list[str], **compute: Any) -> dict[str, Any]:
    return {
        "name": name,
        "compute": {"quotas": quotas, **compute},
        "allowedPriorityClasses": classes,
        "identity": {"groupId": f"906754abcd-{gid:08d}-aaaa-bbbb-cccc-{gid:012d}", "posixGid": gid},
    }


def mixed_accelerators() -> Platform:
    """GPU + Trainium + CPU-only groups; all three strategies; a team that never preempts its own work."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["cluster"]["instanceGroups"] += [
            {
                "name": "trn1-training",
                "instanceType": "ml.trn1.32xlarge",
                "count": 5,
                "reserved": 1,
                "threadsPerCore": 2,
                "availabilityZone": "us-east-1a",
            },
            {
                "name": "cpu-prep",
                "instanceType": "ml.m5.2xlarge",
                "count": 3,
                "reserved": 0,
                "threadsPerCore": 2,
                "availabilityZone": "us-east-1b",
                "resources": {"accelerators": 0, "vcpus": 8, "memoryGiB": 32},
            },
        ]
        d["teams"] = [
            _team(
                "research",
                20001,
                {"ml.p5.48xlarge": 7, "ml.trn1.32xlarge": 3, "ml.m5.2xlarge": 1},
                ["training", "experimentation"],
                sharing="lend-and-borrow",
                borrowLimit=33,
                fairShareWeight=70,
            ),
            _team(
                "vision",
                20002,
                {"ml.p5.48xlarge": 5},
                ["training"],
                sharing="dont-lend",
                fairShareWeight=20,
                preemptTeamTasks="Never",
            ),
            _team(
                "inference",
                20003,
                {"ml.g5.12xlarge": 3, "ml.trn1.32xlarge": 1},
                ["inference"],
                sharing="lend",
                fairShareWeight=10,
            ),
            _team(
                "data-prep",
                20004,
                {"ml.m5.2xlarge": 2},
                ["experimentation"],
                sharing="lend-and-borrow",
                borrowLimit=500,
            ),
        ]

    return _build("mixed-accelerators", edit)


def doc_example(*, fair_share: bool = True) -> Platform:
    """The Task Governance documentation example: team A guarantees 6 units, team B 5.

    One unit is one ``ml.g5.8xlarge`` (1 GPU, 32 vCPU, 128 GiB). Team B's ``borrowLimit: 60`` lets it borrow
    ``floor(5 x 60%) = 3`` units, exactly what its 4-unit job needs while it already runs 4 units.
    """

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["scheduling"]["fairShare"] = fair_share
        d["cluster"]["instanceGroups"] = [
            {
                "name": "g5-shared",
                "instanceType": "ml.g5.8xlarge",
                "count": 12,
                "reserved": 1,
                "threadsPerCore": 1,
                "availabilityZone": "us-east-1a",
            }
        ]
        d["teams"] = [
            _team(
                "team-a",
                21001,
                {"ml.g5.8xlarge": 6},
                ["training", "experimentation"],
                sharing="lend-and-borrow",
                borrowLimit=50,
                fairShareWeight=50,
            ),
            _team(
                "team-b",
                21002,
                {"ml.g5.8xlarge": 5},
                ["training", "experimentation"],
                sharing="lend-and-borrow",
                borrowLimit=60,
                fairShareWeight=50,
            ),
        ]

    return _build("doc-example", edit)


def all_platforms() -> dict[str, Platform]:
    """Every policy the fairness tests run on, by name."""
    return {
        "reference": reference(),
        "reference-kueue": reference_kueue(),
        "idle-sharing-disabled": idle_sharing_disabled(),
        "fair-share-disabled": fair_share_disabled(),
        "mixed-accelerators": mixed_accelerators(),
        "doc-example": doc_example(),
        "doc-example-classic": doc_example(fair_share=False),
    }


PLATFORM_NAMES = (
    "reference",
    "reference-kueue",
    "idle-sharing-disabled",
    "fair-share-disabled",
    "mixed-accelerators",
    "doc-example",
    "doc-example-classic",
)


def platform(name: str) -> Platform:
    """One of :data:`PLATFORM_NAMES`."""
    return all_platforms()[name]

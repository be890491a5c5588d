"""Every platform the tests run on, and the placeholder values that go with them: one module, one source.

Each platform is the repository's ``platform.yaml`` with a few edits, loaded through ``platform_from_dict``
(or ``load_platform``), so every one is a policy the loader accepts. ``tests/conftest.py`` builds its
session fixtures (the synthesized reference, Kueue and four-team platforms) from the functions here; the
fairness, isolation and manifest tests call them directly.

Variants:

* :func:`reference_platform` -- ``platform.yaml`` as it is (three teams, Task Governance);
* :func:`kueue_platform` -- the same on the self-managed Kueue backend (the one line a user changes);
* :func:`four_team_platform` -- the reference plus a fourth team ``speech``, and nothing else changed: the
  three reference teams render exactly as before, which is what "adding a team changes no other" tests;
* :func:`kms_platform` / :func:`kms_arn_platform` -- the reference with a platform key created
  (``encryption: {kmsKey: create}``, a team requiring it) or imported by ARN (on Kueue);
* the fairness variants (:data:`FAIRNESS_PLATFORMS`) covering every sharing case on the Kueue backend.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from hyperpod_tenancy.k8s.team_manifests import FsxVolume, fsx_directory_job, team_manifests
from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict

REPO = Path(__file__).resolve().parents[2]
PLATFORM_YAML = REPO / "platform.yaml"
#: The example policies, one directory each (``examples/<name>/platform.yaml``).
EXAMPLES = REPO / "examples"
#: A placeholder HyperPod cluster ARN matching the CloudFormation pattern.
CLUSTER_ARN = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdef123456"
#: Placeholder FSx values (what CDK tokens resolve to look like).
FSX = FsxVolume(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
)
#: The team :func:`four_team_platform` adds: no guaranteed capacity of its own (the reference cluster's
#: quota is all handed out), so adding it changes no other team's quota or objects.
FOURTH_TEAM: dict[str, Any] = {
    "name": "speech",
    "compute": {"quotas": {"ml.g5.12xlarge": 0}, "sharing": "lend"},
    "allowedPriorityClasses": ["training"],
    "identity": {"groupId": "906754abcd-44444444-aaaa-bbbb-cccc-444444444444", "posixGid": 20004},
}

Edit = Callable[[dict[str, Any]], None]


@cache
def _parsed_reference() -> dict[str, Any]:
    data = yaml.load(PLATFORM_YAML.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert isinstance(data, dict)
    return data


def reference_data() -> dict[str, Any]:
    """The parsed ``platform.yaml`` (a fresh copy each call, free to edit)."""
    return copy.deepcopy(_parsed_reference())


def variant(name: str, edit: Edit | None = None) -> Platform:
    """The reference platform with ``edit`` applied to its data, loaded (errors name ``name``)."""
    data = reference_data()
    if edit is not None:
        edit(data)
    return platform_from_dict(data, source=name)


def platform_with(**changes: Any) -> Platform:
    """The reference platform with top-level keys replaced."""
    return variant(f"platform.yaml with {sorted(changes)}", lambda d: d.update(copy.deepcopy(changes)))


@cache
def reference_platform() -> Platform:
    """``platform.yaml`` as it is: three teams, Task Governance (loaded once: the policy is frozen)."""
    return load_platform(PLATFORM_YAML)


def example_names() -> list[str]:
    """The names of the examples under ``examples/``."""
    return sorted(p.parent.name for p in EXAMPLES.glob("*/platform.yaml"))


def example(name: str) -> Platform:
    """``examples/<name>/platform.yaml``, loaded."""
    return load_platform(EXAMPLES / name / "platform.yaml")


def example_data(name: str) -> dict[str, Any]:
    """``examples/<name>/platform.yaml``, parsed (a fresh copy, free to edit)."""
    data = yaml.load((EXAMPLES / name / "platform.yaml").read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert isinstance(data, dict)
    return data


def kueue_platform() -> Platform:
    """The reference platform on the self-managed Kueue backend (``fairnessBackend: kueue``)."""
    return platform_with(fairnessBackend="kueue")


def four_team_data() -> dict[str, Any]:
    """The data of :func:`four_team_platform` (the reference data plus :data:`FOURTH_TEAM`)."""
    data = reference_data()
    data["teams"].append(copy.deepcopy(FOURTH_TEAM))
    return data


def four_team_platform() -> Platform:
    """The reference platform with a fourth team ``speech`` and nothing else changed."""
    return platform_from_dict(four_team_data(), source="platform.yaml (four teams)")


#: A placeholder KMS key ARN in the reference platform's region (the imported-key case).
KMS_KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def kms_platform() -> Platform:
    """The reference platform with a created customer-managed key; team ``research`` requires it."""

    def edit(d: dict[str, Any]) -> None:
        d["encryption"] = {"kmsKey": "create"}
        d["teams"][0]["requireCustomerManagedKey"] = True

    return variant("platform.yaml with encryption.kmsKey: create", edit)


def kms_arn_platform() -> Platform:
    """The reference platform on Kueue with an imported key (:data:`KMS_KEY_ARN`)."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["encryption"] = {"kmsKey": KMS_KEY_ARN}

    return variant("platform.yaml (kueue) with an imported encryption.kmsKey", edit)


# --------------------------------------------------------------------------------------- fairness variants


def idle_sharing_disabled() -> Platform:
    """Reference platform on Kueue with ``idleResourceSharing: false``: nobody lends or borrows."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["scheduling"]["idleResourceSharing"] = False

    return variant("idle-sharing-disabled", edit)


def fair_share_disabled() -> Platform:
    """Reference platform on Kueue with ``fairShare: false`` (classic preemption; may borrowWithinCohort)."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["scheduling"]["fairShare"] = False
        d["scheduling"]["checkpointEnforcement"] = "warn"

    return variant("fair-share-disabled", edit)


def _team(name: str, gid: int, quotas: dict[str, int], classes: list[str], **compute: Any) -> dict[str, Any]:
    return {
        "name": name,
        "compute": {"quotas": quotas, **compute},
        "allowedPriorityClasses": classes,
        "identity": {"groupId": f"906754abcd-{gid:08d}-aaaa-bbbb-cccc-{gid:012d}", "posixGid": gid},
    }


def mixed_accelerators() -> Platform:
    """GPU + Trainium + CPU-only groups; all three strategies; a team that never preempts its own work."""
    return variant("mixed-accelerators", _mixed_accelerators)


def _mixed_accelerators(d: dict[str, Any]) -> None:
    """Edit the reference data into :func:`mixed_accelerators`."""
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


def borrowing_range() -> Platform:
    """The mixed-accelerator platform with the whole borrowing range: a 1,000 % borrower, absolute limits in every
    grain, and an absolute limit on a type where the team has no quota of its own.

    research borrows 1,000 % of its guarantee on p5 and m5, and at most one whole trn1 instance (absolute, over
    its 33 % there); data-prep borrows up to 6 vCPUs on m5 (memory following in the ratio) and 8 GPUs on p5,
    where it has no quota. vision holds 20 p5 GPUs (two and a half instances) and keeps ``dont-lend``; inference
    holds 96 vCPUs and 256 GiB of g5 (no GPU) and lends only.
    """

    def edit(d: dict[str, Any]) -> None:
        _mixed_accelerators(d)
        research, vision, inference, data_prep = d["teams"]
        vision["compute"] = {**vision["compute"], "quotas": {"ml.p5.48xlarge": {"accelerators": 20}}}
        inference["compute"] = {
            **inference["compute"],
            "quotas": {"ml.g5.12xlarge": {"vcpus": 96, "memoryGiB": 256}, "ml.trn1.32xlarge": 1},
        }
        research["compute"] = {
            **research["compute"],
            "borrowLimit": 1000,
            "absoluteBorrowLimits": {"ml.trn1.32xlarge": {"instances": 1}},
        }
        data_prep["compute"] = {
            **data_prep["compute"],
            "borrowLimit": 50,
            "absoluteBorrowLimits": {"ml.m5.2xlarge": {"vcpus": 6}, "ml.p5.48xlarge": {"accelerators": 8}},
        }
        d["teams"] = [research, vision, inference, data_prep]

    return variant("borrowing-range", edit)


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

    return variant("doc-example" if fair_share else "doc-example-classic", edit)


#: Every policy the fairness tests run on, by name.
FAIRNESS_PLATFORMS: dict[str, Callable[[], Platform]] = {
    "reference": reference_platform,
    "reference-kueue": kueue_platform,
    "idle-sharing-disabled": idle_sharing_disabled,
    "fair-share-disabled": fair_share_disabled,
    "mixed-accelerators": mixed_accelerators,
    "borrowing-range": borrowing_range,
    "doc-example": doc_example,
    "doc-example-classic": lambda: doc_example(fair_share=False),
}
FAIRNESS_PLATFORM_NAMES = tuple(FAIRNESS_PLATFORMS)

#: The platforms the isolation and manifest tests run on, by name (parametrize over ``sorted(...)``).
TENANT_PLATFORMS: dict[str, Callable[[], Platform]] = {
    "reference": reference_platform,
    "kueue": kueue_platform,
    "four-teams": four_team_platform,
}


def fairness_platform(name: str) -> Platform:
    """One of :data:`FAIRNESS_PLATFORM_NAMES`, freshly built."""
    return FAIRNESS_PLATFORMS[name]()


def all_objects(platform: Platform) -> list[dict[str, Any]]:
    """Every team's objects and FSx directory Jobs of ``platform`` (with :data:`FSX` placeholders)."""
    objects: list[dict[str, Any]] = []
    for team in platform.teams:
        objects += team_manifests(platform, team, fsx=FSX)
        objects += fsx_directory_job(platform, team, fsx=FSX)
    return objects


def odd_fractions() -> Platform:
    """vision holds 5 vCPUs and 10.5 GiB of a p5 (96 cores, one thread per core) and borrows 50 %: its ceilings are
    fractions of a core and of a GiB (3750m CPU, 16128Mi memory)."""

    def edit(data: dict[str, Any]) -> None:
        vision = data["teams"][1]["compute"]
        vision["quotas"] = {"ml.p5.48xlarge": {"vcpus": 5, "memoryGiB": 10.5}}
        vision["borrowLimit"] = 50

    return variant("odd-fractions", edit)

"""Bad policies give one error listing every problem: YAML path, bad value, fix and rule code.

Each case starts from the reference ``platform.yaml`` (parsed with ``yaml.safe_load``), changes one thing
and checks the error ``platform_from_dict`` raises, including that nothing else is reported.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from platforms import PLATFORM_YAML as REFERENCE
from platforms import reference_data

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy import (
    BillingRule,
    BillingTermSpec,
    ChargebackSpec,
    CheckpointEnforcement,
    ClassificationMismatch,
    ClusterSpec,
    ComputeAllocation,
    DeepHealthCheck,
    FairnessBackend,
    FsxSpec,
    HelmChartSource,
    IdentityCenter,
    InstanceGroup,
    Platform,
    PosixIdentitySpec,
    PreemptionAlarmSpec,
    PriorityClass,
    SchedulingSpec,
    SharedCostRule,
    SharingStrategy,
    SystemNodeGroup,
    Team,
    TeamIdentity,
    UidRange,
    WebhookFailurePolicy,
    WorkloadKind,
    chargeback_config,
    load_platform,
    platform_from_dict,
    policy_warnings,
    validate_platform,
)

DELETE = object()


def _tokens(path: str) -> list[str | int]:
    return [int(t[1:-1]) if t.startswith("[") else t for t in re.findall(r"\[\d+\]|[^.\[\]]+", path)]


def edited(changes: dict[str, object]) -> dict[str, Any]:
    """The reference data with ``{"teams[0].compute.borrowLimit": 0, ...}`` applied (DELETE removes a key)."""
    data = reference_data()
    for path, value in changes.items():
        *parents, last = _tokens(path)
        node: Any = data
        for token in parents:
            node = node[token]
        if value is DELETE:
            del node[last]
        elif isinstance(last, int) and last == len(node):
            node.append(copy.deepcopy(value))
        else:
            node[last] = copy.deepcopy(value)
    return data


def policy_error(data: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data, source="test.yaml")
    return info.value


def reported(error: PolicyError, code: str, path: str) -> PolicyIssue:
    """The one issue with ``code`` at ``path``; it must also appear as its own line of the message."""
    matching = [i for i in error.issues if i.code == code and i.path == path]
    assert len(matching) == 1, f"expected one {code} at {path}, got:\n{error}"
    issue = matching[0]
    assert f"  - {path}: {issue.message} Fix: {issue.fix} [{code}]" in str(error).splitlines()
    return issue


P5 = "ml.p5.48xlarge"
LONG_39 = "a" * 39  # localqueue fits (62), clusterqueue does not (64)
LONG_41 = "b" * 41  # both queues are too long
EXTRA_CLASSES = [{"name": f"extra-{i}", "weight": 10 + i} for i in range(8)]


class Case(NamedTuple):
    """One bad value: what to change, and the issue it must produce."""

    id: str
    changes: dict[str, object]
    code: str
    path: str
    #: fragments of the message (the bad value, computed names, the arithmetic)
    fragments: tuple[str, ...]
    #: fragment of the fix
    fix: str
    #: number of issues the error lists in total
    issues: int


#: A well-formed Studio network of a team's own account.
STUDIO_NETWORK = {
    "vpcId": "vpc-0a1b2c3d4e5f60718",
    "cidr": "10.60.0.0/16",
    "subnetIds": ["subnet-0a1b2c3d4e5f60718"],
    "routeTableIds": ["rtb-0a1b2c3d4e5f60718"],
}

CASES: list[Case] = [
    # --- structure: unknown key, wrong type, missing key ---------------------------------------------
    Case(
        "unknown-key",
        {"teams[0].compute.borowLimit": 60},
        "HPT-SCHEMA",
        "teams[0].compute.borowLimit",
        ("unknown key `borowLimit`",),
        "did you mean `borrowLimit`?",
        1,
    ),
    Case(
        "unknown-top-level-key",
        {"team": []},
        "HPT-SCHEMA",
        "team",
        ("unknown key `team`",),
        "did you mean `teams`?",
        1,
    ),
    Case(
        "count-is-a-string",
        {"cluster.instanceGroups[0].count": "16"},
        "HPT-SCHEMA",
        "cluster.instanceGroups[0].count",
        ("expected a whole number, got string '16'",),
        "write an unquoted integer",
        1,
    ),
    Case(
        "version-read-as-float",
        {"cluster.kubernetesVersion": 1.3},
        "HPT-SCHEMA",
        "cluster.kubernetesVersion",
        ("expected a string, got number 1.3",),
        "quote the value",
        1,
    ),
    Case(
        "zones-not-a-list",
        {"cluster.availabilityZones": "us-east-1a"},
        "HPT-SCHEMA",
        "cluster.availabilityZones",
        ("expected a list of strings, got string 'us-east-1a'",),
        "write a list",
        1,
    ),
    Case(
        "boolean-as-string",
        {"scheduling.fairShare": "yes"},
        "HPT-SCHEMA",
        "scheduling.fairShare",
        ("expected true or false, got string 'yes'",),
        "write `true` or `false`",
        1,
    ),
    Case(
        "unknown-enum-value",
        {"teams[0].compute.sharing": "borrow"},
        "HPT-SCHEMA",
        "teams[0].compute.sharing",
        ("'borrow' is not one of: lend-and-borrow, lend, dont-lend",),
        "use one of: lend-and-borrow, lend, dont-lend",
        1,
    ),
    Case(
        "section-not-a-mapping",
        {"cluster.fsx": "big"},
        "HPT-SCHEMA",
        "cluster.fsx",
        ("expected a mapping, got string 'big'",),
        "key: value",
        1,
    ),
    Case(
        "team-not-a-mapping",
        {"teams[0]": "research"},
        "HPT-SCHEMA",
        "teams[0]",
        ("expected a mapping, got string 'research'",),
        "key: value",
        1,
    ),
    Case(
        "missing-required-key",
        {"teams[0].identity.posixGid": DELETE},
        "HPT-SCHEMA",
        "teams[0].identity.posixGid",
        ("required key is missing",),
        "add `posixGid:`",
        1,
    ),
    Case(
        "quota-not-a-number",
        {"teams[0].compute.quotas": {P5: "9"}},
        "HPT-SCHEMA",
        f"teams[0].compute.quotas.{P5}",
        ("expected a whole number or a mapping, got string '9'",),
        f"write e.g. `{P5}: 4` or `{P5}: {{accelerators: 4}}`",
        1,
    ),
    Case(
        "quota-gpus-for-accelerators",
        {"teams[0].compute.quotas": {P5: {"gpus": 4}}},
        "HPT-SCHEMA",
        f"teams[0].compute.quotas.{P5}.gpus",
        ("unknown key `gpus`",),
        "did you mean `accelerators`?",
        1,
    ),
    Case(
        "quota-negative-vcpus",
        {"teams[0].compute.quotas": {P5: {"vcpus": -48}}},
        "HPT-QUOTA-GRAIN",
        f"teams[0].compute.quotas.{P5}",
        (f"the quota on {P5} vcpus -48 is outside 0-10,000,000",),
        "use a vcpus between 0 and 10,000,000",
        1,
    ),
    Case(
        "quota-two-grains",
        {"teams[0].compute.quotas": {P5: {"instances": 1, "accelerators": 4}}},
        "HPT-QUOTA-GRAIN",
        f"teams[0].compute.quotas.{P5}",
        (f"the quota on {P5} gives instances, accelerators",),
        "keep one grain",
        1,
    ),
    Case(
        "quota-accelerators-on-a-cpu-type",
        {
            "cluster.instanceGroups[2]": {
                "name": "cpu",
                "instanceType": "ml.m5.12xlarge",
                "count": 2,
                "reserved": 0,
                "availabilityZone": "us-east-1b",
                "resources": {"accelerators": 0, "vcpus": 48, "memoryGiB": 192},
            },
            "teams[0].compute.quotas": {P5: 9, "ml.m5.12xlarge": {"accelerators": 1}},
        },
        "HPT-QUOTA-GRAIN",
        "teams[0].compute.quotas.ml.m5.12xlarge",
        ("names accelerators, but ml.m5.12xlarge has none",),
        "state the limit in `instances`",
        1,
    ),
    Case(
        "quota-accelerators-beyond-capacity",
        {"teams[1].compute.quotas": {P5: {"accelerators": 52}}},
        "HPT-QUOTA-CAPACITY",
        f"teams[*].compute.quotas.{P5}",
        (f"quotas for {P5} sum to 15.5 (research 9 + vision 52 accelerators (6.5 instances))",),
        "lower the quotas by 0.5 instances in total",
        1,
    ),
    Case(
        "unknown-deep-health-check",
        {"cluster.instanceGroups[0].deepHealthChecks": ["Stress"]},
        "HPT-SCHEMA",
        "cluster.instanceGroups[0].deepHealthChecks[0]",
        ("'Stress' is not a deep health check",),
        "InstanceStress, InstanceConnectivity",
        1,
    ),
    # --- the issue's list -------------------------------------------------------------------------------
    Case(
        "count-zero",
        {"cluster.instanceGroups[1].count": 0},
        "HPT-COUNT",
        "cluster.instanceGroups[1].count",
        ("0 is not a positive number of instances",),
        "set count to 1 or more",
        1,
    ),
    Case(
        "count-negative",
        {"cluster.instanceGroups[0].count": -2},
        "HPT-COUNT",
        "cluster.instanceGroups[0].count",
        ("-2 is not a positive number of instances",),
        "set count to 1 or more",
        1,
    ),
    Case(
        "quotas-exceed-count-minus-reserved",
        {"teams[1].compute.quotas": {P5: 7}},
        "HPT-QUOTA-CAPACITY",
        f"teams[*].compute.quotas.{P5}",
        ("sum to 16 (research 9 + vision 7)", "can promise only 15 (16 instances - 1 reserved = 15)"),
        "lower the quotas by 1 instances in total",
        1,
    ),
    Case(
        "more-reserved-nodes-than-quotas-leave",
        {"cluster.instanceGroups[0].reserved": 2},
        "HPT-QUOTA-CAPACITY",
        f"teams[*].compute.quotas.{P5}",
        ("sum to 15 (research 9 + vision 6)", "only 14 (16 instances - 2 reserved = 14)"),
        "lower the quotas by 1 instances in total",
        1,
    ),
    Case(
        "duplicate-team",
        {"teams[2].name": "research"},
        "HPT-TEAM-DUPLICATE",
        "teams[2].name",
        ("team 'research' is already defined at teams[0]",),
        "give every team a unique name",
        1,
    ),
    Case(
        "team-name-not-dns-label",
        {"teams[0].name": "Research_Team"},
        "HPT-TEAM-NAME",
        "teams[0].name",
        ("'Research_Team' is not a DNS label",),
        "use lowercase letters, digits and '-'",
        1,
    ),
    Case(
        "team-name-too-long-for-clusterqueue",
        {"teams[0].name": LONG_39},
        "HPT-TEAM-NAME",
        "teams[0].name",
        (
            f"'{LONG_39}' (39 characters) is too long",
            f"clusterQueue 'hyperpod-ns-{LONG_39}-clusterqueue' (64 > 63)",
            f"localQueue 'hyperpod-ns-{LONG_39}-localqueue' (62)",
        ),
        "at most 38 characters",
        1,
    ),
    Case(
        "team-name-too-long-for-localqueue",
        {"teams[0].name": LONG_41},
        "HPT-TEAM-NAME",
        "teams[0].name",
        (f"localQueue 'hyperpod-ns-{LONG_41}-localqueue' (64 > 63)", "clusterQueue"),
        "at most 38 characters",
        1,
    ),
    Case(
        "instance-type-not-accepted",
        {"cluster.instanceGroups[2]": {"name": "p9", "instanceType": "ml.p5.48xlarg", "count": 2}},
        "HPT-INSTANCE-TYPE",
        "cluster.instanceGroups[2].instanceType",
        ("'ml.p5.48xlarg' is not an instance type HyperPod accepts",),
        "did you mean ml.p5.48xlarge?",
        1,
    ),
    Case(
        "ec2-type-instead-of-hyperpod-type",
        {"cluster.instanceGroups[2]": {"name": "p5-extra", "instanceType": "p5.48xlarge", "count": 2}},
        "HPT-INSTANCE-TYPE",
        "cluster.instanceGroups[2].instanceType",
        ("'p5.48xlarge' is not an instance type HyperPod accepts",),
        "did you mean ml.p5.48xlarge?",
        1,
    ),
    Case(
        "eleven-priority-classes",
        {"scheduling.priorityClasses": reference_data()["scheduling"]["priorityClasses"] + EXTRA_CLASSES},
        "HPT-PRIORITY-COUNT",
        "scheduling.priorityClasses",
        ("11 priority classes are defined; Task Governance allows at most 10",),
        "merge classes",
        1,
    ),
    Case(
        "priority-weight-above-100",
        {"scheduling.priorityClasses[0].weight": 101},
        "HPT-PRIORITY-WEIGHT",
        "scheduling.priorityClasses[0].weight",
        ("101 is outside 0-100",),
        "use a weight between 0 and 100",
        1,
    ),
    Case(
        "priority-weight-negative",
        {"scheduling.priorityClasses[2].weight": -1},
        "HPT-PRIORITY-WEIGHT",
        "scheduling.priorityClasses[2].weight",
        ("-1 is outside 0-100",),
        "use a weight between 0 and 100",
        1,
    ),
    Case(
        "fair-share-weight-above-100",
        {"teams[1].compute.fairShareWeight": 150},
        "HPT-FAIR-SHARE-WEIGHT",
        "teams[1].compute.fairShareWeight",
        ("150 is outside 0-100",),
        "use a weight between 0 and 100",
        1,
    ),
    Case(
        "borrow-limit-negative",
        {"teams[0].compute.borrowLimit": -1},
        "HPT-BORROW-LIMIT",
        "teams[0].compute.borrowLimit",
        ("-1 is outside the range the SageMaker API accepts, 0-10,000",),
        "use a value between 0 and 10,000",
        1,
    ),
    Case(
        "borrow-limit-above-10000",
        {"teams[1].compute.borrowLimit": 10_001},
        "HPT-BORROW-LIMIT",
        "teams[1].compute.borrowLimit",
        (
            "10001 is outside the range the SageMaker API accepts, 0-10,000",
            "ResourceSharingConfig.BorrowLimit",
        ),
        "use a value between 0 and 10,000",
        1,
    ),
    Case(
        "absolute-borrow-unknown-type",
        {"teams[0].compute.absoluteBorrowLimits": {"ml.p5.48xlarg": {"accelerators": 8}}},
        "HPT-ABSOLUTE-BORROW-LIMIT",
        "teams[0].compute.absoluteBorrowLimits.ml.p5.48xlarg",
        ("'ml.p5.48xlarg' is not an instance type of the cluster's groups",),
        "did you mean ml.p5.48xlarge?",
        1,
    ),
    Case(
        "absolute-borrow-two-grains",
        {"teams[0].compute.absoluteBorrowLimits": {P5: {"instances": 1, "accelerators": 8}}},
        "HPT-ABSOLUTE-BORROW-LIMIT",
        f"teams[0].compute.absoluteBorrowLimits.{P5}",
        (f"the limit on {P5} gives instances, accelerators",),
        "keep one grain",
        1,
    ),
    Case(
        "absolute-borrow-no-grain",
        {"teams[0].compute.absoluteBorrowLimits": {P5: {}}},
        "HPT-ABSOLUTE-BORROW-LIMIT",
        f"teams[0].compute.absoluteBorrowLimits.{P5}",
        (f"the limit on {P5} gives nothing",),
        "keep one grain",
        1,
    ),
    Case(
        "absolute-borrow-negative",
        {"teams[0].compute.absoluteBorrowLimits": {P5: {"vcpus": -4}}},
        "HPT-ABSOLUTE-BORROW-LIMIT",
        f"teams[0].compute.absoluteBorrowLimits.{P5}",
        ("vcpus -4 is outside 0-10,000,000",),
        "use a vcpus between 0 and 10,000,000",
        1,
    ),
    Case(
        "absolute-borrow-accelerators-on-cpu-type",
        {
            "cluster.instanceGroups[2]": {
                "name": "cpu",
                "instanceType": "ml.m5.12xlarge",
                "count": 2,
                "reserved": 0,
                "availabilityZone": "us-east-1b",
                "resources": {"accelerators": 0, "vcpus": 48, "memoryGiB": 192},
            },
            "teams[0].compute.absoluteBorrowLimits": {"ml.m5.12xlarge": {"accelerators": 1}},
        },
        "HPT-ABSOLUTE-BORROW-LIMIT",
        "teams[0].compute.absoluteBorrowLimits.ml.m5.12xlarge",
        ("names accelerators, but ml.m5.12xlarge has none",),
        "state the limit in `instances`",
        1,
    ),
    Case(
        "absolute-borrow-without-borrowing",
        {"teams[1].compute.sharing": "lend", "teams[1].compute.absoluteBorrowLimits": {P5: {"instances": 1}}},
        "HPT-ABSOLUTE-BORROW-SHARING",
        "teams[1].compute.absoluteBorrowLimits",
        ("has `sharing: lend`, so it never borrows",),
        "set `sharing: lend-and-borrow`",
        1,
    ),
    Case(
        "absolute-borrow-entries",
        {
            "teams[0].compute.absoluteBorrowLimits": {
                f"ml.g5.{size}": {"instances": 1}
                for size in (
                    "xlarge",
                    "2xlarge",
                    "4xlarge",
                    "8xlarge",
                    "12xlarge",
                    "16xlarge",
                    "24xlarge",
                    "48xlarge",
                )
            }
            | {
                f"ml.g6.{size}": {"instances": 1}
                for size in (
                    "xlarge",
                    "2xlarge",
                    "4xlarge",
                    "8xlarge",
                    "12xlarge",
                    "16xlarge",
                    "24xlarge",
                    "48xlarge",
                )
            }
        },
        "HPT-ABSOLUTE-BORROW-ENTRIES",
        "teams[0].compute.absoluteBorrowLimits",
        ("16 instance types; the limit is 15",),
        "keep at most 15 instance types",
        16,
    ),
    Case(
        "allowed-priority-class-undefined",
        {"teams[0].allowedPriorityClasses": ["trainig", "experimentation"]},
        "HPT-PRIORITY-UNKNOWN",
        "teams[0].allowedPriorityClasses[0]",
        ("priority class 'trainig' is not defined in scheduling.priorityClasses",),
        "did you mean 'training'?",
        1,
    ),
    Case(
        "data-classification-mismatch",
        {"teams[1].dataClassification": "restricted"},
        "HPT-DATA-CLASSIFICATION",
        "teams[1].dataClassification",
        ("team 'vision' holds 'restricted' data but the cluster is approved for 'internal'",),
        "onDataClassificationMismatch: dedicated-cluster",
        1,
    ),
    Case(
        # a privileged pod is root on a node every team shares (tests/test_hostile_7_privileged.py)
        "privileged-pod-security-on-shared-nodes",
        {"teams[2].podSecurity": "privileged"},
        "HPT-POD-SECURITY-PRIVILEGED",
        "teams[2].podSecurity",
        ("team 'inference' asks for Pod Security level 'privileged'", "cannot be acknowledged"),
        "use `podSecurity: baseline`",
        1,
    ),
    Case(
        "kms-key-is-an-alias",
        {"encryption": {"kmsKey": "arn:aws:kms:us-east-1:111122223333:alias/platform"}},
        "HPT-KMS-KEY",
        "encryption.kmsKey",
        ("'arn:aws:kms:us-east-1:111122223333:alias/platform' is neither `create` nor a KMS key ARN",),
        "(not an alias ARN)",
        1,
    ),
    Case(
        "kms-key-in-another-region",
        {
            "encryption": {
                "kmsKey": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
            }
        },
        "HPT-KMS-KEY",
        "encryption.kmsKey",
        ("the key is in eu-west-1 but the platform is in us-east-1",),
        "give a key of us-east-1",
        1,
    ),
    Case(
        "kms-key-with-scratch-fsx",
        {"encryption": {"kmsKey": "create"}, "cluster.fsx.deploymentType": "SCRATCH_2"},
        "HPT-KMS-KEY",
        "cluster.fsx.deploymentType",
        ("SCRATCH_2 file systems are always encrypted with FSx's own keys",),
        "use `deploymentType: PERSISTENT_2`",
        1,
    ),
    Case(
        "team-requires-a-customer-managed-key",
        {"teams[0].requireCustomerManagedKey": True},
        "HPT-KMS-REQUIRED",
        "teams[0].requireCustomerManagedKey",
        ("team 'research' requires a customer-managed KMS key but the platform has none",),
        "set `encryption: {kmsKey: create}`",
        1,
    ),
    Case(
        # an unbounded interval bounds nothing: "GPU-hours at risk per eviction" (tests/test_hostile_6_*.py)
        "checkpoint-interval-above-ceiling",
        {"scheduling.priorityClasses[2].maxCheckpointInterval": "9999h"},
        "HPT-CHECKPOINT-INTERVAL",
        "scheduling.priorityClasses[2].maxCheckpointInterval",
        ("'9999h' is longer than 24h",),
        "use at most 24h",
        1,
    ),
    Case(
        "checkpoint-interval-not-minutes-or-hours",
        {"scheduling.priorityClasses[1].maxCheckpointInterval": "1h30m"},
        "HPT-CHECKPOINT-INTERVAL",
        "scheduling.priorityClasses[1].maxCheckpointInterval",
        ("'1h30m' is not a number of minutes or hours",),
        "write `90m`",
        1,
    ),
    # --- the other rules -----------------------------------------------------------------------------------
    Case(
        "platform-name",
        {"name": "ML_Platform"},
        "HPT-NAME",
        "name",
        ("'ML_Platform' is not a lowercase DNS label",),
        "e.g. `ml-platform`",
        1,
    ),
    Case(
        "cluster-name",
        {"cluster.name": "shared_gpu"},
        "HPT-NAME",
        "cluster.name",
        ("'shared_gpu' is not a valid HyperPod cluster name",),
        "1-63 letters, digits and hyphens",
        1,
    ),
    Case(
        "instance-group-name",
        {"cluster.instanceGroups[0].name": "p5 training"},
        "HPT-NAME",
        "cluster.instanceGroups[0].name",
        ("'p5 training' is not a valid instance group name",),
        "1-63 letters, digits and hyphens",
        1,
    ),
    Case(
        "priority-class-name",
        {"scheduling.priorityClasses[0].name": "Inference", "teams[2].allowedPriorityClasses": ["Inference"]},
        "HPT-NAME",
        "scheduling.priorityClasses[0].name",
        ("'Inference' is not a lowercase DNS label of at most 40 characters",),
        "e.g. `training`",
        1,
    ),
    Case(
        "account",
        {"account": "12345"},
        "HPT-ACCOUNT",
        "account",
        ("'12345' is not a 12-digit AWS account ID",),
        "quote the account ID",
        1,
    ),
    Case(
        "region",
        {"region": "us-east"},
        "HPT-REGION",
        "region",
        ("'us-east' is not an AWS region name",),
        "us-east-1",
        1,
    ),
    Case(
        "identity-center-region",
        {"identityCenter.region": "global"},
        "HPT-REGION",
        "identityCenter.region",
        ("'global' is not an AWS region name",),
        "Identity Center home region",
        1,
    ),
    # CloudFormation creates AWS::SSO::* resources in the stack's region; Identity Center has one home region
    # (https://docs.aws.amazon.com/singlesignon/latest/userguide/regions.html)
    Case(
        "identity-center-region-mismatch",
        {"identityCenter.region": "eu-west-1"},
        "HPT-IDENTITY-CENTER-REGION",
        "identityCenter.region",
        ("Identity Center lives in 'eu-west-1' but the platform deploys to 'us-east-1'",),
        "delegated administrator account",
        1,
    ),
    Case(
        "identity-center-account",
        {"identityCenter.account": "99998888777"},
        "HPT-ACCOUNT",
        "identityCenter.account",
        ("'99998888777' is not a 12-digit AWS account ID",),
        "delegated administrator account",
        1,
    ),
    Case(
        "identity-center-workloads",
        {"identityCenter.account": "111122223333"},
        "HPT-IDENTITY-CENTER-WORKLOADS",
        "identityCenter.allowWorkloads",
        ("the cluster would run in 111122223333, the Identity Center account",),
        "identityCenter.allowWorkloads: true",
        1,
    ),
    Case(
        "team-account-id",
        {"teams[0].account": "4444", "teams[0].studio": False},
        "HPT-ACCOUNT",
        "teams[0].account",
        ("'4444' is not a 12-digit AWS account ID",),
        "quote the ID of the team's account",
        1,
    ),
    Case(
        "team-account-own",
        {"teams[0].account": "111122223333"},
        "HPT-TEAM-ACCOUNT",
        "teams[0].account",
        ("team 'research' names the cluster's account 111122223333 as its own",),
        "omit `account` for a team that lives in the cluster's account",
        1,
    ),
    Case(
        "team-account-workloads",
        {
            "identityCenter.account": "999988887777",
            "teams[0].account": "999988887777",
            "teams[0].studio": False,
            "teams[1].studio": False,
            "teams[2].studio": False,
        },
        "HPT-IDENTITY-CENTER-WORKLOADS",
        "teams[0].account",
        (
            "team 'research' would keep its data and the role of its pods in 999988887777, the Identity Center account",
        ),
        "give the team an account of its own",
        1,
    ),
    Case(
        "team-account-studio-without-network",
        {"teams[0].account": "444455556666", "identityCenter.account": "999988887777"},
        "HPT-TEAM-STUDIO-NETWORK",
        "teams[0].studioNetwork",
        ("team 'research' has a Studio domain in its own account 444455556666", "no VPC there"),
        "the platform peers it with the cluster's VPC",
        1,
    ),
    Case(
        "team-account-studio-bad-ids",
        {
            "teams[0].account": "444455556666",
            "identityCenter.account": "999988887777",
            "teams[0].studioNetwork": {**STUDIO_NETWORK, "subnetIds": ["subnet-xyz"]},
        },
        "HPT-TEAM-STUDIO-NETWORK",
        "teams[0].studioNetwork.subnetIds[0]",
        ("'subnet-xyz' is not a subnet- ID",),
        "as the EC2 console shows it",
        1,
    ),
    Case(
        "studio-network-without-own-account",
        {"teams[0].studioNetwork": STUDIO_NETWORK},
        "HPT-TEAM-STUDIO-NETWORK",
        "teams[0].studioNetwork",
        ("team 'research' has no Studio domain in an account of its own",),
        "remove `studioNetwork`",
        1,
    ),
    Case(
        "team-account-studio-cidr-overlaps-the-cluster",
        {
            "teams[0].account": "444455556666",
            "identityCenter.account": "999988887777",
            "teams[0].studioNetwork": {**STUDIO_NETWORK, "cidr": "10.192.128.0/20"},
        },
        "HPT-TEAM-STUDIO-CIDR",
        "teams[0].studioNetwork.cidr",
        ("'10.192.128.0/20' overlaps cluster.vpcCidr '10.192.0.0/16'", "AWS refuses to peer"),
        "outside the cluster's VPC and Service CIDRs",
        1,
    ),
    Case(
        "team-account-studio-cidr-overlaps-another-team",
        {
            "teams[0].account": "444455556666",
            "teams[1].account": "444455557777",
            "identityCenter.account": "999988887777",
            "teams[0].studioNetwork": STUDIO_NETWORK,
            "teams[1].studioNetwork": {**STUDIO_NETWORK, "cidr": "10.60.4.0/24"},
        },
        "HPT-TEAM-STUDIO-CIDR",
        "teams[1].studioNetwork.cidr",
        ("'10.60.4.0/24' overlaps the Studio network of team 'research' ('10.60.0.0/16')",),
        "a CIDR of its own",
        1,
    ),
    Case(
        "team-account-studio-public-cidr",
        {
            "teams[0].account": "444455556666",
            "identityCenter.account": "999988887777",
            "teams[0].studioNetwork": {**STUDIO_NETWORK, "cidr": "8.8.0.0/16"},
        },
        "HPT-TEAM-STUDIO-CIDR",
        "teams[0].studioNetwork.cidr",
        ("'8.8.0.0/16' is not a private IPv4 CIDR",),
        "e.g. 10.60.0.0/16",
        1,
    ),
    Case(
        "team-account-studio-identity-center-in-the-cluster-account",
        {"teams[0].account": "444455556666", "teams[0].studioNetwork": STUDIO_NETWORK},
        "HPT-TEAM-STUDIO-IDENTITY-CENTER",
        "teams[0].studio",
        ("Identity Center is administered from the cluster's account",),
        "name the Identity Center account",
        1,
    ),
    Case(
        "identity-center-arn",
        {"identityCenter.instanceArn": "arn:aws:sso:::instance/bad"},
        "HPT-IDENTITY-CENTER",
        "identityCenter.instanceArn",
        ("'arn:aws:sso:::instance/bad' is not an IAM Identity Center instance ARN",),
        "aws sso-admin list-instances",
        1,
    ),
    Case(
        "kubernetes-version",
        {"cluster.kubernetesVersion": "1.29"},
        "HPT-K8S-VERSION",
        "cluster.kubernetesVersion",
        ("'1.29' is not supported",),
        "1.30 or later",
        1,
    ),
    Case(
        "zone-of-another-region",
        {"cluster.availabilityZones[2]": "us-west-2a"},
        "HPT-AZ",
        "cluster.availabilityZones[2]",
        ("'us-west-2a' is not a zone of region us-east-1",),
        "us-east-1a",
        1,
    ),
    Case(
        "one-zone-only",
        {
            "cluster.availabilityZones": ["us-east-1a"],
            "cluster.instanceGroups[1].availabilityZone": "us-east-1a",
        },
        "HPT-AZ",
        "cluster.availabilityZones",
        ("['us-east-1a'] names fewer than two distinct zones",),
        "at least two zones",
        1,
    ),
    Case(
        "group-zone-not-listed",
        {"cluster.instanceGroups[0].availabilityZone": "us-east-1c"},
        "HPT-AZ",
        "cluster.instanceGroups[0].availabilityZone",
        ("'us-east-1c' is not one of cluster.availabilityZones",),
        "add the zone to cluster.availabilityZones",
        1,
    ),
    Case(
        "vpc-cidr-too-small",
        {"cluster.vpcCidr": "10.192.0.0/24"},
        "HPT-VPC-CIDR",
        "cluster.vpcCidr",
        ("'10.192.0.0/24' is not an IPv4 CIDR of /20 or larger",),
        "10.192.0.0/16",
        1,
    ),
    # EKS Service CIDR: private block, /12 to /24, outside the VPC
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html)
    Case(
        "service-cidr-overlaps-vpc",
        {"cluster.serviceCidr": "10.192.128.0/20"},
        "HPT-SERVICE-CIDR",
        "cluster.serviceCidr",
        ("'10.192.128.0/20' overlaps cluster.vpcCidr '10.192.0.0/16'",),
        "pick a block outside the VPC",
        1,
    ),
    Case(
        "service-cidr-public",
        {"cluster.serviceCidr": "100.64.0.0/16"},
        "HPT-SERVICE-CIDR",
        "cluster.serviceCidr",
        ("'100.64.0.0/16' is not an IPv4 CIDR from /12 to /24",),
        "172.20.0.0/16",
        1,
    ),
    Case(
        "service-cidr-too-small",
        {"cluster.serviceCidr": "172.20.0.0/25"},
        "HPT-SERVICE-CIDR",
        "cluster.serviceCidr",
        ("'172.20.0.0/25' is not an IPv4 CIDR from /12 to /24",),
        "172.20.0.0/16",
        1,
    ),
    Case(
        "no-instance-groups",
        {"cluster.instanceGroups": []},
        "HPT-INSTANCE-GROUPS",
        "cluster.instanceGroups",
        ("no instance groups are defined",),
        "add at least one GPU instance group",
        4,  # and each of the three quotas names a type the cluster lacks
    ),
    Case(
        "duplicate-instance-group",
        {"cluster.instanceGroups[1].name": "p5-training"},
        "HPT-DUPLICATE",
        "cluster.instanceGroups[1].name",
        ("instance group 'p5-training' is defined twice",),
        "unique name",
        1,
    ),
    Case(
        "duplicate-priority-class",
        {
            "scheduling.priorityClasses[1].name": "inference",
            "teams[0].allowedPriorityClasses": ["experimentation"],
        },
        "HPT-DUPLICATE",
        "scheduling.priorityClasses[1].name",
        ("priority class 'inference' is defined twice",),
        "unique name",
        2,  # and vision still allows the vanished `training`
    ),
    Case(
        "duplicate-deep-health-check",
        {"cluster.instanceGroups[1].deepHealthChecks": ["InstanceStress", "InstanceStress"]},
        "HPT-DUPLICATE",
        "cluster.instanceGroups[1].deepHealthChecks",
        ("a deep health check is listed twice",),
        "list each check once",
        1,
    ),
    Case(
        "too-many-instances",
        {"cluster.instanceGroups[0].count": 7000},
        "HPT-COUNT",
        "cluster.instanceGroups[0].count",
        ("7000 exceeds HyperPod's limit of 6758",),
        "at most 6758",
        1,
    ),
    Case(
        "no-system-nodes",
        {"cluster.systemNodeGroup.count": 0},
        "HPT-COUNT",
        "cluster.systemNodeGroup.count",
        ("0 is not positive",),
        "at least one system node",
        1,
    ),
    Case(
        "system-nodes-with-sagemaker-type",
        {"cluster.systemNodeGroup.instanceType": "ml.m5.xlarge"},
        "HPT-INSTANCE-TYPE",
        "cluster.systemNodeGroup.instanceType",
        ("'ml.m5.xlarge' is a SageMaker type",),
        "m7i.xlarge",
        1,
    ),
    Case(
        "fsx-deployment-type",
        {"cluster.fsx.deploymentType": "PERSISTENT_3"},
        "HPT-FSX",
        "cluster.fsx.deploymentType",
        ("'PERSISTENT_3' is not an FSx for Lustre type",),
        "PERSISTENT_2, PERSISTENT_1, SCRATCH_2",
        1,
    ),
    Case(
        "fsx-capacity",
        {"cluster.fsx.storageCapacityGiB": 3000},
        "HPT-FSX",
        "cluster.fsx.storageCapacityGiB",
        ("3000 GiB is not 1200, 2400 or a multiple of 2400",),
        "4800",
        1,
    ),
    Case(
        "fsx-throughput",
        {"cluster.fsx.perUnitStorageThroughput": 200},
        "HPT-FSX",
        "cluster.fsx.perUnitStorageThroughput",
        ("200 MB/s/TiB is not valid for PERSISTENT_2",),
        "125, 250, 500, 1000",
        1,
    ),
    Case(
        "helm-chart-twice",
        {"cluster.hyperpodHelmChart.directory": "charts/hyperpod"},
        "HPT-HELM-CHART",
        "cluster.hyperpodHelmChart",
        ("both `ociRepository`", "'charts/hyperpod'", "exactly one is needed"),
        "mirror the chart",
        1,
    ),
    Case(
        "helm-chart-missing",
        {"cluster.hyperpodHelmChart": {}},
        "HPT-HELM-CHART",
        "cluster.hyperpodHelmChart",
        ("neither `ociRepository` nor `directory` is set",),
        "mirror the chart",
        1,
    ),
    Case(
        "helm-chart-without-oci-scheme",
        {"cluster.hyperpodHelmChart.ociRepository": "111122223333.dkr.ecr.us-east-1.amazonaws.com/hp"},
        "HPT-HELM-CHART",
        "cluster.hyperpodHelmChart.ociRepository",
        ("'111122223333.dkr.ecr.us-east-1.amazonaws.com/hp' needs the oci:// scheme",),
        "ociRepository: oci://",
        1,
    ),
    Case(
        "posix-identity-section-missing",
        {"cluster.posixIdentity": DELETE},
        "HPT-POSIX-FAILURE-POLICY",
        "cluster.posixIdentity.failurePolicy",
        ("no failure policy is set for the POSIX identity webhook (required, no default)",),
        "add `posixIdentity: {failurePolicy: Fail}` under `cluster:`",
        1,
    ),
    Case(
        "posix-failure-policy-missing",
        {"cluster.posixIdentity.failurePolicy": DELETE},
        "HPT-POSIX-FAILURE-POLICY",
        "cluster.posixIdentity.failurePolicy",
        ("required, no default",),
        "`failurePolicy: Ignore` (work keeps being scheduled, but its pods may run as another person's UID",
        1,
    ),
    Case(
        "posix-failure-policy-unknown",
        {"cluster.posixIdentity.failurePolicy": "fail"},
        "HPT-SCHEMA",
        "cluster.posixIdentity.failurePolicy",
        ("'fail'",),
        "Fail",
        1,
    ),
    Case(
        "posix-uid-range-system",
        {"cluster.posixIdentity.uidRange": {"first": 500, "last": 100_000}},
        "HPT-POSIX-UID-RANGE",
        "cluster.posixIdentity.uidRange",
        ("500-100000 is not within 1000-2147483646",),
        "first: 200000",
        1,
    ),
    Case(
        "posix-uid-range-reversed",
        {"cluster.posixIdentity.uidRange": {"first": 300_000, "last": 200_000}},
        "HPT-POSIX-UID-RANGE",
        "cluster.posixIdentity.uidRange",
        ("first (300000) is after last (200000)",),
        "swap them",
        1,
    ),
    Case(
        "posix-uid-range-too-small",
        {"cluster.posixIdentity.uidRange": {"first": 200_000, "last": 200_099}},
        "HPT-POSIX-UID-RANGE",
        "cluster.posixIdentity.uidRange",
        ("holds 100 UIDs",),
        "at least 1000 UIDs (e.g. `last: 299999`)",
        1,
    ),
    Case(
        "posix-uid-range-overflow-uid",
        {"cluster.posixIdentity.uidRange": {"first": 60_000, "last": 70_000}},
        "HPT-POSIX-UID-RANGE",
        "cluster.posixIdentity.uidRange",
        ("contains 65534, the kernel's overflow UID",),
        "above 65535",
        1,
    ),
    Case(
        "posix-uid-range-holds-a-team-gid",
        {"cluster.posixIdentity.uidRange": {"first": 20_000, "last": 29_999}},
        "HPT-POSIX-UID-RANGE",
        "cluster.posixIdentity.uidRange",
        ("contains the POSIX GID of team(s) 'research' (20001), 'vision' (20002), 'inference' (20003)",),
        "move the range above the team GIDs",
        1,
    ),
    Case(
        "posix-webhook-timeout",
        {"cluster.posixIdentity.timeoutSeconds": 31},
        "HPT-POSIX-WEBHOOK-TIMEOUT",
        "cluster.posixIdentity.timeoutSeconds",
        ("31 is outside 1-30 seconds",),
        "use e.g. 5",
        1,
    ),
    Case(
        "group-shared-by-two-teams",
        {"teams[1].identity.groupId": "906754abcd-11111111-AAAA-bbbb-cccc-111111111111"},
        "HPT-IDENTITY-GROUP-SHARED",
        "teams[1].identity.groupId",
        ("is already the group of team 'research'", "both teams' permission sets"),
        "its own Identity Center group",
        1,
    ),
    Case(
        "posix-image-malformed",
        {"cluster.posixIdentity.imageUri": "ECR/Webhook Image"},
        "HPT-POSIX-IMAGE",
        "cluster.posixIdentity.imageUri",
        ("'ECR/Webhook Image' is not a container image reference",),
        "<registry>/<repository>:<tag>",
        1,
    ),
    Case(
        "posix-image-latest",
        {"cluster.posixIdentity.imageUri": "111122223333.dkr.ecr.us-east-1.amazonaws.com/webhook:latest"},
        "HPT-POSIX-IMAGE",
        "cluster.posixIdentity.imageUri",
        ("is not pinned", "`latest`"),
        "pin a release tag",
        1,
    ),
    Case(
        "posix-image-untagged",
        {"cluster.posixIdentity.imageUri": "registry.example.com:5000/platform/webhook"},
        "HPT-POSIX-IMAGE",
        "cluster.posixIdentity.imageUri",
        ("is not pinned",),
        "or a digest",
        1,
    ),
    Case(
        "usage-report-chart-twice",
        {
            "chargeback.usageReportChart": {
                "ociRepository": "oci://r/c",
                "version": "0.1.0",
                "directory": "charts/u",
            }
        },
        "HPT-USAGE-REPORT-CHART",
        "chargeback.usageReportChart",
        ("both `ociRepository`", "exactly one is needed"),
        "mirror the chart",
        1,
    ),
    Case(
        "usage-report-chart-without-version",
        {
            "chargeback.usageReportChart": {
                "ociRepository": "oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/u"
            }
        },
        "HPT-USAGE-REPORT-CHART",
        "chargeback.usageReportChart.ociRepository",
        ("needs the oci:// scheme and a `version`",),
        "sagemaker-hyperpod-usage-report",
        1,
    ),
    Case(
        "posix-cache-ttl",
        {"cluster.posixIdentity.cacheTtlSeconds": 0},
        "HPT-POSIX-CACHE-TTL",
        "cluster.posixIdentity.cacheTtlSeconds",
        ("0 is outside 1-3600 seconds",),
        "use e.g. 300",
        1,
    ),
    Case(
        "posix-break-glass-team-group",
        {"cluster.posixIdentity.breakGlassGroup": "hyperpod-ns-research-namespace-level-group"},
        "HPT-POSIX-BREAK-GLASS",
        "cluster.posixIdentity.breakGlassGroup",
        ("team 'research'", "every teammate's pods"),
        "only the platform's on-call people",
        1,
    ),
    Case(
        "posix-strict-groups-before-1-33",
        {"cluster.posixIdentity.supplementalGroupsPolicy": "strict", "cluster.kubernetesVersion": "1.32"},
        "HPT-POSIX-STRICT-GROUPS-VERSION",
        "cluster.posixIdentity.supplementalGroupsPolicy",
        ("`strict` on Kubernetes 1.32", "refuse every pod"),
        "1.33 or later",
        1,
    ),
    Case(
        "posix-break-glass-everyone",
        {"cluster.posixIdentity.breakGlassGroup": "system:authenticated"},
        "HPT-POSIX-BREAK-GLASS",
        "cluster.posixIdentity.breakGlassGroup",
        ("Kubernetes assigns itself",),
        "only the platform's on-call people",
        1,
    ),
    Case(
        "cluster-classification-format",
        {"cluster.dataClassification": "Internal"},
        "HPT-DATA-CLASSIFICATION",
        "cluster.dataClassification",
        ("'Internal' is not a lowercase label",),
        "`confidential`",
        1,
    ),
    Case(
        "team-classification-format",
        {"teams[0].dataClassification": "Top Secret"},
        "HPT-DATA-CLASSIFICATION",
        "teams[0].dataClassification",
        ("'Top Secret' is not a lowercase label",),
        "cluster.dataClassification",
        1,
    ),
    Case(
        "reserved-negative",
        {"cluster.instanceGroups[1].reserved": -1},
        "HPT-RESERVED",
        "cluster.instanceGroups[1].reserved",
        ("-1 must be between 0 and count (4)",),
        "keep at least 1 node in reserve",
        1,
    ),
    Case(
        "threads-per-core",
        {"cluster.instanceGroups[0].threadsPerCore": 3},
        "HPT-THREADS",
        "cluster.instanceGroups[0].threadsPerCore",
        ("3 is not 1 or 2",),
        "use 1 (no hyperthreading) or 2",
        1,
    ),
    Case(
        "topology-on-an-unlabelled-type",
        {"cluster.instanceGroups[1].topologyAware": True},
        "HPT-TOPOLOGY-TYPE",
        "cluster.instanceGroups[1].topologyAware",
        ("ml.g5.12xlarge nodes carry no topology.k8s.aws/network-node-layer-<n> labels",),
        "remove `topologyAware` from group 'g5-inference', or use one of: ml.p3dn.24xlarge",
        1,
    ),
    Case(
        "topology-on-half-a-type",
        {
            "cluster.instanceGroups[0].topologyAware": True,
            "cluster.instanceGroups[2]": {"name": "p5-more", "instanceType": "ml.p5.48xlarge", "count": 2},
        },
        "HPT-TOPOLOGY-CONSISTENT",
        "cluster.instanceGroups[2].topologyAware",
        ("groups 'p5-training' and 'p5-more' are both ml.p5.48xlarge but only one is topology-aware",),
        "set `topologyAware: true` on group 'p5-more'",
        1,
    ),
    Case(
        "mig-layout-the-chart-lacks",
        {
            "cluster.instanceGroups[0].migConfig": "all-2g.20gb",
            "chargeback": None,
            "teams[0].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 7}}
            },
            "teams[1].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 7}}
            },
        },
        "HPT-MIG-CONFIG",
        "cluster.instanceGroups[0].migConfig",
        ("'all-2g.20gb' is not a layout of HyperPod's GPU operator for ml.p5.48xlarge",),
        "use one of: all-1g.10gb, all-3g.40gb, all-7g.80gb",
        1,
    ),
    Case(
        "mig-on-half-a-type",
        {
            "chargeback": None,
            "cluster.instanceGroups[0].migConfig": "all-1g.10gb",
            "cluster.instanceGroups[2]": {"name": "p5-more", "instanceType": "ml.p5.48xlarge", "count": 2},
            "teams[0].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 7}}
            },
            "teams[1].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 7}}
            },
        },
        "HPT-MIG-CONSISTENT",
        "cluster.instanceGroups[2].migConfig",
        ("groups 'p5-training' and 'p5-more' are both ml.p5.48xlarge but partition their GPUs differently",),
        "give group 'p5-more' `migConfig: all-1g.10gb`",
        1,
    ),
    Case(
        "whole-gpus-on-partitioned-nodes",
        {"chargeback": None, "cluster.instanceGroups[0].migConfig": "all-1g.10gb"},
        "HPT-QUOTA-PARTITION",
        "teams[0].compute.quotas.ml.p5.48xlarge",
        ("team 'research' has a quota of whole GPUs (9) on ml.p5.48xlarge, whose nodes are partitioned",),
        "state it in partitions",
        2,
    ),
    Case(
        "more-partitions-than-the-nodes-make",
        {
            "chargeback": None,
            "cluster.instanceGroups[0].migConfig": "mixed-3-1g.10gb-1-4g.40gb",
            "teams[0].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 300}}
            },
            "teams[1].compute.quotas": {
                "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 100}}
            },
        },
        "HPT-PARTITION-CAPACITY",
        "teams[*].compute.quotas.ml.p5.48xlarge",
        (
            "mig-1g.10gb quotas on ml.p5.48xlarge sum to 400 (research 300 + vision 100) but the instances not in "
            "reserve make 360 (3 per GPU x 8 GPUs x 15 instances)",
        ),
        "lower the mig-1g.10gb quotas by 40",
        1,
    ),
    Case(
        "training-plan-arn",
        {"cluster.instanceGroups[0].trainingPlanArn": "plan-1"},
        "HPT-TRAINING-PLAN",
        "cluster.instanceGroups[0].trainingPlanArn",
        ("'plan-1' is not a training plan ARN",),
        "aws sagemaker list-training-plans",
        1,
    ),
    Case(
        "ebs-volume",
        {"cluster.instanceGroups[0].ebsVolumeGiB": 0},
        "HPT-EBS",
        "cluster.instanceGroups[0].ebsVolumeGiB",
        ("0 is outside 1-16384",),
        "500",
        1,
    ),
    Case(
        "resources-non-positive",
        {"cluster.instanceGroups[0].resources": {"accelerators": 8, "vcpus": 0, "memoryGiB": 2048}},
        "HPT-RESOURCES",
        "cluster.instanceGroups[0].resources",
        ("has a non-positive cpu/memory figure",),
        "vcpus (>=1)",
        1,
    ),
    Case(
        "kueue-needs-resources-of-uncatalogued-type",
        {
            "fairnessBackend": "kueue",
            "cluster.instanceGroups[2]": {"name": "cpu", "instanceType": "ml.c5.large", "count": 2},
        },
        "HPT-RESOURCES",
        "cluster.instanceGroups[2].resources",
        ("ml.c5.large has no built-in resource figures", "kueue backend"),
        "add `resources: {accelerators: N, vcpus: N, memoryGiB: N}`",
        1,
    ),
    Case(
        "no-priority-classes",
        {"scheduling.priorityClasses": []},
        "HPT-PRIORITY-COUNT",
        "scheduling.priorityClasses",
        ("no priority classes are defined",),
        "define at least one",
        6,  # and the five allowed classes of the three teams are undefined
    ),
    Case(
        "no-teams",
        {"teams": []},
        "HPT-TEAMS",
        "teams",
        ("no teams are defined",),
        "add at least one team",
        1,
    ),
    Case(
        "empty-group-id",
        {"teams[0].identity.groupId": ""},
        "HPT-IDENTITY",
        "teams[0].identity.groupId",
        ("the Identity Center group ID is empty",),
        "aws identitystore list-groups",
        1,
    ),
    Case(
        "group-id-format",
        {"teams[0].identity.groupId": "90676a1234-aaaa-bbbb-cccc-111111111111"},
        "HPT-IDENTITY",
        "teams[0].identity.groupId",
        ("'90676a1234-aaaa-bbbb-cccc-111111111111' is not an Identity Center group ID",),
        "aws identitystore list-groups",
        1,
    ),
    # AWS::SSO::PermissionSet Name: 1-32 characters (cfn-lint schema of the resource)
    Case(
        "default-permission-set-name-too-long",
        {"teams[0].name": "foundation-models-pretraining-research"},
        "HPT-IDENTITY",
        "teams[0].identity.permissionSetName",
        (
            "the default permission set name 'FoundationModelsPretrainingResearch' derived from team "
            "'foundation-models-pretraining-research' has 35 characters",
        ),
        "set `identity.permissionSetName`",
        1,
    ),
    # AWS::SageMaker::Domain DomainName: maxLength 63 (cfn-lint schema of the resource)
    Case(
        "studio-domain-name-too-long",
        {"cluster.name": "shared-gpu-" + "x" * 43},
        "HPT-STUDIO-DOMAIN-NAME",
        "teams[2].name",
        (
            f"the Studio domain name 'shared-gpu-{'x' * 43}-inference' (cluster.name + '-' + team name) has 64",
        ),
        "shorten the team name or cluster.name by 1 characters",
        1,
    ),
    Case(
        "permission-set-name",
        {"teams[1].identity.permissionSetName": "Computer Vision!"},
        "HPT-IDENTITY",
        "teams[1].identity.permissionSetName",
        ("'Computer Vision!' is not a valid permission set name",),
        "at most 32 letters",
        1,
    ),
    Case(
        "posix-gid-reserved-range",
        {"teams[2].identity.posixGid": 999},
        "HPT-POSIX-GID",
        "teams[2].identity.posixGid",
        ("999 is outside 1000-2147483647",),
        "GID reserved for the team",
        1,
    ),
    Case(
        "posix-gid-shared",
        {"teams[1].identity.posixGid": 20001},
        "HPT-POSIX-GID",
        "teams[1].identity.posixGid",
        ("GID 20001 is already used by team 'research'; teams would share /fsx files",),
        "its own GID",
        1,
    ),
    Case(
        "no-allowed-priority-classes",
        {"teams[2].allowedPriorityClasses": []},
        "HPT-PRIORITY-UNKNOWN",
        "teams[2].allowedPriorityClasses",
        ("the list is empty",),
        "allow at least one priority class",
        1,
    ),
    Case(
        "negative-quota",
        {"teams[0].compute.quotas": {P5: -1}},
        "HPT-QUOTA",
        f"teams[0].compute.quotas.{P5}",
        ("-1 is negative",),
        "use 0 or more instances",
        1,
    ),
    Case(
        "quota-on-type-the-cluster-lacks",
        {"teams[0].compute.quotas": {"ml.p4d.24xlarge": 2}},
        "HPT-QUOTA-UNKNOWN-TYPE",
        "teams[0].compute.quotas.ml.p4d.24xlarge",
        (
            "'ml.p4d.24xlarge' is not the instance type of any instance group "
            "(ml.g5.12xlarge, ml.p5.48xlarge)",
        ),
        "add an instance group of that type",
        1,
    ),
    # --- chargeback ---------------------------------------------------------------------------------------
    Case(
        "chargeback-without-terms",
        {"chargeback.billingTerms": []},
        "HPT-CHARGEBACK-TERMS",
        "chargeback.billingTerms",
        ("no billing term is defined",),
        "the cost-center owners must agree on and sign it",
        1,
    ),
    Case(
        "billing-rule-missing",
        {"chargeback.billingTerms[0].rule": DELETE},
        "HPT-CHARGEBACK-RULE",
        "chargeback.billingTerms[0].rule",
        ("no billing rule is set",),
        "`rule: reservation` (a team pays its guarantee used or not, a borrower what it borrowed, lenders are "
        "credited) or `rule: usage` (a team pays what it ran); the cost-center owners must agree on and sign it; "
        "there is no default",
        1,
    ),
    Case(
        "billing-rule-unknown",
        {"chargeback.billingTerms[0].rule": "reserved"},
        "HPT-SCHEMA",
        "chargeback.billingTerms[0].rule",
        ("'reserved' is not one of: reservation, usage",),
        "use one of: reservation, usage",
        1,
    ),
    Case(
        "idle-owner-missing",
        {"chargeback.billingTerms[0].idleOwner": DELETE},
        "HPT-CHARGEBACK-IDLE-OWNER",
        "chargeback.billingTerms[0].idleOwner",
        ("no idle owner is set",),
        "or `idleOwner: shared` (split by guarantee) for reserved, unallocated and recovering capacity; the "
        "cost-center owners must agree on and sign it",
        1,
    ),
    Case(
        "idle-owner-not-a-tag-value",
        {"chargeback.billingTerms[0].idleOwner": "platform|ops"},
        "HPT-CHARGEBACK-IDLE-OWNER",
        "chargeback.billingTerms[0].idleOwner",
        ("'platform|ops' is not a valid cost center",),
        "at most 256 characters",
        1,
    ),
    Case(
        "effective-from-mid-month",
        {"chargeback.billingTerms[0].effectiveFrom": "2026-07-15"},
        "HPT-CHARGEBACK-EFFECTIVE-FROM",
        "chargeback.billingTerms[0].effectiveFrom",
        ("2026-07-15 is not the first day of a month", "would apply only from 2026-08-01"),
        "write `2026-08-01` (or `2026-07-01` if it applies to that month)",
        1,
    ),
    Case(
        "effective-from-not-a-date",
        {"chargeback.billingTerms[0].effectiveFrom": "July"},
        "HPT-CHARGEBACK-EFFECTIVE-FROM",
        "chargeback.billingTerms[0].effectiveFrom",
        ("'July' is not a date",),
        "e.g. `2026-07-01`",
        1,
    ),
    Case(
        "billing-terms-out-of-order",
        {
            "chargeback.billingTerms[1]": {
                "effectiveFrom": "2025-07-01",
                "rule": "usage",
                "idleOwner": "shared",
                "signedOffBy": "the cost-center owners",
            }
        },
        "HPT-CHARGEBACK-EFFECTIVE-FROM",
        "chargeback.billingTerms[1].effectiveFrom",
        ("2025-07-01 is not after the previous term's 2026-01-01",),
        "never edit a term already in force, add one",
        1,
    ),
    Case(
        "billing-term-mid-quarter",
        {
            "chargeback.billingTerms[1]": {
                "effectiveFrom": "2026-08-01",
                "rule": "usage",
                "idleOwner": "shared",
                "signedOffBy": "the cost-center owners",
            }
        },
        "HPT-CHARGEBACK-QUARTER",
        "chargeback.billingTerms[1].effectiveFrom",
        (
            "2026-08-01 is not the first day of a quarter",
            "the months from 2026-07-01 would be billed under two",
        ),
        "start it on `2026-10-01` (or `2026-07-01`), or add `midQuarterReason: <why>`",
        1,
    ),
    Case(
        "billing-term-not-signed-off",
        {"chargeback.billingTerms[0].signedOffBy": DELETE},
        "HPT-CHARGEBACK-SIGN-OFF",
        "chargeback.billingTerms[0].signedOffBy",
        ("no sign-off is recorded",),
        "add `signedOffBy:` naming the cost-center owners who signed the term",
        1,
    ),
    Case(
        "price-zero",
        {"chargeback.prices": {P5: 0}},
        "HPT-CHARGEBACK-PRICE",
        f"chargeback.prices.{P5}",
        ("0.0 is not a positive price",),
        "USD price of one GPU-hour",
        1,
    ),
    Case(
        "price-not-a-number",
        {"chargeback.prices": {P5: "cheap"}},
        "HPT-SCHEMA",
        f"chargeback.prices.{P5}",
        ("expected a number (USD per GPU-hour), got string 'cheap'",),
        "write an unquoted number",
        1,
    ),
    Case(
        "tolerance-too-large",
        {"chargeback.reconciliationTolerance": 0.5},
        "HPT-CHARGEBACK-TOLERANCE",
        "chargeback.reconciliationTolerance",
        ("0.5 is outside 0-0.1",),
        "`0.005` for 0.5 %",
        1,
    ),
    Case(
        "unknown-teams-policy-misspelled",
        {"chargeback.unknownTeams": "ignore"},
        "HPT-SCHEMA",
        "chargeback.unknownTeams",
        ("'ignore' is not one of: fail, bill",),
        "use one of: fail, bill",
        1,
    ),
    Case(
        "preemption-alarm-zero",
        {"chargeback.preemptionAlarm.gpuHoursPerTeamPerDay": 0},
        "HPT-CHARGEBACK-ALARM",
        "chargeback.preemptionAlarm.gpuHoursPerTeamPerDay",
        ("0 GPU-hours is not a usable threshold",),
        "before the alarm fires",
        1,
    ),
    Case(
        "cost-center-shared",
        {"teams[0].costCenter": "shared"},
        "HPT-CHARGEBACK-COST-CENTER",
        "teams[0].costCenter",
        ("'shared' is reserved",),
        "name the cost center",
        1,
    ),
    Case(
        "cost-center-not-a-tag-value",
        {"teams[2].costCenter": "aws:billing"},
        "HPT-CHARGEBACK-COST-CENTER",
        "teams[2].costCenter",
        ("'aws:billing' is not a valid cost center",),
        "not starting with `aws:`",
        1,
    ),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_bad_value_is_reported_with_path_value_fix_and_code(case: Case) -> None:
    error = policy_error(edited(case.changes))
    issue = reported(error, case.code, case.path)
    for fragment in case.fragments:
        assert fragment in issue.message
    assert case.fix in issue.fix
    assert len(error.issues) == case.issues, str(error)
    assert str(error).startswith(f"{case.issues} problem(s) in test.yaml; nothing was synthesized:")


def test_every_rule_code_has_a_case() -> None:
    from hyperpod_tenancy.policy.rules import ERROR_RULES

    error_codes = {rule.code for rule in ERROR_RULES}
    assert len(error_codes) > 20, "the registry lists the error rules"
    assert error_codes <= {case.code for case in CASES}


def test_too_many_quota_entries() -> None:
    quotas = {P5: 1} | {f"ml.g6.{size}": 0 for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge")}
    quotas |= {
        f"ml.g6e.{size}": 0 for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")
    }
    quotas |= {f"ml.g5.{size}": 0 for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")}
    assert len(quotas) == 16
    error = policy_error(edited({"teams[0].compute.quotas": quotas}))
    issue = reported(error, "HPT-QUOTA", "teams[0].compute.quotas")
    assert "16 instance types; the limit is 15" in issue.message
    assert "at most 15 instance types" in issue.fix


def test_several_problems_are_reported_together() -> None:
    error = policy_error(
        edited(
            {
                "account": "not-an-account",
                "cluster.instanceGroups[0].count": 0,
                "teams[1].compute.borrowLimit": 10_900,
                "teams[2].allowedPriorityClasses": ["infrence"],
                "teams[0].compute.unknownKey": True,
            }
        )
    )
    assert [(i.code, i.path) for i in error.issues] == [
        ("HPT-SCHEMA", "teams[0].compute.unknownKey"),
        ("HPT-ACCOUNT", "account"),
        ("HPT-COUNT", "cluster.instanceGroups[0].count"),
        ("HPT-BORROW-LIMIT", "teams[1].compute.borrowLimit"),
        ("HPT-PRIORITY-UNKNOWN", "teams[2].allowedPriorityClasses[0]"),
    ]
    lines = str(error).splitlines()
    assert lines[0] == "5 problem(s) in test.yaml; nothing was synthesized:"
    assert lines[1:] == [f"  - {issue}" for issue in error.issues]
    assert error.source == "test.yaml"


def test_a_value_that_fails_to_parse_is_reported_once() -> None:
    # the instance type is wrongly typed: no second error from the rules that read it
    error = policy_error(edited({"cluster.instanceGroups[0].instanceType": ["ml.p5.48xlarge"]}))
    assert [(i.code, i.path) for i in error.issues] == [
        ("HPT-SCHEMA", "cluster.instanceGroups[0].instanceType")
    ]


def test_a_broken_section_does_not_cascade() -> None:
    error = policy_error(edited({"cluster": ["shared-gpu"]}))
    assert [(i.code, i.path) for i in error.issues] == [("HPT-SCHEMA", "cluster")]


@pytest.mark.parametrize(
    ("data", "shown"),
    [(None, "an empty document"), (["a"], "list ['a']"), ("text", "string 'text'")],
)
def test_a_document_that_is_not_a_mapping(data: object, shown: str) -> None:
    error = policy_error(data)
    issue = reported(error, "HPT-SCHEMA", "(document)")
    assert shown in issue.message
    assert "reference platform.yaml" in issue.fix


# --- the reference platform ----------------------------------------------------------------------------


def test_reference_platform_loads_with_zero_errors_and_warnings() -> None:
    platform = load_platform(REFERENCE)
    assert validate_platform(platform, raise_on_error=False) == []
    assert policy_warnings(platform) == []
    assert platform == platform_from_dict(reference_data())
    assert [t.name for t in platform.teams] == ["research", "vision", "inference"]


# --- building from Python ------------------------------------------------------------------------------


def python_reference() -> Platform:
    """The reference platform written in Python, as a CDK app would."""
    data = reference_data()
    teams = {t["name"]: t for t in data["teams"]}

    def identity(name: str) -> TeamIdentity:
        raw = teams[name]["identity"]
        return TeamIdentity(
            group_id=raw["groupId"],
            posix_gid=raw["posixGid"],
            permission_set_name=raw.get("permissionSetName"),
        )

    return Platform(
        name="ml-platform",
        account="111122223333",
        region="us-east-1",
        fairness_backend=FairnessBackend.TASK_GOVERNANCE,
        cluster=ClusterSpec(
            name="shared-gpu",
            kubernetes_version="1.33",
            availability_zones=("us-east-1a", "us-east-1b"),
            vpc_cidr="10.192.0.0/16",
            data_classification="internal",
            on_data_classification_mismatch=ClassificationMismatch.REFUSE,
            instance_groups=(
                InstanceGroup(
                    name="p5-training",
                    instance_type=P5,
                    count=16,
                    reserved=1,
                    threads_per_core=1,
                    availability_zone="us-east-1a",
                ),
                InstanceGroup(
                    name="g5-inference",
                    instance_type="ml.g5.12xlarge",
                    count=4,
                    reserved=1,
                    threads_per_core=2,
                    availability_zone="us-east-1b",
                    deep_health_checks=(DeepHealthCheck.INSTANCE_STRESS,),
                ),
            ),
            system_node_group=SystemNodeGroup(instance_type="m7i.xlarge", count=2),
            fsx=FsxSpec(
                storage_capacity_gib=4800, deployment_type="PERSISTENT_2", per_unit_storage_throughput=250
            ),
            hyperpod_helm_chart=HelmChartSource(
                oci_repository=data["cluster"]["hyperpodHelmChart"]["ociRepository"], version="0.1.0"
            ),
            observability=True,
            posix_identity=PosixIdentitySpec(
                failure_policy=WebhookFailurePolicy.FAIL,
                uid_range=UidRange(first=200_000, last=299_999),
                timeout_seconds=5,
                cache_ttl_seconds=300,
                break_glass_group="platform-oncall",
            ),
        ),
        scheduling=SchedulingSpec(
            fair_share=True,
            idle_resource_sharing=True,
            checkpoint_enforcement=CheckpointEnforcement.DENY,
            priority_classes=(
                PriorityClass(name="inference", weight=100),
                PriorityClass(name="training", weight=70),
                PriorityClass(
                    name="experimentation", weight=30, preemptible=True, max_checkpoint_interval="30m"
                ),
            ),
        ),
        identity_center=IdentityCenter(
            instance_arn=data["identityCenter"]["instanceArn"], region="us-east-1"
        ),
        teams=(
            Team(
                name="research",
                compute=ComputeAllocation(
                    quotas={P5: 9},
                    sharing=SharingStrategy.LEND_AND_BORROW,
                    borrow_limit=50,
                    fair_share_weight=60,
                ),
                allowed_priority_classes=("training", "experimentation"),
                identity=identity("research"),
            ),
            Team(
                name="vision",
                compute=ComputeAllocation(
                    quotas={P5: 6},
                    sharing=SharingStrategy.LEND_AND_BORROW,
                    borrow_limit=100,
                    fair_share_weight=40,
                ),
                allowed_priority_classes=("training", "experimentation"),
                identity=identity("vision"),
                cost_center="cc-4711-vision",
            ),
            Team(
                name="inference",
                workload=WorkloadKind.INFERENCE,
                compute=ComputeAllocation(
                    quotas={"ml.g5.12xlarge": 3}, sharing=SharingStrategy.LEND, fair_share_weight=50
                ),
                allowed_priority_classes=("inference",),
                identity=identity("inference"),
            ),
        ),
        chargeback=ChargebackSpec(
            billing_terms=(
                BillingTermSpec(
                    effective_from="2026-01-01",
                    rule=BillingRule.RESERVATION,
                    idle_owner="platform",
                    shared_costs=SharedCostRule.IDLE_OWNER,
                    signed_off_by="cost-center owners of research, vision and platform (EXAMPLE: FIN-2025-112)",
                ),
            ),
            prices={P5: 12.29, "ml.g5.12xlarge": 1.77},
            reconciliation_tolerance=0.005,
            preemption_alarm=PreemptionAlarmSpec(gpu_hours_per_team_per_day=8),
        ),
    )


def test_python_built_reference_equals_the_yaml_one() -> None:
    platform = python_reference()
    assert validate_platform(platform) == []
    assert platform == load_platform(REFERENCE)


def test_chargeback_is_optional() -> None:
    platform = platform_from_dict(edited({"chargeback": DELETE}))
    assert platform.chargeback is None
    assert validate_platform(platform, raise_on_error=False) == []
    with pytest.raises(ValueError, match=r"no `chargeback:` section"):
        chargeback_config(platform)


def test_chargeback_config_is_built_from_the_platform() -> None:
    data = edited(
        {
            "chargeback.billingTerms[1]": {
                "effectiveFrom": "2026-07-01",
                "rule": "usage",
                "idleOwner": "shared",
                "signedOffBy": "the cost-center owners",
            }
        }
    )
    config = chargeback_config(platform_from_dict(data))
    assert config.cluster == "shared-gpu"
    assert [(t.effective_from.isoformat(), t.rule, t.idle_owner, t.shared_costs) for t in config.terms] == [
        ("2026-01-01", BillingRule.RESERVATION, "platform", SharedCostRule.IDLE_OWNER),
        ("2026-07-01", BillingRule.USAGE, "shared", SharedCostRule.IDLE_OWNER),
    ]
    # the cost center defaults to the team name; quotas are instances per type
    assert [(t.name, t.cost_center, t.quotas) for t in config.teams] == [
        ("inference", "inference", {"ml.g5.12xlarge": 3}),
        ("research", "research", {P5: 9}),
        ("vision", "cc-4711-vision", {P5: 6}),
    ]
    assert config.gpus_per_instance == {"ml.g5.12xlarge": 4, P5: 8}
    assert config.prices == {
        "ml.g5.12xlarge": Decimal("1.77"),
        P5: Decimal("12.29"),
    }  # as written, not binary
    assert config.max_checkpoint_minutes == {
        "inference-priority": 60,
        "training-priority": 60,
        "experimentation-priority": 30,
    }
    assert config.tolerance == Decimal("0.005")


def test_a_team_flagged_for_a_dedicated_cluster_is_not_billed_here() -> None:
    data = edited(
        {
            "cluster.onDataClassificationMismatch": "dedicated-cluster",
            "teams[1].dataClassification": "restricted",
        }
    )
    assert [t.name for t in chargeback_config(platform_from_dict(data)).teams] == ["inference", "research"]


def _team(p: Platform, index: int, **changes: Any) -> Platform:
    teams = list(p.teams)
    teams[index] = dataclasses.replace(teams[index], **changes)
    return dataclasses.replace(p, teams=tuple(teams))


def _compute(p: Platform, index: int, **changes: Any) -> Platform:
    return _team(p, index, compute=dataclasses.replace(p.teams[index].compute, **changes))


def _group(p: Platform, index: int, **changes: Any) -> Platform:
    groups = list(p.cluster.instance_groups)
    groups[index] = dataclasses.replace(groups[index], **changes)
    return dataclasses.replace(p, cluster=dataclasses.replace(p.cluster, instance_groups=tuple(groups)))


def _classes(p: Platform, classes: tuple[PriorityClass, ...]) -> Platform:
    return dataclasses.replace(p, scheduling=dataclasses.replace(p.scheduling, priority_classes=classes))


PYTHON_CASES: list[tuple[str, dict[str, object], Callable[[Platform], Platform]]] = [
    ("count", {"cluster.instanceGroups[1].count": 0}, lambda p: _group(p, 1, count=0)),
    ("capacity", {"teams[1].compute.quotas": {P5: 7}}, lambda p: _compute(p, 1, quotas={P5: 7})),
    ("duplicate-team", {"teams[2].name": "research"}, lambda p: _team(p, 2, name="research")),
    ("team-name", {"teams[0].name": LONG_41}, lambda p: _team(p, 0, name=LONG_41)),
    (
        "instance-type",
        {"cluster.instanceGroups[1].instanceType": "ml.g5.12xl"},
        lambda p: _group(p, 1, instance_type="ml.g5.12xl"),
    ),
    (
        "priority-classes",
        {"scheduling.priorityClasses": reference_data()["scheduling"]["priorityClasses"] + EXTRA_CLASSES},
        lambda p: _classes(
            p,
            p.scheduling.priority_classes
            + tuple(PriorityClass(name=str(c["name"]), weight=int(str(c["weight"]))) for c in EXTRA_CLASSES),
        ),
    ),
    (
        "weight",
        {"scheduling.priorityClasses[0].weight": 101},
        lambda p: _classes(
            p,
            (
                dataclasses.replace(p.scheduling.priority_classes[0], weight=101),
                *p.scheduling.priority_classes[1:],
            ),
        ),
    ),
    ("borrow-limit", {"teams[1].compute.borrowLimit": 10_001}, lambda p: _compute(p, 1, borrow_limit=10_001)),
    (
        "unknown-class",
        {"teams[0].allowedPriorityClasses": ["trainig", "experimentation"]},
        lambda p: _team(p, 0, allowed_priority_classes=("trainig", "experimentation")),
    ),
    (
        "classification",
        {"teams[1].dataClassification": "restricted"},
        lambda p: _team(p, 1, data_classification="restricted"),
    ),
    (
        "checkpoint-interval",
        {"scheduling.priorityClasses[2].maxCheckpointInterval": "9999h"},
        lambda p: _classes(
            p,
            (
                *p.scheduling.priority_classes[:2],
                dataclasses.replace(p.scheduling.priority_classes[2], max_checkpoint_interval="9999h"),
            ),
        ),
    ),
]


@pytest.mark.parametrize(
    ("changes", "edit"), [pytest.param(case[1], case[2], id=case[0]) for case in PYTHON_CASES]
)
def test_python_built_platform_gets_the_same_errors_as_yaml(
    changes: dict[str, object], edit: Callable[[Platform], Platform]
) -> None:
    from_yaml = policy_error(edited(changes)).issues
    with pytest.raises(PolicyError) as info:
        validate_platform(edit(python_reference()))
    assert info.value.issues == from_yaml
    assert validate_platform(edit(python_reference()), raise_on_error=False) == from_yaml


@pytest.mark.parametrize(
    ("edit", "path", "expected"),
    [
        pytest.param(
            lambda p: _group(p, 0, count="16"),
            "cluster.instanceGroups[0].count",
            "expected a whole number, got str '16'",
            id="string-count",
        ),
        pytest.param(
            lambda p: _compute(p, 2, sharing="lend"),
            "teams[2].compute.sharing",
            "expected a SharingStrategy, got str 'lend'",
            id="plain-string-enum",
        ),
        pytest.param(
            lambda p: _compute(p, 0, quotas={P5: 9.0}),
            f"teams[0].compute.quotas.{P5}",
            "expected a whole number or an instance of ResourceAmount, got float 9.0",
            id="float-quota",
        ),
        pytest.param(
            lambda p: _team(p, 1, allowed_priority_classes="training"),
            "teams[1].allowedPriorityClasses",
            "expected a tuple, got str 'training'",
            id="string-instead-of-tuple",
        ),
        pytest.param(
            lambda p: _group(p, 1, ebs_volume_gib=True),
            "cluster.instanceGroups[1].ebsVolumeGiB",
            "expected a whole number, got bool True",
            id="bool-is-not-a-number",
        ),
    ],
)
def test_python_built_platform_with_wrong_types_gets_schema_errors_not_a_traceback(
    edit: Callable[[Platform], Platform], path: str, expected: str
) -> None:
    with pytest.raises(PolicyError) as info:
        validate_platform(edit(python_reference()))
    issue = reported(info.value, "HPT-SCHEMA", path)
    assert expected in issue.message
    assert issue.fix.startswith("pass ")


def test_python_built_platform_accepts_lists_for_tuples() -> None:
    platform = python_reference()
    as_lists = dataclasses.replace(platform, teams=list(platform.teams))  # type: ignore[arg-type]
    assert validate_platform(as_lists) == []


# --- YAML files ----------------------------------------------------------------------------------------


def test_invalid_yaml_syntax_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text("name: ml-platform\ncluster:\n  name: shared-gpu\n availabilityZones: [a, b]\n", "utf-8")
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    error = info.value
    assert error.source == str(path)
    issue = reported(error, "HPT-YAML", "line 4, column 2")
    assert "not valid YAML: expected <block end>" in issue.message
    assert "while parsing a block mapping started on line 1, column 1" in issue.message
    assert "fix the YAML syntax" in issue.fix
    assert len(error.issues) == 1


def test_unclosed_flow_list_names_where_it_started(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text("name: ml-platform\nteams: [research\naccount: 1\n", "utf-8")
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    issue = reported(info.value, "HPT-YAML", "line 3, column 8")
    assert "while parsing a flow sequence started on line 2, column 8" in issue.message


def test_duplicate_yaml_key_is_an_error_not_a_silent_override(tmp_path: Path) -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    assert text.count("      borrowLimit: 50\n") == 1
    text = text.replace("      borrowLimit: 50\n", "      borrowLimit: 50\n      borrowLimit: 80\n")
    line = text.splitlines().index("      borrowLimit: 80") + 1
    path = tmp_path / "platform.yaml"
    path.write_text(text, "utf-8")
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    issue = reported(info.value, "HPT-YAML", f"line {line}, column 7")
    assert f"duplicate key `borrowLimit` (first defined on line {line - 1})" in issue.message
    assert "remove one of the two entries" in issue.fix
    assert len(info.value.issues) == 1


def test_duplicate_key_is_reported_with_the_other_problems(tmp_path: Path) -> None:
    data = edited({"teams[0].compute.borrowLimit": -1})
    text = yaml.safe_dump(data, sort_keys=False) + "region: us-east-1\n"
    path = tmp_path / "platform.yaml"
    path.write_text(text, "utf-8")
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    assert [i.code for i in info.value.issues] == ["HPT-YAML", "HPT-BORROW-LIMIT"]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text("# nothing yet\n", "utf-8")
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    issue = reported(info.value, "HPT-SCHEMA", "(document)")
    assert "got an empty document" in issue.message


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_bytes("name: équipe\n".encode("latin-1"))
    with pytest.raises(PolicyError) as info:
        load_platform(path)
    issue = reported(info.value, "HPT-YAML", "byte 6")
    assert "not UTF-8" in issue.message
    assert "save it as UTF-8" in issue.fix


def test_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_platform(tmp_path / "absent.yaml")


# --- warnings ------------------------------------------------------------------------------------------


def warnings_of(changes: dict[str, object]) -> list[PolicyIssue]:
    return policy_warnings(platform_from_dict(edited(changes)))


def test_inference_team_on_lowest_priority_is_warned() -> None:
    [warning] = warnings_of({"teams[2].allowedPriorityClasses": ["inference", "experimentation"]})
    assert warning.code == "HPT-INFERENCE-LOWEST-PRIORITY"
    assert warning.path == "teams[2].allowedPriorityClasses"
    assert (
        "inference team 'inference' may use the lowest priority class ['experimentation']" in warning.message
    )
    assert "first work evicted" in warning.message
    assert "above the lowest weight" in warning.fix


def test_training_team_on_lowest_priority_is_not_warned() -> None:
    assert warnings_of({}) == []  # research and vision allow `experimentation`, the lowest class


def test_no_lowest_priority_warning_when_all_classes_weigh_the_same() -> None:
    classes = [{"name": "inference", "weight": 50}, {"name": "training", "weight": 50}]
    classes.append({"name": "experimentation", "weight": 50, "preemptible": True})
    assert warnings_of({"scheduling.priorityClasses": classes}) == []


def test_team_flagged_for_a_dedicated_cluster_is_warned_and_promises_nothing_here() -> None:
    platform = platform_from_dict(
        edited(
            {
                "cluster.onDataClassificationMismatch": "dedicated-cluster",
                "teams[1].dataClassification": "restricted",
                "teams[0].compute.quotas": {P5: 15},  # vision's 6 no longer count against the 15
            }
        )
    )
    assert [t.name for t in platform.hosted_teams] == ["research", "inference"]
    [warning] = policy_warnings(platform)
    assert warning.code == "HPT-DEDICATED-CLUSTER"
    assert warning.path == "teams[1].dataClassification"
    assert "team 'vision' ('restricted') is kept off this 'internal' cluster" in warning.message
    assert "deploy a separate platform" in warning.fix


def _west(backend: str) -> dict[str, object]:
    return {
        "fairnessBackend": backend,
        "region": "us-west-2",
        "identityCenter.region": "us-west-2",  # Identity Center in the platform's region (HPT-IDENTITY-CENTER-REGION)
        "cluster.availabilityZones": ["us-west-2a", "us-west-2b"],
        "cluster.instanceGroups[0].availabilityZone": "us-west-2a",
        "cluster.instanceGroups[1].availabilityZone": "us-west-2b",
    }


def test_task_governance_outside_confirmed_regions_is_warned() -> None:
    [warning] = warnings_of(_west("task-governance"))
    assert (warning.code, warning.path) == ("HPT-REGION-TASK-GOVERNANCE", "region")
    assert "not both confirmed in us-west-2" in warning.message
    assert "fairnessBackend: kueue" in warning.fix
    assert warnings_of(_west("kueue")) == []


def test_instance_group_without_quota_is_warned() -> None:
    group = {"name": "g6", "instanceType": "ml.g6.12xlarge", "count": 2, "availabilityZone": "us-east-1b"}
    [warning] = warnings_of({"cluster.instanceGroups[2]": group})
    assert (warning.code, warning.path) == ("HPT-UNUSED-INSTANCE-TYPE", "cluster.instanceGroups[2]")
    assert "no team has a quota on ml.g6.12xlarge" in warning.message


@pytest.mark.parametrize("limit", [501, 1_000, 10_000])
def test_a_borrow_limit_above_the_documented_range_is_accepted_and_warned(limit: int) -> None:
    [warning] = warnings_of({"teams[0].compute.borrowLimit": limit})
    assert (warning.code, warning.path) == ("HPT-BORROW-LIMIT-RANGE", "teams[0].compute.borrowLimit")
    assert f"{limit} is above the documented range 1-500 percent" in warning.message
    assert "the API accepts up to 10,000" in warning.message
    assert f"may run up to {1 + limit / 100:g} times its guarantee" in warning.message
    assert "`absoluteBorrowLimits`" in warning.fix


def test_a_borrow_limit_of_zero_is_accepted_and_warned_unless_absolute_limits_say_what_it_borrows() -> None:
    [warning] = warnings_of({"teams[0].compute.borrowLimit": 0})
    assert (warning.code, warning.path) == ("HPT-BORROW-LIMIT-RANGE", "teams[0].compute.borrowLimit")
    assert "0 lets team 'research' borrow nothing" in warning.message
    assert "`sharing: lend`" in warning.fix
    absolute = {"teams[0].compute.absoluteBorrowLimits": {P5: {"accelerators": 8}}}
    assert warnings_of({"teams[0].compute.borrowLimit": 0, **absolute}) == []
    # a team that does not borrow is not warned about its (unused) percentage
    assert warnings_of({"teams[1].compute.borrowLimit": 0, "teams[1].compute.sharing": "lend"}) == []


@pytest.mark.parametrize(
    "amount",
    [
        {"instances": 2},
        {"accelerators": 4},
        {"vcpus": 24.5},
        {"memoryGiB": 512},
        {"vcpus": 16, "memoryGiB": 256},
    ],
)
def test_absolute_borrow_limits_in_every_grain_load_without_warnings(amount: dict[str, float]) -> None:
    platform = platform_from_dict(edited({"teams[0].compute.absoluteBorrowLimits": {P5: amount}}))
    assert policy_warnings(platform) == []
    assert platform.teams[0].compute.absolute_borrow_limits[P5].given == amount


def test_price_for_an_instance_type_the_cluster_lacks_is_warned() -> None:
    [warning] = warnings_of({"chargeback.prices": {"ml.p5.48xlarg": 12.0, "ml.g5.12xlarge": 1.77}})
    assert (warning.code, warning.path) == ("HPT-CHARGEBACK-PRICE-UNUSED", "chargeback.prices.ml.p5.48xlarg")
    assert "'ml.p5.48xlarg' is not an instance type of the cluster's groups" in warning.message
    assert "did you mean 'ml.p5.48xlarge'?" in warning.fix


def test_kueue_backend_needs_one_shape_per_instance_type() -> None:
    data = reference_data()
    data["fairnessBackend"] = "kueue"
    twin = dict(data["cluster"]["instanceGroups"][0], name="p5-spare", count=2, reserved=0, threadsPerCore=2)
    data["cluster"]["instanceGroups"].append(twin)
    with pytest.raises(PolicyError) as err:
        platform_from_dict(data)
    message = str(err.value)
    assert (
        "cluster.instanceGroups[2]: 'p5-spare' and cluster.instanceGroups[0] 'p5-training' are both ml.p5.48xlarge"
        in message
    )
    assert "[HPT-RESOURCES]" in message
    data["fairnessBackend"] = "task-governance"
    platform_from_dict(data)  # Task Governance quotas count instances: no shape constraint


def test_a_misspelt_instance_group_type_gives_no_hint_on_the_quotas_that_are_right() -> None:
    """``ml.p5.48xlarg`` in the instance group: the group is refused with the right type; the teams that quota
    ``ml.p5.48xlarge`` (a type HyperPod accepts) get no "did you mean ml.g5.12xlarge"."""
    data = copy.deepcopy(reference_data())
    (group,) = [g for g in data["cluster"]["instanceGroups"] if g["instanceType"] == "ml.p5.48xlarge"]
    group["instanceType"] = "ml.p5.48xlarg"
    error = policy_error(data)
    assert [(i.code, i.path) for i in error.issues] == [
        (
            "HPT-INSTANCE-TYPE",
            f"cluster.instanceGroups[{data['cluster']['instanceGroups'].index(group)}].instanceType",
        )
    ]
    assert "did you mean ml.p5.48xlarge?" in str(error)
    assert "ml.g5.12xlarge?" not in str(error)


def test_a_quota_on_a_type_no_group_has_gets_only_a_close_hint() -> None:
    data = edited({"teams[0].compute.quotas": {"ml.p4d.24xlarge": 1}})
    issue = reported(policy_error(data), "HPT-QUOTA-UNKNOWN-TYPE", "teams[0].compute.quotas.ml.p4d.24xlarge")
    assert "did you mean" not in issue.fix

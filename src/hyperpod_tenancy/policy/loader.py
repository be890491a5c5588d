"""Load a :class:`~hyperpod_tenancy.policy.model.Platform` from YAML (camelCase keys).

Structural problems (unknown keys, wrong types, missing required keys) are collected together with the
semantic ones from :func:`~hyperpod_tenancy.policy.validation.validate_platform` and raised once as a
:class:`~hyperpod_tenancy.errors.PolicyError`.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy.model import (
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
    KueueChartSource,
    Platform,
    PodSecurityLevel,
    PreemptTeamTasks,
    PriorityClass,
    ResourceShape,
    SchedulingSpec,
    SharingStrategy,
    SystemNodeGroup,
    Team,
    TeamIdentity,
    WorkloadKind,
)
from hyperpod_tenancy.policy.validation import validate_platform

__all__ = ["load_platform", "platform_from_dict"]

E = TypeVar("E", bound=enum.Enum)
_MISSING: Any = object()


class _Reader:
    """Reads one mapping, recording every structural problem under its YAML path."""

    def __init__(self, data: object, path: str, issues: list[PolicyIssue], allowed: tuple[str, ...]):
        self.path = path
        self.issues = issues
        self.ok = True
        if not isinstance(data, Mapping):
            self._add(path, f"expected a mapping, got {_kind(data)} {data!r}.", "write it as `key: value` lines.")
            self.data: Mapping[str, Any] = {}
            return
        self.data = data
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}."
                self._add(self._at(str(key)), f"unknown key `{key}`.", f"remove it; {hint}")

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _add(self, path: str, message: str, fix: str, code: str = "HPT-SCHEMA") -> None:
        self.ok = False
        self.issues.append(PolicyIssue(path, message, fix, code))

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.data or self.data[key] is None:
            if required:
                self._add(self._at(key), "required key is missing.", f"add `{key}:` here.")
            return _MISSING
        return self.data[key]

    def str(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default is _MISSING)
        if value is _MISSING:
            return "" if default is _MISSING else default
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self._add(self._at(key), f"expected a string, got {_kind(value)} {value!r}.", "quote the value.")
            return "" if default is _MISSING else default
        return str(value)

    def int(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default is _MISSING)
        if value is _MISSING:
            return 0 if default is _MISSING else default
        if isinstance(value, bool) or not isinstance(value, int):
            self._add(
                self._at(key), f"expected a whole number, got {_kind(value)} {value!r}.", "write an integer."
            )
            return 0 if default is _MISSING else default
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self._get(key, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self._add(self._at(key), f"expected true or false, got {value!r}.", "write `true` or `false`.")
            return default
        return value

    def enum(self, key: str, cls: type[E], default: E) -> E:
        value = self._get(key, False)
        if value is _MISSING:
            return default
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in cls)
            self._add(self._at(key), f"{value!r} is not one of: {allowed}.", f"use one of: {allowed}.")
            return default

    def str_list(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        value = self._get(key, default is _MISSING)
        if value is _MISSING:
            return () if default is _MISSING else tuple(default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self._add(self._at(key), f"expected a list of strings, got {value!r}.", "write `[a, b]`.")
            return ()
        return tuple(value)

    def sub(self, key: str, allowed: tuple[str, ...], required: bool = True) -> _Reader | None:
        value = self._get(key, required)
        if value is _MISSING:
            return None
        return _Reader(value, self._at(key), self.issues, allowed)

    def items(self, key: str) -> list[tuple[str, object]]:
        value = self._get(key, True)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            self._add(self._at(key), f"expected a list, got {_kind(value)}.", "write one `- ` item per entry.")
            return []
        return [(f"{self._at(key)}[{i}]", item) for i, item in enumerate(value)]


def _kind(value: object) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


def _instance_group(path: str, data: object, issues: list[PolicyIssue]) -> InstanceGroup:
    r = _Reader(
        data,
        path,
        issues,
        (
            "name",
            "instanceType",
            "count",
            "reserved",
            "threadsPerCore",
            "deepHealthChecks",
            "availabilityZone",
            "trainingPlanArn",
            "ebsVolumeGiB",
            "resources",
        ),
    )
    checks: list[DeepHealthCheck] = []
    for i, raw in enumerate(r.str_list("deepHealthChecks", default=[c.value for c in DeepHealthCheck])):
        try:
            checks.append(DeepHealthCheck(raw))
        except ValueError:
            allowed = ", ".join(c.value for c in DeepHealthCheck)
            r._add(f"{path}.deepHealthChecks[{i}]", f"{raw!r} is not a deep health check.", f"use {allowed}.")
    resources = None
    res = r.sub("resources", ("accelerators", "vcpus", "memoryGiB", "acceleratorResource"), required=False)
    if res is not None:
        resources = ResourceShape(
            accelerators=res.int("accelerators"),
            vcpus=res.int("vcpus"),
            memory_gib=res.int("memoryGiB"),
            accelerator_resource=res.str("acceleratorResource", "nvidia.com/gpu"),
        )
    return InstanceGroup(
        name=r.str("name"),
        instance_type=r.str("instanceType"),
        count=r.int("count"),
        reserved=r.int("reserved", InstanceGroup.reserved),
        threads_per_core=r.int("threadsPerCore", InstanceGroup.threads_per_core),
        deep_health_checks=tuple(checks),
        availability_zone=r.str("availabilityZone", None),
        training_plan_arn=r.str("trainingPlanArn", None),
        ebs_volume_gib=r.int("ebsVolumeGiB", InstanceGroup.ebs_volume_gib),
        resources=resources,
    )


def _cluster(r: _Reader) -> ClusterSpec:
    groups = [_instance_group(p, d, r.issues) for p, d in r.items("instanceGroups")]
    sng = r.sub("systemNodeGroup", ("instanceType", "count"), required=False)
    system = SystemNodeGroup()
    if sng is not None:
        system = SystemNodeGroup(
            instance_type=sng.str("instanceType", system.instance_type), count=sng.int("count", system.count)
        )
    fsx_r = r.sub(
        "fsx", ("storageCapacityGiB", "deploymentType", "perUnitStorageThroughput"), required=False
    )
    fsx = FsxSpec()
    if fsx_r is not None:
        fsx = FsxSpec(
            storage_capacity_gib=fsx_r.int("storageCapacityGiB", fsx.storage_capacity_gib),
            deployment_type=fsx_r.str("deploymentType", fsx.deployment_type),
            per_unit_storage_throughput=fsx_r.int("perUnitStorageThroughput", fsx.per_unit_storage_throughput),
        )
    helm = HelmChartSource()
    helm_r = r.sub("hyperpodHelmChart", ("ociRepository", "version", "directory"))
    if helm_r is not None:
        helm = HelmChartSource(
            oci_repository=helm_r.str("ociRepository", None),
            version=helm_r.str("version", None),
            directory=helm_r.str("directory", None),
        )
    kueue = KueueChartSource()
    kueue_r = r.sub("kueueChart", ("repository", "version"), required=False)
    if kueue_r is not None:
        kueue = KueueChartSource(
            repository=kueue_r.str("repository", kueue.repository), version=kueue_r.str("version", kueue.version)
        )
    return ClusterSpec(
        name=r.str("name"),
        kubernetes_version=r.str("kubernetesVersion", ClusterSpec.kubernetes_version),
        availability_zones=r.str_list("availabilityZones"),
        vpc_cidr=r.str("vpcCidr", ClusterSpec.vpc_cidr),
        instance_groups=tuple(groups),
        system_node_group=system,
        fsx=fsx,
        hyperpod_helm_chart=helm,
        kueue_chart=kueue,
        observability=r.bool("observability", True),
        data_classification=r.str("dataClassification"),
        on_data_classification_mismatch=r.enum(
            "onDataClassificationMismatch", ClassificationMismatch, ClassificationMismatch.REFUSE
        ),
    )


def _scheduling(r: _Reader) -> SchedulingSpec:
    classes = []
    for path, data in r.items("priorityClasses"):
        pr = _Reader(data, path, r.issues, ("name", "weight", "preemptible"))
        classes.append(
            PriorityClass(name=pr.str("name"), weight=pr.int("weight"), preemptible=pr.bool("preemptible", False))
        )
    return SchedulingSpec(
        priority_classes=tuple(classes),
        fair_share=r.bool("fairShare", True),
        idle_resource_sharing=r.bool("idleResourceSharing", True),
        checkpoint_enforcement=r.enum(
            "checkpointEnforcement", CheckpointEnforcement, CheckpointEnforcement.DENY
        ),
    )


def _quotas(r: _Reader) -> dict[str, int]:
    value = r._get("quotas", True)
    if value is _MISSING:
        return {}
    if not isinstance(value, Mapping):
        r._add(f"{r.path}.quotas", f"expected a mapping of instance type to count, got {value!r}.",
               "write `ml.p5.48xlarge: 4`.")
        return {}
    quotas: dict[str, int] = {}
    for key, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int):
            r._add(f"{r.path}.quotas.{key}", f"expected a whole number of instances, got {count!r}.",
                   "write an integer.")
            continue
        quotas[str(key)] = count
    return quotas


def _team(path: str, data: object, issues: list[PolicyIssue]) -> Team:
    r = _Reader(
        data,
        path,
        issues,
        ("name", "compute", "identity", "allowedPriorityClasses", "dataClassification", "workload",
         "podSecurity", "studio"),
    )
    compute = ComputeAllocation(quotas={})
    cr = r.sub("compute", ("quotas", "sharing", "borrowLimit", "fairShareWeight", "preemptTeamTasks"))
    if cr is not None:
        compute = ComputeAllocation(
            quotas=_quotas(cr),
            sharing=cr.enum("sharing", SharingStrategy, SharingStrategy.LEND_AND_BORROW),
            borrow_limit=cr.int("borrowLimit", ComputeAllocation.borrow_limit),
            fair_share_weight=cr.int("fairShareWeight", ComputeAllocation.fair_share_weight),
            preempt_team_tasks=cr.enum("preemptTeamTasks", PreemptTeamTasks, PreemptTeamTasks.LOWER_PRIORITY),
        )
    identity = TeamIdentity(group_id="", posix_gid=0)
    ir = r.sub("identity", ("groupId", "posixGid", "permissionSetName"))
    if ir is not None:
        identity = TeamIdentity(
            group_id=ir.str("groupId"),
            posix_gid=ir.int("posixGid"),
            permission_set_name=ir.str("permissionSetName", None),
        )
    return Team(
        name=r.str("name"),
        compute=compute,
        identity=identity,
        allowed_priority_classes=r.str_list("allowedPriorityClasses"),
        data_classification=r.str("dataClassification", None),
        workload=r.enum("workload", WorkloadKind, WorkloadKind.TRAINING),
        pod_security=r.enum("podSecurity", PodSecurityLevel, PodSecurityLevel.BASELINE),
        studio=r.bool("studio", True),
    )


def _platform(data: object, issues: list[PolicyIssue]) -> Platform:
    root = _Reader(
        data,
        "",
        issues,
        ("name", "account", "region", "fairnessBackend", "cluster", "scheduling", "identityCenter", "teams"),
    )
    cluster_r = root.sub(
        "cluster",
        ("name", "kubernetesVersion", "availabilityZones", "vpcCidr", "instanceGroups", "systemNodeGroup", "fsx",
         "hyperpodHelmChart", "kueueChart", "observability", "dataClassification",
         "onDataClassificationMismatch"),
    )
    cluster = _cluster(cluster_r or _Reader({}, "cluster", [], ()))
    sched_r = root.sub(
        "scheduling", ("priorityClasses", "fairShare", "idleResourceSharing", "checkpointEnforcement")
    )
    scheduling = _scheduling(sched_r or _Reader({}, "scheduling", [], ()))
    ic = IdentityCenter(instance_arn="", region="")
    ic_r = root.sub("identityCenter", ("instanceArn", "region"))
    if ic_r is not None:
        ic = IdentityCenter(instance_arn=ic_r.str("instanceArn"), region=ic_r.str("region"))
    teams = tuple(_team(p, d, issues) for p, d in root.items("teams"))
    return Platform(
        name=root.str("name"),
        account=root.str("account"),
        region=root.str("region"),
        fairness_backend=root.enum("fairnessBackend", FairnessBackend, FairnessBackend.TASK_GOVERNANCE),
        cluster=cluster,
        scheduling=scheduling,
        identity_center=ic,
        teams=teams,
    )


def platform_from_dict(data: object, *, source: str | None = None) -> Platform:
    """Build and validate a platform from parsed YAML/JSON data.

    Raises:
        PolicyError: every structural and semantic problem, listed together.
    """
    issues: list[PolicyIssue] = []
    platform = _platform(data, issues)
    broken = [i.path for i in issues]
    for issue in validate_platform(platform, raise_on_error=False):
        # a value that failed to parse is reported once, not again by the rule that reads it
        if not any(issue.path == p or issue.path.startswith((p + ".", p + "[")) for p in broken):
            issues.append(issue)
    if issues:
        raise PolicyError(issues, source)
    return platform


def load_platform(path: str | Path) -> Platform:
    """Load and validate ``platform.yaml``.

    Raises:
        PolicyError: the file is not valid YAML or the policy is invalid (all problems listed).
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise PolicyError(
            [PolicyIssue(where, f"not valid YAML: {getattr(exc, 'problem', exc)}.", "fix the YAML syntax.",
                         "HPT-YAML")],
            str(path),
        ) from None
    return platform_from_dict(data, source=str(path))



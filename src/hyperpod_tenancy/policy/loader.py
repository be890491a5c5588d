"""Load a :class:`~hyperpod_tenancy.policy.model.Platform` from YAML (camelCase keys).

Structural problems (unknown keys, wrong types, missing required keys, duplicate YAML keys) are
collected together with the semantic ones from
:func:`~hyperpod_tenancy.policy.validation.validate_platform` and raised once as a
:class:`~hyperpod_tenancy.errors.PolicyError`.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy.model import (
    DEFAULT_MAX_CHECKPOINT_INTERVAL,
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
    KubeRayChartSource,
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
_SCHEMA = "HPT-SCHEMA"
_YAML = "HPT-YAML"
#: Path shown for the document itself (the root mapping has no key).
_ROOT = "(document)"

_PLATFORM_KEYS = (
    "name",
    "account",
    "region",
    "fairnessBackend",
    "cluster",
    "scheduling",
    "identityCenter",
    "teams",
)
_CLUSTER_KEYS = (
    "name",
    "kubernetesVersion",
    "availabilityZones",
    "vpcCidr",
    "serviceCidr",
    "instanceGroups",
    "systemNodeGroup",
    "fsx",
    "hyperpodHelmChart",
    "kueueChart",
    "kuberayChart",
    "observability",
    "dataClassification",
    "onDataClassificationMismatch",
)
_GROUP_KEYS = (
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
)
_SCHEDULING_KEYS = ("priorityClasses", "fairShare", "idleResourceSharing", "checkpointEnforcement")
_TEAM_KEYS = (
    "name",
    "compute",
    "identity",
    "allowedPriorityClasses",
    "dataClassification",
    "workload",
    "podSecurity",
    "studio",
)
_COMPUTE_KEYS = ("quotas", "sharing", "borrowLimit", "fairShareWeight", "preemptTeamTasks")


class _Reader:
    """Reads one mapping, recording every structural problem under its YAML path."""

    def __init__(self, data: object, path: str, issues: list[PolicyIssue], allowed: tuple[str, ...]) -> None:
        self.path = path
        self.issues = issues
        self.data: Mapping[Any, Any] = {}
        #: False when ``data`` is not a mapping: its keys are then not reported one by one as missing.
        self.readable = isinstance(data, Mapping)
        if not isinstance(data, Mapping):
            self.add(
                path or _ROOT,
                f"expected a mapping, got {_kind(data)} {data!r}.",
                "write it as indented `key: value` lines.",
            )
            return
        self.data = data
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"did you mean `{close[0]}`?" if close else f"allowed keys here: {', '.join(allowed)}."
                self.add(self.at(str(key)), f"unknown key `{key}`.", f"remove or rename it; {hint}")

    def at(self, key: str) -> str:
        """Return the YAML path of ``key`` in this mapping."""
        return f"{self.path}.{key}" if self.path else key

    def add(self, path: str, message: str, fix: str) -> None:
        """Record a structural problem."""
        self.issues.append(PolicyIssue(path, message, fix, _SCHEMA))

    def get(self, key: str, *, required: bool) -> Any:
        """Return the raw value of ``key`` or ``_MISSING``, reporting a missing required key."""
        if key not in self.data or self.data[key] is None:
            if required and self.readable:
                self.add(
                    self.at(key), "required key is missing (or empty).", f"add `{key}:` with a value here."
                )
            return _MISSING
        return self.data[key]

    def text(self, key: str, default: Any = _MISSING) -> Any:
        """Read a string (numbers are accepted and converted: YAML reads unquoted `1234` as a number)."""
        value = self.get(key, required=default is _MISSING)
        fallback = "" if default is _MISSING else default
        if value is _MISSING:
            return fallback
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self.add(
                self.at(key),
                f"expected a string, got {_kind(value)} {value!r}.",
                "quote the value so YAML reads it as text (unquoted, 1.30 is the number 1.3)."
                if isinstance(value, float)
                else f'write a single string, e.g. `{key}: "text"`.',
            )
            return fallback
        return str(value)

    def integer(self, key: str, default: Any = _MISSING) -> Any:
        """Read a whole number."""
        value = self.get(key, required=default is _MISSING)
        fallback = 0 if default is _MISSING else default
        if value is _MISSING:
            return fallback
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(
                self.at(key),
                f"expected a whole number, got {_kind(value)} {value!r}.",
                "write an unquoted integer, e.g. `4`.",
            )
            return fallback
        return value

    def flag(self, key: str, default: bool) -> bool:
        """Read a boolean."""
        value = self.get(key, required=False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.add(
                self.at(key),
                f"expected true or false, got {_kind(value)} {value!r}.",
                "write `true` or `false`.",
            )
            return default
        return value

    def choice(self, key: str, cls: type[E], default: E) -> E:
        """Read one value of an enumeration."""
        value = self.get(key, required=False)
        if value is _MISSING:
            return default
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in cls)
            self.add(self.at(key), f"{value!r} is not one of: {allowed}.", f"use one of: {allowed}.")
            return default

    def strings(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        """Read a list of strings."""
        value = self.get(key, required=default is _MISSING)
        if value is _MISSING:
            return () if default is _MISSING else tuple(default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.add(
                self.at(key),
                f"expected a list of strings, got {_kind(value)} {value!r}.",
                "write a list, e.g. `[a, b]`.",
            )
            return ()
        return tuple(value)

    def sub(self, key: str, allowed: tuple[str, ...], *, required: bool = True) -> _Reader | None:
        """Return a reader for the nested mapping under ``key`` (None when absent)."""
        value = self.get(key, required=required)
        if value is _MISSING:
            return None
        return _Reader(value, self.at(key), self.issues, allowed)

    def items(self, key: str) -> list[tuple[str, object]]:
        """``(path, item)`` for each entry of the required list under ``key``."""
        value = self.get(key, required=True)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            self.add(
                self.at(key),
                f"expected a list, got {_kind(value)} {value!r}.",
                "write one `- ` item per entry.",
            )
            return []
        return [(f"{self.at(key)}[{i}]", item) for i, item in enumerate(value)]


def _kind(value: object) -> str:
    kinds = {
        type(None): "nothing",
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "list",
        dict: "mapping",
    }
    return kinds.get(type(value), type(value).__name__)


def _instance_group(path: str, data: object, issues: list[PolicyIssue]) -> InstanceGroup:
    r = _Reader(data, path, issues, _GROUP_KEYS)
    checks: list[DeepHealthCheck] = []
    for i, raw in enumerate(r.strings("deepHealthChecks", default=[c.value for c in DeepHealthCheck])):
        try:
            checks.append(DeepHealthCheck(raw))
        except ValueError:
            allowed = ", ".join(c.value for c in DeepHealthCheck)
            r.add(f"{path}.deepHealthChecks[{i}]", f"{raw!r} is not a deep health check.", f"use {allowed}.")
    resources = None
    res = r.sub("resources", ("accelerators", "vcpus", "memoryGiB", "acceleratorResource"), required=False)
    if res is not None:
        resources = ResourceShape(
            accelerators=res.integer("accelerators"),
            vcpus=res.integer("vcpus"),
            memory_gib=res.integer("memoryGiB"),
            accelerator_resource=res.text("acceleratorResource", "nvidia.com/gpu"),
        )
    return InstanceGroup(
        name=r.text("name"),
        instance_type=r.text("instanceType"),
        count=r.integer("count"),
        reserved=r.integer("reserved", InstanceGroup.reserved),
        threads_per_core=r.integer("threadsPerCore", InstanceGroup.threads_per_core),
        deep_health_checks=tuple(checks),
        availability_zone=r.text("availabilityZone", None),
        training_plan_arn=r.text("trainingPlanArn", None),
        ebs_volume_gib=r.integer("ebsVolumeGiB", InstanceGroup.ebs_volume_gib),
        resources=resources,
    )


_Chart = TypeVar("_Chart", KueueChartSource, KubeRayChartSource)


def _chart_source(r: _Reader, key: str, default: _Chart) -> _Chart:
    """Read an optional ``{repository, version}`` chart block; absent keys keep ``default``'s values."""
    sub = r.sub(key, ("repository", "version"), required=False)
    if sub is None:
        return default
    return dataclasses.replace(
        default,
        repository=sub.text("repository", default.repository),
        version=sub.text("version", default.version),
    )


def _cluster(r: _Reader) -> ClusterSpec:
    groups = [_instance_group(p, d, r.issues) for p, d in r.items("instanceGroups")]
    system = SystemNodeGroup()
    sng = r.sub("systemNodeGroup", ("instanceType", "count"), required=False)
    if sng is not None:
        system = SystemNodeGroup(
            instance_type=sng.text("instanceType", system.instance_type),
            count=sng.integer("count", system.count),
        )
    fsx = FsxSpec()
    fsx_r = r.sub("fsx", ("storageCapacityGiB", "deploymentType", "perUnitStorageThroughput"), required=False)
    if fsx_r is not None:
        fsx = FsxSpec(
            storage_capacity_gib=fsx_r.integer("storageCapacityGiB", fsx.storage_capacity_gib),
            deployment_type=fsx_r.text("deploymentType", fsx.deployment_type),
            per_unit_storage_throughput=fsx_r.integer(
                "perUnitStorageThroughput", fsx.per_unit_storage_throughput
            ),
        )
    helm = HelmChartSource()
    helm_r = r.sub("hyperpodHelmChart", ("ociRepository", "version", "directory"))
    if helm_r is not None:
        helm = HelmChartSource(
            oci_repository=helm_r.text("ociRepository", None),
            version=helm_r.text("version", None),
            directory=helm_r.text("directory", None),
        )
    kueue = _chart_source(r, "kueueChart", KueueChartSource())
    kuberay = _chart_source(r, "kuberayChart", KubeRayChartSource())
    return ClusterSpec(
        name=r.text("name"),
        kubernetes_version=r.text("kubernetesVersion", ClusterSpec.kubernetes_version),
        availability_zones=r.strings("availabilityZones"),
        vpc_cidr=r.text("vpcCidr", ClusterSpec.vpc_cidr),
        service_cidr=r.text("serviceCidr", ClusterSpec.service_cidr),
        instance_groups=tuple(groups),
        system_node_group=system,
        fsx=fsx,
        hyperpod_helm_chart=helm,
        kueue_chart=kueue,
        kuberay_chart=kuberay,
        observability=r.flag("observability", True),
        data_classification=r.text("dataClassification"),
        on_data_classification_mismatch=r.choice(
            "onDataClassificationMismatch", ClassificationMismatch, ClassificationMismatch.REFUSE
        ),
    )


def _scheduling(r: _Reader) -> SchedulingSpec:
    classes = []
    for path, data in r.items("priorityClasses"):
        pr = _Reader(data, path, r.issues, ("name", "weight", "preemptible", "maxCheckpointInterval"))
        classes.append(
            PriorityClass(
                name=pr.text("name"),
                weight=pr.integer("weight"),
                preemptible=pr.flag("preemptible", False),
                max_checkpoint_interval=pr.text("maxCheckpointInterval", DEFAULT_MAX_CHECKPOINT_INTERVAL),
            )
        )
    return SchedulingSpec(
        priority_classes=tuple(classes),
        fair_share=r.flag("fairShare", True),
        idle_resource_sharing=r.flag("idleResourceSharing", True),
        checkpoint_enforcement=r.choice(
            "checkpointEnforcement", CheckpointEnforcement, CheckpointEnforcement.DENY
        ),
    )


def _quotas(r: _Reader) -> dict[str, int]:
    value = r.get("quotas", required=True)
    if value is _MISSING:
        return {}
    if not isinstance(value, Mapping):
        r.add(
            r.at("quotas"),
            f"expected a mapping of instance type to instance count, got {_kind(value)} {value!r}.",
            "write e.g. `quotas: {ml.p5.48xlarge: 4}`.",
        )
        return {}
    quotas: dict[str, int] = {}
    for key, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int):
            r.add(
                r.at(f"quotas.{key}"),
                f"expected a whole number of instances, got {_kind(count)} {count!r}.",
                "write an unquoted integer, e.g. `4`.",
            )
            continue
        quotas[str(key)] = count
    return quotas


def _team(path: str, data: object, issues: list[PolicyIssue]) -> Team:
    r = _Reader(data, path, issues, _TEAM_KEYS)
    compute = ComputeAllocation(quotas={})
    cr = r.sub("compute", _COMPUTE_KEYS)
    if cr is not None:
        compute = ComputeAllocation(
            quotas=_quotas(cr),
            sharing=cr.choice("sharing", SharingStrategy, SharingStrategy.LEND_AND_BORROW),
            borrow_limit=cr.integer("borrowLimit", ComputeAllocation.borrow_limit),
            fair_share_weight=cr.integer("fairShareWeight", ComputeAllocation.fair_share_weight),
            preempt_team_tasks=cr.choice(
                "preemptTeamTasks", PreemptTeamTasks, PreemptTeamTasks.LOWER_PRIORITY
            ),
        )
    identity = TeamIdentity(group_id="", posix_gid=0)
    ir = r.sub("identity", ("groupId", "posixGid", "permissionSetName"))
    if ir is not None:
        identity = TeamIdentity(
            group_id=ir.text("groupId"),
            posix_gid=ir.integer("posixGid"),
            permission_set_name=ir.text("permissionSetName", None),
        )
    return Team(
        name=r.text("name"),
        compute=compute,
        identity=identity,
        allowed_priority_classes=r.strings("allowedPriorityClasses"),
        data_classification=r.text("dataClassification", None),
        workload=r.choice("workload", WorkloadKind, WorkloadKind.TRAINING),
        pod_security=r.choice("podSecurity", PodSecurityLevel, PodSecurityLevel.BASELINE),
        studio=r.flag("studio", True),
    )


def _platform(data: Mapping[Any, Any], issues: list[PolicyIssue]) -> Platform:
    root = _Reader(data, "", issues, _PLATFORM_KEYS)
    cluster_r = root.sub("cluster", _CLUSTER_KEYS)
    cluster = _cluster(cluster_r or _Reader({}, "cluster", [], ()))
    sched_r = root.sub("scheduling", _SCHEDULING_KEYS)
    scheduling = _scheduling(sched_r or _Reader({}, "scheduling", [], ()))
    ic = IdentityCenter(instance_arn="", region="")
    ic_r = root.sub("identityCenter", ("instanceArn", "region"))
    if ic_r is not None:
        ic = IdentityCenter(instance_arn=ic_r.text("instanceArn"), region=ic_r.text("region"))
    teams = tuple(_team(p, d, issues) for p, d in root.items("teams"))
    return Platform(
        name=root.text("name"),
        account=root.text("account"),
        region=root.text("region"),
        fairness_backend=root.choice("fairnessBackend", FairnessBackend, FairnessBackend.TASK_GOVERNANCE),
        cluster=cluster,
        scheduling=scheduling,
        identity_center=ic,
        teams=teams,
    )


def _related(a: str, b: str) -> bool:
    """Whether one YAML path is the other or lies inside it."""
    return a == b or a.startswith((b + ".", b + "[")) or b.startswith((a + ".", a + "["))


def _inputs(issue: PolicyIssue) -> tuple[str, ...]:
    """Paths a semantic rule reads besides the issue's own path (cross-references)."""
    if issue.code in ("HPT-QUOTA-UNKNOWN-TYPE", "HPT-QUOTA-CAPACITY"):
        return ("cluster.instanceGroups",)
    if issue.code == "HPT-PRIORITY-UNKNOWN":
        return ("scheduling.priorityClasses",)
    if issue.code == "HPT-AZ":
        return ("region", "cluster.availabilityZones")
    return ()


def _build(data: object, source: str | None, issues: list[PolicyIssue]) -> Platform:
    if not isinstance(data, Mapping):
        shown = "an empty document" if data is None else f"{_kind(data)} {data!r}"
        issues.append(
            PolicyIssue(
                _ROOT,
                f"expected a mapping of platform settings at the top level, got {shown}.",
                "start from the reference platform.yaml (top-level keys: name, account, region, cluster...).",
                _SCHEMA,
            )
        )
        raise PolicyError(issues, source)
    structural: list[PolicyIssue] = []
    platform = _platform(data, structural)
    issues.extend(structural)
    broken = [i.path for i in structural]
    for issue in validate_platform(platform, raise_on_error=False):
        # a value that failed to parse is reported once, not again by the rules that read it
        reads = (issue.path, *_inputs(issue))
        if not any(_related(path, bad) for path in reads for bad in broken):
            issues.append(issue)
    if issues:
        raise PolicyError(issues, source)
    return platform


def platform_from_dict(data: object, *, source: str | None = None) -> Platform:
    """Build and validate a platform from parsed YAML/JSON data (camelCase keys, as in ``platform.yaml``).

    Args:
        data: the parsed document, e.g. ``yaml.safe_load(text)``.
        source: where the data came from (a file name), shown in the error.

    Raises:
        PolicyError: every structural and semantic problem, listed together.

    """
    return _build(data, source, [])


class _DuplicateKeyLoader(yaml.SafeLoader):
    """``SafeLoader`` that records duplicate mapping keys (plain PyYAML silently keeps the last one)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicate_keys: list[PolicyIssue] = []


def _construct_mapping(loader: _DuplicateKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    first_line: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = first_line.get(key)
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        mark = key_node.start_mark
        if seen is not None and key != "<<":
            loader.duplicate_keys.append(
                PolicyIssue(
                    f"line {mark.line + 1}, column {mark.column + 1}",
                    f"duplicate key `{key}` (first defined on line {seen}); YAML would silently keep "
                    "only the last value.",
                    "remove one of the two entries or merge them.",
                    _YAML,
                )
            )
        else:
            first_line[key] = mark.line + 1
    return loader.construct_mapping(node, deep=True)


_DuplicateKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse(text: str, source: str) -> tuple[object, list[PolicyIssue]]:
    loader = _DuplicateKeyLoader(text)
    try:
        return loader.get_single_data(), loader.duplicate_keys
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(document)"
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        context_mark = getattr(exc, "context_mark", None)
        if context and context_mark is not None:
            problem += (
                f" ({context} started on line {context_mark.line + 1}, column {context_mark.column + 1})"
            )
        elif context:
            problem += f" ({context})"
        issue = PolicyIssue(
            where,
            f"not valid YAML: {problem}.",
            "fix the YAML syntax at that position (indent with spaces, close brackets and quotes).",
            _YAML,
        )
        raise PolicyError([issue], source) from None
    finally:
        loader.dispose()


def load_platform(path: str | Path) -> Platform:
    """Load and validate ``platform.yaml``.

    Args:
        path: the YAML file.

    Raises:
        PolicyError: the file is not valid YAML or the policy is invalid (all problems listed).
        OSError: the file cannot be read (e.g. ``FileNotFoundError``).

    """
    source = str(path)
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        issue = PolicyIssue(
            f"byte {exc.start}", f"the file is not UTF-8 text ({exc.reason}).", "save it as UTF-8.", _YAML
        )
        raise PolicyError([issue], source) from None
    data, duplicates = _parse(text, source)
    return _build(data, source, duplicates)

"""Semantic rules of a platform policy.

Every rule has a stable code (``HPT-...``), names the YAML path of the bad value, quotes it and says how
to fix it. :func:`validate_platform` returns (or raises) every error at once; :func:`policy_warnings`
returns the problems that should not stop synthesis but must be seen.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections import defaultdict

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy._accepted_types import HYPERPOD_INSTANCE_TYPES
from hyperpod_tenancy.policy._typecheck import type_issues
from hyperpod_tenancy.policy.instance_types import RESOURCE_CATALOGUE
from hyperpod_tenancy.policy.model import (
    MAX_CHECKPOINT_INTERVAL_CEILING,
    ClassificationMismatch,
    FairnessBackend,
    InstanceGroup,
    Platform,
    PodSecurityLevel,
    Team,
    WorkloadKind,
    interval_minutes,
)

__all__ = [
    "MAX_PRIORITY_CLASSES",
    "MAX_TEAM_NAME",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "policy_warnings",
    "validate_platform",
]

#: Kubernetes versions this release is tested with (Task Governance needs >= 1.30; kubectl layer v1.33).
SUPPORTED_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33")
#: Task Governance allows at most 10 priority classes.
MAX_PRIORITY_CLASSES = 10
#: Longest team name whose derived names all fit in a 63-character label value.
MAX_TEAM_NAME = names.LABEL_VALUE_MAX - len(names.cluster_queue(""))
#: Regions where cfn-lint 1.58 registers both Task Governance resource types.
TASK_GOVERNANCE_CONFIRMED_REGIONS = ("us-east-1",)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HYPERPOD_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_PRIORITY_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$")
_SSO_INSTANCE = re.compile(r"^arn:aws[a-z-]*:sso:::instance/(sso)?ins-[a-zA-Z0-9-.]{16}$")
_TRAINING_PLAN = re.compile(r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*$")
_PERMISSION_SET = re.compile(r"^[\w+=,.@-]{1,32}$")
#: Identity store group ID, as AWS::SSO::Assignment PrincipalId accepts it.
_GROUP_ID = re.compile(
    r"^([0-9a-f]{10}-|)[A-Fa-f0-9]{8}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{12}$"
)
_FSX_TYPES = ("PERSISTENT_2", "PERSISTENT_1", "SCRATCH_2")
_FSX_PERSISTENT_2_THROUGHPUT = (125, 250, 500, 1000)
_BORROW_LIMIT_RANGE = (1, 500)
_WEIGHT_RANGE = (0, 100)
_MAX_INSTANCE_COUNT = 6758
_MAX_QUOTA_ENTRIES = 15


class _Issues:
    def __init__(self) -> None:
        self.items: list[PolicyIssue] = []

    def add(self, code: str, path: str, message: str, fix: str) -> None:
        self.items.append(PolicyIssue(path, message, fix, code))


def validate_platform(platform: Platform, *, raise_on_error: bool = True) -> list[PolicyIssue]:
    """Check every rule and return the errors (or raise them together).

    A platform built in Python is first checked for wrong field types (``HPT-SCHEMA``, e.g. ``count="16"``);
    when there are any, only those are reported, because the other rules cannot read such values.

    Args:
        platform: the policy to check.
        raise_on_error: raise :class:`PolicyError` when any error is found (default).

    Returns:
        Every error found (empty when the policy is valid).

    Raises:
        PolicyError: at least one error, with all of them listed.

    """
    wrong_types = type_issues(platform, Platform)
    if wrong_types:
        if raise_on_error:
            raise PolicyError(wrong_types)
        return wrong_types
    out = _Issues()
    _check_platform(platform, out)
    _check_cluster(platform, out)
    _check_scheduling(platform, out)
    _check_teams(platform, out)
    _check_capacity(platform, out)
    if out.items and raise_on_error:
        raise PolicyError(out.items)
    return out.items


def _check_platform(p: Platform, out: _Issues) -> None:
    if not _DNS_LABEL.match(p.name) or len(p.name) > 32:
        out.add(
            "HPT-NAME",
            "name",
            f"{p.name!r} is not a lowercase DNS label of at most 32 characters.",
            "use lowercase letters, digits and '-', e.g. `ml-platform`.",
        )
    if not _ACCOUNT.match(p.account):
        out.add(
            "HPT-ACCOUNT",
            "account",
            f"{p.account!r} is not a 12-digit AWS account ID.",
            'quote the account ID, e.g. "111122223333".',
        )
    if not _REGION.match(p.region):
        out.add("HPT-REGION", "region", f"{p.region!r} is not an AWS region name.", "use e.g. `us-east-1`.")
    if not _SSO_INSTANCE.match(p.identity_center.instance_arn):
        out.add(
            "HPT-IDENTITY-CENTER",
            "identityCenter.instanceArn",
            f"{p.identity_center.instance_arn!r} is not an IAM Identity Center instance ARN.",
            "copy it from `aws sso-admin list-instances` (arn:aws:sso:::instance/ssoins-...).",
        )
    if not _REGION.match(p.identity_center.region):
        out.add(
            "HPT-REGION",
            "identityCenter.region",
            f"{p.identity_center.region!r} is not an AWS region name.",
            "use the Identity Center home region, e.g. `us-east-1`.",
        )
    elif _REGION.match(p.region) and p.identity_center.region != p.region:
        # CloudFormation creates AWS::SSO::* resources in the stack's region, and Identity Center accepts them
        # only in its home region; an SSO-auth SageMaker domain must be in that region too.
        out.add(
            "HPT-IDENTITY-CENTER-REGION",
            "identityCenter.region",
            f"Identity Center lives in {p.identity_center.region!r} but the platform deploys to {p.region!r}: "
            "the team stacks create the permission sets, account assignments and Studio application assignments "
            "in the stack's region, where Identity Center would reject them, and SSO-auth Studio domains need "
            "the Identity Center region.",
            f"deploy the platform in {p.identity_center.region} (set `region: {p.identity_center.region}`), or "
            "correct identityCenter.region; the stacks must also deploy in the organization's management account "
            "or an Identity Center delegated administrator account.",
        )


def _check_cluster(p: Platform, out: _Issues) -> None:
    c = p.cluster
    if not _HYPERPOD_NAME.match(c.name):
        out.add(
            "HPT-NAME",
            "cluster.name",
            f"{c.name!r} is not a valid HyperPod cluster name.",
            "use 1-63 letters, digits and hyphens, starting and ending with a letter or digit.",
        )
    if c.kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
        out.add(
            "HPT-K8S-VERSION",
            "cluster.kubernetesVersion",
            f"{c.kubernetes_version!r} is not supported.",
            f"use one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (Task Governance needs 1.30 or later).",
        )
    _check_network(p, out)
    _check_instance_groups(p, out)
    _check_fsx(p, out)
    _check_kueue_flavor_shapes(p, out)
    _check_helm_chart(p, out)
    if not _DNS_LABEL.match(c.data_classification):
        out.add(
            "HPT-DATA-CLASSIFICATION",
            "cluster.dataClassification",
            f"{c.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`.",
        )


def _check_network(p: Platform, out: _Issues) -> None:
    c = p.cluster
    zones = c.availability_zones
    if len(set(zones)) < 2:
        out.add(
            "HPT-AZ",
            "cluster.availabilityZones",
            f"{list(zones)!r} names fewer than two distinct zones.",
            "list at least two zones of the region (EKS needs subnets in two zones).",
        )
    for i, zone in enumerate(zones):
        if not (zone.startswith(p.region) and len(zone) > len(p.region)):
            out.add(
                "HPT-AZ",
                f"cluster.availabilityZones[{i}]",
                f"{zone!r} is not a zone of region {p.region}.",
                f"use a zone such as {p.region}a.",
            )
    net: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    try:
        net = ipaddress.ip_network(c.vpc_cidr)
        if net.version != 4 or net.prefixlen > 20:
            raise ValueError
    except ValueError:
        out.add(
            "HPT-VPC-CIDR",
            "cluster.vpcCidr",
            f"{c.vpc_cidr!r} is not an IPv4 CIDR of /20 or larger.",
            "use e.g. 10.192.0.0/16.",
        )
        net = None
    _check_service_cidr(c.service_cidr, net, out)


#: EKS accepts a Service CIDR inside these blocks, /12 to /24, not overlapping the VPC
#: (https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html).
_PRIVATE_BLOCKS = tuple(ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def _check_service_cidr(
    service_cidr: str, vpc: ipaddress.IPv4Network | ipaddress.IPv6Network | None, out: _Issues
) -> None:
    net: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    try:
        net = ipaddress.ip_network(service_cidr)
    except ValueError:
        net = None
    if (
        not isinstance(net, ipaddress.IPv4Network)
        or not 12 <= net.prefixlen <= 24
        or not any(net.subnet_of(block) for block in _PRIVATE_BLOCKS)
    ):
        out.add(
            "HPT-SERVICE-CIDR",
            "cluster.serviceCidr",
            f"{service_cidr!r} is not an IPv4 CIDR from /12 to /24 inside 10.0.0.0/8, 172.16.0.0/12 or "
            "192.168.0.0/16 (what EKS accepts).",
            "use e.g. 172.20.0.0/16.",
        )
    elif isinstance(vpc, ipaddress.IPv4Network) and net.overlaps(vpc):
        out.add(
            "HPT-SERVICE-CIDR",
            "cluster.serviceCidr",
            f"{service_cidr!r} overlaps cluster.vpcCidr {str(vpc)!r}; EKS refuses a Service CIDR inside the VPC.",
            "pick a block outside the VPC, e.g. 172.20.0.0/16 (or 10.100.0.0/16 if the VPC is in 172.16.0.0/12).",
        )


def _check_instance_groups(p: Platform, out: _Issues) -> None:
    c = p.cluster
    if not c.instance_groups:
        out.add(
            "HPT-INSTANCE-GROUPS",
            "cluster.instanceGroups",
            "no instance groups are defined.",
            "add at least one GPU instance group.",
        )
    seen: set[str] = set()
    for i, g in enumerate(c.instance_groups):
        _check_group(p, g, f"cluster.instanceGroups[{i}]", out)
        if g.name in seen:
            out.add(
                "HPT-DUPLICATE",
                f"cluster.instanceGroups[{i}].name",
                f"instance group {g.name!r} is defined twice.",
                "give every instance group a unique name.",
            )
        seen.add(g.name)
    if c.system_node_group.count < 1:
        out.add(
            "HPT-COUNT",
            "cluster.systemNodeGroup.count",
            f"{c.system_node_group.count} is not positive.",
            "run at least one system node (two for availability).",
        )
    if c.system_node_group.instance_type.startswith("ml."):
        out.add(
            "HPT-INSTANCE-TYPE",
            "cluster.systemNodeGroup.instanceType",
            f"{c.system_node_group.instance_type!r} is a SageMaker type; system nodes are EKS managed "
            "EC2 nodes.",
            "use an EC2 type such as m7i.xlarge.",
        )


def _check_helm_chart(p: Platform, out: _Issues) -> None:
    h = p.cluster.hyperpod_helm_chart
    if bool(h.directory) == bool(h.oci_repository):
        state = (
            f"both `ociRepository` ({h.oci_repository!r}) and `directory` ({h.directory!r}) are set"
            if h.directory
            else "neither `ociRepository` nor `directory` is set"
        )
        out.add(
            "HPT-HELM-CHART",
            "cluster.hyperpodHelmChart",
            f"{state}; exactly one is needed.",
            "mirror the chart to your registry and set `ociRepository` + `version`, or vendor it as "
            "`directory`.",
        )
    elif h.oci_repository and (not h.oci_repository.startswith("oci://") or not h.version):
        out.add(
            "HPT-HELM-CHART",
            "cluster.hyperpodHelmChart.ociRepository",
            f"{h.oci_repository!r} needs the oci:// scheme and a `version`.",
            "write e.g. `ociRepository: oci://<account>.dkr.ecr.<region>.amazonaws.com/hyperpod/"
            "hyperpod-helm-chart` and `version: 0.1.0`.",
        )


def _check_group(p: Platform, g: InstanceGroup, path: str, out: _Issues) -> None:
    if not _HYPERPOD_NAME.match(g.name):
        out.add(
            "HPT-NAME",
            f"{path}.name",
            f"{g.name!r} is not a valid instance group name.",
            "use 1-63 letters, digits and hyphens, starting and ending with a letter or digit.",
        )
    if g.instance_type not in HYPERPOD_INSTANCE_TYPES:
        close = difflib.get_close_matches(g.instance_type, sorted(HYPERPOD_INSTANCE_TYPES), n=1)
        hint = f"did you mean {close[0]}?" if close else "HyperPod types look like ml.p5.48xlarge."
        out.add(
            "HPT-INSTANCE-TYPE",
            f"{path}.instanceType",
            f"{g.instance_type!r} is not an instance type HyperPod accepts (SageMaker ClusterInstanceType).",
            f"use an accepted `ml.` instance type; {hint}",
        )
    if g.count < 1:
        out.add(
            "HPT-COUNT",
            f"{path}.count",
            f"{g.count} is not a positive number of instances.",
            "set count to 1 or more, or remove the group.",
        )
    elif g.count > _MAX_INSTANCE_COUNT:
        out.add(
            "HPT-COUNT",
            f"{path}.count",
            f"{g.count} exceeds HyperPod's limit of {_MAX_INSTANCE_COUNT}.",
            f"use at most {_MAX_INSTANCE_COUNT}.",
        )
    if g.reserved < 0 or (g.count >= 1 and g.reserved > g.count):
        out.add(
            "HPT-RESERVED",
            f"{path}.reserved",
            f"{g.reserved} must be between 0 and count ({g.count}).",
            "keep at least 1 node in reserve so quotas hold while HyperPod replaces a node.",
        )
    if g.threads_per_core not in (1, 2):
        out.add(
            "HPT-THREADS",
            f"{path}.threadsPerCore",
            f"{g.threads_per_core} is not 1 or 2.",
            "use 1 (no hyperthreading) or 2.",
        )
    if g.availability_zone is not None and g.availability_zone not in p.cluster.availability_zones:
        out.add(
            "HPT-AZ",
            f"{path}.availabilityZone",
            f"{g.availability_zone!r} is not one of cluster.availabilityZones "
            f"{list(p.cluster.availability_zones)}.",
            "add the zone to cluster.availabilityZones or pick one of them.",
        )
    if g.training_plan_arn is not None and not _TRAINING_PLAN.match(g.training_plan_arn):
        out.add(
            "HPT-TRAINING-PLAN",
            f"{path}.trainingPlanArn",
            f"{g.training_plan_arn!r} is not a training plan ARN.",
            "copy it from `aws sagemaker list-training-plans`.",
        )
    if not 1 <= g.ebs_volume_gib <= 16384:
        out.add("HPT-EBS", f"{path}.ebsVolumeGiB", f"{g.ebs_volume_gib} is outside 1-16384.", "use e.g. 500.")
    if len(set(g.deep_health_checks)) != len(g.deep_health_checks):
        out.add(
            "HPT-DUPLICATE",
            f"{path}.deepHealthChecks",
            "a deep health check is listed twice.",
            "list each check once.",
        )
    if g.resources is not None and (
        g.resources.accelerators < 0 or g.resources.vcpus < 1 or g.resources.memory_gib < 1
    ):
        out.add(
            "HPT-RESOURCES",
            f"{path}.resources",
            f"{g.resources} has a non-positive cpu/memory figure.",
            "give the per-instance accelerators (>=0), vcpus (>=1) and memoryGiB (>=1).",
        )
    if (
        p.fairness_backend is FairnessBackend.KUEUE
        and g.resources is None
        and g.instance_type in HYPERPOD_INSTANCE_TYPES
        and g.instance_type not in RESOURCE_CATALOGUE
    ):
        out.add(
            "HPT-RESOURCES",
            f"{path}.resources",
            f"{g.instance_type} has no built-in resource figures, and the kueue backend needs them to turn "
            "instance counts into ClusterQueue GPU/CPU/memory quotas.",
            "add `resources: {accelerators: N, vcpus: N, memoryGiB: N}` to the group.",
        )


def _check_kueue_flavor_shapes(p: Platform, out: _Issues) -> None:
    """Kueue has one ResourceFlavor per instance type: groups of one type must describe the same nodes."""
    if p.fairness_backend is not FairnessBackend.KUEUE:
        return
    first: dict[str, tuple[int, InstanceGroup]] = {}
    for i, g in enumerate(p.cluster.instance_groups):
        if g.instance_type not in first:
            first[g.instance_type] = (i, g)
            continue
        j, other = first[g.instance_type]
        if (g.threads_per_core, g.resources) != (other.threads_per_core, other.resources):
            out.add(
                "HPT-RESOURCES",
                f"cluster.instanceGroups[{i}]",
                f"{g.name!r} and cluster.instanceGroups[{j}] {other.name!r} are both {g.instance_type} but differ in "
                "threadsPerCore or resources; the kueue backend has one ResourceFlavor (one quota shape) per type.",
                "give both groups the same threadsPerCore and resources.",
            )


def _check_fsx(p: Platform, out: _Issues) -> None:
    f = p.cluster.fsx
    if f.deployment_type not in _FSX_TYPES:
        out.add(
            "HPT-FSX",
            "cluster.fsx.deploymentType",
            f"{f.deployment_type!r} is not an FSx for Lustre type.",
            f"use one of {', '.join(_FSX_TYPES)}.",
        )
    cap = f.storage_capacity_gib
    if cap not in (1200, 2400) and (cap <= 0 or cap % 2400):
        out.add(
            "HPT-FSX",
            "cluster.fsx.storageCapacityGiB",
            f"{cap} GiB is not 1200, 2400 or a multiple of 2400.",
            "use e.g. 4800.",
        )
    if (
        f.deployment_type == "PERSISTENT_2"
        and f.per_unit_storage_throughput not in _FSX_PERSISTENT_2_THROUGHPUT
    ):
        out.add(
            "HPT-FSX",
            "cluster.fsx.perUnitStorageThroughput",
            f"{f.per_unit_storage_throughput} MB/s/TiB is not valid for PERSISTENT_2.",
            f"use one of {', '.join(map(str, _FSX_PERSISTENT_2_THROUGHPUT))}.",
        )


def _check_scheduling(p: Platform, out: _Issues) -> None:
    classes = p.scheduling.priority_classes
    if not classes:
        out.add(
            "HPT-PRIORITY-COUNT",
            "scheduling.priorityClasses",
            "no priority classes are defined.",
            "define at least one, e.g. `training` (weight 50).",
        )
    if len(classes) > MAX_PRIORITY_CLASSES:
        out.add(
            "HPT-PRIORITY-COUNT",
            "scheduling.priorityClasses",
            f"{len(classes)} priority classes are defined; Task Governance allows at most "
            f"{MAX_PRIORITY_CLASSES}.",
            "merge classes that share a purpose.",
        )
    seen: set[str] = set()
    for i, pc in enumerate(classes):
        path = f"scheduling.priorityClasses[{i}]"
        if not _PRIORITY_NAME.match(pc.name):
            out.add(
                "HPT-NAME",
                f"{path}.name",
                f"{pc.name!r} is not a lowercase DNS label of at most 40 characters.",
                "use e.g. `training`.",
            )
        if pc.name in seen:
            out.add(
                "HPT-DUPLICATE",
                f"{path}.name",
                f"priority class {pc.name!r} is defined twice.",
                "give every priority class a unique name.",
            )
        seen.add(pc.name)
        lo, hi = _WEIGHT_RANGE
        if not lo <= pc.weight <= hi:
            out.add(
                "HPT-PRIORITY-WEIGHT",
                f"{path}.weight",
                f"{pc.weight} is outside {lo}-{hi}.",
                f"use a weight between {lo} and {hi}; higher preempts lower.",
            )
        _check_checkpoint_interval(pc.max_checkpoint_interval, f"{path}.maxCheckpointInterval", out)


def _check_checkpoint_interval(value: str, path: str, out: _Issues) -> None:
    minutes = interval_minutes(value)
    ceiling = interval_minutes(MAX_CHECKPOINT_INTERVAL_CEILING) or 0
    if minutes is None:
        out.add(
            "HPT-CHECKPOINT-INTERVAL",
            path,
            f"{value!r} is not a number of minutes or hours.",
            "write a positive whole number followed by m or h, e.g. `30m` or `1h` (not `1h30m`, write `90m`).",
        )
    elif minutes > ceiling:
        out.add(
            "HPT-CHECKPOINT-INTERVAL",
            path,
            f"{value!r} is longer than {MAX_CHECKPOINT_INTERVAL_CEILING}: an eviction could throw away more than "
            "a day of GPU work.",
            f"use at most {MAX_CHECKPOINT_INTERVAL_CEILING}, e.g. `1h`.",
        )


def _check_teams(p: Platform, out: _Issues) -> None:
    if not p.teams:
        out.add("HPT-TEAMS", "teams", "no teams are defined.", "add at least one team.")
    seen: dict[str, int] = {}
    gids: dict[int, str] = {}
    class_names = {pc.name for pc in p.scheduling.priority_classes}
    for i, team in enumerate(p.teams):
        path = f"teams[{i}]"
        _check_team_name(team, path, out)
        if team.name in seen:
            out.add(
                "HPT-TEAM-DUPLICATE",
                f"{path}.name",
                f"team {team.name!r} is already defined at teams[{seen[team.name]}].",
                "give every team a unique name.",
            )
        seen.setdefault(team.name, i)
        _check_compute(p, team, path, out)
        _check_identity(team, path, gids, out)
        _check_allowed_classes(team, path, class_names, out)
        _check_classification(p, team, path, out)
        _check_pod_security(team, path, out)
        _check_studio_domain_name(p, team, path, out)


def _check_studio_domain_name(p: Platform, team: Team, path: str, out: _Issues) -> None:
    """Refuse a Studio domain name ``<cluster>-<team>`` that is not a valid SageMaker DomainName."""
    if (
        not team.studio
        or not _DNS_LABEL.match(team.name)
        or len(team.name) > MAX_TEAM_NAME
        or not _HYPERPOD_NAME.match(p.cluster.name)
    ):
        return  # no domain, or a bad name that HPT-TEAM-NAME / HPT-NAME already report
    domain = names.studio_domain(p.cluster.name, team.name)
    if len(domain) > names.STUDIO_DOMAIN_MAX or not _HYPERPOD_NAME.match(domain):
        out.add(
            "HPT-STUDIO-DOMAIN-NAME",
            f"{path}.name",
            f"the Studio domain name {domain!r} (cluster.name + '-' + team name) has {len(domain)} characters; "
            f"SageMaker allows at most {names.STUDIO_DOMAIN_MAX}.",
            f"shorten the team name or cluster.name by {len(domain) - names.STUDIO_DOMAIN_MAX} characters, or set "
            "`studio: false` for the team.",
        )


def _check_identity(team: Team, path: str, gids: dict[int, str], out: _Issues) -> None:
    if not team.identity.group_id:
        out.add(
            "HPT-IDENTITY",
            f"{path}.identity.groupId",
            "the Identity Center group ID is empty.",
            "copy it from `aws identitystore list-groups`.",
        )
    elif not _GROUP_ID.match(team.identity.group_id):
        out.add(
            "HPT-IDENTITY",
            f"{path}.identity.groupId",
            f"{team.identity.group_id!r} is not an Identity Center group ID (a UUID, optionally prefixed by "
            "10 hex digits and '-'); AWS::SSO::Assignment would reject it as PrincipalId.",
            "copy the GroupId from `aws identitystore list-groups --identity-store-id d-...`.",
        )
    gid = team.identity.posix_gid
    if not 1000 <= gid <= 2_147_483_647:
        out.add(
            "HPT-POSIX-GID",
            f"{path}.identity.posixGid",
            f"{gid} is outside 1000-2147483647.",
            "use a GID reserved for the team in your directory.",
        )
    elif gid in gids:
        out.add(
            "HPT-POSIX-GID",
            f"{path}.identity.posixGid",
            f"GID {gid} is already used by team {gids[gid]!r}; teams would share /fsx files.",
            "give every team its own GID.",
        )
    gids.setdefault(gid, team.name)
    psn = team.identity.permission_set_name
    if psn is not None and not _PERMISSION_SET.match(psn):
        out.add(
            "HPT-IDENTITY",
            f"{path}.identity.permissionSetName",
            f"{psn!r} is not a valid permission set name.",
            "use at most 32 letters, digits or +=,.@-_.",
        )
    elif psn is None and _DNS_LABEL.match(team.name) and len(team.name) <= MAX_TEAM_NAME:
        default = names.permission_set(team.name)
        if len(default) > names.PERMISSION_SET_MAX:
            out.add(
                "HPT-IDENTITY",
                f"{path}.identity.permissionSetName",
                f"the default permission set name {default!r} derived from team {team.name!r} has {len(default)} "
                f"characters; Identity Center allows at most {names.PERMISSION_SET_MAX}.",
                f"set `identity.permissionSetName` to at most {names.PERMISSION_SET_MAX} letters, digits or "
                "+=,.@-_, or shorten the team name.",
            )


def _check_allowed_classes(team: Team, path: str, class_names: set[str], out: _Issues) -> None:
    if not team.allowed_priority_classes:
        out.add(
            "HPT-PRIORITY-UNKNOWN",
            f"{path}.allowedPriorityClasses",
            "the list is empty.",
            "allow at least one priority class; jobs must carry one.",
        )
    for j, name in enumerate(team.allowed_priority_classes):
        if name not in class_names:
            close = difflib.get_close_matches(name, sorted(class_names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            defined = ", ".join(sorted(class_names)) or "none"
            out.add(
                "HPT-PRIORITY-UNKNOWN",
                f"{path}.allowedPriorityClasses[{j}]",
                f"priority class {name!r} is not defined in scheduling.priorityClasses.",
                f"allow only defined classes ({defined}){hint}",
            )


def _check_team_name(team: Team, path: str, out: _Issues) -> None:
    if not _DNS_LABEL.match(team.name):
        out.add(
            "HPT-TEAM-NAME",
            f"{path}.name",
            f"{team.name!r} is not a DNS label.",
            "use lowercase letters, digits and '-', starting and ending with a letter or digit.",
        )
        return
    derived = names.derived_names(team.name)
    limit = names.LABEL_VALUE_MAX
    if any(len(v) > limit for v in derived.values()):
        shown = ", ".join(
            f"{k} {v!r} ({len(v)}{' > ' + str(limit) if len(v) > limit else ''})" for k, v in derived.items()
        )
        out.add(
            "HPT-TEAM-NAME",
            f"{path}.name",
            f"{team.name!r} ({len(team.name)} characters) is too long: the names derived from it must fit in "
            f"{limit} characters (Kubernetes label values): {shown}.",
            f"shorten the team name to at most {MAX_TEAM_NAME} characters.",
        )


def _check_compute(p: Platform, team: Team, path: str, out: _Issues) -> None:
    c = team.compute
    types = {g.instance_type for g in p.cluster.instance_groups}
    if len(c.quotas) > _MAX_QUOTA_ENTRIES:
        out.add(
            "HPT-QUOTA",
            f"{path}.compute.quotas",
            f"{len(c.quotas)} instance types; the limit is 15.",
            "quota at most 15 instance types per team.",
        )
    for itype, count in c.quotas.items():
        qpath = f"{path}.compute.quotas.{itype}"
        if itype not in types:
            close = difflib.get_close_matches(itype, sorted(types & HYPERPOD_INSTANCE_TYPES), n=1)
            hint = f"; did you mean {close[0]}?" if close else "."
            out.add(
                "HPT-QUOTA-UNKNOWN-TYPE",
                qpath,
                f"{itype!r} is not the instance type of any instance group ({', '.join(sorted(types))}).",
                f"quota only instance types the cluster has, or add an instance group of that type{hint}",
            )
        if count < 0:
            out.add("HPT-QUOTA", qpath, f"{count} is negative.", "use 0 or more instances.")
    lo, hi = _BORROW_LIMIT_RANGE
    if not lo <= c.borrow_limit <= hi:
        out.add(
            "HPT-BORROW-LIMIT",
            f"{path}.compute.borrowLimit",
            f"{c.borrow_limit} is outside the service's range {lo}-{hi} (percent of the team's guaranteed "
            "amount).",
            f"use a value between {lo} and {hi}; 50 is the service default.",
        )
    wlo, whi = _WEIGHT_RANGE
    if not wlo <= c.fair_share_weight <= whi:
        out.add(
            "HPT-FAIR-SHARE-WEIGHT",
            f"{path}.compute.fairShareWeight",
            f"{c.fair_share_weight} is outside {wlo}-{whi}.",
            f"use a weight between {wlo} and {whi}.",
        )


def _check_classification(p: Platform, team: Team, path: str, out: _Issues) -> None:
    cls = p.team_classification(team)
    if team.data_classification is not None and not _DNS_LABEL.match(team.data_classification):
        out.add(
            "HPT-DATA-CLASSIFICATION",
            f"{path}.dataClassification",
            f"{team.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`, spelled as in cluster.dataClassification.",
        )
        return
    if cls == p.cluster.data_classification:
        return
    if p.cluster.on_data_classification_mismatch is ClassificationMismatch.REFUSE:
        out.add(
            "HPT-DATA-CLASSIFICATION",
            f"{path}.dataClassification",
            f"team {team.name!r} holds {cls!r} data but the cluster is approved for "
            f"{p.cluster.data_classification!r}. A namespace is an organisational boundary, not a security "
            "boundary: pods of every team share nodes, the kernel and the cluster's control plane.",
            "run this team on a cluster in its own account (set cluster.onDataClassificationMismatch: "
            "dedicated-cluster to flag it and keep it off this cluster), or correct the classification.",
        )


def _check_pod_security(team: Team, path: str, out: _Issues) -> None:
    """``podSecurity: privileged`` gives node root on nodes every team shares: refused outright.

    A privileged pod (or one with ``hostPath``, ``hostPID``, ``hostNetwork``, which only the privileged
    level admits) owns its node: the kubelet's credentials, the node role, every other team's FSx mounts,
    GPU memory and Pod Identity tokens on that node. The platform has no dedicated-node wiring (a tainted
    instance group per team plus an admission rule pinning the team's pods to it), so no acknowledgment
    could make it safe here.
    """
    if team.pod_security is not PodSecurityLevel.PRIVILEGED:
        return
    out.add(
        "HPT-POD-SECURITY-PRIVILEGED",
        f"{path}.podSecurity",
        f"team {team.name!r} asks for Pod Security level 'privileged' on a cluster whose nodes every team "
        "shares; a privileged pod is root on its node and can read other teams' FSx mounts, GPU memory and "
        "Pod Identity credentials on it. The platform offers no dedicated, tainted nodes per team, so this "
        "cannot be acknowledged.",
        "use `podSecurity: baseline` (the default; root in the container, no host access) or `restricted`; "
        "a team that really needs host access belongs on its own cluster (a separate platform).",
    )


def _check_capacity(p: Platform, out: _Issues) -> None:
    promised: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for team in p.hosted_teams:
        for itype, count in team.compute.quotas.items():
            promised[itype].append((team.name, count))
    for itype, shares in promised.items():
        groups = p.instance_group_for(itype)
        if not groups or any(g.count < 1 for g in groups):
            continue  # reported by HPT-QUOTA-UNKNOWN-TYPE / HPT-COUNT
        total = sum(c for _, c in shares)
        count = sum(g.count for g in groups)
        reserved = sum(g.reserved for g in groups)
        capacity = count - reserved
        if total > capacity:
            parts = " + ".join(f"{n} {c}" for n, c in shares)
            out.add(
                "HPT-QUOTA-CAPACITY",
                f"teams[*].compute.quotas.{itype}",
                f"quotas for {itype} sum to {total} ({parts}) but the cluster can promise only {capacity} "
                f"({count} instances - {reserved} reserved = {capacity}); quotas would promise capacity "
                "that is recovering.",
                f"lower the quotas by {total - capacity} in total, or add instances to the {itype} group.",
            )


def policy_warnings(platform: Platform) -> list[PolicyIssue]:
    """Return the problems that do not stop synthesis but must be seen (also emitted as CDK warnings).

    Codes: ``HPT-INFERENCE-LOWEST-PRIORITY``, ``HPT-DEDICATED-CLUSTER``, ``HPT-REGION-TASK-GOVERNANCE``,
    ``HPT-UNUSED-INSTANCE-TYPE``. Call it on a valid platform.
    """
    out = _Issues()
    classes = platform.scheduling.priority_classes
    # with a single weight no class is below another, so no class is "the lowest"
    if len({pc.weight for pc in classes}) > 1:
        lowest = min(pc.weight for pc in classes)
        lowest_names = {pc.name for pc in classes if pc.weight == lowest}
        for i, team in enumerate(platform.teams):
            used = sorted(lowest_names.intersection(team.allowed_priority_classes))
            if team.workload is WorkloadKind.INFERENCE and used:
                out.add(
                    "HPT-INFERENCE-LOWEST-PRIORITY",
                    f"teams[{i}].allowedPriorityClasses",
                    f"inference team {team.name!r} may use the lowest priority class {used}; its endpoints "
                    "would be the first work evicted when capacity is reclaimed.",
                    "allow inference teams only priority classes above the lowest weight.",
                )
    for i, team in enumerate(platform.teams):
        if team in platform.dedicated_cluster_teams:
            out.add(
                "HPT-DEDICATED-CLUSTER",
                f"teams[{i}].dataClassification",
                f"team {team.name!r} ({platform.team_classification(team)!r}) is kept off this "
                f"{platform.cluster.data_classification!r} cluster and needs a dedicated cluster.",
                "deploy a separate platform (own account and cluster) for this team.",
            )
    if (
        platform.fairness_backend is FairnessBackend.TASK_GOVERNANCE
        and platform.region not in TASK_GOVERNANCE_CONFIRMED_REGIONS
    ):
        out.add(
            "HPT-REGION-TASK-GOVERNANCE",
            "region",
            "AWS::SageMaker::ComputeQuota and ClusterSchedulerConfig are not both confirmed in "
            f"{platform.region}.",
            "run `aws cloudformation describe-type --type RESOURCE --type-name AWS::SageMaker::ComputeQuota` "
            "(and ClusterSchedulerConfig) in the region, or use `fairnessBackend: kueue`.",
        )
    quota_types = {t for team in platform.hosted_teams for t in team.compute.quotas}
    for i, g in enumerate(platform.cluster.instance_groups):
        if g.instance_type not in quota_types:
            out.add(
                "HPT-UNUSED-INSTANCE-TYPE",
                f"cluster.instanceGroups[{i}]",
                f"no team has a quota on {g.instance_type}; borrowing is a percentage of a team's own quota on "
                "an instance type, so no team can borrow these nodes either and they stay idle.",
                "give a team a quota on it, or remove the group.",
            )
    return out.items

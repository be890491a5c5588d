"""Security rules: data classification, Pod Security, dedicated clusters, tenant admission policies."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy.model import (
    CREATE_KMS_KEY,
    ClassificationMismatch,
    Platform,
    PodSecurityLevel,
    Team,
)
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Severity,
    Stage,
    admission_guardrail,
    platform_rule,
    team_rule,
)
from hyperpod_tenancy.policy.rules._common import DNS_LABEL


@platform_rule(
    code="HPT-DATA-CLASSIFICATION",
    domain=Domain.SECURITY,
    at="cluster.dataClassification",
    reads=(),
    failure="a classification label teams cannot be compared against",
    guardrail="`cluster.dataClassification` is a lowercase label",
)
def cluster_classification(p: Platform) -> Iterator[Finding]:
    """Check that the cluster's data classification is a lowercase label."""
    if not DNS_LABEL.match(p.cluster.data_classification):
        yield Finding(
            "cluster.dataClassification",
            f"{p.cluster.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`.",
        )


@team_rule(
    code="HPT-DATA-CLASSIFICATION",
    domain=Domain.SECURITY,
    at="teams[*].dataClassification",
    reads=("cluster.dataClassification", "cluster.onDataClassificationMismatch"),
    failure="namespace treated as a security boundary between data classes",
    guardrail="error, or `onDataClassificationMismatch: dedicated-cluster` keeps the team off and warns "
    "`HPT-DEDICATED-CLUSTER`",
)
def team_classification(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team holding data of another class than the cluster's is refused (or kept off, see the warning)."""
    path = f"teams[{i}].dataClassification"
    if team.data_classification is not None and not DNS_LABEL.match(team.data_classification):
        yield Finding(
            path,
            f"{team.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`, spelled as in cluster.dataClassification.",
        )
        return
    cls = p.team_classification(team)
    if cls == p.cluster.data_classification:
        return
    if p.cluster.on_data_classification_mismatch is ClassificationMismatch.REFUSE:
        yield Finding(
            path,
            f"team {team.name!r} holds {cls!r} data but the cluster is approved for "
            f"{p.cluster.data_classification!r}. A namespace is an organisational boundary, not a security "
            "boundary: pods of every team share nodes, the kernel and the cluster's control plane.",
            "run this team on a cluster in its own account (set cluster.onDataClassificationMismatch: "
            "dedicated-cluster to flag it and keep it off this cluster), or correct the classification.",
        )


@team_rule(
    code="HPT-POD-SECURITY-PRIVILEGED",
    domain=Domain.SECURITY,
    at="teams[*].podSecurity",
    reads=(),
    failure="`podSecurity: privileged` on nodes every team shares",
    guardrail="refused outright: a privileged pod is root on a node other teams share",
)
def pod_security(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """``podSecurity: privileged`` gives node root on nodes every team shares: refused outright.

    A privileged pod (or one with ``hostPath``, ``hostPID``, ``hostNetwork``, which only the privileged
    level admits) owns its node: the kubelet's credentials, the node role, every other team's FSx mounts,
    GPU memory and Pod Identity tokens on that node. The platform has no dedicated-node wiring (a tainted
    instance group per team plus an admission rule pinning the team's pods to it), so no acknowledgment
    could make it safe here.
    """
    if team.pod_security is PodSecurityLevel.PRIVILEGED:
        yield Finding(
            f"teams[{i}].podSecurity",
            f"team {team.name!r} asks for Pod Security level 'privileged' on a cluster whose nodes every team "
            "shares; a privileged pod is root on its node and can read other teams' FSx mounts, GPU memory and "
            "Pod Identity credentials on it. The platform offers no dedicated, tainted nodes per team, so this "
            "cannot be acknowledged.",
            "use `podSecurity: baseline` (the default; root in the container, no host access) or `restricted`; "
            "a team that really needs host access belongs on its own cluster (a separate platform).",
        )


@team_rule(
    code="HPT-DEDICATED-CLUSTER",
    domain=Domain.SECURITY,
    at="teams[*].dataClassification",
    reads=("cluster.dataClassification", "cluster.onDataClassificationMismatch"),
    failure="a team whose data may not share this cluster silently left without a cluster",
    guardrail="warning naming the team that needs a dedicated cluster (it is kept off this one)",
    severity=Severity.WARNING,
)
def dedicated_cluster(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team kept off the cluster because of its data classification is named."""
    if team in p.dedicated_cluster_teams:
        yield Finding(
            f"teams[{i}].dataClassification",
            f"team {team.name!r} ({p.team_classification(team)!r}) is kept off this "
            f"{p.cluster.data_classification!r} cluster and needs a dedicated cluster.",
            "deploy a separate platform (own account and cluster) for this team.",
        )


#: A KMS key ARN (a key, not an alias: log groups, FSx and SageMaker domains take key ARNs).
_KMS_KEY_ARN = re.compile(
    r"^arn:aws[a-z-]*:kms:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):\d{12}:key/[0-9a-f-]{36}$"
)


@platform_rule(
    code="HPT-KMS-KEY",
    domain=Domain.SECURITY,
    at="encryption.kmsKey",
    reads=("region",),
    failure="a key reference the services reject at deploy time (an alias, a typo, a key in another region)",
    guardrail="`encryption.kmsKey` is `create` or the ARN of a key in the platform's region",
)
def kms_key(p: Platform) -> Iterator[Finding]:
    """Check that the platform's key is ``create`` or a key ARN in the platform's region (KMS keys are regional)."""
    key = p.encryption.kms_key
    if key is None or key == CREATE_KMS_KEY:
        return
    match = _KMS_KEY_ARN.match(key)
    if match is None:
        yield Finding(
            "encryption.kmsKey",
            f"{key!r} is neither `create` nor a KMS key ARN.",
            "write `create`, or the key's ARN `arn:aws:kms:<region>:<account>:key/<key-id>` (not an alias ARN).",
        )
    elif match["region"] != p.region:
        yield Finding(
            "encryption.kmsKey",
            f"the key is in {match['region']} but the platform is in {p.region}; a KMS key is used only in its region.",
            f"give a key of {p.region} (a multi-Region replica there has its own ARN), or `create`.",
        )


@platform_rule(
    code="HPT-KMS-KEY",
    domain=Domain.SECURITY,
    at="cluster.fsx.deploymentType",
    reads=("encryption.kmsKey",),
    failure="a SCRATCH file system left on FSx's own key while the platform promises its customer-managed key",
    guardrail="with `encryption.kmsKey`, FSx is PERSISTENT_1 or PERSISTENT_2 (SCRATCH takes no KmsKeyId)",
)
def kms_key_fsx(p: Platform) -> Iterator[Finding]:
    """Check that FSx can use the platform key: ``KmsKeyId`` applies to PERSISTENT deployment types only.

    AWS::FSx::FileSystem ``KmsKeyId``: "SCRATCH_1 and SCRATCH_2 file systems are always encrypted at rest using
    the Amazon FSx service keys" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-fsx-filesystem.html).
    """
    if p.encryption.kms_key is not None and p.cluster.fsx.deployment_type.startswith("SCRATCH"):
        yield Finding(
            "cluster.fsx.deploymentType",
            f"{p.cluster.fsx.deployment_type} file systems are always encrypted with FSx's own keys, but "
            "encryption.kmsKey asks for the platform's customer-managed key.",
            "use `deploymentType: PERSISTENT_2`, or remove encryption.kmsKey.",
        )


@team_rule(
    code="HPT-KMS-REQUIRED",
    domain=Domain.SECURITY,
    at="teams[*].requireCustomerManagedKey",
    reads=("encryption.kmsKey",),
    failure="a team whose data must be under a key the organisation controls, on AWS-managed keys",
    guardrail="`requireCustomerManagedKey: true` needs `encryption.kmsKey`",
)
def kms_required(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team requiring a customer-managed key is on a platform that has one."""
    if team.require_customer_managed_key and p.encryption.kms_key is None:
        yield Finding(
            f"teams[{i}].requireCustomerManagedKey",
            f"team {team.name!r} requires a customer-managed KMS key but the platform has none: its data, Studio "
            "volumes and logs would be encrypted with AWS-managed keys.",
            "set `encryption: {kmsKey: create}` (or the ARN of your key) in platform.yaml.",
        )


#: Synth-time warning of :class:`~hyperpod_tenancy.constructs.encryption.PlatformKey` on an imported key.
IMPORTED_KEY_POLICY = Guardrail(
    code="HPT-KMS-IMPORTED-KEY-POLICY",
    stage=Stage.SYNTH,
    severity=Severity.WARNING,
    domain=Domain.SECURITY,
    failure="log groups, buckets or volumes that fail to create because an imported key's policy does not allow "
    "the services using it",
    guardrail="synth warning naming what the imported key's policy must allow (CloudWatch Logs, the services)",
)


def _admission(code: str, failure: str, guardrail: str) -> Guardrail:
    return admission_guardrail(code=code, domain=Domain.SECURITY, failure=failure, guardrail=guardrail)


#: ValidatingAdmissionPolicies of :mod:`hyperpod_tenancy.k8s.admission` and :mod:`~hyperpod_tenancy.k8s.tenant_guards`.
ADMISSION = (
    _admission(
        "hyperpod-tenancy-pod-specs",
        "a pod preempting other teams through a Kubernetes PriorityClass, seeing GPUs it was not given, or a job "
        "waiting for ever on a topology level no node has",
        "no `priorityClassName` and no GPU-visibility environment variables in any PodSpec, and Kueue topology "
        "requests naming a level of the platform's Topology, from every requester",
    ),
    _admission(
        "hyperpod-tenancy-posix-identity",
        "a pod writing to /fsx as root, as another team's group, or able to regain root through a setuid binary",
        "every Pod, from every requester: non-root, `runAsGroup`/`fsGroup` (and only supplemental group) the "
        "team GID, no container-level group override, `allowPrivilegeEscalation: false` on every container",
    ),
    _admission(
        "hyperpod-tenancy-tenant-services",
        "a NodePort, LoadBalancer, ExternalName or externalIPs Service opening a path around network isolation",
        "tenant Services are ClusterIP without `externalIPs` (the inference operator excepted)",
    ),
    _admission(
        "hyperpod-tenancy-tenant-secrets",
        "a service-account token Secret minting a non-expiring token",
        "no Secret of type `kubernetes.io/service-account-token` in tenant namespaces",
    ),
    _admission(
        "hyperpod-tenancy-tenant-config-owners",
        "a teammate editing a ConfigMap or Secret another person's pods read, which then runs their edit as her",
        "only who created a ConfigMap or Secret (recorded by the webhook at create) may change or delete it, "
        "unless it was created team-shared",
    ),
)

#: The webhook's check of the running platform: team namespaces the admission rules may not cover.
NAMESPACE_COVERAGE = Guardrail(
    code="HPT-NAMESPACE-UNCOVERED",
    stage=Stage.RUNTIME,
    severity=Severity.ERROR,
    domain=Domain.SECURITY,
    failure="a team namespace whose tenant, team or GID label was rewritten, or that has no team record, so the "
    "rules reading those labels no longer hold for it, unnoticed until the daily audit",
    guardrail="the POSIX identity webhook lists the team namespaces every minute, logs each one the platform "
    "does not cover, and HyperPodTenancyTeamNamespaceUncovered alerts within minutes",
)

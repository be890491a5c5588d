"""Every name the platform derives from a team, cluster or priority class name: the one place they are built.

Pure functions of plain strings (no jsii, no CDK), so the policy validation, the Kubernetes renderers, the
constructs, the stacks and the CLI all compute a name the same way, and a test
(``tests/test_naming_contract.py``) fails when another module glues a prefix or suffix onto a name itself.

The team-scoped Kueue names are the ones HyperPod Task Governance creates, so jobs and dashboards do not change
when the fairness backend does:

============================  ==============================================  =================================
name                          function                                        example (team ``research``)
============================  ==============================================  =================================
namespace                     :func:`namespace`                               ``hyperpod-ns-research``
ClusterQueue                  :func:`cluster_queue`                           ``hyperpod-ns-research-clusterqueue``
LocalQueue                    :func:`local_queue`                             ``hyperpod-ns-research-localqueue``
Kubernetes group (RBAC)       :func:`kubernetes_group`                        ``hyperpod-ns-research-namespace-level-group``
WorkloadPriorityClass         :func:`workload_priority_class`                 ``training-priority`` (class ``training``)
ComputeQuota                  :func:`compute_quota`                           ``research-quota``
queue-reader ClusterRole      :func:`queue_reader_cluster_role`               ``hyperpod-tenancy-research-queue-reader``
FSx PersistentVolume          :func:`fsx_volume`                              ``hyperpod-tenancy-fsx-research``
FSx root PersistentVolume     :func:`fsx_root_volume`                         ``hyperpod-tenancy-fsx-root-research``
FSx root claim                :func:`fsx_root_claim`                          ``fsx-root-research``
FSx directory Job             :func:`fsx_directory_job`                       ``fsx-dir-research``
FSx directory                 :func:`fsx_directory`                           ``/fsx/research``
S3 data prefix                :func:`data_prefix`                             ``teams/research/``
permission set (default)      :func:`permission_set`                          ``Research``
Studio domain                 :func:`studio_domain`                           ``<cluster>-research``
team stack ID                 :func:`team_stack_id`                           ``Team-Research``
cluster scheduler config      :func:`scheduler_config`                        ``<cluster>-policy``
Prometheus workspace alias    :func:`prometheus_workspace`                    ``<cluster>-metrics``
team records (SSM path)       :func:`team_records_path`                       ``/hyperpod-tenancy/<cluster>/...``
webhook record (SSM)          :func:`posix_identity_record`                   ``.../posix-identity/research``
chargeback record (SSM)       :func:`chargeback_record`                       ``.../chargeback/research``
team alert rule group         :func:`team_alert_rules`                        ``<cluster>-chargeback-research``
team GPU widget function      :func:`team_gpu_widget`                         ``<cluster>-research-gpu-widget``
============================  ==============================================  =================================

Arguments may be CDK token strings where a docstring says so: those functions only concatenate.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "CLUSTER_QUEUE_SUFFIX",
    "COMPUTE_QUOTA_SUFFIX",
    "DATA_PREFIX_ROOT",
    "FSX_MOUNT_PATH",
    "FSX_ROOT",
    "KUBERNETES_GROUP_SUFFIX",
    "LABEL_VALUE_MAX",
    "LOCAL_QUEUE_SUFFIX",
    "NAMESPACE_PREFIX",
    "OBJECT_PREFIX",
    "PERMISSION_SET_MAX",
    "PRIORITY_CLASS_SUFFIX",
    "STUDIO_DOMAIN_MAX",
    "TEAM_RECORDS_ROOT",
    "chargeback_record",
    "cluster_queue",
    "compute_quota",
    "data_prefix",
    "derived_names",
    "drift_audit_alarm",
    "drift_audit_kubernetes_record",
    "drift_audit_kubernetes_records",
    "drift_audit_record",
    "drift_audit_records",
    "fsx_directory",
    "fsx_directory_job",
    "fsx_root_claim",
    "fsx_root_volume",
    "fsx_root_volume_handle",
    "fsx_volume",
    "fsx_volume_handle",
    "kubernetes_group",
    "local_queue",
    "namespace",
    "pascal_case",
    "permission_set",
    "posix_identity_record",
    "probe_object",
    "prometheus_workspace",
    "queue_reader_cluster_role",
    "scheduler_config",
    "studio_application_record",
    "studio_domain",
    "team_alert_rules",
    "team_gpu_widget",
    "team_records_path",
    "team_stack_id",
    "team_studio_assigner_role",
    "team_studio_reader_role",
    "workload_priority_class",
]

#: Namespace prefix Task Governance uses (``hyperpod-ns-<team>``).
NAMESPACE_PREFIX = "hyperpod-ns-"
#: Suffix of a team's ClusterQueue name (after the namespace name).
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"
#: Suffix of a team's LocalQueue name (after the namespace name).
LOCAL_QUEUE_SUFFIX = "-localqueue"
#: Suffix of a team's Kubernetes group (after the namespace name; the HyperPod chart's convention).
KUBERNETES_GROUP_SUFFIX = "-namespace-level-group"
#: Suffix Task Governance appends to a scheduler-config priority class to name its WorkloadPriorityClass.
PRIORITY_CLASS_SUFFIX = "-priority"
#: Suffix of a team's ``AWS::SageMaker::ComputeQuota`` name.
COMPUTE_QUOTA_SUFFIX = "-quota"
#: Prefix of the cluster-scoped Kubernetes objects this library names after a team.
OBJECT_PREFIX = "hyperpod-tenancy-"
#: Mount path of the shared FSx for Lustre file system in every pod.
FSX_MOUNT_PATH = "/fsx"
#: :data:`FSX_MOUNT_PATH` with its trailing slash: every team directory starts with it.
FSX_ROOT = f"{FSX_MOUNT_PATH}/"
#: S3 key prefix under which every team's data prefix lives.
DATA_PREFIX_ROOT = "teams/"
#: First segment of every SSM parameter a team stack writes for the shared platform to read at run time.
TEAM_RECORDS_ROOT = "/hyperpod-tenancy/"
#: Kubernetes label values (queue and priority-class labels) are limited to 63 characters.
LABEL_VALUE_MAX = 63
#: Identity Center permission set names: ``[\w+=,.@-]{1,32}`` (AWS::SSO::PermissionSet Name).
PERMISSION_SET_MAX = 32
#: SageMaker DomainName: at most 63 characters, ``^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`` (AWS::SageMaker::Domain).
STUDIO_DOMAIN_MAX = 63


def pascal_case(name: str) -> str:
    """``computer-vision`` → ``ComputerVision``: each ``-``-separated part capitalized, the dashes dropped."""
    return "".join(part.capitalize() for part in name.split("-"))


def namespace(team: str) -> str:
    """Namespace of a team: ``hyperpod-ns-<team>``."""
    return f"{NAMESPACE_PREFIX}{team}"


def cluster_queue(team: str) -> str:
    """ClusterQueue of a team: ``hyperpod-ns-<team>-clusterqueue``."""
    return namespace(team) + CLUSTER_QUEUE_SUFFIX


def local_queue(team: str) -> str:
    """LocalQueue of a team (the value of ``kueue.x-k8s.io/queue-name``): ``hyperpod-ns-<team>-localqueue``."""
    return namespace(team) + LOCAL_QUEUE_SUFFIX


def kubernetes_group(team: str) -> str:
    """Kubernetes group the team's access entries map to: ``hyperpod-ns-<team>-namespace-level-group``."""
    return namespace(team) + KUBERNETES_GROUP_SUFFIX


def workload_priority_class(priority_class: str) -> str:
    """Kueue WorkloadPriorityClass name of a scheduler-config priority class: ``<class>-priority``."""
    return priority_class + PRIORITY_CLASS_SUFFIX


def compute_quota(team: str) -> str:
    """Name of a team's ``AWS::SageMaker::ComputeQuota``: ``<team>-quota`` (not validated here)."""
    return team + COMPUTE_QUOTA_SUFFIX


def queue_reader_cluster_role(team: str) -> str:
    """Team's read-only ClusterRole (and ClusterRoleBinding): ``hyperpod-tenancy-<team>-queue-reader``."""
    return f"{OBJECT_PREFIX}{team}-queue-reader"


def fsx_volume(team: str) -> str:
    """Cluster-scoped PersistentVolume on ``/fsx/<team>``: ``hyperpod-tenancy-fsx-<team>``."""
    return f"{OBJECT_PREFIX}fsx-{team}"


def fsx_root_volume(team: str) -> str:
    """PersistentVolume on the file-system root that the team's directory Job mounts."""
    return f"{OBJECT_PREFIX}fsx-root-{team}"


def fsx_root_claim(team: str) -> str:
    """Claim on :func:`fsx_root_volume` in the platform namespace: ``fsx-root-<team>``."""
    return f"fsx-root-{team}"


def fsx_directory_job(team: str) -> str:
    """Job creating ``/fsx/<team>``: ``fsx-dir-<team>``."""
    return f"fsx-dir-{team}"


def checkpoint_scanner(team: str) -> str:
    """Name of a team's checkpoint scanner (CronJob, ConfigMap, ServiceAccount, Role): ``checkpoint-scan-<team>``.

    A CronJob name is at most 52 characters (its Jobs append 11): a longer one is shortened, with a hash of the
    full name.
    """
    name = f"checkpoint-scan-{team}"
    if len(name) <= 52:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"checkpoint-scan-{team[:26]}-{digest}"


def probe_object(run: str, role: str) -> str:
    """Name of an object of one ``hyperpod-tenancy probe`` run: ``hyperpod-tenancy-probe-<run>-<role>``.

    ``run`` is the run's 8 hex digits and ``role`` a short word (``server``, ``a-client``...), so the name stays a
    DNS-1035 label well under 63 characters (a Service name; a Job's pods append 6).
    """
    return f"{OBJECT_PREFIX}probe-{run}-{role}"


def fsx_directory(team: str) -> str:
    """Team's directory on the shared file system: ``/fsx/<team>``."""
    return f"{FSX_ROOT}{team}"


def fsx_volume_handle(file_system_id: str, team: str) -> str:
    """CSI ``volumeHandle`` of :func:`fsx_volume` (unique per PV); ``file_system_id`` may be a CDK token."""
    return f"{file_system_id}::{team}"


def fsx_root_volume_handle(file_system_id: str, team: str) -> str:
    """CSI ``volumeHandle`` of :func:`fsx_root_volume`; ``file_system_id`` may be a CDK token."""
    return f"{file_system_id}::root-{team}"


def data_prefix(team: str) -> str:
    """S3 key prefix of a team's data: ``teams/<team>/`` (callers validate ``team`` before granting on it)."""
    return f"{DATA_PREFIX_ROOT}{team}/"


def permission_set(team: str) -> str:
    """Default Identity Center permission set name: the team name in PascalCase."""
    return pascal_case(team)


def studio_domain(cluster: str, team: str) -> str:
    """SageMaker Studio domain name of a team: ``<cluster>-<team>``."""
    return f"{cluster}-{team}"


#: Stack ID of the cluster stack of :class:`~hyperpod_tenancy.stacks.PlatformStage`.
CLUSTER_STACK_ID = "Cluster"


def stage_stack_name(platform: str, stack_id: str) -> str:
    """CloudFormation name of a stack of the platform's stage: ``<platform>-<stack ID>`` (CDK names it by its path)."""
    return f"{platform}-{stack_id}"


def aws_profile(cluster: str, team: str) -> str:
    """AWS CLI profile of a team member, as onboarding and the Studio script write it: ``<cluster>-<team>``."""
    return f"{cluster}-{team}"


def kubeconfig_user(cluster: str, team: str) -> str:
    """Name the kubeconfig user of a member's context written by hand: ``<cluster>-<team>-user``."""
    return f"{aws_profile(cluster, team)}-user"


def team_stack_id(team: str) -> str:
    """Stack ID of a team: ``Team-<PascalCase name>`` (stable: changing it replaces the stack)."""
    return "Team-" + pascal_case(team)


def team_identity_stack_id(team: str) -> str:
    """Stack ID of a team's Identity Center stack (another account): ``Team-<PascalCase name>-Identity``."""
    return f"{team_stack_id(team)}-Identity"


def team_access_stack_id(team: str) -> str:
    """Stack ID of a team's cluster-access stack (with Identity Center elsewhere): ``Team-<PascalCase name>-Access``."""
    return f"{team_stack_id(team)}-Access"


#: IAM path of the customer managed policies the permission sets reference (Identity Center in another account).
PERMISSION_SET_POLICY_PATH = "/hyperpod-tenancy/"


def permission_set_policy(cluster: str, team: str) -> str:
    """Name of the policy a team's permission set references in the cluster's account: ``hyperpod-tenancy-<cluster>-<team>``."""
    return f"{OBJECT_PREFIX}{cluster}-{team}"


def partition(region: str) -> str:
    """Return the ARN partition of ``region`` (AWS General Reference, "Amazon Resource Names": aws, aws-cn, aws-us-gov)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def role_arn(*, partition: str, account: str, name: str) -> str:
    """ARN of the role ``name`` at the root path of ``account``: known at synthesis in every account."""
    return f"arn:{partition}:iam::{account}:role/{name}"


def team_account_stack_id(team: str) -> str:
    """Stack ID of the stack in a team's own account: ``Team-<PascalCase name>-Account``."""
    return f"{team_stack_id(team)}-Account"


#: IAM path of the roles the platform creates in a team's own account (the lookup role, the pods' target role).
TEAM_ACCOUNT_ROLE_PATH = "/hyperpod-tenancy/"


def _role_name(cluster: str, team: str, purpose: str) -> str:
    """Return ``hyperpod-tenancy-<cluster>-<team>-<purpose>`` in IAM's 64 characters (else shortened by a hash)."""
    name = f"{OBJECT_PREFIX}{cluster}-{team}-{purpose}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    room = 64 - len(OBJECT_PREFIX) - len(purpose) - len(digest) - 3
    return f"{OBJECT_PREFIX}{cluster[: room // 2]}-{team[: room - room // 2]}-{digest}-{purpose}"[:64]


def team_pods_role(cluster: str, team: str) -> str:
    """Role of a team's pods in the team's own account (the Pod Identity target role): ``...-<team>-pods``."""
    return _role_name(cluster, team, "pods")


def team_pods_source_role(cluster: str, team: str) -> str:
    """Role in the cluster's account that Pod Identity assumes first, then chains to the team's target role."""
    return _role_name(cluster, team, "workload")


def team_lookup_role(cluster: str, team: str) -> str:
    """Read-only role in a team's own account that lets the cluster's account find the team's Identity Center role."""
    return _role_name(cluster, team, "lookup")


def team_studio_reader_role(cluster: str, team: str) -> str:
    """Role beside a team's Studio domain that lets the Identity Center account read the domain's application ARN."""
    return _role_name(cluster, team, "studio-reader")


def team_studio_assigner_role(cluster: str, team: str) -> str:
    """Role in the Identity Center account that reads a team's Studio application ARN and assigns its group to it."""
    return _role_name(cluster, team, "studio-assigner")


def team_peering_role(cluster: str, team: str) -> str:
    """Role in a team's own account that accepts the peering of its Studio VPC with the cluster's VPC."""
    return _role_name(cluster, team, "peering")


def team_studio_role(cluster: str, team: str) -> str:
    """Name the execution role of a team's Studio domain in the team's own account: ``...-<team>-studio``."""
    return _role_name(cluster, team, "studio")


def team_cluster_reader_role(cluster: str, team: str) -> str:
    """Role in the cluster's account through which a team's Studio apps in its own account describe the cluster."""
    return _role_name(cluster, team, "cluster-reader")


def team_studio_stack_id(team: str) -> str:
    """Stack ID of a team's Studio stack in its own account: ``Team-<PascalCase name>-Studio``."""
    return f"{team_stack_id(team)}-Studio"


def studio_application_record(cluster: str, team: str) -> str:
    """SSM parameter with the ARN of a team's Studio application: ``.../studio-application/<team>``."""
    return team_records_path(cluster, "studio-application") + team


def scheduler_config(cluster: str) -> str:
    """Name of the cluster's ``AWS::SageMaker::ClusterSchedulerConfig``: ``<cluster>-policy``."""
    return f"{cluster}-policy"


def prometheus_workspace(cluster: str) -> str:
    """Alias of the cluster's Amazon Managed Prometheus workspace: ``<cluster>-metrics``."""
    return f"{cluster}-metrics"


def chargeback(cluster: str) -> str:
    """Name of the cluster's chargeback resources (SNS topic, Athena workgroup, rule group, platform dashboard).

    ``<cluster>-chargeback``.
    """
    return f"{cluster}-chargeback"


def chargeback_team_topic(cluster: str, team: str) -> str:
    """Name of a team's notification topic (its preempted workloads): ``<cluster>-preemptions-<team>``.

    Every such name starts with ``chargeback_team_topic(cluster, "")``, which the eviction collector publishes to.
    """
    return f"{cluster}-preemptions-{team}"


#: Tag on each team topic's key, valued with the cluster's name: the eviction collector may use those keys only.
TEAM_TOPIC_KEY_TAG = "hyperpod-tenancy:preemption-topic"


def chargeback_team_dashboard(cluster: str, team: str) -> str:
    """Name of a team's chargeback CloudWatch dashboard: ``<cluster>-chargeback-<team>``."""
    return f"{chargeback(cluster)}-{team}"


def chargeback_collector_alarm(cluster: str, collector: str) -> str:
    """Name of the alarm raised when a chargeback collector stops writing: ``<cluster>-chargeback-<collector>-stopped``.

    Every such name matches :func:`chargeback_alarm_pattern`.
    """
    return f"{chargeback(cluster)}-{collector}-stopped"


def chargeback_alarm_pattern(cluster: str) -> str:
    """Pattern (``*`` wildcard) of every chargeback alarm name of a cluster: ``<cluster>-chargeback-*``."""
    return f"{chargeback(cluster)}-*"


def chargeback_export(cluster: str) -> str:
    """Name of the cluster's CUR 2.0 Data Export: ``<cluster>-chargeback-cur2``."""
    return f"{chargeback(cluster)}-cur2"


def chargeback_database(cluster: str) -> str:
    """Name of the cluster's Glue database (lower case, underscores): ``<cluster>_chargeback``."""
    return chargeback(cluster).replace("-", "_")


def team_records_path(cluster: str, kind: str) -> str:
    """SSM path under which every team stack writes its ``kind`` record: ``/hyperpod-tenancy/<cluster>/<kind>/``.

    The shared stacks read the records under it at run time (``GetParametersByPath``) instead of listing the
    teams, so adding a team changes no shared stack.
    """
    return f"{TEAM_RECORDS_ROOT}{cluster}/{kind}/"


def posix_identity_record(cluster: str, team: str) -> str:
    """SSM parameter with a team's entry of the POSIX identity webhook: ``.../posix-identity/<team>``."""
    return team_records_path(cluster, "posix-identity") + team


def drift_audit_records(cluster: str) -> str:
    """SSM path of the teams' drift audit records: ``/hyperpod-tenancy/<cluster>/drift-audit/``."""
    return team_records_path(cluster, "drift-audit")


def drift_audit_record(cluster: str, team: str) -> str:
    """SSM parameter with a team's drift audit record (what its stack deployed): ``.../drift-audit/<team>``."""
    return drift_audit_records(cluster) + team


def drift_audit_kubernetes_records(cluster: str) -> str:
    """SSM path of the teams' Kubernetes audit records: ``/hyperpod-tenancy/<cluster>/drift-audit-kubernetes/``."""
    return team_records_path(cluster, "drift-audit-kubernetes")


def drift_audit_kubernetes_record(cluster: str, team: str) -> str:
    """SSM parameter with what a team's chart declares (``.../drift-audit-kubernetes/<team>``)."""
    return drift_audit_kubernetes_records(cluster) + team


def drift_audit_alarm(cluster: str) -> str:
    """Name of the alarm on the daily drift audit's findings: ``<cluster>-chargeback-drift-audit``.

    It notifies the chargeback topic, which admits CloudWatch alarms matching :func:`chargeback_alarm_pattern` only.
    """
    return f"{chargeback(cluster)}-drift-audit"


def chargeback_record(cluster: str, team: str) -> str:
    """SSM parameter with a team's chargeback record (cost center, quotas): ``.../chargeback/<team>``."""
    return team_records_path(cluster, "chargeback") + team


def team_alert_rules(cluster: str, team: str) -> str:
    """Name of a team's rule groups namespace (its same-day preemption alert): ``<cluster>-chargeback-<team>``."""
    return f"{chargeback(cluster)}-{team}"


def team_alert_widget(cluster: str, team: str) -> str:
    """Name of the function drawing a team's alert-state widget: ``<cluster>-<team>-alert-widget``."""
    return f"{cluster}-{team}-alert-widget"


def team_gpu_widget(cluster: str, team: str) -> str:
    """Name of the function drawing a team's live GPU widget: ``<cluster>-<team>-gpu-widget``.

    Lambda function names are at most 64 characters: a longer one is shortened, with a hash of the full name.
    """
    name = f"{cluster}-{team}-gpu-widget"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{cluster[:22]}-{team[:22]}-{digest}-gpu"


def derived_names(team: str) -> dict[str, str]:
    """Every name derived from ``team`` that must fit in a label value, keyed by role."""
    return {
        "namespace": namespace(team),
        "clusterQueue": cluster_queue(team),
        "localQueue": local_queue(team),
    }

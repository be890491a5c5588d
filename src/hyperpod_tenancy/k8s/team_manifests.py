"""The Kubernetes objects of one team, rendered as plain manifest dicts (no jsii).

For a team ``<team>`` everything lives in namespace ``hyperpod-ns-<team>``:

* the Namespace itself, only with the ``kueue`` fairness backend. With Task Governance the service
  creates the namespace when the team's ``ComputeQuota`` is created, so the platform *patches* our
  labels onto it instead (:func:`namespace_label_patch`);
* RBAC for the team's Kubernetes group (:func:`hyperpod_tenancy.policy.names.kubernetes_group`): a Role
  and RoleBinding in the namespace, plus a read-only ClusterRole/ClusterRoleBinding for the team's own
  ClusterQueue and the cluster-wide Kueue catalogue objects;
* NetworkPolicies: default deny, DNS to kube-dns, everything inside the namespace, and egress to the
  internet except the instance metadata service and the cluster's VPC;
* a LimitRange with container defaults, a ServiceAccount for workloads (bound to the team's S3 role by an
  EKS Pod Identity association), and a static FSx for Lustre PersistentVolume + claim on ``/fsx/<team>``.

:func:`fsx_directory_job` renders, in the platform namespace :data:`SYSTEM_NAMESPACE`, the Job that
creates ``/fsx/<team>`` owned by ``root:<team GID>`` with mode ``3770`` (setgid + sticky) and the parent of the
per-person home directories ``/fsx/<team>/home`` (mode ``3770``, setgid + sticky) before teams mount it, with the one
directory mechanism of :mod:`hyperpod_tenancy.k8s.fsx_dirs`.

:func:`checkpoint_scanner` renders the team's checkpoint scanner: a CronJob in :data:`SYSTEM_NAMESPACE` that
reads ``/fsx/<team>`` read-only every 5 minutes and writes the newest checkpoint time of each running workload to
its Kueue Workload, with a Role in the team namespace limited to that.

Values of :class:`FsxVolume` may be CDK token strings: they are only ever concatenated, never parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.fsx_dirs import (
    BUSYBOX_IMAGE,
    FSX_ROOT_MODE,
    HOME_DIRECTORY,
    HOME_PARENT_MODE,
    MODELS_DIRECTORY,
    MODELS_MODE,
    TEAM_DIRECTORY_MODE,
    ensure_directory_script,
)
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.workloads import kinds_for
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import (
    InstanceGroup,
    Platform,
    PodSecurityLevel,
    ResourceShape,
    Team,
    WorkloadKind,
)

__all__ = [
    "ACCELERATOR_QUOTA_NAME",
    "BUSYBOX_IMAGE",
    "CHECKPOINT_SCANNER_IMAGE",
    "CHECKPOINT_SCAN_DEADLINE_SECONDS",
    "CHECKPOINT_SCAN_MINUTES",
    "CHECKPOINT_SCAN_SCHEDULE",
    "COMPUTE_QUOTA_NAME",
    "DEFAULT_SERVICE_ACCOUNT",
    "EFA_RESOURCE",
    "FSX_CLAIM_NAME",
    "FSX_CSI_DRIVER",
    "HUGEPAGE_RESOURCES",
    "IMDS_CIDR",
    "NOBODY_UID",
    "OBSERVABILITY_NAMESPACE",
    "SYSTEM_NAMESPACE",
    "SYSTEM_PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_QUOTA_NAME",
    "TEAM_ROLE_NAME",
    "FsxVolume",
    "accelerator_ceiling",
    "checkpoint_scanner",
    "compute_ceiling",
    "fsx_directory_job",
    "fsx_root_pod_spec",
    "fsx_root_read_only_pod_spec",
    "namespace_label_patch",
    "system_namespace",
    "team_manifests",
]

Manifest = dict[str, Any]

#: Namespace of the platform's own workloads (the FSx directory Jobs). Teams have no access to it.
SYSTEM_NAMESPACE = "hyperpod-tenancy-system"
#: Default name of the ServiceAccount team workloads run as; bind it to the team's S3 role with an
#: EKS Pod Identity association (namespace ``hyperpod-ns-<team>``, this service account).
DEFAULT_SERVICE_ACCOUNT = "team-workloads"
#: Name of the PersistentVolumeClaim on ``/fsx/<team>`` in every team namespace (``claimName: fsx``).
FSX_CLAIM_NAME = "fsx"
#: CSI driver of FSx for Lustre.
FSX_CSI_DRIVER = "fsx.csi.aws.com"
#: The EC2 instance metadata service; pods must never reach it (node role credentials).
IMDS_CIDR = "169.254.169.254/32"
#: Namespace of the HyperPod observability add-on's collector, which scrapes metrics from workload pods
#: (Ray, inference and training metrics endpoints). Teams are granted nothing in it.
OBSERVABILITY_NAMESPACE = "hyperpod-observability"
#: Name of the Role and RoleBinding granted to a team's group in its namespace.
TEAM_ROLE_NAME = "hyperpod-tenancy-team-member"

#: The unprivileged UID the checkpoint scanner runs as (``nobody``); its only group is the team's GID.
NOBODY_UID = 65534
#: Image of the checkpoint scanner: the stock Python image the POSIX identity webhook's Dockerfile is based on
#: (``webhook/Dockerfile``, ``FROM``; a test keeps the two equal), from the ECR Public mirror of Docker's
#: official images the platform's Jobs already pull from (busybox), pinned by tag as the Dockerfile pins it, not
#: by digest. The scanner is one standard-library file, mounted from a ConfigMap: no image of ours to build or
#: push.
CHECKPOINT_SCANNER_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"
#: How often the checkpoint scanner runs (cron; every 5 minutes reads the same in any time zone).
CHECKPOINT_SCAN_SCHEDULE = "*/5 * * * *"
#: Minutes between two scans: the freshness the eviction collector allows on top of a declared interval.
CHECKPOINT_SCAN_MINUTES = 5
#: Longest run of one scan, pod start-up included, in seconds: ended before the next schedule.
CHECKPOINT_SCAN_DEADLINE_SECONDS = 240
#: Where the scanner's ConfigMap (its one Python file) is mounted.
_SCANNER_DIR = "/opt/checkpoint-scanner"
_SCANNER_FILE = "checkpoint_scanner.py"

_RBAC_GROUP = "rbac.authorization.k8s.io"
_KUEUE_GROUP = "kueue.x-k8s.io"
_READ = ("get", "list", "watch")
_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")
#: Node label HyperPod sets on its nodes; ``Schedulable`` means healthy (and Lustre-capable).
_HYPERPOD_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
#: ResourceQuota capping a team namespace's accelerator requests at guarantee + borrowing ceiling.
ACCELERATOR_QUOTA_NAME = "accelerator-ceiling"
#: ResourceQuota capping CPU, memory, EFA interfaces and huge pages at guarantee + borrowing ceiling.
COMPUTE_QUOTA_NAME = "compute-ceiling"
#: Extended resource of EFA interfaces (the AWS EFA Kubernetes device plugin).
EFA_RESOURCE = "vpc.amazonaws.com/efa"
#: Huge page resources of Linux nodes (Kubernetes "Manage HugePages").
HUGEPAGE_RESOURCES = ("hugepages-2Mi", "hugepages-1Gi")
#: ResourceQuota admitting no pod at a system priority class in a team namespace.
SYSTEM_PRIORITY_QUOTA_NAME = "no-system-priority"
#: The PriorityClasses every Kubernetes cluster creates for its own components. Any namespace may use them
#: (the Priority admission plugin stopped limiting them to ``kube-system`` in Kubernetes 1.17); a pod at
#: one preempts every tenant pod through kube-scheduler, outside Kueue.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
#: Resource names the Neuron device plugin registers besides the one Kueue counts
#: (``aws.amazon.com/neurondevice``): whole devices under the legacy name and single NeuronCores
#: (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/k8s-neuron-device-plugin.html).
#: Requests for them are invisible to the ClusterQueue quota, so the backstop allows none.
_NEURON_ALIASES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore")
_NEURON_DEVICE = "aws.amazon.com/neurondevice"


@dataclass(frozen=True, kw_only=True)
class FsxVolume:
    """The shared FSx for Lustre file system as the CSI driver needs it.

    Every value may be a CDK token string (e.g. ``file_system.file_system_id``,
    ``file_system.dns_name``, ``file_system.mount_name``); the renderers only concatenate them.
    """

    #: File system ID, ``fs-...``.
    file_system_id: str
    #: DNS name of the file system, ``fs-....fsx.<region>.amazonaws.com``.
    dns_name: str
    #: Lustre mount name of the file system (``LustreMountName``).
    mount_name: str


def _labels(team: Team | None = None) -> dict[str, str]:
    return labels.object_labels(None if team is None else team.name)


def _meta(name: str, team: Team | None, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(team)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _rule(
    group: str, resources: Sequence[str], verbs: Sequence[str], *, resource_names: Sequence[str] = ()
) -> Manifest:
    rule: Manifest = {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
    if resource_names:
        rule["resourceNames"] = list(resource_names)
    return rule


def namespace_label_patch(platform: Platform, team: Team) -> Manifest:
    """Strategic-merge patch body that adds the label contract to a namespace Task Governance created.

    Apply it to ``Namespace/hyperpod-ns-<team>`` (``eks_v2.KubernetesPatch`` with
    ``patch_type=STRATEGIC``) after the team's ``ComputeQuota`` exists. Only labels are added; the
    labels the service sets (``sagemaker.amazonaws.com/...``) are left alone.
    """
    return {"metadata": {"labels": namespace_labels(platform, team)}}


def _namespace(platform: Platform, team: Team) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": names.namespace(team.name),
            "labels": {**_labels(team), **namespace_labels(platform, team)},
        },
    }


def _role_rules(team: Team) -> list[Manifest]:
    """Rules of the team Role: what a team member does, nothing that changes the namespace's guard rails."""
    # the workload kinds come from the one table (hyperpod_tenancy.k8s.workloads), one rule per API group
    by_group: dict[str, list[str]] = {}
    for kind in kinds_for(inference=team.workload is WorkloadKind.INFERENCE):
        by_group.setdefault(kind.group, []).append(kind.resource)
    rules = [_rule(group, resources, _WRITE) for group, resources in by_group.items()]
    rules += [
        _rule("", ("pods",), ("get", "list", "watch", "delete")),
        _rule("", ("pods/log",), ("get",)),
        _rule("", ("pods/exec", "pods/portforward"), ("create",)),
        _rule("", ("configmaps", "secrets", "services"), _WRITE),
        _rule("", ("persistentvolumeclaims", "serviceaccounts", "events"), _READ),
        _rule("events.k8s.io", ("events",), _READ),
        _rule(_KUEUE_GROUP, ("localqueues", "workloads"), _READ),
    ]
    if team.workload is WorkloadKind.INFERENCE:
        # see the ReplicaSets of their Deployments (rollout status); only controllers write them
        rules.append(_rule("apps", ("replicasets",), _READ))
    return rules


def _rbac(team: Team) -> list[Manifest]:
    """Role + RoleBinding in the team namespace and a read-only ClusterRole + ClusterRoleBinding.

    Namespaced (Role ``hyperpod-tenancy-team-member``): create/get/list/watch/update/patch/delete the
    workload kinds the table :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS` grants the team
    (:func:`~hyperpod_tenancy.k8s.workloads.kinds_for`: batch Jobs, the Kubeflow and MPI operator jobs,
    HyperPod's HyperPodPyTorchJob, KubeRay RayJobs and RayClusters; Deployments for inference teams),
    ConfigMaps, Secrets and Services; get/list/watch/delete Pods; get ``pods/log``; create ``pods/exec``
    and ``pods/portforward``; read PVCs, ServiceAccounts, Events, Kueue LocalQueues and Workloads.
    Inference teams also read ReplicaSets. Which Services and Secrets a member may create is narrowed
    further by admission (:mod:`hyperpod_tenancy.k8s.tenant_guards`: ClusterIP Services only, no
    service-account token Secrets), because RBAC cannot look at an object's fields.

    Secrets are writable in the team's own namespace: anyone who can create a Job there can already
    mount and read every Secret of the namespace, so withholding ``get secrets`` would protect nothing,
    while teams need Secrets for registry credentials and API tokens. They hold no platform secret.

    Deliberately absent: any verb on namespaces, resourcequotas, limitranges, networkpolicies, roles and
    rolebindings (the team cannot rewrite its own guard rails), writes to localqueues/workloads (Kueue's
    view of the queue), ``serviceaccounts/token`` (pods get the workload identity; people do not need
    tokens), creating bare Pods (work goes through Jobs and training jobs, which Kueue queues; Kueue's
    plain-pod integration is off by default, so a bare Pod would run outside the quota), and
    bind/escalate/impersonate. No wildcard appears anywhere. Jobs may be patched and updated, so the
    admission policies must also match UPDATE (a label change after creation).

    Cluster-wide (ClusterRole ``hyperpod-tenancy-<team>-queue-reader``): get/list/watch the team's *own*
    ClusterQueue (``resourceNames``: list/watch then only work with
    ``--field-selector metadata.name=<name>``) to see quota, usage and borrowing, and read
    ResourceFlavors and WorkloadPriorityClasses, which hold no team data and tell users which instance
    types and priority classes exist. Other teams' ClusterQueues, namespaces and nodes stay invisible.
    """
    ns = names.namespace(team.name)
    group = names.kubernetes_group(team.name)
    subject = [{"kind": "Group", "apiGroup": _RBAC_GROUP, "name": group}]
    cluster_role = names.queue_reader_cluster_role(team.name)
    return [
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "Role",
            "metadata": _meta(TEAM_ROLE_NAME, team, ns),
            "rules": _role_rules(team),
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(TEAM_ROLE_NAME, team, ns),
            "subjects": subject,
            "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "Role", "name": TEAM_ROLE_NAME},
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(cluster_role, team),
            "rules": [
                _rule(
                    _KUEUE_GROUP, ("clusterqueues",), _READ, resource_names=(names.cluster_queue(team.name),)
                ),
                _rule(_KUEUE_GROUP, ("resourceflavors", "workloadpriorityclasses"), _READ),
            ],
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(cluster_role, team),
            "subjects": subject,
            "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "ClusterRole", "name": cluster_role},
        },
    ]


def _network_policy(team: Team, name: str, spec: Manifest) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name, team, names.namespace(team.name)),
        "spec": {"podSelector": {}, **spec},
    }


def _network_policies(
    platform: Platform, team: Team, service_cidr: str, vpc_cidrs: Sequence[str]
) -> list[Manifest]:
    """Default deny, then allow DNS, the namespace itself, and the internet minus IMDS and the VPC.

    ``default-deny`` selects every pod for ingress and egress. ``allow-same-namespace`` also selects
    every pod for both directions, so the deny is redundant in effect; it is kept so that removing or
    editing one allow policy can never open the namespace. ``allow-internet-egress`` allows egress to
    ``0.0.0.0/0`` except IMDS (node role credentials), every CIDR block of the VPC (other teams' pods and
    nodes: with the VPC CNI pods have VPC addresses) and the Service CIDR (every ClusterIP: other teams' Services, the
    API server, Kueue's and the operators' webhooks and metrics). The EKS Pod Identity agent (``169.254.170.23``) stays reachable, S3 and other AWS
    endpoints are reached through their public addresses (or a gateway endpoint). Ingress from other
    namespaces stays denied, which is what actually isolates teams: it holds even if another team's
    egress were open. With ``cluster.observability`` on, ``allow-observability-scrape`` admits ingress from
    the observability add-on's namespace (:data:`OBSERVABILITY_NAMESPACE`) only, so the collector can scrape
    workload metrics; no team can run pods there.
    """
    except_cidrs = [*vpc_cidrs, IMDS_CIDR, service_cidr]
    dns_peer = {
        "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    same_namespace: Manifest = {"podSelector": {}}
    policies = [
        _network_policy(team, "default-deny", {"policyTypes": ["Ingress", "Egress"]}),
        _network_policy(
            team,
            "allow-dns",
            {
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [dns_peer],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        ),
        _network_policy(
            team,
            "allow-same-namespace",
            {
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [same_namespace]}],
                "egress": [{"to": [same_namespace]}],
            },
        ),
        _network_policy(
            team,
            "allow-internet-egress",
            {
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": except_cidrs}}]}],
            },
        ),
    ]
    if platform.cluster.observability:
        # The observability add-on's collector scrapes the metrics endpoints of workload pods (Ray,
        # inference, training metrics; SageMaker "Implementing inference observability on HyperPod
        # clusters", "Ray metrics reference"): default-deny ingress would silently blind it. Only pods of
        # its own namespace are admitted, on any port (metrics ports differ per framework).
        collector = {
            "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: OBSERVABILITY_NAMESPACE}}
        }
        policies.append(
            _network_policy(
                team,
                "allow-observability-scrape",
                {"policyTypes": ["Ingress"], "ingress": [{"from": [collector]}]},
            )
        )
    return policies


def _limit_range(team: Team) -> Manifest:
    """Container request defaults for the team namespace (applied only where a container sets none).

    ``defaultRequest`` cpu 250m / memory 512Mi: enough for sidecars and small helpers, and it makes every
    container count against the scheduler and Kueue. No default *limit*: a LimitRange ``default`` applies
    to every container without a limit of that resource, and GPU containers routinely set only
    ``nvidia.com/gpu`` (a limit, as extended resources require). A 4Gi default memory limit would OOM-kill
    such a training or inference container on its first batch, and a 2-CPU limit would throttle its data
    loaders; no single figure fits a pod that may own a whole 2 TiB node. A container that uses more than
    it requests is Burstable: kubelet evicts it first under node memory pressure, so it cannot starve
    pods that stay within their requests. No GPU defaults: accelerators must always be requested
    explicitly (Kueue and the ResourceQuota ``accelerator-ceiling`` count them).
    """
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta("container-defaults", team, names.namespace(team.name)),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                }
            ]
        },
    }


def _shapes(platform: Platform) -> list[tuple[InstanceGroup, ResourceShape]] | None:
    """Return the first instance group of each instance type with its shape (None: a shape is unknown)."""
    found: dict[str, tuple[InstanceGroup, ResourceShape]] = {}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is None:
            return None
        found.setdefault(
            group.instance_type, (group, shape)
        )  # several groups of one type: the quota is per type
    return list(found.values())


def _ceiling(platform: Platform, team: Team, per_instance: int, instance_type: str) -> int:
    """Guarantee plus borrowing ceiling of ``per_instance`` units on ``instance_type`` (the one rule both use)."""
    nominal = team.compute.quotas.get(instance_type, 0) * per_instance
    return nominal + platform.effective_sharing(team).borrowing_limit(nominal, team.compute.borrow_limit)


def accelerator_ceiling(platform: Platform, team: Team) -> dict[str, int] | None:
    """Accelerators the team's pods may request at most, per extended resource name.

    Per instance type: the guarantee (``quotas[type]`` x accelerators per instance) plus what the team may
    borrow on top of it (:meth:`~hyperpod_tenancy.policy.model.SharingStrategy.borrowing_limit` of
    :meth:`~hyperpod_tenancy.policy.model.Platform.effective_sharing`, the rule both fairness backends
    render), summed per resource name. Every accelerator resource of the cluster is listed (0 where the
    team has no quota). ``None`` when an instance group's shape is unknown (neither catalogued nor set
    with ``resources``): its accelerator resource and count cannot be known, and a wrong figure would
    either stop honest work or cap nothing.
    """
    shapes = _shapes(platform)
    if shapes is None:
        return None
    ceiling: dict[str, int] = {}
    for group, shape in shapes:
        if shape.accelerators < 1:
            continue
        ceiling[shape.accelerator_resource] = ceiling.get(shape.accelerator_resource, 0) + _ceiling(
            platform, team, shape.accelerators, group.instance_type
        )
    if _NEURON_DEVICE in ceiling:
        for alias in _NEURON_ALIASES:
            ceiling.setdefault(alias, 0)
    return ceiling


def compute_ceiling(platform: Platform, team: Team) -> dict[str, str] | None:
    """Return the other resources that gate scheduling on HyperPod nodes, at the same guarantee + ceiling.

    ``requests.cpu`` (physical cores x ``threadsPerCore``, what kubelet offers), ``requests.memory``,
    ``requests.vpc.amazonaws.com/efa`` (EFA interfaces: a pod that holds them blocks every multi-node job on the
    node even without a GPU) and ``requests.hugepages-2Mi`` / ``requests.hugepages-1Gi`` (at most the team's
    memory: huge pages are carved out of node memory but counted apart from ``memory``), each summed over the
    instance types like :func:`accelerator_ceiling`. ``None`` when an instance group's shape is unknown.
    """
    shapes = _shapes(platform)
    if shapes is None:
        return None
    cores = memory = efa = 0
    for group, shape in shapes:
        cores += _ceiling(platform, team, shape.vcpus * group.threads_per_core // 2, group.instance_type)
        memory += _ceiling(platform, team, shape.memory_gib, group.instance_type)
        efa += _ceiling(platform, team, shape.efa_interfaces, group.instance_type)
    return {
        "requests.cpu": str(cores),
        "requests.memory": f"{memory}Gi",
        f"requests.{EFA_RESOURCE}": str(efa),
        **{f"requests.{size}": f"{memory}Gi" for size in HUGEPAGE_RESOURCES},
    }


def _resource_quotas(platform: Platform, team: Team) -> list[Manifest]:
    """Render the quota backstop that holds whatever admission lets through.

    ``accelerator-ceiling``: ``requests.<resource>`` for every accelerator of the cluster at
    :func:`accelerator_ceiling` (Kubernetes allows only the ``requests.`` prefix for extended resources,
    whose requests always equal their limits; https://kubernetes.io/docs/concepts/policy/resource-quotas/
    #resource-quota-for-extended-resources). Kueue admits no more than that, so the quota never stops
    admitted work; it stops pods that bypass Kueue (a Job whose queue label is missing, a workload
    orphaned from its Workload) from taking GPUs beyond the team's share. Omitted when
    :func:`accelerator_ceiling` is unknown.

    ``compute-ceiling``: CPU, memory, EFA interfaces and huge pages at :func:`compute_ceiling`, so that a pod
    without a GPU cannot hold the cores, memory or EFA interfaces other teams' jobs need on the GPU nodes
    (Task Governance's quotas count accelerators, vCPUs and memory per instance type, not EFA: the
    ``ComputeQuotaResourceConfig`` of the SageMaker API has ``Accelerators``, ``VCpu`` and ``MemoryInGiB`` only).
    Every container has CPU and memory requests (the LimitRange's defaults), as a quota on them requires.

    ``no-system-priority``: ``pods: "0"`` scoped to the PriorityClasses :data:`SYSTEM_PRIORITY_CLASSES`
    (``scopeSelector`` ``PriorityClass`` ``In``; https://kubernetes.io/docs/concepts/policy/resource-quotas/
    #resource-quota-per-priorityclass), so no pod of the namespace can preempt other teams' pods through
    kube-scheduler. The team Role has no verbs on resourcequotas.
    """
    ns = names.namespace(team.name)
    quotas: list[Manifest] = []
    ceiling = accelerator_ceiling(platform, team)
    if ceiling:
        quotas.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": _meta(ACCELERATOR_QUOTA_NAME, team, ns),
                "spec": {"hard": {f"requests.{r}": str(n) for r, n in sorted(ceiling.items())}},
            }
        )
    compute = compute_ceiling(platform, team)
    if compute:
        quotas.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": _meta(COMPUTE_QUOTA_NAME, team, ns),
                "spec": {"hard": dict(sorted(compute.items()))},
            }
        )
    quotas.append(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta(SYSTEM_PRIORITY_QUOTA_NAME, team, ns),
            "spec": {
                "hard": {"pods": "0"},
                "scopeSelector": {
                    "matchExpressions": [
                        {
                            "scopeName": "PriorityClass",
                            "operator": "In",
                            "values": list(SYSTEM_PRIORITY_CLASSES),
                        }
                    ]
                },
            },
        }
    )
    return quotas


def _service_account(team: Team, name: str) -> Manifest:
    """Render the workloads' ServiceAccount; it mounts no Kubernetes API token by default.

    EKS Pod Identity delivers AWS credentials through its own projected token volume
    (``/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token``) that its webhook
    injects regardless of ``automountServiceAccountToken``. The account has no RBAC, and the API server
    sits inside the VPC CIDR that team egress excludes, so a Kubernetes token would be useless in the pod.
    A pod that really needs one can still set ``automountServiceAccountToken: true`` in its own spec.
    """
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(name, team, names.namespace(team.name)),
        "automountServiceAccountToken": False,
    }


def _storage(platform: Platform) -> str:
    return f"{platform.cluster.fsx.storage_capacity_gib}Gi"


def _fsx_pv(
    platform: Platform,
    team: Team | None,
    *,
    name: str,
    handle: str,
    mount_name: str,
    claim_namespace: str,
    claim: str,
    fsx: FsxVolume,
) -> Manifest:
    # The CSI node plugin mounts ``<dnsname>@tcp:/<mountname>``; a mount name of ``<mount>/<dir>`` mounts
    # that Lustre subdirectory. ``volumeHandle`` must be unique per PV: kubelet identifies a mounted CSI
    # volume by driver and handle, so two PVs sharing the file system ID could be confused on one node.
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(name, team),
        "spec": {
            "capacity": {"storage": _storage(platform)},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["flock"],
            # Pre-bound: only this claim can ever bind the volume, so no other namespace can claim it.
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": claim_namespace,
                "name": claim,
            },
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": handle,
                "volumeAttributes": {"dnsname": fsx.dns_name, "mountname": mount_name},
            },
        },
    }


def _fsx_pvc(platform: Platform, team: Team, *, name: str, namespace: str, volume: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, team, namespace),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": volume,
            "resources": {"requests": {"storage": _storage(platform)}},
        },
    }


def _team_fsx(platform: Platform, team: Team, fsx: FsxVolume) -> list[Manifest]:
    """Render the static PV on ``/fsx/<team>`` (Retain, pre-bound) and the team's claim ``fsx`` on it."""
    volume = names.fsx_volume(team.name)
    ns = names.namespace(team.name)
    return [
        _fsx_pv(
            platform,
            team,
            name=volume,
            handle=names.fsx_volume_handle(fsx.file_system_id, team.name),
            mount_name=f"{fsx.mount_name}/{team.name}",
            claim_namespace=ns,
            claim=FSX_CLAIM_NAME,
            fsx=fsx,
        ),
        _fsx_pvc(platform, team, name=FSX_CLAIM_NAME, namespace=ns, volume=volume),
    ]


def team_manifests(
    platform: Platform,
    team: Team,
    *,
    fsx: FsxVolume,
    service_account: str = DEFAULT_SERVICE_ACCOUNT,
    service_cidr: str | None = None,
    vpc_cidrs: Sequence[str] | None = None,
    include_namespace: bool | None = None,
) -> list[Manifest]:
    """Every Kubernetes object of ``team``, in apply order.

    Order: Namespace (``kueue`` backend only), ServiceAccount, Role, RoleBinding, ClusterRole,
    ClusterRoleBinding, NetworkPolicies ``default-deny``, ``allow-dns``, ``allow-same-namespace``,
    ``allow-internet-egress``, LimitRange ``container-defaults``, ResourceQuotas ``accelerator-ceiling`` and
    ``compute-ceiling`` (when the cluster's instance shapes are known) and ``no-system-priority``, PersistentVolume
    ``hyperpod-tenancy-fsx-<team>`` and PersistentVolumeClaim ``fsx``.

    With ``fairness_backend`` Task Governance the namespace is created by the service; apply
    :func:`namespace_label_patch` to it and apply these objects only after the team's ``ComputeQuota``.

    Args:
        platform: the tenancy policy.
        team: the team to render.
        fsx: the shared FSx for Lustre file system (values may be CDK tokens).
        service_account: name of the workloads' ServiceAccount; associate it with the team's S3 role
            through EKS Pod Identity. Default: :data:`DEFAULT_SERVICE_ACCOUNT`.
        service_cidr: the cluster's Kubernetes Service CIDR, excluded from internet egress so that no
            ClusterIP is reachable through it: other teams' Services, the API server's ``kubernetes``
            Service, the webhooks and metrics endpoints of Kueue and the operators. DNS stays reachable
            (``allow-dns`` admits the kube-dns pods by selector, which is what the kube-dns ClusterIP is
            translated to before policy applies). Default: the policy's ``cluster.service_cidr`` (what the
            cluster construct sets as the EKS ``serviceIpv4Cidr``). Used verbatim; may be a CDK token.
        vpc_cidrs: every IPv4 CIDR block of the cluster's VPC, excluded from internet egress (pods take VPC
            addresses). Default: the policy's ``cluster.vpc_cidr`` (the VPC the cluster construct creates).
        include_namespace: render the Namespace (the fairness backend's ``creates_team_namespace``). Default:
            as the platform's fairness backend says.

    Returns:
        Plain manifest dicts (``apiVersion``, ``kind``, ``metadata``...), valid for Kubernetes 1.33.

    """
    objects: list[Manifest] = []
    if include_namespace is None:
        include_namespace = fairness_of(platform).creates_team_namespace
    if include_namespace:
        objects.append(_namespace(platform, team))
    objects.append(_service_account(team, service_account))
    objects += _rbac(team)
    cidr = platform.cluster.service_cidr if service_cidr is None else service_cidr
    blocks = (platform.cluster.vpc_cidr,) if vpc_cidrs is None else tuple(vpc_cidrs)
    objects += _network_policies(platform, team, cidr, blocks)
    objects.append(_limit_range(team))
    objects += _resource_quotas(platform, team)
    objects += _team_fsx(platform, team, fsx)
    return objects


def system_namespace() -> Manifest:
    """Render the platform namespace :data:`SYSTEM_NAMESPACE` (Pod Security ``baseline`` enforced).

    The FSx directory Jobs run here as root with the ``CHOWN``, ``FOWNER`` and ``FSETID`` capabilities,
    which ``baseline`` admits and ``restricted`` does not. No team is granted anything in it.
    """
    level = PodSecurityLevel.BASELINE.value
    metadata = {
        "name": SYSTEM_NAMESPACE,
        "labels": {**_labels(), **labels.pod_security_labels(enforce=level, warn=level, audit=level)},
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def _directory_script(team: Team) -> str:
    """Return the FSx directory Job's script: ``/fsx/<team>``, its ``home`` and ``models`` through :mod:`.fsx_dirs`."""
    path = names.fsx_directory(team.name)
    gid = team.identity.posix_gid
    return ensure_directory_script(
        [
            (names.FSX_MOUNT_PATH, 0, 0, FSX_ROOT_MODE),
            (path, 0, gid, TEAM_DIRECTORY_MODE),
            (f"{path}/{HOME_DIRECTORY}", 0, gid, HOME_PARENT_MODE),
            (f"{path}/{MODELS_DIRECTORY}", 0, gid, MODELS_MODE),
        ],
        owner="set",
    )


def _fsx_root_spec(
    team: str,
    *,
    container: Manifest,
    security_context: Manifest,
    read_only: bool,
    service_account: str | None,
) -> Manifest:
    """Return the pod spec of :func:`fsx_root_pod_spec` and :func:`fsx_root_read_only_pod_spec` (one place)."""
    claim: Manifest = {"claimName": names.fsx_root_claim(team)}
    if read_only:
        claim["readOnly"] = True
    spec: Manifest = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": service_account is not None,
        "enableServiceLinks": False,
        "securityContext": {**security_context, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": _HYPERPOD_HEALTH_LABEL, "operator": "In", "values": ["Schedulable"]}
                            ]
                        }
                    ]
                }
            }
        },
        "containers": [container],
        "volumes": [{"name": "fsx-root", "persistentVolumeClaim": claim}],
    }
    if service_account is not None:
        spec = {"serviceAccountName": service_account, **spec}
    return spec


def fsx_root_pod_spec(team: str, *, container: Manifest) -> Manifest:
    """Return the pod spec of a Job that works on the team's FSx directory as root: ``container`` on ``/fsx``.

    The volume is the team's root claim ``fsx-root-<team>`` (in :data:`SYSTEM_NAMESPACE`, as ``fsx-root``); the
    pod runs as root with the runtime's seccomp profile, no service account token and no service links, once,
    on a healthy HyperPod node (the HyperPod AMI has the Lustre client, see :func:`fsx_directory_job`). The
    container brings its own capabilities and limits.
    """
    return _fsx_root_spec(
        team,
        container=container,
        security_context={"runAsUser": 0, "runAsGroup": 0},
        read_only=False,
        service_account=None,
    )


def fsx_root_read_only_pod_spec(
    team: str, *, container: Manifest, gid: int, service_account: str
) -> Manifest:
    """Return the pod spec of a Job that reads the team's FSx directory as the team group: ``container`` on ``/fsx``.

    The read-only variant of :func:`fsx_root_pod_spec`: the same claim and node placement, the claim mounted
    read-only (``persistentVolumeClaim.readOnly``; mount it ``readOnly`` in the container too), as the
    unprivileged UID :data:`NOBODY_UID` whose only group is the team's ``gid`` (``runAsNonRoot``), so the kernel
    lets it into ``/fsx/<team>`` (``3770`` of that group) and no other team's directory. It runs as
    ``service_account`` with its token mounted, for a container that calls the Kubernetes API.
    """
    return _fsx_root_spec(
        team,
        container=container,
        security_context={"runAsUser": NOBODY_UID, "runAsGroup": gid, "runAsNonRoot": True},
        read_only=True,
        service_account=service_account,
    )


def fsx_directory_job(platform: Platform, team: Team, *, fsx: FsxVolume) -> list[Manifest]:
    """Objects in :data:`SYSTEM_NAMESPACE` that create ``/fsx/<team>`` once (idempotently).

    Returns a PersistentVolume on the file-system root (``volumeHandle`` ``<fs-id>::root-<team>``, unique
    per team so that each team's stack owns its own objects), its claim ``fsx-root-<team>`` and the Job
    ``fsx-dir-<team>``: busybox running :func:`~hyperpod_tenancy.k8s.fsx_dirs.ensure_directory_script` on
    ``/fsx`` (``root:root``, ``0755``), ``/fsx/<team>`` (``root:<team posix_gid>``, mode ``3770``: the setgid bit
    makes new files inherit the team group, the sticky bit stops a teammate renaming ``home`` away) and ``/fsx/<team>/home`` (same owner, mode ``3770``: setgid + sticky, so each person's
    ``home/<uid>``, created by the webhook's init container as that person, cannot be renamed or replaced by a
    teammate). Re-running it changes nothing once the directories are right; it never follows a symbolic
    link. The pod runs as root with all capabilities dropped but ``CHOWN``, ``FOWNER`` (chmod a
    directory someone else may own) and ``FSETID`` (keep the setgid bit although root is not in the
    group), no privilege escalation, a read-only root file system and no service account token. It is
    pinned to healthy HyperPod nodes (``sagemaker.amazonaws.com/node-health-status: Schedulable``): the
    HyperPod AMI has the Lustre client, while the EKS AL2023 AMI of the system nodes does not ship it
    (awslabs/amazon-eks-ami#2696: the maintainers keep ``lustre-client`` out of the AMI). It is deleted 10
    minutes after it finishes and ``backoffLimit`` 4 bounds failing runs.

    It has no ``activeDeadlineSeconds``: the deadline counts from the Job's start, including the time its pod
    waits for a node, and with on-start deep health checks a new HyperPod node is ``Schedulable`` only after
    about two hours (HyperPod resiliency: deep health checks), longer still with a training plan whose capacity
    starts later. A deadline would kill the Job before it ever ran; without one, a pod that cannot be scheduled
    or mounted waits (and shows as Pending in ``kubectl get pods -n hyperpod-tenancy-system``).

    Apply after :func:`system_namespace`; the team's pods can start before the Job has run (kubelet
    retries the mount until the directory exists).
    """
    claim = names.fsx_root_claim(team.name)
    volume = names.fsx_root_volume(team.name)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.fsx_directory_job(team.name), team, SYSTEM_NAMESPACE),
        "spec": {
            "backoffLimit": 4,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": _labels(team)},
                "spec": fsx_root_pod_spec(
                    team.name,
                    container={
                        "name": "mkdir",
                        "image": BUSYBOX_IMAGE,
                        "command": ["sh", "-c", _directory_script(team)],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "FSETID"]},
                        },
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "16Mi"},
                            "limits": {"cpu": "100m", "memory": "64Mi"},
                        },
                        "volumeMounts": [{"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH}],
                    },
                ),
            },
        },
    }
    return [
        _fsx_pv(
            platform,
            team,
            name=volume,
            handle=names.fsx_root_volume_handle(fsx.file_system_id, team.name),
            mount_name=fsx.mount_name,
            claim_namespace=SYSTEM_NAMESPACE,
            claim=claim,
            fsx=fsx,
        ),
        _fsx_pvc(platform, team, name=claim, namespace=SYSTEM_NAMESPACE, volume=volume),
        job,
    ]


def checkpoint_scanner(team: Team) -> list[Manifest]:
    """Render the team's checkpoint scanner: a CronJob in :data:`SYSTEM_NAMESPACE` and its least-privilege RBAC.

    Returns, in apply order: the ServiceAccount ``checkpoint-scan-<team>`` (:func:`~hyperpod_tenancy.policy.names.
    checkpoint_scanner`) and the ConfigMap holding the scanner (:mod:`hyperpod_tenancy.runtime.checkpoint_scanner`,
    one standard-library file) in :data:`SYSTEM_NAMESPACE`; a Role of the same name in the team namespace with
    ``get``, ``list`` and ``patch`` on Kueue ``workloads`` only (list to find them, patch to write
    :data:`~hyperpod_tenancy.k8s.labels.LAST_CHECKPOINT_ANNOTATION`; RBAC cannot narrow a patch to one
    annotation, so the scanner's code writes that one key, from its environment) and the RoleBinding granting
    it to the ServiceAccount; and the CronJob.

    The CronJob runs every :data:`CHECKPOINT_SCAN_MINUTES` minutes (``concurrencyPolicy: Forbid``: never two
    scans of a team at once; a run that cannot start within 4 minutes of its schedule is skipped, and one that
    runs longer than :data:`CHECKPOINT_SCAN_DEADLINE_SECONDS`, waiting for a node included, is ended, so a stuck
    scan never blocks the next ones; the CronJob controller keeps the last successful and the last three failed Jobs
    to look at, and deletes older ones). Its pod is :func:`fsx_root_read_only_pod_spec`: the team's root claim mounted
    read-only on ``/fsx``, as UID :data:`NOBODY_UID` with the team's GID as its only group, no capability, no
    privilege escalation, a read-only root file system, on a healthy HyperPod node (the Lustre client), image
    :data:`CHECKPOINT_SCANNER_IMAGE`.
    """
    name = names.checkpoint_scanner(team.name)
    source = (resources.files("hyperpod_tenancy.runtime") / _SCANNER_FILE).read_text(encoding="utf-8")
    env = {
        "NAMESPACE": names.namespace(team.name),
        "TEAM_DIRECTORY": names.fsx_directory(team.name),
        "FSX_ROOT": names.FSX_ROOT,
        "CLAIM_NAME": FSX_CLAIM_NAME,
        "DIR_ENV": labels.CHECKPOINT_DIR_ENV,
        "LAST_CHECKPOINT_ANNOTATION": labels.LAST_CHECKPOINT_ANNOTATION,
    }
    container = {
        "name": "scan",
        "image": CHECKPOINT_SCANNER_IMAGE,
        # isolated mode: no PYTHON* variable, no user site, no script directory on the import path
        "command": ["python", "-I", f"{_SCANNER_DIR}/{_SCANNER_FILE}"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "volumeMounts": [
            {"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH, "readOnly": True},
            {"name": "scanner", "mountPath": _SCANNER_DIR, "readOnly": True},
        ],
    }
    pod = fsx_root_read_only_pod_spec(
        team.name, container=container, gid=team.identity.posix_gid, service_account=name
    )
    pod["volumes"].append({"name": "scanner", "configMap": {"name": name}})
    team_ns = names.namespace(team.name)
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "data": {_SCANNER_FILE: source},
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "Role",
            "metadata": _meta(name, team, team_ns),
            "rules": [_rule(_KUEUE_GROUP, ("workloads",), ("get", "list", "patch"))],
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(name, team, team_ns),
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": SYSTEM_NAMESPACE}],
            "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "Role", "name": name},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "spec": {
                "schedule": CHECKPOINT_SCAN_SCHEDULE,
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": CHECKPOINT_SCAN_DEADLINE_SECONDS,
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": _labels(team)},
                    "spec": {
                        "backoffLimit": 0,
                        "activeDeadlineSeconds": CHECKPOINT_SCAN_DEADLINE_SECONDS,
                        "template": {"metadata": {"labels": _labels(team)}, "spec": pod},
                    },
                },
            },
        },
    ]

"""A team's Namespace (or the label patch on the service's), ServiceAccount and RBAC."""

from __future__ import annotations

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.team_manifests._common import (
    _KUEUE_GROUP,
    _RBAC_GROUP,
    _READ,
    _WRITE,
    SYSTEM_NAMESPACE,
    Manifest,
    _labels,
    _meta,
    _rule,
)
from hyperpod_tenancy.k8s.workloads import kinds_for
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import (
    Platform,
    PodSecurityLevel,
    Team,
    WorkloadKind,
)

__all__ = ["TEAM_ROLE_NAME", "namespace_label_patch", "system_namespace"]

#: Name of the Role and RoleBinding granted to a team's group in its namespace.
TEAM_ROLE_NAME = "hyperpod-tenancy-team-member"


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

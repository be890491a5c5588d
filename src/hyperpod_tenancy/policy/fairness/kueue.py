"""The self-managed Kueue backend (``fairnessBackend: kueue``), as the policy and the renderers see it."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy.fairness.base import Fairness, FairnessWording, Problem
from hyperpod_tenancy.policy.instance_types import HYPERPOD_INSTANCE_TYPES, RESOURCE_CATALOGUE
from hyperpod_tenancy.policy.model import FairnessBackend, InstanceGroup, Platform

__all__ = ["HYP_CLI_KUEUE_API_VERSION", "KueueFairness"]

#: The only Kueue API version the HyperPod CLI reads (sagemaker-hyperpod 3.12.0,
#: ``sagemaker/hyperpod/cli/constants/kueue_constants.py`` ``KUEUE_CUSTOM_OBJECT_VERSION``): ``hyp list-cluster``
#: reads ClusterQueues, ``hyp create`` checks WorkloadPriorityClasses and ``hyp`` finds Workloads by label through
#: it. Kueue 0.19.2 still serves it, marked deprecated (``v1beta2`` is the storage version).
HYP_CLI_KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta1"


class KueueFairness(Fairness):
    """Upstream Kueue installed by the platform: the team chart holds the Namespace and the queues.

    Upstream Kueue 0.19.2 has no job integration for ``HyperPodPyTorchJob`` and no source documents how Task
    Governance's Kueue admits it, so with ``manageJobsWithoutQueueName`` and the pod integration its pods would
    be queued one by one: no gang admission, and a multi-node job can deadlock half-admitted while holding
    quota. Such a kind is refused at CREATE with the fix (:attr:`unintegrated_kind_refusal`).
    """

    key = FairnessBackend.KUEUE
    replacement_wording = FairnessWording(
        team_objects_deleted="its Kueue ClusterQueue and LocalQueue are deleted",
        rename_cause="the namespace and queue names are derived from the team name, so they are replaced",
    )
    creates_team_namespace = True
    admits_hyp_pytorch_job = False
    needs_topology_request_beside_other_types = True
    unintegrated_kind_refusal = (
        "{kind} is not supported with fairnessBackend: kueue: upstream Kueue has no job integration for it, so "
        "its pods would be admitted one by one and a multi-node job can deadlock half-admitted. Submit the job "
        "as a kubeflow.org PyTorchJob (queued as one workload), or ask the platform team for fairnessBackend: "
        "task-governance."
    )

    def resource_figure_problems(
        self, platform: Platform, index: int, group: InstanceGroup
    ) -> Iterator[Problem]:
        """Require ``resources`` for a type outside the built-in catalogue: Kueue quotas are GPUs, CPUs, memory."""
        if (
            group.resources is None
            and group.instance_type in HYPERPOD_INSTANCE_TYPES
            and group.instance_type not in RESOURCE_CATALOGUE
        ):
            yield (
                f"cluster.instanceGroups[{index}].resources",
                f"{group.instance_type} has no built-in resource figures, and the kueue backend needs them to turn "
                "instance counts into ClusterQueue GPU/CPU/memory quotas.",
                "add `resources: {accelerators: N, vcpus: N, memoryGiB: N}` to the group.",
            )

    def flavor_shape_problems(self, platform: Platform) -> Iterator[Problem]:
        """Kueue has one ResourceFlavor per instance type: groups of one type must describe the same nodes."""
        first: dict[str, tuple[int, InstanceGroup]] = {}
        for i, g in enumerate(platform.cluster.instance_groups):
            if g.instance_type not in first:
                first[g.instance_type] = (i, g)
                continue
            j, other = first[g.instance_type]
            if (g.threads_per_core, g.resources) != (other.threads_per_core, other.resources):
                yield (
                    f"cluster.instanceGroups[{i}]",
                    f"{g.name!r} and cluster.instanceGroups[{j}] {other.name!r} are both {g.instance_type} but "
                    "differ in threadsPerCore or resources; the kueue backend has one ResourceFlavor (one quota "
                    "shape) per type.",
                    "give both groups the same threadsPerCore and resources.",
                )

    def upgrade_problems(self, old: Platform, new: Platform) -> Iterator[Problem]:
        """Another Kueue chart version restarts the controller and may change its APIs; see :func:`_topology_changes`."""
        before, after = old.cluster.kueue_chart.version, new.cluster.kueue_chart.version
        if before != after:
            yield (
                "cluster.kueueChart.version",
                f"the Kueue chart changes from {before!r} to {after!r}: its controller and webhooks restart (no "
                "admission meanwhile), and a new minor version may change its APIs and defaults; this library's "
                "admission policies and fairness renderings are checked against Kueue 0.19.2.",
                "read Kueue's release notes of every minor version crossed (their \"Actions Required Before "
                'Upgrading"); check that the new CRDs still serve '
                f"{HYP_CLI_KUEUE_API_VERSION}, the only version the `hyp` CLI reads (`kubectl get crd "
                "workloads.kueue.x-k8s.io -o jsonpath='{.spec.versions[?(@.served==true)].name}'`), or `hyp "
                "list-cluster` and `hyp create`'s priority check fail; and upgrade while the queues are quiet.",
            )
        yield from _topology_changes(old, new)


def _topology_aware(platform: Platform) -> dict[str, int]:
    """Each topology-aware instance type and the index of its first group."""
    out: dict[str, int] = {}
    for i, group in enumerate(platform.cluster.instance_groups):
        if group.topology_aware:
            out.setdefault(group.instance_type, i)
    return out


def _topology_changes(old: Platform, new: Platform) -> Iterator[Problem]:
    """Yield a type newly placed by topology (every job's placement changes) and one no longer (not appliable)."""
    before, after = _topology_aware(old), _topology_aware(new)
    first = {g.instance_type: i for i, g in reversed(list(enumerate(new.cluster.instance_groups)))}
    for instance_type in sorted(set(after) - set(before)):
        yield (
            f"cluster.instanceGroups[{after[instance_type]}].topologyAware",
            f"{instance_type} becomes topology-aware: its ResourceFlavor gets the topology, and from then on Kueue "
            "places every job of that type itself (running work keeps its nodes); Kueue v0.19.2 refuses to take "
            "the topology off the flavor again (CRD rule `topologyName is immutable when topologyName is set`).",
            "deploy when the type's queues are quiet, and tell the teams they may ask for a network node "
            '(docs: Submitting work, "Placing a job under one network node").',
        )
    for instance_type in sorted(set(before) - set(after)):
        if instance_type not in first:
            continue  # the type left the cluster: its flavor is deleted, not updated
        yield (
            f"cluster.instanceGroups[{first[instance_type]}].topologyAware",
            f"{instance_type} is no longer topology-aware, but Kueue v0.19.2 refuses to remove a ResourceFlavor's "
            "topology (CRD rule `topologyName is immutable when topologyName is set`): the deploy would fail "
            "applying the flavor.",
            f"keep `topologyAware: true` on {instance_type} (jobs that ask for no topology are placed as before); "
            "taking it off means deleting the flavor, which Kueue allows only when no ClusterQueue uses it.",
        )

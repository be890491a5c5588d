"""The pod-spec policy's topology rule: a job asks for a network level that exists, in the two ways Kueue reads.

Kueue v0.19.2 reads a pod set's topology request from its pod template's annotations (a Pod's own for the pod
integration; ``apis/kueue/v1beta2/topology_types.go``): ``kueue.x-k8s.io/podset-required-topology`` (all pods
under one node of that level) and ``-preferred-topology`` (as close as that level, else anywhere), each naming a
level of the flavor's Topology. A level that does not exist leaves the workload pending for ever, and a level
on a cluster without topology-aware types asks for what no node has, so the value must be one of the platform's
:data:`~hyperpod_tenancy.policy.topology.TOPOLOGY_LEVELS` (none when no group is ``topologyAware``). Kueue's other
pod-set topology annotations (unconstrained placement, slices, pod-set groups) are refused by name: the
platform offers the two requests ``hyp --required-topology`` / ``--preferred-topology`` write, on the job and on its
pod template (HyperPod CLI 3.12 ``hyperpod_pytorch_job_template/v1_1/template.py``), and both places are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from hyperpod_tenancy.k8s.admission._common import WORKLOAD_RESOURCES, _cel_list, _is_resource, _q
from hyperpod_tenancy.k8s.admission.checkpoints import _for_every_pod_template
from hyperpod_tenancy.k8s.kueue.objects import topology_aware_types
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.topology import TOPOLOGY_LEVELS

__all__ = [
    "REFUSED_TOPOLOGY_ANNOTATIONS",
    "TOPOLOGY_ANNOTATIONS",
    "UNCONSTRAINED_ANNOTATION",
    "topology_levels",
    "topology_validations",
]

#: Placed anywhere on a topology-aware type: the request a job without a level needs there when its queue also has
#: types that are not placed by topology (Kueue v0.19.2 then admits a pod set on a topology-aware flavor only if it
#: asks for a topology, ``checkPodSetAndFlavorMatchForTAS``). Its one value is ``"true"``.
UNCONSTRAINED_ANNOTATION: Final = "kueue.x-k8s.io/podset-unconstrained-topology"

#: The topology requests a job may make, each naming a level.
TOPOLOGY_ANNOTATIONS: Final[tuple[str, ...]] = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
)

#: Kueue's other pod-set topology annotations (v0.19.2 ``topology_types.go``), refused wherever they appear.
REFUSED_TOPOLOGY_ANNOTATIONS: Final[tuple[str, ...]] = (
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
    "kueue.x-k8s.io/podset-group-name",
)


def topology_levels(platform: Platform) -> tuple[str, ...]:
    """Return the levels a job may name: the platform Topology's, or none when no type is placed by topology."""
    return TOPOLOGY_LEVELS if topology_aware_types(platform) else ()


def _topology_request(levels: tuple[str, ...]) -> Callable[[str], str]:
    allowed, refused, listed = (
        _cel_list(TOPOLOGY_ANNOTATIONS),
        _cel_list(REFUSED_TOPOLOGY_ANNOTATIONS),
        _cel_list(levels),
    )

    def check(metadata: str) -> str:
        notes = f"{metadata}.annotations"
        unconstrained = f"(!({_q(UNCONSTRAINED_ANNOTATION)} in {notes}) || {notes}[{_q(UNCONSTRAINED_ANNOTATION)}] == 'true')"
        return (
            f"(!has({notes}) || (!{refused}.exists(k, k in {notes}) && "
            f"{allowed}.all(k, !(k in {notes}) || {notes}[k] in {listed}) && {unconstrained}))"
        )

    return check


def topology_validations(platform: Platform) -> list[dict[str, str]]:
    """Return the pod-spec policy's validation: topology requests name an existing level (object and templates)."""
    levels = topology_levels(platform)
    check = _topology_request(levels)
    on_templates = _for_every_pod_template(check)
    kinds = " || ".join(_is_resource(kind) for kind in WORKLOAD_RESOURCES)
    where = (
        f"one of {', '.join(levels)}"
        if levels
        else "nothing: no instance type of this cluster is placed by network topology (`topologyAware`)"
    )
    return [
        {
            "expression": f"!({kinds}) || ({check('object.metadata')} && {on_templates})",
            "message": (
                f"{' and '.join(TOPOLOGY_ANNOTATIONS)} (on the workload or its pod templates) may name {where}; "
                f'{UNCONSTRAINED_ANNOTATION} may only be "true"; '
                f"{', '.join(REFUSED_TOPOLOGY_ANNOTATIONS)} are not offered. A level that no node carries leaves "
                "the job pending for ever: e.g. kueue.x-k8s.io/podset-required-topology: "
                "topology.k8s.aws/network-node-layer-3 (all pods under one bottom-layer network node)."
            ),
            "reason": "Forbidden",
        }
    ]

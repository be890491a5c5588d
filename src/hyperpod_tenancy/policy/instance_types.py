"""Instance types HyperPod accepts and the resources of the accelerated ones.

The resource catalogue turns instance counts (what Task Governance quotas are expressed in) into the
GPU/CPU/memory quantities Kueue ClusterQueues need. A type that is accepted but not catalogued can still
be used: set ``resources`` on its instance group.
"""

from __future__ import annotations

from hyperpod_tenancy.policy._accepted_types import HYPERPOD_INSTANCE_TYPES
from hyperpod_tenancy.policy.model import InstanceGroup, ResourceShape

__all__ = ["HYPERPOD_INSTANCE_TYPES", "RESOURCE_CATALOGUE", "resource_shape"]

_NEURON = "aws.amazon.com/neurondevice"


def _g(acc: int, vcpus: int, mem: int, efa: int = 0) -> ResourceShape:
    return ResourceShape(accelerators=acc, vcpus=vcpus, memory_gib=mem, efa_interfaces=efa)


def _family(prefix: str, sizes: dict[str, tuple[int, int, int, int]]) -> dict[str, ResourceShape]:
    return {f"{prefix}.{size}": _g(*shape) for size, shape in sizes.items()}


# (accelerators, vCPUs, GiB, EFA interfaces): EFA is supported from the 8xlarge sizes up, one interface each
# but on the largest G6e sizes (EC2 User Guide, "Supported instance types" of Elastic Fabric Adapter).
_G5_G6 = {
    "xlarge": (1, 4, 16, 0),
    "2xlarge": (1, 8, 32, 0),
    "4xlarge": (1, 16, 64, 0),
    "8xlarge": (1, 32, 128, 1),
    "12xlarge": (4, 48, 192, 1),
    "16xlarge": (1, 64, 256, 1),
    "24xlarge": (4, 96, 384, 1),
    "48xlarge": (8, 192, 768, 1),
}
_G6E = {
    "xlarge": (1, 4, 32, 0),
    "2xlarge": (1, 8, 64, 0),
    "4xlarge": (1, 16, 128, 0),
    "8xlarge": (1, 32, 256, 1),
    "12xlarge": (4, 48, 384, 1),
    "16xlarge": (1, 64, 512, 1),
    "24xlarge": (4, 96, 768, 2),
    "48xlarge": (8, 192, 1536, 4),
}

#: Per-instance resources of the accelerated HyperPod instance types (EC2 published figures; EFA interfaces from
#: the EC2 instance-type pages: p4d/p4de 4, p5/p5e 32, p5en 16, p6-b200 8, trn1 8, trn1n and trn2 16). Where
#: the count is not published as a per-instance figure (p5.4xlarge, p6-b300, p6e-gb200), 0: a team then needs
#: ``resources.efaInterfaces`` on its instance group before it can request EFA there.
RESOURCE_CATALOGUE: dict[str, ResourceShape] = {
    "ml.p4d.24xlarge": _g(8, 96, 1152, 4),
    "ml.p4de.24xlarge": _g(8, 96, 1152, 4),
    "ml.p5.4xlarge": _g(1, 16, 256),
    "ml.p5.48xlarge": _g(8, 192, 2048, 32),
    "ml.p5e.48xlarge": _g(8, 192, 2048, 32),
    "ml.p5en.48xlarge": _g(8, 192, 2048, 16),
    "ml.p6-b200.48xlarge": _g(8, 192, 2048, 8),
    "ml.p6-b300.48xlarge": _g(8, 192, 4096),
    "ml.p6e-gb200.36xlarge": _g(4, 144, 960),
    "ml.trn1.32xlarge": ResourceShape(
        accelerators=16, vcpus=128, memory_gib=512, accelerator_resource=_NEURON, efa_interfaces=8
    ),
    "ml.trn1n.32xlarge": ResourceShape(
        accelerators=16, vcpus=128, memory_gib=512, accelerator_resource=_NEURON, efa_interfaces=16
    ),
    "ml.trn2.48xlarge": ResourceShape(
        accelerators=16, vcpus=192, memory_gib=2048, accelerator_resource=_NEURON, efa_interfaces=16
    ),
    **_family("ml.g5", _G5_G6),
    **_family("ml.g6", _G5_G6),
    **_family("ml.g6e", _G6E),
}


def resource_shape(group: InstanceGroup) -> ResourceShape | None:
    """Resources of one instance of ``group``: its explicit ``resources`` or the catalogue entry."""
    return group.resources or RESOURCE_CATALOGUE.get(group.instance_type)

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


def _g(acc: int, vcpus: int, mem: int) -> ResourceShape:
    return ResourceShape(accelerators=acc, vcpus=vcpus, memory_gib=mem)


def _family(prefix: str, sizes: dict[str, tuple[int, int, int]]) -> dict[str, ResourceShape]:
    return {f"{prefix}.{size}": _g(*shape) for size, shape in sizes.items()}


_G5_G6 = {
    "xlarge": (1, 4, 16),
    "2xlarge": (1, 8, 32),
    "4xlarge": (1, 16, 64),
    "8xlarge": (1, 32, 128),
    "12xlarge": (4, 48, 192),
    "16xlarge": (1, 64, 256),
    "24xlarge": (4, 96, 384),
    "48xlarge": (8, 192, 768),
}
_G6E = {
    "xlarge": (1, 4, 32),
    "2xlarge": (1, 8, 64),
    "4xlarge": (1, 16, 128),
    "8xlarge": (1, 32, 256),
    "12xlarge": (4, 48, 384),
    "16xlarge": (1, 64, 512),
    "24xlarge": (4, 96, 768),
    "48xlarge": (8, 192, 1536),
}

#: Per-instance resources of the accelerated HyperPod instance types (EC2 published figures).
RESOURCE_CATALOGUE: dict[str, ResourceShape] = {
    "ml.p4d.24xlarge": _g(8, 96, 1152),
    "ml.p4de.24xlarge": _g(8, 96, 1152),
    "ml.p5.4xlarge": _g(1, 16, 256),
    "ml.p5.48xlarge": _g(8, 192, 2048),
    "ml.p5e.48xlarge": _g(8, 192, 2048),
    "ml.p5en.48xlarge": _g(8, 192, 2048),
    "ml.p6-b200.48xlarge": _g(8, 192, 2048),
    "ml.p6-b300.48xlarge": _g(8, 192, 4096),
    "ml.p6e-gb200.36xlarge": _g(4, 144, 960),
    "ml.trn1.32xlarge": ResourceShape(
        accelerators=16, vcpus=128, memory_gib=512, accelerator_resource=_NEURON
    ),
    "ml.trn1n.32xlarge": ResourceShape(
        accelerators=16, vcpus=128, memory_gib=512, accelerator_resource=_NEURON
    ),
    "ml.trn2.48xlarge": ResourceShape(
        accelerators=16, vcpus=192, memory_gib=2048, accelerator_resource=_NEURON
    ),
    **_family("ml.g5", _G5_G6),
    **_family("ml.g6", _G5_G6),
    **_family("ml.g6e", _G6E),
}


def resource_shape(group: InstanceGroup) -> ResourceShape | None:
    """Resources of one instance of ``group``: its explicit ``resources`` or the catalogue entry."""
    return group.resources or RESOURCE_CATALOGUE.get(group.instance_type)

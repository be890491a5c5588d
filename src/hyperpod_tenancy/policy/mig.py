"""NVIDIA MIG partitions: the profiles each GPU instance type offers and the layouts HyperPod's GPU operator applies.

HyperPod partitions a node's GPUs with the NVIDIA GPU operator's MIG manager, a subchart of its Helm chart (off by
default: ``gpu-operator.enabled``), which applies the layout a node's label ``nvidia.com/mig.config`` names;
set on an instance group's ``KubernetesConfig.Labels`` it is HyperPod's "managed" way (AWS, "Using GPU
partitions in Amazon SageMaker HyperPod" and its "Node Lifecycle and Labels" page). The layouts are the entries
of the chart's ConfigMap ``default-mig-config`` (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/
charts/gpu-operator/config/default-mig-config.yaml`` at 011ca927): a name no entry has leaves the node's MIG
state ``failed``, so only those names are accepted (:func:`mig_configs`). The chart runs the device plugin
with ``mig.strategy: mixed``: a node advertises each partition as ``nvidia.com/mig-<profile>`` and its
partitioned GPUs no longer as ``nvidia.com/gpu`` (NVIDIA k8s-device-plugin, ``MIG_STRATEGY``), which is how
the HyperPod CLI 3.12 requests them (``--accelerator-partition-type mig-1g.10gb``: ``nvidia.com/mig-1g.10gb``).

A profile ``<g>g.<m>gb`` holds ``g`` of a GPU's 7 compute slices (NVIDIA MIG User Guide, "Supported MIG
Profiles": "each GPU SM slice gets 1/7 of the total number of SMs"): its share of the GPU is ``g/7``, which the
HyperPod CLI also uses to size a partition's vCPUs and memory (``(count * g) / (gpus * 7)`` of the instance).
A MIG layout is applied with the GPUs idle, and the MIG manager may reboot the node (the chart sets
``WITH_REBOOT=true``): changing it stops every pod on the node's GPUs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from hyperpod_tenancy.policy.model import Platform

__all__ = [
    "COMPUTE_SLICES",
    "MIG_CONFIG_LABEL",
    "PARTITIONED_TYPES",
    "PARTITION_RESOURCE_PREFIX",
    "PARTITION_TYPE_PREFIX",
    "layout",
    "mig_config_of",
    "mig_configs",
    "offered",
    "partition_resource",
    "profiles",
    "slices",
    "slices_in_partitions",
]

#: A GPU's compute slices.
COMPUTE_SLICES: Final = 7
#: The node label naming a node's MIG layout.
MIG_CONFIG_LABEL: Final = "nvidia.com/mig.config"
#: Prefix of a partition type as the HyperPod CLI and the SageMaker API name it (``mig-1g.10gb``).
PARTITION_TYPE_PREFIX: Final = "mig-"
#: Prefix of a partition's resource name (``nvidia.com/mig-1g.10gb``).
PARTITION_RESOURCE_PREFIX: Final = "nvidia.com/mig-"

#: The profiles of each family of GPU, smallest first (NVIDIA MIG User Guide tables; the HyperPod CLI 3.12
#: ``INSTANCE_TYPE_MIG_PROFILES``): A100 40GB, A100 80GB and H100, H200.
_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "a100-40gb": ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "80gb": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "h200": ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
}
#: The GPU family of each instance type HyperPod partitions (HyperPod CLI 3.12 ``INSTANCE_TYPE_MIG_PROFILES``).
#: Left out: B200 and GB200 (the chart's ConfigMap has no layout for them) and B300 (its profiles are not among
#: the ``AcceleratorPartition`` types the SageMaker API and ``AWS::SageMaker::ComputeQuota`` accept).
_TYPE_FAMILY: Final[dict[str, str]] = {
    "ml.p4d.24xlarge": "a100-40gb",
    "ml.p4de.24xlarge": "80gb",
    "ml.p5.48xlarge": "80gb",
    "ml.p5e.48xlarge": "h200",
    "ml.p5en.48xlarge": "h200",
}
#: The instance types HyperPod's chart partitions.
PARTITIONED_TYPES: Final[tuple[str, ...]] = tuple(_TYPE_FAMILY)
#: The mixed layouts of the chart, as counts of (1g, 2g, 3g, 4g) profiles of the family's smallest memory size.
_MIXED: Final[tuple[tuple[int, int, int, int], ...]] = (
    (0, 0, 1, 1),
    (1, 1, 0, 1),
    (3, 0, 0, 1),
    (1, 1, 1, 0),
    (3, 0, 1, 0),
    (0, 2, 1, 0),
    (2, 1, 1, 0),
    (4, 0, 1, 0),
    (1, 3, 0, 0),
    (3, 2, 0, 0),
    (5, 1, 0, 0),
)
#: The uniform layouts of the chart per family (profile: partitions per GPU).
_UNIFORM: Final[dict[str, dict[str, int]]] = {
    "a100-40gb": {"1g.5gb": 7, "3g.20gb": 2, "7g.40gb": 1},
    "80gb": {"1g.10gb": 7, "3g.40gb": 2, "7g.80gb": 1},
    "h200": {"1g.18gb": 7, "3g.71gb": 2, "7g.141gb": 1},
}
_PROFILE = re.compile(r"^(?P<g>[1-7])g\.(?P<m>[0-9]+)gb$")


def _configs() -> dict[str, dict[str, dict[str, int]]]:
    """Every layout of the chart's ConfigMap, per family: name -> profile -> partitions per GPU."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for family, profiles in _FAMILIES.items():
        by_slices = {slices(p): p for p in reversed(profiles)}  # the smallest memory size of each g
        layouts = {"-".join(("all", p)): {p: n} for p, n in _UNIFORM[family].items()}
        for counts in _MIXED:
            chosen = {by_slices[g]: n for g, n in zip((1, 2, 3, 4), counts, strict=True) if n}
            name = "-".join(["mixed", *(f"{n}-{p}" for p, n in chosen.items())])
            layouts[name] = chosen
        out[family] = layouts
    return out


def slices(profile: str) -> int:
    """Return the compute slices (of :data:`COMPUTE_SLICES`) a profile holds: ``3g.40gb`` (or ``mig-3g.40gb``) -> 3."""
    match = _PROFILE.match(profile.removeprefix(PARTITION_TYPE_PREFIX))
    if match is None:
        raise ValueError(f"{profile!r} is not a MIG profile (<g>g.<m>gb)")
    return int(match["g"])


#: Every layout of the chart's ConfigMap, per GPU family.
_LAYOUTS: Final = _configs()


def mig_configs(instance_type: str) -> tuple[str, ...]:
    """Return the layouts HyperPod's chart can apply to ``instance_type`` (none: the type is not partitioned)."""
    family = _TYPE_FAMILY.get(instance_type)
    return tuple(_LAYOUTS[family]) if family is not None else ()


def profiles(instance_type: str) -> tuple[str, ...]:
    """Return the MIG profiles of ``instance_type``'s GPUs, as the HyperPod CLI names them (``mig-1g.10gb``)."""
    family = _TYPE_FAMILY.get(instance_type)
    return tuple(PARTITION_TYPE_PREFIX + p for p in _FAMILIES[family]) if family is not None else ()


def layout(instance_type: str, config: str) -> dict[str, int] | None:
    """Return the partitions per GPU the layout ``config`` makes on ``instance_type`` (``mig-<profile>`` -> count).

    None when the chart has no such layout for the type.
    """
    family = _TYPE_FAMILY.get(instance_type)
    found = _LAYOUTS[family].get(config) if family is not None else None
    return None if found is None else {PARTITION_TYPE_PREFIX + p: n for p, n in found.items()}


def slices_in_partitions(instance_type: str, config: str) -> int:
    """Return the compute slices of each GPU the layout puts in partitions (0: no such layout).

    7 for ``all-1g.10gb``; 6 for ``all-3g.40gb``, which strands one.
    """
    return sum(slices(p) * n for p, n in (layout(instance_type, config) or {}).items())


def partition_resource(partition: str) -> str:
    """Return the resource a node advertises a partition as: ``mig-1g.10gb`` -> ``nvidia.com/mig-1g.10gb``."""
    return f"nvidia.com/{partition}"


def mig_config_of(platform: Platform, instance_type: str) -> str | None:
    """Return the layout the groups of ``instance_type`` declare (the first group's; validation makes them agree)."""
    return next((g.mig_config for g in platform.instance_group_for(instance_type)), None)


def offered(platform: Platform, instance_type: str, gpus: int) -> dict[str, int]:
    """Return the partitions one instance of ``instance_type`` (``gpus`` GPUs) offers: ``{"mig-1g.10gb": 56}``."""
    config = mig_config_of(platform, instance_type)
    made = layout(instance_type, config) if config is not None else None
    return {partition: n * gpus for partition, n in (made or {}).items()}

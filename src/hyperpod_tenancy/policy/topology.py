"""The network topology HyperPod nodes carry as labels, and the instance types that have it.

EC2 describes where an instance sits in the AWS network as a set of network nodes, one per layer, top down
(EC2 User Guide, "How Amazon EC2 topology works"); Amazon EKS and HyperPod put them on each node as
``topology.k8s.aws/network-node-layer-1`` (the top, the broadest grouping) to ``-3`` (the bottom for most types:
nodes that share it are closest), a fourth layer only on types whose topology has four (EKS User Guide, "Place
distributed AI/ML workloads with network topology labels"). HyperPod task governance (add-on v1.2.2-eksbuild.1
and later) labels the nodes and schedules by topology on the instance types of its documentation
("Using topology-aware scheduling in Amazon SageMaker HyperPod task governance"), listed in
:data:`TOPOLOGY_INSTANCE_TYPES`; on any other type the labels are absent and a topology request could never be
met. The HyperPod CLI 3.12 accepts layers 1 to 3 and ``topology.k8s.aws/ultraserver-id`` for its
``--required-topology`` / ``--preferred-topology`` (``hyperpod_pytorch_job_template/v1_1/model.py``
``ALLOWED_TOPOLOGY_LABELS``); the fourth layer is not on every type of the list and the UltraServer ID only on
UltraServers, so neither is a level here.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HOSTNAME_LEVEL", "NETWORK_LAYERS", "TOPOLOGY_INSTANCE_TYPES", "TOPOLOGY_LEVELS"]

#: The network layers' node labels, top (broadest) first.
NETWORK_LAYERS: Final[tuple[str, ...]] = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
)

#: The node itself: Kueue's lowest level, so a pod set is placed on named nodes (Kueue's Topology documentation
#: recommends it as the last level; v0.19.2 allows it only there).
HOSTNAME_LEVEL: Final = "kubernetes.io/hostname"

#: The levels of the platform's Kueue Topology, top first.
TOPOLOGY_LEVELS: Final[tuple[str, ...]] = (*NETWORK_LAYERS, HOSTNAME_LEVEL)

#: Instance types HyperPod task governance schedules by topology (its documentation, listed as of 2026-12).
TOPOLOGY_INSTANCE_TYPES: Final[frozenset[str]] = frozenset(
    {
        "ml.p3dn.24xlarge",
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.p5en.48xlarge",
        "ml.p6e-gb200.36xlarge",
        "ml.trn1.2xlarge",
        "ml.trn1.32xlarge",
        "ml.trn1n.32xlarge",
        "ml.trn2.48xlarge",
        "ml.trn2u.48xlarge",
    }
)

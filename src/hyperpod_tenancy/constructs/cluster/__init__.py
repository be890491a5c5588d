"""The shared cluster's constructs: ``SharedHyperPodCluster`` and the builders of its parts (network, EKS, HyperPod, storage, operators), each in a module of its own."""

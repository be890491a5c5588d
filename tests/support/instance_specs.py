"""Per-instance resources of the instance types the tests use, from AWS's published specifications.

The test oracles (``fairness_interpreters.schedulable_shapes`` and the quota checks built on it) read these
figures instead of the product's ``hyperpod_tenancy.policy.instance_types.RESOURCE_CATALOGUE``, so a wrong
catalogue entry cannot make the product and its oracle agree on a wrong quota; ``tests/test_instance_specs.py``
asserts that the product's catalogue matches this table. A SageMaker ``ml.<type>`` instance has the
hardware of the EC2 ``<type>`` instance. Sources, checked for each row:

* ``ml.p5.48xlarge``: 8 NVIDIA H100, 192 vCPUs, 2048 GiB (2 TiB) memory, 32 EFA interfaces --
  https://aws.amazon.com/ec2/instance-types/p5/ (also torchx ``named_resources_aws.aws_p5_48xlarge``:
  ``cpu=192, gpu=8, memMB=2048 * GiB``);
* ``ml.g5.8xlarge``: 1 NVIDIA A10G, 32 vCPUs, 128 GiB; ``ml.g5.12xlarge``: 4 A10G, 48 vCPUs, 192 GiB --
  https://aws.amazon.com/ec2/instance-types/g5/ and the AWS Batch user guide's GPU table
  (https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html); one EFA interface each (the EC2 User
  Guide, Elastic Fabric Adapter "Supported instance types": G5 from 8xlarge up);
* ``ml.trn1.32xlarge``: 16 Trainium devices, 128 vCPUs, 512 GiB host memory -- AWS Neuron documentation,
  "Trn1/Trn1n Architecture"
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html), 8 EFA
  interfaces (https://aws.amazon.com/ec2/instance-types/trn1/: trn1.32xlarge, 800 Gbps EFA).

Extended resource names are a scheduling choice, not a hardware fact: GPUs are ``nvidia.com/gpu`` (the NVIDIA
device plugin, https://github.com/NVIDIA/k8s-device-plugin); Trainium devices are counted as
``aws.amazon.com/neurondevice``, the name this library schedules them on (the Neuron device plugin documents
``aws.amazon.com/neuron`` and ``aws.amazon.com/neuroncore``,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/neuron-plugins.html; the quota backstop
tests cap those two).
"""

from __future__ import annotations

from dataclasses import dataclass

NVIDIA_GPU = "nvidia.com/gpu"
NEURON_DEVICE = "aws.amazon.com/neurondevice"


@dataclass(frozen=True)
class InstanceSpec:
    """Published hardware of one instance type."""

    #: Accelerator devices per instance (GPUs, or Trainium devices).
    accelerators: int
    #: The Kubernetes extended resource the accelerators are scheduled as.
    accelerator_resource: str
    #: vCPUs as EC2 counts them (two threads per physical core).
    vcpus: int
    #: Host memory in GiB.
    memory_gib: int
    #: EFA interfaces (network cards that support EFA).
    efa_interfaces: int = 0


#: Every catalogued instance type a test platform uses without an explicit ``resources`` block.
INSTANCE_SPECS: dict[str, InstanceSpec] = {
    "ml.p5.48xlarge": InstanceSpec(8, NVIDIA_GPU, 192, 2048, 32),
    "ml.g5.8xlarge": InstanceSpec(1, NVIDIA_GPU, 32, 128, 1),
    "ml.g5.12xlarge": InstanceSpec(4, NVIDIA_GPU, 48, 192, 1),
    "ml.trn1.32xlarge": InstanceSpec(16, NEURON_DEVICE, 128, 512, 8),
}


def spec(instance_type: str) -> InstanceSpec:
    """The published spec of ``instance_type`` (fails with a hint when the tests have none for it)."""
    try:
        return INSTANCE_SPECS[instance_type]
    except KeyError:
        raise KeyError(
            f"no published spec for {instance_type} in tests/support/instance_specs.py: add its row, with the "
            "AWS page it comes from, or give the test platform's instance group explicit `resources`"
        ) from None

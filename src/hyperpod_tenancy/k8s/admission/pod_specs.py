"""The pod-spec policy: no pod priority class or GPU-visibility variable, EFA with accelerators, entitled accelerators."""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission._common import (
    ALLOWED_POD_PRIORITY_CLASSES,
    WORKLOAD_RESOURCES,
    _cel_list,
    _is_resource,
    _q,
    _walk,
)
from hyperpod_tenancy.k8s.ceilings import accelerator_ceilings_known, accelerator_resources
from hyperpod_tenancy.k8s.team_manifests import EFA_RESOURCE, SYSTEM_PRIORITY_CLASSES
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import Platform

__all__ = ["GPU_VISIBILITY_ENV", "efa_per_accelerator"]

#: Environment variables that make a container runtime hook expose accelerator devices, and why each is here:
#:
#: * ``NVIDIA_VISIBLE_DEVICES``: the NVIDIA container toolkit injects the GPUs it lists (``all`` = every GPU of
#:   the node) into a container that requested none, unless ``accept-nvidia-visible-devices-envvar-when-
#:   unprivileged`` is false; and the device plugin's default (``envvar``) strategy hands the allocated GPUs to
#:   the toolkit through the same variable, which the container's own value would override.
#: * ``AWS_NEURON_VISIBLE_DEVICES``: the Neuron OCI hook mounts the ``/dev/neuron*`` devices it lists.
#: * ``NEURON_RT_VISIBLE_CORES``: the Neuron device plugin allocates NeuronCores by setting it; a container
#:   that overrides it uses cores of the same device allocated to another pod.
#:
#: Not listed, because they expose no device by themselves: ``NVIDIA_DRIVER_CAPABILITIES`` (which driver
#: libraries are mounted for devices already granted), ``CUDA_VISIBLE_DEVICES`` (the CUDA runtime filters only
#: the device nodes already in the container), ``NVIDIA_REQUIRE_*`` (constraints the hook checks).
GPU_VISIBILITY_ENV = ("NVIDIA_VISIBLE_DEVICES", "AWS_NEURON_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES")


def _no_pod_priority_class(spec: str) -> str:
    allowed = ["", *ALLOWED_POD_PRIORITY_CLASSES]
    return f"(!has({spec}.priorityClassName) || {spec}.priorityClassName in {_cel_list(allowed)})"


def _no_gpu_visibility_env(spec: str) -> str:
    listed = _cel_list(GPU_VISIBILITY_ENV)
    return " && ".join(
        f"(!has({spec}.{containers}) || {spec}.{containers}.all(c, !has(c.env) || "
        f"c.env.all(e, !(e.name in {listed}))))"
        for containers in ("containers", "initContainers", "ephemeralContainers")
    )


def efa_per_accelerator(platform: Platform) -> int:
    """Most EFA interfaces a pod may request per accelerator: the largest ``ceil(EFA / accelerators)`` of a type.

    ``ml.p5.48xlarge``: 32 interfaces for 8 GPUs, 4. A pod holding EFA interfaces without the accelerators
    that go with them (16 pods of 32 interfaces and no GPU) keeps every multi-node job of every team off the
    nodes while Task Governance, which counts accelerators, vCPUs and memory only, sees an idle cluster.
    0 when no accelerated type has EFA (then no pod may request any).
    """
    ratios = [0]
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None and shape.accelerators > 0:
            ratios.append(-(-shape.efa_interfaces // shape.accelerators))
    return max(ratios)


def _accelerator_names(platform: Platform) -> list[str]:
    names_ = {"nvidia.com/gpu"}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None and shape.accelerators > 0:
            names_.add(shape.accelerator_resource)
    out = sorted(names_)
    if "aws.amazon.com/neurondevice" in out:
        out += ["aws.amazon.com/neuron", "aws.amazon.com/neuroncore"]
    return out


def _limit(container: str, resource: str) -> str:
    """CEL: the container's integer limit of ``resource`` (0 when unset; -1 when not a plain integer)."""
    has = f"has({container}.resources) && has({container}.resources.limits) && {_q(resource)} in {container}.resources.limits"
    value = f"string({container}.resources.limits[{_q(resource)}])"
    return f"(({has}) ? ({value}.matches('^[0-9]+$') ? int({value}) : -1) : 0)"


def _efa_with_accelerators(platform: Platform) -> Callable[[str], str]:
    ratio = efa_per_accelerator(platform)
    accelerators = " + ".join(
        f"(({_limit('c', r)}) > 0 ? {_limit('c', r)} : 0)" for r in _accelerator_names(platform)
    )

    def check(spec: str) -> str:
        efa = _limit("c", EFA_RESOURCE)
        per_container = f"{efa} == 0 || ({efa} > 0 && {efa} <= {ratio} * ({accelerators}))"
        return " && ".join(
            f"(!has({spec}.{containers}) || {spec}.{containers}.all(c, {per_container}))"
            for containers in ("containers", "initContainers")
        )

    return check


#: Vendor prefixes of accelerator resources: a request of any resource under them is an accelerator request, and
#: one the cluster does not know (``nvidia.com/mig-3g.40gb`` where no layout makes it) is refused with the others.
ACCELERATOR_VENDOR_PREFIXES = ("nvidia.com/", "aws.amazon.com/neuron")


def _accelerators_entitled(platform: Platform) -> Callable[[str], str]:
    """CEL: every accelerator a container requests (or limits) above 0 is one its namespace is entitled to.

    The entitlement is the namespace's label :func:`~hyperpod_tenancy.k8s.labels.accelerator_entitlement_label`
    of the resource saying ``allowed``; a resource under :data:`ACCELERATOR_VENDOR_PREFIXES` that the cluster
    does not offer has no label and is refused.
    """
    keys = (
        "{"
        + ", ".join(
            f"{_q(r)}: {_q(labels.accelerator_entitlement_label(r))}" for r in accelerator_resources(platform)
        )
        + "}"
    )
    ns = "namespaceObject.metadata.labels"
    vendor = " || ".join(f"k.startsWith({_q(p)})" for p in ACCELERATOR_VENDOR_PREFIXES)

    def entitled(amounts: str) -> str:
        return (
            f"(!has(c.resources.{amounts}) || c.resources.{amounts}.all(k, !({vendor}) || "
            f"string(c.resources.{amounts}[k]) == '0' || (k in {keys} && has({ns}) && {keys}[k] in {ns} && "
            f"{ns}[{keys}[k]] == {_q(labels.ALLOWED)})))"
        )

    per_container = f"!has(c.resources) || ({entitled('requests')} && {entitled('limits')})"

    def check(spec: str) -> str:
        return " && ".join(
            f"(!has({spec}.{containers}) || {spec}.{containers}.all(c, {per_container}))"
            for containers in ("containers", "initContainers")
        )

    return check


def _pod_spec_validations(platform: Platform) -> list[dict[str, str]]:
    system = ", ".join(SYSTEM_PRIORITY_CLASSES)
    env = ", ".join(GPU_VISIBILITY_ENV)
    allowed = ", ".join(ALLOWED_POD_PRIORITY_CLASSES) or "none"
    out: list[dict[str, str]] = []
    for kind in (k for k in WORKLOAD_RESOURCES if k.pod_specs):
        paths = ", ".join(kind.pod_specs)
        for check, message in (
            (
                _no_pod_priority_class,
                f"{kind.kind}: priorityClassName must not be set in the pod spec ({paths}) in tenant "
                f"namespaces (allowed: {allowed}): a Kubernetes PriorityClass such as {system} lets the pods "
                "preempt other teams' pods through kube-scheduler. Remove priorityClassName; the workload's "
                f"priority is its {labels.PRIORITY_CLASS_LABEL} label.",
            ),
            (
                _no_gpu_visibility_env,
                f"{kind.kind}: no container, init container or ephemeral container ({paths}) may set {env}: "
                "they expose accelerator devices that Kueue and the quotas never counted. Request devices as "
                "resources instead (e.g. nvidia.com/gpu: 8, aws.amazon.com/neuron: 1).",
            ),
            (
                _efa_with_accelerators(platform),
                f"{kind.kind}: a container ({paths}) requests {EFA_RESOURCE} without the accelerators that go "
                f"with them: at most {efa_per_accelerator(platform)} EFA interfaces per accelerator it requests "
                "(e.g. nvidia.com/gpu: 8 with vpc.amazonaws.com/efa: 32 on ml.p5.48xlarge). EFA interfaces held "
                "without GPUs keep every team's multi-node jobs off the nodes. Request the accelerators, or "
                "drop the EFA request.",
            ),
            *(
                (
                    (
                        _accelerators_entitled(platform),
                        f"{kind.kind}: a container ({paths}) requests an accelerator its team holds no quota for and "
                        "may not borrow, which Kueue would never admit (this cluster offers "
                        f"{', '.join(accelerator_resources(platform)) or 'none'}; the namespace's "
                        f"{labels.ACCELERATOR_LABEL_PREFIX}<name> labels say {labels.ALLOWED} for the team's). Request "
                        "one the team holds: `hyperpod-tenancy explain` lists its quotas, and on partitioned nodes they "
                        "are nvidia.com/mig-<profile>, not nvidia.com/gpu.",
                    ),
                )
                # what each type's nodes advertise is unknown where a group's shape is (neither catalogued nor
                # set): then, as for the ResourceQuota backstop, no entitlement is checked, not all work refused
                if accelerator_ceilings_known(platform)
                else ()
            ),
        ):
            expressions = [_walk("object", path.split("."), check) for path in kind.pod_specs]
            out.append(
                {
                    "expression": f"!{_is_resource(kind)} || ({' && '.join(expressions)})",
                    "message": message,
                    "reason": "Forbidden",
                }
            )
    return out

"""What an update changes of what runs: scale changes at each kind's exact paths are not a change of identity."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.webhook.patch._base import Identity

__all__ = ["RESTARTED_AT_ANNOTATION", "recorded_identity", "what_runs"]

#: The pod-template annotation ``kubectl rollout restart`` sets: a restart of the same code.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"


def _nodes_at(root: Any, dotted: str) -> list[Any]:
    """Return the nodes at a table path (``[]`` every item, ``{}`` every value), skipping other shapes."""
    nodes: list[Any] = [root]
    for segment in dotted.split("."):
        name = segment.removesuffix("[]").removesuffix("{}")
        found: list[Any] = []
        for node in nodes:
            child = node.get(name) if isinstance(node, dict) else None
            if segment.endswith("[]") and isinstance(child, list):
                found += child
            elif segment.endswith("{}") and isinstance(child, dict):
                found += list(child.values())
            elif not segment.endswith(("[]", "{}")) and child is not None:
                found.append(child)
        nodes = found
    return nodes


def what_runs(obj: Mapping[str, Any], kind: WorkloadKindSpec) -> Any:
    """Return the part of an object that decides what its pods run: its ``spec`` without its scale fields.

    Everything under ``spec`` counts (the pod templates, and fields outside them that reach the pods: a RayJob's
    ``entrypoint`` and ``runtimeEnvYAML``, KubeRay's ``autoscalerOptions``, ``rayStartParams``...), except the
    kind's :attr:`~hyperpod_tenancy.k8s.workloads.WorkloadKindSpec.scale_paths` and the restart annotation
    :data:`RESTARTED_AT_ANNOTATION` of each pod template: scaling, suspending and restarting run the same code.
    Only those exact paths are ignored: a key of the same name elsewhere (a label, an environment variable, a
    free-form map such as ``rayStartParams``, whose values KubeRay writes into the pod's ``ray start`` command
    line) is part of what runs.
    """
    root = {"spec": copy.deepcopy(obj.get("spec"))}
    for dotted in kind.scale_paths:
        parent, _, leaf = dotted.rpartition(".")
        for node in _nodes_at(root, parent):
            if isinstance(node, dict):
                node.pop(leaf, None)
    for dotted in kind.pod_specs:
        template = dotted.rpartition(".")[0]
        if not template:  # a bare Pod: its metadata is outside the spec
            continue
        for node in _nodes_at(root, f"{template}.metadata.annotations"):
            if isinstance(node, dict):
                node.pop(RESTARTED_AT_ANNOTATION, None)
    return root["spec"]


def recorded_identity(obj: Mapping[str, Any]) -> Identity | None:
    """Return the identity recorded on a stored object's annotations, or None when it carries no (complete) record."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return None
    person = annotations.get(posix_identity.POSIX_USER_ANNOTATION)
    uid = annotations.get(posix_identity.POSIX_UID_ANNOTATION)
    gid = annotations.get(posix_identity.POSIX_GID_ANNOTATION)
    if not (isinstance(person, str) and isinstance(uid, str) and isinstance(gid, str)):
        return None
    if not (uid.isdecimal() and gid.isdecimal()):
        return None
    return Identity(person=person, uid=int(uid), gid=int(gid))

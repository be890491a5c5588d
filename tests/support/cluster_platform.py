"""A synthesized platform applied to the session's real control plane, one at a time, shared by test modules.

:class:`ClusterPlatforms` (the ``cluster_platforms`` session fixture) applies a platform as a deploy does
(``cluster_apply.apply_all``), with the real POSIX identity webhook on loopback (reading Pods and writing Events
through the API server with its own ServiceAccount's token, as its pod does) and KWOK nodes of the platform's
instance groups (GPUs, EFA, CPU and memory as AWS publishes them), and keeps it applied for every later module
that asks for the same platform. Asking for another platform removes the first: a control plane holds one
platform at a time, as a cluster does.

A module that changes what it was given (a quota raised, a label removed, Workloads left behind) puts it back
before it ends, so that the next module meets the platform as applied.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import tenant_admission as ta
from cluster_apply import (
    ApiAccess,
    AppliedPlatform,
    apply_all,
    operator_crds,
    posix_webhook,
    remove_all,
    synthesized_objects,
)
from control_plane import ControlPlane, kwok_node
from instance_specs import spec as instance_spec
from kube_client import Answer, KubeClient, wait_until
from synth import Synth
from webhook_server import controller, sso_user

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy.mig import offered, partition_resource


def platform_nodes(synth: Synth) -> list[dict[str, Any]]:
    """One Ready KWOK node per instance of each of the platform's instance groups, sized as AWS publishes."""
    nodes = []
    for group in synth.platform.cluster.instance_groups:
        hardware = instance_spec(group.instance_type)
        cpus = hardware.vcpus * group.threads_per_core // 2
        capacity = {
            "cpu": str(cpus),
            "memory": f"{hardware.memory_gib}Gi",
            "pods": "110",
            hardware.accelerator_resource: str(hardware.accelerators),
        }
        if hardware.efa_interfaces:
            capacity["vpc.amazonaws.com/efa"] = str(hardware.efa_interfaces)
        made = offered(synth.platform, group.instance_type, hardware.accelerators)
        if made:  # a MIG layout: the device plugin's mixed strategy offers the partitions and no whole GPU
            del capacity[hardware.accelerator_resource]
            capacity.update({partition_resource(p): str(n) for p, n in made.items()})
        for i in range(group.count):
            labels = {"node.kubernetes.io/instance-type": group.instance_type}
            nodes.append(kwok_node(f"{group.name}-{i}", capacity=capacity, labels=labels))
    return nodes


#: Seconds after the last write within which the API server has compiled every admission policy: two refresh
#: intervals of one second, and one for compiling some forty policies on a busy two-core machine.
_POLICY_REFRESH_SETTLE = 3.0


@dataclass
class OnCluster:
    """One platform as applied: its control plane, its synthesized form and the objects sent to the server."""

    name: str
    plane: ControlPlane
    synth: Synth
    applied: AppliedPlatform
    #: The platform's objects as applied (webhook configurations pointed at the webhook on loopback).
    objects: list[dict[str, Any]]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: When the last object was applied (``time.monotonic``).
    applied_at: float = field(default_factory=time.monotonic)

    @property
    def admin(self) -> KubeClient:
        """The cluster administrator (``system:masters``)."""
        return self.plane.admin

    def as_identity(self, user_info: Mapping[str, Any]) -> KubeClient:
        """A client acting as ``request.userInfo`` (user name, groups and extra, impersonated)."""
        return self.plane.admin.as_user(user_info["username"], user_info["groups"], user_info.get("extra"))

    def member(self, person: str, team: str) -> KubeClient:
        """A member of ``team`` as EKS authenticates an Identity Center user (``webhook_server.sso_user``), in
        the role of the team's permission set (its ``permissionSetName`` where the platform names one)."""
        identity = self.synth.platform.team(team).identity
        return self.as_identity(sso_user(person, team, permission_set=identity.permission_set_name))

    def controller(self, description: str) -> KubeClient:
        """A controller of the platform's list (``webhook_server.controller``), by its description."""
        return self.as_identity(controller(description))

    def await_admission(self, team: str = "research") -> Answer:
        """Wait until the admission policies are in force (they take effect asynchronously after they are
        applied): a Job without Kueue's labels, dry-run, is refused for a member of ``team``."""
        client = self.member("sentinel", team)
        unlabelled = ta.job(team, labels={}, annotations=ta.CHECKPOINT, name="sentinel")

        def refused() -> Answer | None:
            answer = client.create(unlabelled, dry_run=True)
            return None if answer.ok else answer

        answer = wait_until(refused, timeout=90, what="the admission policies to be in force")
        # The API server compiles every ValidatingAdmissionPolicy and binding together, at most once a second
        # after one changed (k8s.io/apiserver pkg/admission/plugin/policy/generic/policy_source.go:
        # policyRefreshIntervalDefault). The sentinel's policy may be in force from a refresh that ran before the
        # last policy was written: a refresh that started after it holds them all.
        time.sleep(max(0.0, self.applied_at + _POLICY_REFRESH_SETTLE - time.monotonic()))
        return answer

    @contextlib.contextmanager
    def running_job(self, person: str, team: str, name: str, *, gpus: int = 1) -> Iterator[dict[str, Any]]:
        """``person`` of ``team`` submits an honest Job (:func:`tenant_admission.runnable_job`); yields its pod once
        Kueue admitted it and it runs on a KWOK node; the Job is deleted (with its pods) at the end."""
        job = ta.runnable_job(name, gpus=gpus, team=team)
        answer = self.member(person, team).create(job)
        assert answer.ok, answer.message
        namespace = job["metadata"]["namespace"]

        def running() -> dict[str, Any] | None:
            selector = f"batch.kubernetes.io/job-name={name}"
            for pod in self.admin.list("v1", "Pod", namespace=namespace, labelSelector=selector):
                if pod["spec"].get("nodeName") and pod["status"].get("phase") == "Running":
                    return dict(pod)
            return None

        try:
            yield wait_until(running, timeout=240, what=f"{person}'s pod of {name} to run")
        finally:
            self.admin.delete(job, propagation="Foreground")


def _is_webhook_account(obj: Mapping[str, Any]) -> bool:
    meta = obj["metadata"]
    return (
        obj["kind"] == "ServiceAccount"
        and meta.get("namespace") == posix_identity.WEBHOOK_NAMESPACE
        and meta["name"] == posix_identity.SERVICE_ACCOUNT
    )


class ClusterPlatforms:
    """Applies platforms to one control plane, one at a time; see the module's docstring."""

    def __init__(self, plane: ControlPlane, workdir: Path) -> None:
        self.plane = plane
        self.workdir = workdir
        self.current: OnCluster | None = None
        self._stack = contextlib.ExitStack()
        self._crds = False

    def on(self, name: str, synth: Synth) -> OnCluster:
        """The platform ``synth`` applied under ``name`` (applied now unless it already is)."""
        if self.current is not None and self.current.name == name:
            if self._webhook_state_kept():
                return self.current
            # a module reset the in-process moto server the webhook keeps its UIDs and team records in (moto
            # holds one state per process): apply the platform again, with a new table and records
            self.close()
        self.close()
        if not self._crds:
            self.plane.install_crds(operator_crds(self.plane.components.operator_crds))
            self._crds = True
        applied = synthesized_objects(name, synth)
        stack = contextlib.ExitStack()
        workdir = self.workdir / name
        workdir.mkdir(parents=True, exist_ok=True)
        api = ApiAccess(self.plane.server, self.plane.pki.cert, workdir / "webhook-token")
        objects = stack.enter_context(posix_webhook(applied, synth, workdir, api=api))
        outcome = apply_all(self.plane.admin, applied, objects)
        assert outcome.refused == [], outcome.refused
        if any(_is_webhook_account(o) for o in objects):  # its ServiceAccount and ClusterRole are applied now
            api.grant(
                self.plane.service_account_token(
                    posix_identity.WEBHOOK_NAMESPACE, posix_identity.SERVICE_ACCOUNT
                )
            )
        nodes = platform_nodes(synth)
        for node in nodes:
            answer = self.plane.admin.create(node)
            assert answer.ok, answer.message
        self._stack = stack
        self.current = OnCluster(name, self.plane, synth, applied, objects, nodes)
        return self.current

    @staticmethod
    def _webhook_state_kept() -> bool:
        """Whether the webhook's UID table is still on the moto server it was given (no moto server: nothing
        to lose)."""
        if not os.environ.get("AWS_ENDPOINT_URL"):
            return True
        return bool(boto3.client("dynamodb").list_tables().get("TableNames"))

    def close(self) -> None:
        """Remove the applied platform (nodes, objects, namespaces) and stop its webhook."""
        current, self.current = self.current, None
        if current is None:
            return
        try:
            for node in current.nodes:
                current.admin.delete(node)
            left = remove_all(current.admin, current.applied, current.objects)
            assert left == [], left
        finally:
            self._stack.close()

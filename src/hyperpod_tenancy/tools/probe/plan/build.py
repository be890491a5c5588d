"""The probe plan: every check of the platform's promises for one team, in the order they run."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission import GPU_VISIBILITY_ENV
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.tools.probe.plan.checks import _IMDS, PROBE_PORT, Check, Expect, ProbePlan
from hyperpod_tenancy.tools.probe.plan.pods import (
    _intruder_client_script,
    _job,
    _owner_client_script,
    _probe_class,
    _server_script,
    identity,
)

__all__ = ["probe_plan"]


def probe_plan(  # noqa: PLR0915 - one statement per check keeps the plan readable top to bottom
    platform: Platform,
    *,
    owner: str,
    intruder: str,
    run: str,
    roles: Mapping[str, str],
    timeout: int = 300,
) -> ProbePlan:
    """Return the objects and checks of one probe run: ``intruder`` (B) tries to cross into ``owner`` (A).

    Args:
        platform: the policy the cluster was deployed from.
        owner: team A (its Service and FSx directory are the target).
        intruder: team B.
        run: the run's identifier, 8 lowercase hex digits (names and labels).
        roles: team → its permission set's role name (see :func:`identity`), for both teams.
        timeout: seconds the runner waits for a probe pod; the Jobs' ``activeDeadlineSeconds`` allow three times it.

    Raises:
        ValueError: a team is unknown, not hosted on the shared cluster, both are the same, a role is missing or
            wrong, or ``run`` is not 8 hex digits; the message names the fix.

    """
    if owner == intruder:
        raise ValueError(
            f"--teams {owner} {intruder}: name two different teams (A, whose boundary is probed, then B)"
        )
    if len(run) != 8 or any(c not in "0123456789abcdef" for c in run):
        raise ValueError(f"run {run!r} must be 8 lowercase hex digits")
    hosted = {t.name: t for t in platform.hosted_teams}
    for name in (owner, intruder):
        if name not in hosted:
            known = ", ".join(sorted(hosted)) or "none"
            raise ValueError(f"--teams: {name!r} is not a team of the shared cluster (teams: {known})")
        if name not in roles:
            raise ValueError(
                f"--member-role {name}=AWSReservedSSO_<PermissionSet>_<16 hex>: the role of team {name}'s "
                "permission set is needed to act as one of its members"
            )
    a, b = hosted[owner], hosted[intruder]
    ids = {t.name: identity(platform, t, roles[t.name]) for t in (a, b)}
    deadline = timeout * 3
    service_name = names.probe_object(run, "server")
    url = f"http://{service_name}.{names.namespace(owner)}.svc:{PROBE_PORT}/token"
    server_job = _job(
        platform,
        a,
        run=run,
        name=service_name,
        role="server",
        script=_server_script(owner, run),
        deadline=deadline,
    )
    server_job["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "http", "containerPort": PROBE_PORT, "protocol": "TCP"}
    ]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name,
            "namespace": names.namespace(owner),
            "labels": {**labels.object_labels(owner), labels.PROBE_LABEL: run},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {labels.PROBE_LABEL: run, labels.PROBE_ROLE_LABEL: "server"},
            "ports": [{"name": "http", "port": PROBE_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    clients = {
        owner: _job(
            platform,
            a,
            run=run,
            name=names.probe_object(run, "a-client"),
            role="client",
            script=_owner_client_script(owner, run, url),
            deadline=deadline,
        ),
        intruder: _job(
            platform,
            b,
            run=run,
            name=names.probe_object(run, "b-client"),
            role="client",
            script=_intruder_client_script(owner, run, url),
            deadline=deadline,
        ),
    }
    reach = Check(
        id="a-reaches-own-service",
        actor=owner,
        description=f"A's pod reaches A's probe Service {service_name} (port {PROBE_PORT})",
        expect=Expect.ALLOWED,
    )
    fsx = Check(
        id="a-fsx-own-directory",
        actor=owner,
        description=f"A's pod writes, reads and removes a file in {names.fsx_directory(owner)}",
        expect=Expect.ALLOWED,
    )
    checks = [
        reach,
        fsx,
        Check(
            id="a-admitted-own-queue",
            actor=owner,
            description=f"A's honest Job on {names.local_queue(owner)} at "
            f"{_probe_class(platform, a).workload_priority_class} is admitted (dry-run)",
            expect=Expect.ALLOWED,
        ),
        Check(
            id="b-to-a-service",
            actor=intruder,
            description=f"B's pod cannot reach A's probe Service {service_name}",
            expect=Expect.BLOCKED,
            control=reach,
        ),
        Check(
            id="imds-from-a",
            actor=owner,
            description=f"A's pod cannot reach the instance metadata service {_IMDS}",
            expect=Expect.BLOCKED,
            control=reach,
        ),
        Check(
            id="b-reads-a-fsx",
            actor=intruder,
            description=f"B's pod cannot read the file A's server keeps in {names.fsx_directory(owner)}",
            expect=Expect.BLOCKED,
            control=fsx,
        ),
    ]
    honest = copy.deepcopy(clients[owner])
    honest["metadata"]["name"] = names.probe_object(run, "a-dry-run")
    dry_runs: dict[str, tuple[str, dict[str, Any]]] = {"a-admitted-own-queue": (owner, honest)}

    def intruder_job(role: str) -> dict[str, Any]:
        job = copy.deepcopy(clients[intruder])
        job["metadata"]["name"] = names.probe_object(run, role)
        return job

    on_a_queue = intruder_job("b-queue")
    for meta in (on_a_queue["metadata"], on_a_queue["spec"]["template"]["metadata"]):
        meta["labels"][labels.QUEUE_NAME_LABEL] = names.local_queue(owner)
    dry_runs["b-job-on-a-queue"] = (intruder, on_a_queue)
    checks.append(
        Check(
            id="b-job-on-a-queue",
            actor=intruder,
            description=f"B's Job on A's LocalQueue {names.local_queue(owner)} is denied (dry-run)",
            expect=Expect.DENIED,
            message=f"label {labels.QUEUE_NAME_LABEL} must be {names.local_queue(intruder)}",
        )
    )
    foreign = [c for c in platform.scheduling.priority_classes if c.name not in b.allowed_priority_classes]
    skipped: list[str] = []
    if foreign:
        klass = max(foreign, key=lambda c: c.weight).workload_priority_class
        unentitled = intruder_job("b-class")
        for meta in (unentitled["metadata"], unentitled["spec"]["template"]["metadata"]):
            meta["labels"][labels.PRIORITY_CLASS_LABEL] = klass
        dry_runs["b-unentitled-class"] = (intruder, unentitled)
        checks.append(
            Check(
                id="b-unentitled-class",
                actor=intruder,
                description=f"B's Job at {klass}, a class B is not entitled to, is denied (dry-run)",
                expect=Expect.DENIED,
                message=f"priority class {klass} is not allowed in namespace {names.namespace(intruder)}",
            )
        )
    else:
        skipped.append(f"b-unentitled-class: team {intruder} is entitled to every priority class")
    visible = intruder_job("b-gpu")
    visible["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": GPU_VISIBILITY_ENV[0], "value": "all"}
    )
    dry_runs["b-gpu-visibility"] = (intruder, visible)
    checks.append(
        Check(
            id="b-gpu-visibility",
            actor=intruder,
            description=f"B's Job with {GPU_VISIBILITY_ENV[0]}=all on a container without GPUs is denied (dry-run)",
            expect=Expect.DENIED,
            message=f"may set {', '.join(GPU_VISIBILITY_ENV)}",
        )
    )
    into_a = copy.deepcopy(honest)
    into_a["metadata"]["name"] = names.probe_object(run, "b-into-a")
    dry_runs["b-creates-in-a-namespace"] = (intruder, into_a)
    checks.append(
        Check(
            id="b-creates-in-a-namespace",
            actor=intruder,
            description=f"B cannot create a Job in A's namespace {names.namespace(owner)} (RBAC, dry-run)",
            expect=Expect.DENIED,
            message='cannot create resource "jobs"',
        )
    )
    return ProbePlan(
        run=run,
        owner=ids[owner],
        intruder=ids[intruder],
        server=[server_job, service],
        clients=clients,
        dry_runs=dry_runs,
        checks=checks,
        skipped=skipped,
    )

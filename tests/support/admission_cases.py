"""Admission cases as data: who sends what, and what the platform's policies must answer.

One table of honest and hostile requests (drawn from the tenant- and teammate-hostile suites), each sent as the
person or controller it models: a team member as EKS authenticates an Identity Center user
(``webhook_server.sso_user``), a controller by its service account (``webhook_server.controller``). The
offline suite (``tests/test_admission_cases.py``) evaluates every case with the CEL engine of
:mod:`cel_admission`; the cluster suite (``tests/test_cluster_admission.py``) sends every case to the real API
server, through the real POSIX identity webhook, and fails on any case where the two verdicts differ or either
differs from the expected one (:func:`disagreements`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import tenant_admission as ta
from synth import Synth
from webhook_server import controller, sso_user

from hyperpod_tenancy.policy import Platform

#: The person every member case is sent as (an Identity Center session name).
PERSON = "alice"
MEMBER = sso_user(PERSON, "research")
MPI_OPERATOR = controller("MPI operator")


def member_of(platform: Platform) -> dict[str, Any]:
    """The member of ``research`` as EKS authenticates them on ``platform``: signed in to the team's account."""
    return sso_user(PERSON, "research", account=platform.team_account(platform.team("research")))


@dataclass(frozen=True)
class Case:
    """One request and the verdict the policies must give it.

    ``old`` is the object an ``UPDATE`` replaces (created first, as ``old_identity``, on the real server);
    ``fragment`` is part of the policy's own message (a denial) and must appear in the refusal.
    ``refused_on_kueue``: the kueue backend refuses the kind outright (:data:`tenant_admission.KUEUE_REFUSAL`).
    """

    name: str
    identity: Mapping[str, Any]
    operation: str
    obj: dict[str, Any]
    allowed: bool
    fragment: str = ""
    old: dict[str, Any] | None = None
    old_identity: Mapping[str, Any] | None = None
    refused_on_kueue: bool = False
    #: On the real server, part of the message of what refuses first where that is not a policy: RBAC, Kueue's
    #: Job webhook (a controller owner it cannot find) or the POSIX identity webhook (no person to stamp).
    real_fragment: str = ""

    def expected(self, kueue: bool, *, real: bool = False) -> tuple[bool, str]:
        """The verdict and message fragment on one backend (``real``: as the API server words the refusal)."""
        if kueue and self.refused_on_kueue:
            return False, ta.KUEUE_REFUSAL
        return self.allowed, (self.real_fragment if real and self.real_fragment else self.fragment)


@dataclass
class Verdict:
    """What one judge (the offline engine or the API server) answered for one case."""

    allowed: bool
    messages: list[str] = field(default_factory=list)


def _owner(kind: str, api_version: str, name: str = "small") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": "spoofed-uid", "controller": True}


def _with(obj: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    edit(changed)
    return changed


def _named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return _with(obj, lambda o: o["metadata"].__setitem__("name", name))


def _set_meta(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["metadata"].__setitem__(key, value)


def _bare_pod(name: str, resources: dict[str, str], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "hyperpod-ns-research"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": ta.pod_spec(resources=resources)}


def cases(member: Mapping[str, Any] = MEMBER) -> list[Case]:
    """Every case of the table (fresh objects each call), the member's cases sent as ``member``."""
    honest = ta.job(annotations=ta.CHECKPOINT, name="ac-honest")
    owned_old = _with(
        ta.job(annotations=ta.CHECKPOINT, name="ac-owned"),
        _set_meta("ownerReferences", [_owner("ConfigMap", "v1", "mpi")]),
    )
    launcher = _named(ta.mpi_launcher(ta.mpijob()), "ac-launcher")
    owner_msg = "ownerReferences must not name a controller"
    changed_msg = "cannot be added, changed"
    return [
        # honest flows
        Case("honest labelled Job", member, "CREATE", honest, True),
        Case(
            "honest PyTorchJob",
            member,
            "CREATE",
            _named(ta.pytorchjob(annotations=ta.CHECKPOINT), "ac-pt"),
            True,
        ),
        Case("honest MPIJob", member, "CREATE", _named(ta.mpijob(annotations=ta.CHECKPOINT), "ac-mpi"), True),
        Case(
            "honest RayCluster",
            member,
            "CREATE",
            _named(ta.raycluster(annotations=ta.CHECKPOINT), "ac-ray"),
            True,
        ),
        Case(
            "honest HyperPodPyTorchJob",
            member,
            "CREATE",
            _named(ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT), "ac-hp"),
            True,
            refused_on_kueue=True,
        ),
        Case("MPI operator creates the launcher Job", MPI_OPERATOR, "CREATE", launcher, True),
        Case(
            "a non-controller owner reference",
            member,
            "CREATE",
            _with(
                _named(honest, "ac-noncontroller"),
                _set_meta("ownerReferences", [{**_owner("ConfigMap", "v1"), "controller": False}]),
            ),
            True,
        ),
        # hostile: the queue, the class, the checkpoint
        Case(
            "an unlabelled Job",
            member,
            "CREATE",
            ta.job(labels={}, annotations=ta.CHECKPOINT, name="ac-unlabelled"),
            False,
            "kueue.x-k8s.io/priority-class is required",
        ),
        Case(
            "another team's queue",
            member,
            "CREATE",
            ta.job(
                labels={**ta.kueue_labels(), "kueue.x-k8s.io/queue-name": "hyperpod-ns-inference-localqueue"},
                annotations=ta.CHECKPOINT,
                name="ac-otherqueue",
            ),
            False,
            "kueue.x-k8s.io/queue-name",
        ),
        Case(
            "an unentitled priority class",
            member,
            "CREATE",
            ta.job(
                labels=ta.kueue_labels(priority="inference-priority"),
                annotations=ta.CHECKPOINT,
                name="ac-class",
            ),
            False,
            "inference-priority is not allowed in namespace hyperpod-ns-research",
        ),
        Case(
            "a spoofed MPIJob owner on an unlabelled Job",
            member,
            "CREATE",
            _with(
                ta.job(labels={}, annotations=ta.CHECKPOINT, name="ac-spoof-mpi"),
                _set_meta("ownerReferences", [_owner("MPIJob", "kubeflow.org/v2beta1")]),
            ),
            False,
            owner_msg,
            real_fragment='MPIJob.kubeflow.org "small" not found',
        ),
        Case(
            "a large Job pointed at a small admitted Job",
            member,
            "CREATE",
            _with(
                ta.job(
                    annotations=ta.CHECKPOINT,
                    name="ac-large",
                    spec=ta.pod_spec(resources={"nvidia.com/gpu": "64"}),
                ),
                _set_meta("ownerReferences", [_owner("Job", "batch/v1", "small")]),
            ),
            False,
            owner_msg,
            real_fragment='Job.batch "small" not found',
        ),
        Case(
            "a spoofed owner does not skip the checkpoint rule",
            member,
            "CREATE",
            _with(
                ta.job(labels=ta.kueue_labels(priority="experimentation-priority"), name="ac-nockpt"),
                _set_meta("ownerReferences", [_owner("MPIJob", "kubeflow.org/v2beta1")]),
            ),
            False,
            "HYPERPOD_TENANCY_CHECKPOINT_DIR",
            real_fragment='MPIJob.kubeflow.org "small" not found',
        ),
        Case(
            "a bare GPU Pod with a spoofed ReplicaSet owner",
            member,
            "CREATE",
            _bare_pod("ac-pod", ta.GPU, _owner("ReplicaSet", "apps/v1")),
            False,
            "queue-name",
            real_fragment='cannot create resource "pods"',
        ),
        Case(
            "a lookalike controller user name",
            {
                "username": "system:serviceaccount:hyperpod-ns-research:kueue-controller-manager",
                "groups": member["groups"],
            },
            "CREATE",
            ta.job(labels={}, name="ac-lookalike"),
            False,
            "kueue.x-k8s.io/queue-name",
            real_fragment="is not an IAM role session",
        ),
        # hostile updates
        Case(
            "a member adds a controller owner on update",
            member,
            "UPDATE",
            _with(_named(honest, "ac-upd-add"), _set_meta("ownerReferences", [_owner("Job", "batch/v1")])),
            False,
            changed_msg,
            old=_named(honest, "ac-upd-add"),
        ),
        Case(
            "a member repoints a controller owner on update",
            member,
            "UPDATE",
            _with(owned_old, _set_meta("ownerReferences", [_owner("ConfigMap", "v1", "other")])),
            False,
            changed_msg,
            old=owned_old,
            old_identity=MPI_OPERATOR,
        ),
        Case(
            "a member relabels the operator's launcher to an unentitled class",
            member,
            "UPDATE",
            _with(launcher, _set_meta("labels", ta.kueue_labels(priority="inference-priority"))),
            False,
            "inference-priority is not allowed in namespace hyperpod-ns-research",
            old=launcher,
            old_identity=MPI_OPERATOR,
        ),
        Case(
            "an unchanged owner reference on update",
            member,
            "UPDATE",
            _with(
                _named(owned_old, "ac-owned-same"),
                lambda o: o["metadata"]["annotations"].__setitem__("note", "x"),
            ),
            True,
            old=_named(owned_old, "ac-owned-same"),
            old_identity=MPI_OPERATOR,
        ),
        # topology requests: the reference places no instance type by topology, so none names a level that exists
        Case(
            "a pod template asks for a network node on a cluster without topology-aware types",
            member,
            "CREATE",
            _with(
                _named(honest, "ac-topology"),
                _template_note(_REQUIRED, "topology.k8s.aws/network-node-layer-3"),
            ),
            False,
            "may name nothing: no instance type of this cluster is placed by network topology",
        ),
        Case(
            "a job's own metadata asks for a network node, as hyp writes it beside the template",
            member,
            "CREATE",
            _with(
                _named(honest, "ac-topology-job"),
                _set_meta("annotations", {_REQUIRED: "kubernetes.io/hostname"}),
            ),
            False,
            "may name nothing",
        ),
        Case(
            "a pod template asks for slices, which the platform does not offer",
            member,
            "CREATE",
            _with(
                _named(honest, "ac-topology-slice"), _template_note("kueue.x-k8s.io/podset-slice-size", "2")
            ),
            False,
            "kueue.x-k8s.io/podset-slice-size",
        ),
        # accelerators: the reference partitions no GPU and has no Trainium, so neither is the team's to ask for
        Case(
            "a job asks for a GPU partition on a cluster that partitions none",
            member,
            "CREATE",
            ta.job(
                annotations=ta.CHECKPOINT,
                name="ac-partition",
                spec=ta.pod_spec(resources={"nvidia.com/mig-1g.10gb": "1"}),
            ),
            False,
            "requests an accelerator its team holds no quota for",
        ),
        Case(
            "a job asks for NeuronCores on a cluster without Trainium",
            member,
            "CREATE",
            ta.job(
                annotations=ta.CHECKPOINT,
                name="ac-neuroncore",
                spec=ta.pod_spec(resources={"aws.amazon.com/neuroncore": "2"}),
            ),
            False,
            "requests an accelerator its team holds no quota for",
        ),
    ]


_REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def _template_note(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    """Set annotation ``key`` on the Job's pod template."""

    def edit(job: dict[str, Any]) -> None:
        job["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[key] = value

    return edit


def offline(synth: Synth, case: Case) -> Verdict:
    """The offline engine's verdict on ``case`` (:func:`tenant_admission.decide`)."""
    decision = ta.decide(synth, case.obj, operation=case.operation, user=dict(case.identity), old=case.old)
    return Verdict(decision.allowed, decision.denied)


def disagreements(
    table: Sequence[Case],
    kueue: bool,
    offline: Sequence[Verdict],
    real: Sequence[Verdict],
    *,
    worded: str = "real",
) -> list[str]:
    """Every case where the real server, the offline engine and the expectation do not all agree (one line each).

    ``worded``: whose wording of a refusal to expect (``real``: :attr:`Case.real_fragment` where it is set).
    """
    found = []
    for case, mine, theirs in zip(table, offline, real, strict=True):
        allowed, fragment = case.expected(kueue, real=worded == "real")
        problems = []
        if theirs.allowed != mine.allowed:
            problems.append(f"real {verdict_text(theirs)} vs offline {verdict_text(mine)}")
        if theirs.allowed != allowed:
            problems.append(f"real {verdict_text(theirs)}, expected {'allowed' if allowed else 'denied'}")
        if not allowed and fragment and not any(fragment in m for m in theirs.messages):
            problems.append(f"real refusal lacks {fragment!r}: {theirs.messages}")
        if problems:
            found.append(f"{case.name}: " + "; ".join(problems))
    return found


def verdict_text(verdict: Verdict) -> str:
    """``allowed`` or ``denied (<messages>)``."""
    return "allowed" if verdict.allowed else f"denied ({' | '.join(verdict.messages)[:300]})"

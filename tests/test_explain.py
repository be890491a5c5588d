"""``hyperpod-tenancy explain``: why a job is pending, from recorded Kueue v0.19.2 objects, live and offline.

The cases of ``tests/support/explain_cases/`` are ``kubectl get -o json`` Lists holding a
``kueue.x-k8s.io/v1beta2`` Workload, the team's ClusterQueue (its spec rendered by
:func:`hyperpod_tenancy.k8s.kueue.team_objects` for ``platform.yaml``) and, where a case needs them, the team's
other Workloads, the job's Pods and Events. Condition reasons and messages are the ones Kueue v0.19.2 writes
(``git show v0.19.2:<path>`` of kubernetes-sigs/kueue, tag commit c3785e520aeeb0e0a93e8a3785a6e46c51502246);
every test names the source path it follows. Every Kueue object is validated against the upstream v0.19.2 CRDs
(``KUEUE_CRDS_DIR``), every timestamp is RFC 3339.

The live path runs for real: :class:`FakeKubeApi` serves the recorded objects at the API's paths over HTTP, and
authorizes every request with the team manifests' RBAC (``tests/support/rbac_eval.py``) as the user the token
names, so a read the team's group is not granted fails the run with 403, as the API server would.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import platforms
import pytest
import yaml
from cel_admission import evaluate_policies
from explain_messages import KUBECTL_PREFIX, clauses, normalised, parse_written
from kube_api_server import ServedOnThread, answer_json
from kueue_crd_validator import validate_kueue
from rbac_eval import Authorizer, Request, Subject

from hyperpod_tenancy import cli
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.labels import NAMESPACE_NAME_LABEL, namespace_labels
from hyperpod_tenancy.k8s.posix_identity import posix_identity_policies
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.tools.explain.denials import parse_denial
from hyperpod_tenancy.tools.explain.diagnose import diagnose
from hyperpod_tenancy.tools.explain.live import read_live
from hyperpod_tenancy.tools.explain.objects import (
    Cause,
    Diagnosis,
    ExplainInputError,
    Objects,
    objects_from_documents,
    owner_names,
)

CASES = Path(__file__).parent / "support" / "explain_cases"
PLATFORM_YAML = str(platforms.PLATFORM_YAML)
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
TIMESTAMP_KEYS = {
    "lastTransitionTime",
    "creationTimestamp",
    "firstTimestamp",
    "lastTimestamp",
    "startedAt",
    "finishedAt",
}
#: Each Kueue case file and the Workload to explain.
KUEUE_CASES = {
    "own_quota": "job-batch-eval-0000d",
    "borrowing_ceiling": "finetune-7",
    "exceeds_ceiling": "job-pretrain-xl-0001f",
    "lenders_busy": "finetune-8",
    "reclaiming": "segmenter",
    "flavor_missing": "train-42",
    "no_matching_flavor": "train-p4",
    "preempted_reclaim": "sweep-3",
    "preempted_in_queue": "sweep-4",
    "admitted": "train-ok",
    "pods_unschedulable": "train-efa",
    "home_directory": "train-home",
    "webhook_unavailable": "train-wh",
    "quota_exceeded": "train-rq",
}


@pytest.fixture(scope="module")
def platform() -> Platform:
    return platforms.reference_platform()


def load(case: str) -> list[dict[str, Any]]:
    data = json.loads((CASES / f"{case}.json").read_text(encoding="utf-8"))
    assert data["kind"] == "List"
    return list(data["items"])


def explain(platform: Platform, case: str, **kw: Any) -> list[Diagnosis]:
    objects = objects_from_documents(load(case), asked=KUEUE_CASES[case], namespace=None, **kw)
    return diagnose(platform, objects)


def text(diagnoses: list[Diagnosis]) -> str:
    return "\n".join(d.render() for d in diagnoses)


def assert_visibility(diagnoses: list[Diagnosis]) -> None:
    """Only the lenders' idle capacity may be reported as not visible to the team member."""
    for d in diagnoses:
        if d.cause is Cause.LENDERS_BUSY:
            assert d.not_visible
            assert "not visible to you" in d.summary
        else:
            assert not d.not_visible, d
            assert "not visible" not in d.render(), d.render()


def _timestamps(obj: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in TIMESTAMP_KEYS and isinstance(value, str):
                yield f"{path}.{key}", value
            yield from _timestamps(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _timestamps(value, f"{path}[{i}]")


# --------------------------------------------------------------------------------- the recordings themselves


@pytest.mark.parametrize("case", sorted(KUEUE_CASES))
def test_recorded_kueue_objects_match_the_v0_19_2_crds(case: str, platform: Platform) -> None:
    """Every Workload and ClusterQueue of every case validates against the upstream v0.19.2 CRDs (strict)."""
    items = load(case)
    kueue = [o for o in items if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert {o["kind"] for o in kueue} >= {"Workload", "ClusterQueue"}, case
    assert validate_kueue(kueue) == []
    for where, value in _timestamps(items):
        assert RFC3339.match(value), f"{case}{where}: {value!r} is not RFC 3339"
    # the queue's spec is what the platform renders for that team: the recording is of this platform
    from hyperpod_tenancy.k8s.kueue import team_objects

    (queue,) = [o for o in kueue if o["kind"] == "ClusterQueue"]
    team = (
        queue["metadata"]["name"]
        .removeprefix(names.NAMESPACE_PREFIX)
        .removesuffix(names.CLUSTER_QUEUE_SUFFIX)
    )
    assert queue["spec"] == team_objects(platform, platform.team(team))[0]["spec"]


def test_the_validator_rejects_a_malformed_recording() -> None:
    """The CRD check is not vacuous: an unknown status field and a non-RFC 3339 time are reported."""
    workload = copy.deepcopy(load("own_quota")[0])
    workload["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-02 10:00"
    workload["status"]["pendingReason"] = "x"
    issues = validate_kueue([workload])
    assert any("pendingReason" in i for i in issues) and any("date-time" in i for i in issues)


# ----------------------------------------------------------------------------------------- the Kueue cases


def test_waiting_for_own_quota(platform: Platform) -> None:
    """A team that does not borrow waits for its own guarantee, and is told what holds it.

    Message: ``couldn't assign flavors to pod set main: ... insufficient unused quota for nvidia.com/gpu in
    flavor ml.g5.12xlarge, 4 more needed`` (``Assignment.Message`` and ``fitsResourceQuota`` in
    pkg/scheduler/flavorassigner/flavorassigner.go; reason ``Pending``: ``UnadmittedWorkloadReasonWithFallback``
    in pkg/workload/workload.go with the UnadmittedWorkloadsObservability gate off, its 0.19 default in
    pkg/features/kube_features.go; written by ``requeueAndUpdate`` in pkg/scheduler/scheduler.go).
    """
    diagnoses = explain(platform, "own_quota")
    main = diagnoses[0]
    assert main.cause is Cause.OWN_QUOTA
    assert "8 of your 12 nvidia.com/gpu are in use" in main.summary
    out = text(diagnoses)
    assert "this job asks for 8 nvidia.com/gpu in flavor ml.g5.12xlarge" in out
    assert "job-serve-a-0000b (4 nvidia.com/gpu, inference-priority)" in out
    assert "2 admitted, 2 holding quota, 1 pending" in out
    assert main.fix[0].startswith("wait: it starts by itself")
    assert_visibility(diagnoses)


def test_borrowing_ceiling_reached(platform: Platform) -> None:
    """The team holds 104 of its 108 (72 guaranteed + borrowLimit 50 %): the job's 16 GPUs do not fit.

    Same message shape as the own-quota case (pkg/scheduler/flavorassigner/flavorassigner.go); the numbers come
    from the ClusterQueue's ``status.flavorsReservation`` (pkg/cache/scheduler) and its ``borrowingLimit``.
    """
    diagnoses = explain(platform, "borrowing_ceiling")
    main = diagnoses[0]
    assert main.cause is Cause.BORROWING_CEILING
    assert "holds 104 nvidia.com/gpu (32 borrowed) of at most 108" in main.summary
    assert any("teams[0].compute.borrowLimit" in f for f in main.fix)
    # a higher entitled class is suggested to an experimentation job of a team that preempts its own work
    assert any("kueue.x-k8s.io/priority-class: training-priority" in f for f in main.fix)
    assert_visibility(diagnoses)


def test_larger_than_the_ceiling_with_granular_reasons(platform: Platform) -> None:
    """128 GPUs can never fit a ceiling of 108, and the granular reason ``ExceedsMaxQuota`` is understood.

    ``insufficient quota for nvidia.com/gpu in flavor ml.p5.48xlarge, previously considered podsets requests (0)
    + current podset request (128) > maximum capacity (108)`` (``fitsResourceQuota``, noFitReason
    ``WorkloadQuotaReservedReasonExceedsMaxQuota`` in pkg/scheduler/flavorassigner/flavorassigner.go; the maximum
    is ``potentialAvailable`` in pkg/cache/scheduler/resource_node.go; reason names in
    apis/kueue/v1beta2/workload_types.go).
    """
    # recorded as Kueue v0.19.2 writes it by default (reason Pending: tests/test_cluster_explain.py); with the
    # UnadmittedWorkloadsObservability gate on, the same message comes with the granular reason
    for reason in ("Pending", "ExceedsMaxQuota"):
        items = load("exceeds_ceiling")
        items[0]["status"]["conditions"][0]["reason"] = reason
        objects = objects_from_documents(items, asked=KUEUE_CASES["exceeds_ceiling"], namespace=None)
        diagnoses = diagnose(platform, objects)
        main = diagnoses[0]
        assert main.cause is Cause.BORROWING_CEILING
        assert "128 nvidia.com/gpu against a ceiling of 108" in main.summary
        assert "make the job smaller: at most 108 nvidia.com/gpu in flavor ml.p5.48xlarge" in main.fix
        assert_visibility(diagnoses)


def test_lenders_have_no_idle_capacity(platform: Platform) -> None:
    """Within the ceiling but above the guarantee: only the lenders' queues could say more (not visible).

    pkg/scheduler/flavorassigner/flavorassigner.go ``fitsResourceQuota``: ``available`` (pkg/cache/scheduler/
    resource_node.go) is the own free quota plus the cohort's idle capacity within the borrowing limit.
    """
    diagnoses = explain(platform, "lenders_busy")
    main = diagnoses[0]
    assert main.cause is Cause.LENDERS_BUSY
    assert main.not_visible
    assert "needs to borrow 8 nvidia.com/gpu (within your ceiling of 108)" in main.summary
    assert any("8 nvidia.com/gpu free now" in f for f in main.fix)
    assert_visibility(diagnoses)


def test_own_guarantee_lent_out_is_being_reclaimed(platform: Platform) -> None:
    """The job fits the guarantee by the numbers; Kueue is preempting the borrowers to get it back.

    ``... 24 more needed. Pending the preemption of 2 workload(s)`` (``markPreemptionOutcome`` in
    pkg/scheduler/scheduler.go).
    """
    diagnoses = explain(platform, "reclaiming")
    main = diagnoses[0]
    assert main.cause is Cause.OWN_QUOTA
    assert "16 + 32 <= 48 nvidia.com/gpu" in main.summary
    assert "Kueue is preempting 2 workload(s) to make room for it" in main.details
    assert_visibility(diagnoses)


def test_flavor_does_not_exist(platform: Platform) -> None:
    """The ClusterQueue is inactive because a ResourceFlavor is missing.

    ClusterQueue ``Active=False``, reason ``FlavorNotFound``, ``Can't admit new workloads: references missing
    ResourceFlavor(s): ml.p5.48xlarge.`` (``inactiveReason`` in pkg/cache/scheduler/clusterqueue.go); the Workload
    ``ClusterQueue <cq> is inactive`` (``nominate`` in pkg/scheduler/scheduler.go).
    """
    diagnoses = explain(platform, "flavor_missing")
    main = diagnoses[0]
    assert main.cause is Cause.FLAVOR_MISSING
    assert "does not exist (ml.p5.48xlarge)" in main.summary
    assert_visibility(diagnoses)


def test_instance_type_no_flavor_offers(platform: Platform) -> None:
    """A nodeSelector on ml.p4d.24xlarge matches no flavor of the queue.

    ``flavor <f> doesn't match node affinity`` (``checkFlavorForPodSets`` in
    pkg/scheduler/flavorassigner/flavorassigner.go), reasons sorted and joined with ``, `` (``Status.Message``).
    """
    diagnoses = explain(platform, "no_matching_flavor")
    main = diagnoses[0]
    assert main.cause is Cause.FLAVOR_MISSING
    assert "node.kubernetes.io/instance-type to one of: ml.p5.48xlarge" in main.fix[0]
    assert_visibility(diagnoses)


def test_preempted_by_reclamation(platform: Platform) -> None:
    """Preempted when team vision took back what it lent; queued again and now waiting for lenders.

    ``Evicted=True`` reason ``Preempted`` and ``Preempted=True`` reason ``InCohortReclamation``, message
    ``Preempted to accommodate a workload (UID: ..., JobUID: ...) due to reclamation within the cohort; preemptor
    path: /hyperpod-tenancy-cohort/hyperpod-ns-vision-clusterqueue; preemptee path: ...`` (``preemptionMessage``
    and ``IssuePreemptions`` in pkg/scheduler/preemption/preemption.go, ``Evict`` in pkg/workload/evict/evict.go);
    then ``Requeued=True`` and ``QuotaReserved=False`` (pkg/controller/jobframework/reconciler.go, eviction step),
    ``schedulingStats.evictions`` with ``underlyingCause: ""`` (``workloadEvictionStateInc`` in evict.go).
    """
    diagnoses = explain(platform, "preempted_reclaim")
    main, now = diagnoses[0], diagnoses[1]
    assert main.cause is Cause.PREEMPTED
    assert "preempted by a workload of team vision" in main.summary
    assert "the lending team took back capacity it had lent" in main.summary
    assert "preempted 1 time(s) so far" in main.details
    assert now.cause is Cause.LENDERS_BUSY  # what it waits for now, reported on its own
    assert_visibility(diagnoses)


def test_preempted_in_the_queue_by_own_higher_priority_work(platform: Platform) -> None:
    """``InClusterQueue``: the preemptor is found among the team's own workloads by its UID (still stopping).

    ``due to prioritization in the ClusterQueue`` (``HumanReadablePreemptionReasons`` in
    pkg/scheduler/preemption/preemption.go).
    """
    diagnoses = explain(platform, "preempted_in_queue")
    main = diagnoses[0]
    assert main.cause is Cause.PREEMPTED
    assert "your team's workload job-urgent-eval-0005b (training-priority)" in main.summary
    assert "is being stopped" in main.summary
    assert len(diagnoses) == 1
    assert_visibility(diagnoses)


def test_admitted(platform: Platform) -> None:
    """``QuotaReserved=True`` (``Quota reserved in ClusterQueue <cq>``, ``SetQuotaReservation`` in pkg/workload/workload.go)
    and ``Admitted=True`` (``The workload is admitted``, ``SyncAdmittedCondition`` in pkg/workload/admissionchecks.go).
    """
    diagnoses = explain(platform, "admitted")
    main = diagnoses[0]
    assert main.cause is Cause.ADMITTED
    assert "pods: 2 Running" in main.details
    assert_visibility(diagnoses)


def test_admitted_but_pods_unschedulable(platform: Platform) -> None:
    """Kueue is not the cause: kube-scheduler's ``0/16 nodes are available: ...`` on ``PodScheduled=False``."""
    diagnoses = explain(platform, "pods_unschedulable")
    main = diagnoses[0]
    assert main.cause is Cause.PODS_UNSCHEDULABLE
    out = main.render()
    assert "12 Insufficient vpc.amazonaws.com/efa (of 16 nodes)" in out
    assert "untolerated taint {sagemaker.amazonaws.com/node-health-status: Unschedulable}" in out
    assert any("EFA" in f for f in main.fix) and any("taint" in f for f in main.fix)
    assert_visibility(diagnoses)


def test_home_directory_init_container_fails(platform: Platform) -> None:
    """The webhook's init container (``fsx_dirs.HOME_INIT_CONTAINER_NAME``) exits 3: home/<uid> is someone else's."""
    diagnoses = explain(platform, "home_directory")
    main = diagnoses[0]
    assert main.cause is Cause.HOME_DIRECTORY
    assert "/fsx/research/home/200007 exists but is not yours" in main.summary
    assert "kubectl logs train-home-0-x121 -c hyperpod-tenancy-home -n hyperpod-ns-research" in main.fix[0]
    assert_visibility(diagnoses)


def test_webhook_unavailable_with_failure_policy_fail(platform: Platform) -> None:
    """Admitted, but the Job controller's ``FailedCreate``: ``failed calling webhook ...: connection refused``."""
    diagnoses = explain(platform, "webhook_unavailable")
    main = diagnoses[0]
    assert main.cause is Cause.WEBHOOK_UNAVAILABLE
    assert "failurePolicy: Fail" in main.render()
    assert "seen in: Event FailedCreate on Job/train-wh" in main.details
    assert diagnoses[1].cause is Cause.ADMITTED
    assert_visibility(diagnoses)


def test_a_different_pending_message_is_not_guessed(platform: Platform) -> None:
    """A message this tool does not know is shown as Kueue wrote it, with no invented cause."""
    items = load("lenders_busy")
    items[0]["status"]["conditions"][0]["message"] = (
        "Workload no longer fits after processing another workload"
    )
    objects = objects_from_documents(items, asked="finetune-8", namespace=None)
    (main, *_) = diagnose(platform, objects)
    assert main.cause is Cause.OTHER
    assert "Kueue: Workload no longer fits after processing another workload" in main.details


def _with_conditions(case: str, conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items = load(case)
    items[0]["status"]["conditions"] = conditions
    items[0]["status"].pop("admission", None)
    assert validate_kueue([items[0]]) == []
    return items


def test_missing_local_queue_is_a_queue_problem(platform: Platform) -> None:
    """``LocalQueue <lq> is terminating or missing``, reason ``Inadmissible`` with the gate off
    (pkg/controller/core/workload_controller.go, ``UnadmittedWorkloadReasonWithFallback``)."""
    message = "LocalQueue hyperpod-ns-research-localqueue is terminating or missing"
    items = _with_conditions(
        "admitted",
        [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Inadmissible",
                "message": message,
                "lastTransitionTime": "2026-12-02T10:05:00Z",
            }
        ],
    )
    (main, *_) = diagnose(platform, objects_from_documents(items, asked="train-ok", namespace=None))
    assert main.cause is Cause.QUEUE_INACTIVE
    assert f"Kueue: {message}" in main.details


def test_not_evaluated_yet(platform: Platform) -> None:
    """No ``QuotaReserved`` condition yet: Kueue has not looked at the Workload."""
    items = _with_conditions("admitted", [])
    (main, *_) = diagnose(platform, objects_from_documents(items, asked="train-ok", namespace=None))
    assert main.cause is Cause.NOT_EVALUATED
    assert "hyperpod-ns-research-localqueue" in main.fix[0]


def _admitted_then(platform: Platform, kind: str, reason: str, message: str) -> Diagnosis:
    """Diagnose the recorded admitted Workload after Kueue added condition ``kind`` (True) to it."""
    items = load("admitted")
    items[0]["status"]["conditions"].append(
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-12-02T10:20:00Z",
            "observedGeneration": 1,
        }
    )
    assert validate_kueue([items[0]]) == []
    (main, *_) = diagnose(platform, objects_from_documents(items, asked="train-ok", namespace=None))
    return main


def test_finished(platform: Platform) -> None:
    """``Finished=True`` reason ``Succeeded`` with the Job's Complete message (``Job.Finished`` in
    pkg/controller/jobs/job/job_controller.go, reasons in apis/kueue/v1beta2/workload_types.go)."""
    main = _admitted_then(platform, "Finished", "Succeeded", "Reached expected number of succeeded pods")
    assert main.cause is Cause.FINISHED
    assert "(Succeeded)" in main.summary


def test_evicted_without_preemption_is_not_called_a_preemption(platform: Platform) -> None:
    """``Evicted=True`` reason ``PodsReadyTimeout`` (``Exceeded the PodsReady timeout ...``, workload_controller.go)."""
    main = _admitted_then(
        platform,
        "Evicted",
        "PodsReadyTimeout",
        "Exceeded the PodsReady timeout hyperpod-ns-research/job-train-ok-00065",
    )
    assert main.cause is Cause.OTHER
    assert "Kueue evicted the job (PodsReadyTimeout); it was not preempted" in main.summary


def test_a_workload_at_a_class_the_team_is_not_entitled_to(platform: Platform) -> None:
    """A Workload carrying a WorkloadPriorityClass outside ``allowedPriorityClasses`` gets that said too."""
    items = load("admitted")
    items[0]["spec"]["priorityClassRef"]["name"] = "inference-priority"
    diagnoses = diagnose(platform, objects_from_documents(items, asked="train-ok", namespace=None))
    assert [d.cause for d in diagnoses] == [Cause.ADMITTED, Cause.PRIORITY_NOT_ENTITLED]
    assert (
        "entitled: training-priority, experimentation-priority (teams[0].allowedPriorityClasses)"
        in diagnoses[1].details
    )


# ---------------------------------------------------------------------------------------------- denials


def _namespace(platform: Platform, team: str) -> dict[str, Any]:
    labels = {**namespace_labels(platform, platform.team(team)), NAMESPACE_NAME_LABEL: names.namespace(team)}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": names.namespace(team), "labels": labels},
    }


def _member(team: str) -> dict[str, Any]:
    return {"username": "alice@example.com", "groups": [names.kubernetes_group(team), "system:authenticated"]}


def _job(priority: str, checkpoint: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "train", "image": "x"}
    if checkpoint:
        container["env"] = [{"name": k, "value": v} for k, v in checkpoint.items()]
        container["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx/research"}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train-42",
            "namespace": "hyperpod-ns-research",
            "labels": {
                "kueue.x-k8s.io/queue-name": "hyperpod-ns-research-localqueue",
                "kueue.x-k8s.io/priority-class": priority,
            },
        },
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx"}}],
                }
            },
        },
    }


def _recorded_denial(name: str) -> str:
    return (CASES / f"{name}.txt").read_text(encoding="utf-8").strip()


def test_recorded_denials_are_what_the_policies_say(platform: Platform) -> None:
    """The recorded kubectl errors carry exactly the messages the rendered policies produce (CEL evaluated)."""
    checkpoint = {
        "HYPERPOD_TENANCY_CHECKPOINT_DIR": "/fsx/research/train-42",
        "HYPERPOD_TENANCY_CHECKPOINT_INTERVAL": "30m",
    }
    for recording, job in (
        ("priority_denied", _job("inference-priority", checkpoint)),
        ("checkpoint_denied", _job("training-priority")),
    ):
        decision = evaluate_policies(
            admission_policies(platform),
            obj=job,
            namespace=_namespace(platform, "research"),
            group="batch",
            resource="jobs",
            user_info=_member("research"),
        )
        denial = parse_denial(_recorded_denial(recording))
        assert denial is not None and denial.kind == "policy"
        assert denial.message == decision.denied[0]  # the API server reports the first denied validation


def test_priority_class_not_entitled(platform: Platform) -> None:
    """``--denial`` with the workload-labels policy's refusal: the cause, the team's classes and the policy field."""
    objects = Objects(namespace="hyperpod-ns-research", denials=(_recorded_denial("priority_denied"),))
    (main,) = diagnose(platform, objects)
    assert main.cause is Cause.PRIORITY_NOT_ENTITLED
    assert "rule: validation 1 of hyperpod-tenancy-workload-labels (reason Forbidden)" in main.details
    assert "training-priority, experimentation-priority" in main.fix[0]
    assert "teams[0].allowedPriorityClasses" in main.fix[1]
    assert_visibility([main])


def test_checkpoint_denial_names_the_policy_and_the_fix(platform: Platform) -> None:
    objects = Objects(namespace="hyperpod-ns-research", denials=(_recorded_denial("checkpoint_denied"),))
    (main,) = diagnose(platform, objects)
    assert main.cause is Cause.ADMISSION_DENIED
    assert "policy: hyperpod-tenancy-checkpoints (binding hyperpod-tenancy-checkpoints)" in main.details
    assert "it prevents: borrowed capacity used by work that does not checkpoint" in main.details
    assert "HYPERPOD_TENANCY_CHECKPOINT_DIR=/fsx/research/<job>" in main.fix[0]


def test_webhook_denial(platform: Platform) -> None:
    objects = Objects(namespace="hyperpod-ns-research", denials=(_recorded_denial("webhook_denied"),))
    (main,) = diagnose(platform, objects)
    assert main.cause is Cause.ADMISSION_DENIED
    assert "webhook: posix-identity.hyperpod-tenancy.io" in main.details
    assert main.fix[0].startswith("retry in a minute")


def test_pods_refused_by_the_posix_identity_policy(platform: Platform) -> None:
    """The Job controller's ``FailedCreate`` Event carries the posix-identity policy's real message (CEL evaluated)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-root-0-abcde", "namespace": "hyperpod-ns-research"},
        "spec": {"securityContext": {"runAsUser": 0}, "containers": [{"name": "train", "image": "x"}]},
    }
    controller = {
        "username": "system:serviceaccount:kube-system:job-controller",
        "groups": ["system:serviceaccounts"],
    }
    decision = evaluate_policies(
        posix_identity_policies(),
        obj=pod,
        namespace=_namespace(platform, "research"),
        group="",
        resource="pods",
        user_info=controller,
    )
    reason = decision.denied[0]
    items = load("admitted")
    items[0]["metadata"]["ownerReferences"][0]["name"] = "train-root"
    items = [o for o in items if o["kind"] != "Pod"]
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": "train-root.1",
                "namespace": "hyperpod-ns-research",
                "creationTimestamp": "2026-12-02T10:05:00Z",
            },
            "involvedObject": {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "train-root",
                "namespace": "hyperpod-ns-research",
            },
            "reason": "FailedCreate",
            "type": "Warning",
            "lastTimestamp": "2026-12-02T10:05:00Z",
            "message": 'Error creating: pods "train-root-0-abcde" is forbidden: ValidatingAdmissionPolicy '
            f"'hyperpod-tenancy-posix-identity' with binding 'hyperpod-tenancy-posix-identity' denied request: {reason}",
        }
    )
    diagnoses = diagnose(platform, objects_from_documents(items, asked="train-root", namespace=None))
    assert diagnoses[0].cause is Cause.ADMISSION_DENIED
    assert (
        "policy: hyperpod-tenancy-posix-identity (binding hyperpod-tenancy-posix-identity)"
        in diagnoses[0].details
    )
    assert diagnoses[0].details[1].startswith("rule: validation ")
    assert diagnoses[1].cause is Cause.ADMITTED


def test_pods_refused_by_the_namespace_resource_quota(platform: Platform) -> None:
    """``exceeded quota: accelerator-ceiling, ...`` (the ResourceQuota admission plugin) on the Job's ``FailedCreate``."""
    from hyperpod_tenancy.k8s.team_manifests import ACCELERATOR_QUOTA_NAME, accelerator_ceiling

    diagnoses = explain(platform, "quota_exceeded")
    main = diagnoses[0]
    assert main.cause is Cause.ADMISSION_DENIED
    assert f"ResourceQuota {ACCELERATOR_QUOTA_NAME} is full" in main.summary
    # the recorded limit is the ceiling the team manifests render for research
    limit = accelerator_ceiling(platform, platform.team("research"))["nvidia.com/gpu"]
    assert f"limited: requests.nvidia.com/gpu={limit}" in main.details[1]
    assert diagnoses[1].cause is Cause.ADMITTED
    assert_visibility(diagnoses)


def test_another_teams_queue_in_the_file_is_not_used(platform: Platform) -> None:
    """A file that also holds vision's ClusterQueue: only research's own is read; without it, no cause is guessed."""
    items = load("lenders_busy")
    vision = copy.deepcopy(load("reclaiming")[-1])
    assert vision["metadata"]["name"] == names.cluster_queue("vision")
    without_own = [o for o in items if o["kind"] != "ClusterQueue"] + [vision]
    objects = objects_from_documents(without_own, asked="finetune-8", namespace=None)
    assert objects.cluster_queue is None
    (main, *_) = diagnose(platform, objects)
    assert main.cause is Cause.OTHER
    assert "kubectl get clusterqueue hyperpod-ns-research-clusterqueue -o json" in main.fix[0]
    both = objects_from_documents([*items, vision], asked="finetune-8", namespace=None)
    assert both.cluster_queue is not None and both.cluster_queue["metadata"]["name"] == names.cluster_queue(
        "research"
    )
    assert diagnose(platform, both)[0].cause is Cause.LENDERS_BUSY


# --------------------------------------------------------------------------------------------- RBAC, live


def _request_of(method: str, path: str) -> Request:
    """The RBAC request an API path is (the subset explain may call)."""
    parts = urllib.parse.urlsplit(path).path.strip("/").split("/")
    assert method == "GET"
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = None
    if rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else "")
    return Request("get" if name else "list", resource, group, namespace, name)


class FakeKubeApi(ServedOnThread):
    """The recorded objects at the API's paths over HTTP, each request authorized with the rendered RBAC."""

    def __init__(self, items: list[dict[str, Any]], authz: Authorizer, users: dict[str, Subject]) -> None:
        self.items = items
        self.requests: list[tuple[str, Request, int]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                answer_json(self, status, body)

            def do_GET(self) -> None:
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                request = _request_of(self.command, self.path)
                who = users.get(token)
                status = (
                    200
                    if who is not None and authz.check(who, request).allowed
                    else (401 if who is None else 403)
                )
                outer.requests.append((self.path, request, status))
                if status != 200:
                    self._answer(
                        status,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "code": status,
                            "reason": "Forbidden",
                        },
                    )
                    return
                found = outer.lookup(request, self.path)
                if found is None:
                    self._answer(
                        404,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "code": 404,
                            "reason": "NotFound",
                        },
                    )
                else:
                    self._answer(200, found)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def lookup(self, request: Request, path: str) -> dict[str, Any] | None:
        kinds = {"workloads": "Workload", "clusterqueues": "ClusterQueue", "events": "Event", "pods": "Pod"}
        kind = kinds[request.resource]
        matches = [
            o
            for o in self.items
            if o["kind"] == kind
            and (request.namespace is None or o["metadata"].get("namespace") == request.namespace)
        ]
        if request.name:
            return next((o for o in matches if o["metadata"]["name"] == request.name), None)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        for selector in query.get("fieldSelector", []):
            key, _, value = selector.partition("=")
            assert key == "involvedObject.name"
            matches = [o for o in matches if o["involvedObject"]["name"] == value]
        # list items carry no kind or apiVersion, as the API server writes them
        items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in matches]
        return {
            "kind": f"{kind}List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }


def kubeconfig(tmp_path: Path, url: str, token: str, namespace: str | None = None) -> Path:
    context: dict[str, Any] = {"cluster": "shared-gpu", "user": "alice"}
    if namespace:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "shared-gpu", "cluster": {"server": url}}],
        "users": [{"name": "alice", "user": {"token": token}}],
        "contexts": [{"name": "shared-gpu", "context": context}],
        "current-context": "shared-gpu",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def authz(platform: Platform) -> Authorizer:
    """RBAC of every team, rendered with the k8s layer (team Role, queue-reader ClusterRole, bindings)."""
    return Authorizer(platforms.all_objects(platform))


USERS = {
    "research-token": Subject("alice@example.com", (names.kubernetes_group("research"),)),
    "vision-token": Subject("victor@example.com", (names.kubernetes_group("vision"),)),
    "inference-token": Subject("ines@example.com", (names.kubernetes_group("inference"),)),
}
TOKENS = {
    "hyperpod-ns-research": "research-token",
    "hyperpod-ns-vision": "vision-token",
    "hyperpod-ns-inference": "inference-token",
}


@pytest.mark.parametrize("case", sorted(KUEUE_CASES))
def test_live_reads_are_allowed_for_the_team_member(
    case: str, platform: Platform, authz: Authorizer, tmp_path: Path
) -> None:
    """End to end with the ``kubernetes`` client: same diagnosis as offline, every read allowed by the team's RBAC.

    The reads made (and the paths the server saw) are: list workloads, get the team's own clusterqueue by name,
    list events per involved name, list pods, all in the team namespace.
    """
    items = load(case)
    offline = objects_from_documents(items, asked=KUEUE_CASES[case], namespace=None)
    with FakeKubeApi(items, authz, USERS) as api:
        config = kubeconfig(tmp_path, api.url, TOKENS[offline.namespace])
        live = read_live(
            namespace=offline.namespace,
            asked=KUEUE_CASES[case],
            denials=(),
            kubeconfig=str(config),
            context=None,
        )
    assert [s for _, _, s in api.requests] == [200] * len(api.requests)
    assert [r for _, r, _ in api.requests] == [Request(v, res, g, ns, n) for v, g, res, ns, n in live.reads]
    team = offline.namespace.removeprefix(names.NAMESPACE_PREFIX)
    assert {(r.verb, r.resource) for _, r, _ in api.requests} <= {
        ("list", "workloads"),
        ("get", "clusterqueues"),
        ("list", "events"),
        ("list", "pods"),
    }
    assert {r.name for _, r, _ in api.requests if r.resource == "clusterqueues"} == {
        names.cluster_queue(team)
    }
    assert all(r.namespace == offline.namespace for _, r, _ in api.requests if r.resource != "clusterqueues")
    assert [d.render() for d in diagnose(platform, live)] == [d.render() for d in diagnose(platform, offline)]


def test_the_fake_api_server_enforces_rbac(platform: Platform, tmp_path: Path) -> None:
    """Not vacuous: without the team Role's Events grant, the live read fails on ``list events`` with 403."""
    objects = copy.deepcopy(platforms.all_objects(platform))
    for obj in objects:
        if obj["kind"] == "Role":
            obj["rules"] = [r for r in obj["rules"] if "events" not in r["resources"]]
    with FakeKubeApi(load("webhook_unavailable"), Authorizer(objects), USERS) as api:
        config = kubeconfig(tmp_path, api.url, "research-token")
        with pytest.raises(
            ExplainInputError, match=r"refused to let you list events in hyperpod-ns-research \(403"
        ):
            read_live(
                namespace="hyperpod-ns-research",
                asked="train-wh",
                denials=(),
                kubeconfig=str(config),
                context=None,
            )
    assert [s for _, _, s in api.requests][-1] == 403


def test_other_teams_queues_and_namespaces_are_denied(authz: Authorizer) -> None:
    """The one fact explain cannot read: another team's ClusterQueue; nor anything in another namespace."""
    alice = USERS["research-token"]
    assert authz.check(
        alice, Request("get", "clusterqueues", "kueue.x-k8s.io", None, names.cluster_queue("research"))
    ).allowed
    assert not authz.check(
        alice, Request("get", "clusterqueues", "kueue.x-k8s.io", None, names.cluster_queue("vision"))
    ).allowed
    assert not authz.check(alice, Request("list", "clusterqueues", "kueue.x-k8s.io")).allowed
    assert not authz.check(
        alice, Request("list", "workloads", "kueue.x-k8s.io", "hyperpod-ns-vision")
    ).allowed


def test_a_forbidden_read_is_one_line_and_exit_1(
    platform: Platform, authz: Authorizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vision member asking about research's namespace: the API's 403, said in one line."""
    with FakeKubeApi(load("lenders_busy"), authz, USERS) as api:
        config = kubeconfig(tmp_path, api.url, "vision-token")
        status = cli.main(
            [
                "explain",
                "finetune-8",
                "-n",
                "hyperpod-ns-research",
                "--kubeconfig",
                str(config),
                "--platform",
                PLATFORM_YAML,
            ]
        )
    err = capsys.readouterr().err
    assert status == 1
    assert len(err.strip().splitlines()) == 1
    assert "refused to let you list workloads in hyperpod-ns-research (403 Forbidden)" in err
    assert [s for _, _, s in api.requests] == [403]


def test_cli_live_uses_the_context_namespace(
    authz: Authorizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeKubeApi(load("borrowing_ceiling"), authz, USERS) as api:
        config = kubeconfig(tmp_path, api.url, "research-token", namespace="hyperpod-ns-research")
        status = cli.main(["explain", "finetune-7", "--kubeconfig", str(config), "--platform", PLATFORM_YAML])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("Workload job-finetune-7-00017 in hyperpod-ns-research (team research):")
    assert "(cause: borrowing-ceiling)" in out


def test_cli_live_unknown_workload_is_exit_1(
    authz: Authorizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeKubeApi(load("admitted"), authz, USERS) as api:
        config = kubeconfig(tmp_path, api.url, "research-token", namespace="hyperpod-ns-research")
        status = cli.main(
            ["explain", "no-such-job", "--kubeconfig", str(config), "--platform", PLATFORM_YAML]
        )
    err = capsys.readouterr().err
    assert status == 1
    assert "no Kueue Workload named no-such-job" in err and len(err.strip().splitlines()) == 1


def test_cli_live_unreachable_api_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = kubeconfig(tmp_path, "http://127.0.0.1:9", "research-token", namespace="hyperpod-ns-research")
    status = cli.main(["explain", "train", "--kubeconfig", str(config), "--platform", PLATFORM_YAML])
    err = capsys.readouterr().err
    assert status == 1
    assert (
        "cannot reach the Kubernetes API at http://127.0.0.1:9" in err and len(err.strip().splitlines()) == 1
    )


# --------------------------------------------------------------------------------------------------- CLI


def test_cli_from_file_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(
        [
            "explain",
            "finetune-8",
            "--from-file",
            str(CASES / "lenders_busy.json"),
            "--platform",
            PLATFORM_YAML,
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "not visible to you" in out and "(cause: lenders-busy)" in out
    status = cli.main(
        [
            "explain",
            "finetune-8",
            "--from-file",
            str(CASES / "lenders_busy.json"),
            "--platform",
            PLATFORM_YAML,
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["workload"] == "job-finetune-8-0002a"
    assert data["diagnoses"][0]["cause"] == "lenders-busy" and data["diagnoses"][0]["notVisible"] is True


def test_cli_reads_yaml_and_concatenated_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``kubectl get workloads -o json; kubectl get clusterqueue ... -o json`` concatenated, and YAML documents."""
    items = load("own_quota")
    joined = tmp_path / "joined.json"
    joined.write_text("\n".join(json.dumps(o) for o in items), encoding="utf-8")
    multi = tmp_path / "objects.yaml"
    multi.write_text(yaml.safe_dump_all(items), encoding="utf-8")
    for path in (joined, multi):
        assert cli.main(["explain", "batch-eval", "--from-file", str(path), "--platform", PLATFORM_YAML]) == 0
        assert "(cause: own-quota)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["explain"], 2, "name the workload (or its job), or pass --from-file or --denial"),
        (["explain", "--bogus"], 2, "unrecognized arguments"),
        (["explain", "x", "--from-file", "/nonexistent/w.json"], 1, "cannot read /nonexistent/w.json"),
        (
            ["explain", "x", "--from-file", str(CASES / "admitted.json"), "--platform", "/nonexistent.yaml"],
            1,
            "/nonexistent.yaml not found",
        ),
        (["explain", "nope", "--from-file", str(CASES / "admitted.json")], 1, "no Kueue Workload named nope"),
        (["explain", "--from-file", str(CASES / "lenders_busy.json")], 1, "holds several Workloads"),
        (
            ["explain", "x", "--from-file", str(CASES / "admitted.json"), "-n", "kube-system"],
            1,
            "namespace kube-system is not a team namespace",
        ),
    ],
)
def test_cli_errors_are_one_line(
    argv: list[str], status: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if "--platform" not in argv:
        argv = [*argv, "--platform", PLATFORM_YAML]
    assert cli.main(argv) == status
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    if status == 1:
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("content", ["{not json", "- [unclosed", '{"kind": 3}', "[1, 2]"])
def test_cli_malformed_file_is_one_line(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    assert cli.main(["explain", "x", "--from-file", str(path), "--platform", PLATFORM_YAML]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hyperpod-tenancy explain: error: ") and len(err.strip().splitlines()) == 1, err


def test_cli_denial_without_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """``--denial`` alone with ``-n``: no API call is needed to explain a refusal."""
    status = cli.main(
        [
            "explain",
            "-n",
            "hyperpod-ns-research",
            "--denial",
            _recorded_denial("priority_denied"),
            "--platform",
            PLATFORM_YAML,
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("your request (no Workload) in hyperpod-ns-research (team research):")
    assert "(cause: priority-not-entitled)" in out


# ------------------------------------------------------------------------------------------------- docs

DOC = Path(__file__).resolve().parents[1] / "docs" / "explain.md"


@pytest.mark.parametrize(
    "case", [*sorted(KUEUE_CASES), "priority_denied", "checkpoint_denied", "webhook_denied"]
)
def test_docs_show_the_current_output_of_every_case(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``docs/explain.md`` has a sample for every case, and it is what the command prints today."""
    if case in KUEUE_CASES:
        argv = ["explain", KUEUE_CASES[case], "--from-file", str(CASES / f"{case}.json")]
    else:
        argv = ["explain", "-n", "hyperpod-ns-research", "--denial", _recorded_denial(case)]
    assert cli.main([*argv, "--platform", PLATFORM_YAML]) == 0
    out = capsys.readouterr().out.rstrip()
    assert f"```text\n{out}\n```" in DOC.read_text(encoding="utf-8"), (
        f"docs/explain.md: stale or missing sample for {case}"
    )


def _without_cluster_queue(platform: Platform, case: str) -> list[Diagnosis]:
    documents = [o for o in load(case) if o["kind"] != "ClusterQueue"]
    objects = objects_from_documents(documents, asked=KUEUE_CASES[case], namespace=None)
    return diagnose(platform, objects)


def test_larger_than_the_ceiling_without_the_queue_is_told_from_the_policy(platform: Platform) -> None:
    """Only the Workload (``... > maximum capacity (108)``): the guarantee and ceiling come from ``platform.yaml``,
    the job is told it can never be admitted as sized, and no queue counts are made up."""
    diagnoses = _without_cluster_queue(platform, "exceeds_ceiling")
    main = diagnoses[0]
    assert main.cause is Cause.BORROWING_CEILING
    assert "128 nvidia.com/gpu against a ceiling of 108" in main.summary
    assert "never be admitted" in main.summary
    assert "cannot tell whose quota" not in text(diagnoses)
    assert "your queue: 0 admitted" not in text(diagnoses)
    assert any("from platform.yaml" in line for line in main.details), main.details


def test_waiting_without_the_queue_uses_the_policy_guarantee(platform: Platform) -> None:
    diagnoses = _without_cluster_queue(platform, "own_quota")
    rendered = text(diagnoses)
    assert "cannot tell whose quota" not in rendered
    assert "your queue: 0 admitted" not in rendered
    assert "guarantee" in rendered


# ------------------------------------------------------------------------- what real Kueue wrote (recorded)

LIVE_CASES = CASES / "live"
#: Per case: the Workload's conditions as real Kueue wrote them, normalised (tests/test_cluster_explain.py).
LIVE_MESSAGES = json.loads((CASES / "live_messages.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", sorted(LIVE_CASES.glob("*.json")), ids=lambda p: p.stem)
def test_what_real_kueue_wrote_is_explained_offline_as_it_was_live(platform: Platform, path: Path) -> None:
    """The objects explain read on the real control plane (``HYPERPOD_TENANCY_RECORD_EXPLAIN=1``), explained
    again from the file: the same causes, and never a ceiling read off a flavor the team has no quota on."""
    document = json.loads(path.read_text(encoding="utf-8"))
    objects = objects_from_documents(document["items"], asked=document["explained"]["asked"], namespace=None)
    diagnoses = diagnose(platform, objects)
    assert [d.cause.value for d in diagnoses] == document["explained"]["causes"], text(diagnoses)
    assert "ceiling of 0" not in text(diagnoses)


def _recorded_conditions(case: str) -> dict[str, str]:
    (workload,) = [
        o
        for o in load(case)
        if o["kind"] == "Workload" and KUEUE_CASES[case] in (o["metadata"]["name"], *owner_names(o))
    ]
    return {
        f"{c['type']}/{c['status']}/{c.get('reason', '')}": c.get("message", "")
        for c in workload["status"]["conditions"]
        if c["type"] in ("QuotaReserved", "Evicted", "Preempted")
    }


@pytest.mark.parametrize("case", sorted(set(LIVE_MESSAGES) & set(KUEUE_CASES)))
def test_the_recorded_conditions_say_what_real_kueue_writes(case: str) -> None:
    """Each recorded condition has the type, status and reason real Kueue wrote in the same situation, and every
    clause of its message is one Kueue wrote (names and numbers aside: ``explain_messages.normalised``)."""
    live = dict(parse_written(line) for line in LIVE_MESSAGES[case])
    by_state = {head.rsplit("/", 1)[0]: head for head in live}
    compared = 0
    for head, message in _recorded_conditions(case).items():
        state = head.rsplit("/", 1)[0]  # a recording may be of another moment (still stopping, say)
        if state not in by_state:
            continue
        assert head in live, f"{case}: recorded {head}, Kueue wrote {by_state[state]}"
        missing = clauses(message) - clauses(live[head])
        assert not missing, f"{case}: {head} clauses Kueue did not write: {missing}\nKueue: {live[head]}"
        compared += 1
    assert compared, f"{case}: no recorded condition is in a state Kueue was seen in"


def test_the_recorded_denial_is_what_the_api_server_says() -> None:
    (live,) = LIVE_MESSAGES["priority_denied"]
    recorded = KUBECTL_PREFIX.sub("", _recorded_denial("priority_denied"))
    assert normalised(recorded) == live


def test_only_the_workload_with_every_flavor_named_uses_the_team_flavor_of_the_policy(
    platform: Platform,
) -> None:
    """Real Kueue names every resource of every flavor (``... nvidia.com/gpu in flavor ml.g5.12xlarge ... >
    maximum capacity (0), ... in flavor ml.p5.48xlarge ... > maximum capacity (108)``): with ``--platform``
    alone, the flavor the team has quota on is the one explained, not the first one named."""
    (workload,) = [o for o in load("exceeds_ceiling") if o["kind"] == "Workload"]
    workload["status"]["conditions"][0]["message"] = (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor ml.g5.12xlarge, "
        "previously considered podsets requests (0) + current podset request (128) > maximum capacity (0), "
        "insufficient quota for nvidia.com/gpu in flavor ml.p5.48xlarge, previously considered podsets requests "
        "(0) + current podset request (128) > maximum capacity (108)"
    )
    (main, *_) = diagnose(
        platform, objects_from_documents([workload], asked=KUEUE_CASES["exceeds_ceiling"], namespace=None)
    )
    assert main.cause is Cause.BORROWING_CEILING
    assert "128 nvidia.com/gpu against a ceiling of 108" in main.summary, main.render()


def test_a_message_naming_only_flavors_without_quota_is_read_on_the_team_flavor(platform: Platform) -> None:
    """Seen on real Kueue right after a reclamation: the pending message names only ml.g5.12xlarge, where research
    has no quota. The team's own flavor decides (72 held + 24 asked, within 108: lenders busy), not a ceiling of 0."""
    document = json.loads((LIVE_CASES / "preempted_reclaim.json").read_text(encoding="utf-8"))
    workload = document["items"][0]
    reserved = next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")
    reserved["message"] = (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor ml.g5.12xlarge, previously "
        "considered podsets requests (0) + current podset request (750m) > maximum capacity (0), insufficient quota "
        "for memory in flavor ml.g5.12xlarge, previously considered podsets requests (0) + current podset request "
        "(1536Mi) > maximum capacity (0), insufficient quota for nvidia.com/gpu in flavor ml.g5.12xlarge, previously "
        "considered podsets requests (0) + current podset request (24) > maximum capacity (0)"
    )
    objects = objects_from_documents(document["items"], asked=document["explained"]["asked"], namespace=None)
    diagnoses = diagnose(platform, objects)
    assert [d.cause for d in diagnoses] == [Cause.PREEMPTED, Cause.LENDERS_BUSY], text(diagnoses)
    assert "ceiling of 0" not in text(diagnoses)


# ------------------------------------------------------------------------------------- without platform.yaml


def _with_queue(case: str) -> bool:
    return any(item["kind"] == "ClusterQueue" for item in load(case))


@pytest.mark.parametrize("case", sorted(c for c in KUEUE_CASES if _with_queue(c)))
def test_without_the_policy_the_queue_gives_the_same_causes_and_figures(
    platform: Platform, case: str
) -> None:
    """A member without platform.yaml: the team's facts come from its ClusterQueue, which the team's Role lets
    them read. The causes and the figures are the policy's; only the fixes no longer name platform.yaml."""
    objects = objects_from_documents(load(case), asked=KUEUE_CASES[case], namespace=None)
    with_policy = diagnose(platform, objects)
    without = diagnose(None, objects)
    assert [d.cause for d in without] == [d.cause for d in with_policy]
    assert [d.summary for d in without] == [d.summary for d in with_policy]
    for d in without:
        assert "platform.yaml" not in d.render(), d.render()
        assert "teams[" not in d.render(), d.render()


def test_without_the_policy_no_class_is_suggested_that_the_team_may_not_use(platform: Platform) -> None:
    """Which classes a team is entitled to is in namespace labels a member cannot read: without the policy the
    fixes suggest no class, and no entitlement is judged."""
    objects = objects_from_documents(load("own_quota"), asked=KUEUE_CASES["own_quota"], namespace=None)
    rendered = "\n".join(d.render() for d in diagnose(None, objects))
    assert "label it `kueue.x-k8s.io/priority-class" not in rendered
    assert Cause.PRIORITY_NOT_ENTITLED not in [d.cause for d in diagnose(None, objects)]


def test_without_the_policy_a_namespace_that_is_no_teams_is_refused() -> None:
    with pytest.raises(ExplainInputError, match="not a team namespace"):
        diagnose(None, Objects(namespace="default", workload={"metadata": {"name": "x"}}))


def test_cli_without_platform_yaml_reads_the_facts_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --platform and no platform.yaml in the working directory: explained all the same; a --platform that
    names a missing file is still an error."""
    monkeypatch.chdir(tmp_path)
    case = CASES / "borrowing_ceiling.json"
    assert cli.main(["explain", KUEUE_CASES["borrowing_ceiling"], "--from-file", str(case), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["diagnoses"][0]["cause"] == "borrowing-ceiling"
    assert cli.main(["explain", "x", "--from-file", str(case), "--platform", "missing.yaml"]) == 1
    assert "missing.yaml not found" in capsys.readouterr().err

"""``hyperpod-tenancy explain`` on what real Kueue wrote (Kueue v0.19.2 on the local control plane).

The Kueue-backend reference platform is applied (``kueue_on_cluster``); team members submit Jobs (suspended,
as ``kubectl create`` sends them, impersonated as EKS authenticates an Identity Center user) sized so that real
Kueue holds them for each cause explain names, and explain's live path reads them through a kubeconfig of a
member's own identity (a client certificate for the EKS user name and the team's group), so the team's RBAC
judges every read:

* own quota: the inference team (lends, never borrows) holds its 12 GPUs; 4 more wait for its own quota;
* lenders busy: research holds its 72 GPUs, vision its 48; research's next 8 would borrow and nobody lends;
* maximum capacity: a research Job of 112 GPUs, above its ceiling of 108 (72 + 50 %), is never admitted as sized,
  and with ``--platform`` alone (only the Workload) explain still names the guarantee and the ceiling;
* no flavor: a nodeSelector on an instance type the queue has no flavor for;
* unentitled class: admission refuses the Job; the refusal as kubectl prints it is explained;
* preempted in the queue: a research training Job preempts the team's own experimentation Job;
* borrowing ceiling: research holds 104 of its 108 and the next 8 do not fit;
* preempted by reclamation: vision takes back the 48 it lent, research's borrowing Job is preempted and then
  waits for lenders;
* a preemption in progress: the victim's pods cannot be deleted (an admission policy stands in for a slow node),
  so Kueue writes ``Pending the preemption of 1 workload(s)`` on the Job that waits;
* a missing flavor: research's ClusterQueue names a ResourceFlavor nobody created and goes inactive.

Every condition message and event reason that real Kueue wrote is compared with the recorded cases of
``tests/support/explain_cases/`` (names and numbers normalised away): a recording that no longer says what Kueue
writes fails here. ``HYPERPOD_TENANCY_RECORD_EXPLAIN=1`` rewrites ``explain_cases/live_messages.json`` from this
run (the normalised messages, per case), which ``tests/test_explain.py`` checks the recordings against without a
cluster.

Every Job is deleted (and its Workload gone) before the module ends; the platform is left as applied.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platforms
import pytest
import tenant_admission as ta
from cluster_platform import OnCluster
from explain_messages import clauses, normalised, parse_written
from kube_client import wait_until
from webhook_server import sso_user

from hyperpod_tenancy import cli
from hyperpod_tenancy.k8s.labels import CHECKPOINT_DIR_ENV, CHECKPOINT_INTERVAL_ENV
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.tools.explain.diagnose import diagnose
from hyperpod_tenancy.tools.explain.live import read_live
from hyperpod_tenancy.tools.explain.objects import Cause, Diagnosis, Objects

pytestmark = pytest.mark.cluster

CASES = Path(__file__).parent / "support" / "explain_cases"
LIVE_MESSAGES = CASES / "live_messages.json"
LIVE_CASES = CASES / "live"
RECORD = os.environ.get("HYPERPOD_TENANCY_RECORD_EXPLAIN") == "1"
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
HOLD = "hyperpod-tenancy.io/explain-test-hold"


# --------------------------------------------------------------------------------------------- helpers


def member(person: str, team: str) -> dict[str, Any]:
    """``request.userInfo`` of an Identity Center user of ``team``, in the team's own permission set's role."""
    user = sso_user(person, team)
    chosen = platforms.kueue_platform().team(team).identity.permission_set_name
    if chosen is None:
        return user
    default, own = f"AWSReservedSSO_{names.permission_set(team)}_", f"AWSReservedSSO_{chosen}_"
    return json.loads(json.dumps(user).replace(default, own))  # type: ignore[no-any-return]


def _checkpoint(team: str) -> dict[str, str]:
    """The checkpoint declaration, as :func:`tenant_admission.place_checkpoint` moves it into the containers."""
    return {CHECKPOINT_DIR_ENV: f"/fsx/{team}/runs/explain", CHECKPOINT_INTERVAL_ENV: "30m"}


def job(
    team: str,
    name: str,
    *,
    pods: int,
    gpus: int,
    priority: str,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A suspended Job of ``pods`` pods of ``gpus`` GPUs each, on the team's queue at ``priority``."""
    obj = ta.job(team, labels=ta.kueue_labels(team, priority), name=name)
    obj["metadata"]["annotations"] = _checkpoint(team)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": ta.IMAGE,
                "command": ["torchrun", "train.py"],
                "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
            }
        ],
    }
    # KWOK completes a Job's pods moments after they run, which would free the quota mid-scenario: a node label
    # no node has keeps the pods Pending while Kueue (which matches only its flavors' node labels) admits the Job
    spec["nodeSelector"] = {HOLD: "true", **(node_selector or {})}
    obj["spec"].update({"parallelism": pods, "completions": pods, "template": {"spec": spec}})
    return ta.place_checkpoint(obj, team)


def condition_of(workload: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The Workload's condition of type ``kind`` ({} when it has none)."""
    for c in (workload or {}).get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return dict(c)
    return {}


class Scenario:
    """Jobs submitted by team members, each deleted (and its Workload gone) when the scenario ends."""

    def __init__(self, cluster: OnCluster) -> None:
        self.cluster = cluster
        self.jobs: list[dict[str, Any]] = []

    def submit(self, obj: dict[str, Any], person: str = "alice") -> None:
        team = obj["metadata"]["namespace"].removeprefix(names.NAMESPACE_PREFIX)
        answer = self.cluster.as_identity(member(person, team)).create(obj)
        assert answer.ok, answer.message
        self.jobs.append(obj)

    def workload(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The Workload Kueue made for the Job ``obj`` (owned by it), or None."""
        namespace = obj["metadata"]["namespace"]
        for wl in self.cluster.admin.list(KUEUE, "Workload", namespace=namespace):
            if any(
                r.get("name") == obj["metadata"]["name"] for r in wl["metadata"].get("ownerReferences", [])
            ):
                return dict(wl)
        return None

    def wait(self, obj: dict[str, Any], state: str, *, timeout: float = 90) -> dict[str, Any]:
        """Wait until the Job's Workload is ``admitted``, ``pending`` (Kueue wrote why) or ``preempted``."""

        def reached() -> dict[str, Any] | None:
            wl = self.workload(obj)
            conditions = {c["type"]: c for c in (wl or {}).get("status", {}).get("conditions", [])}
            if state == "admitted":
                ok = conditions.get("Admitted", {}).get("status") == "True"
            elif state == "pending":
                reserved = conditions.get("QuotaReserved", {})
                ok = reserved.get("status") == "False" and bool(reserved.get("message"))
            else:
                ok = conditions.get("Preempted", {}).get("status") == "True" and (
                    conditions.get("QuotaReserved", {}).get("status") == "False"
                )
            return wl if ok else None

        try:
            return wait_until(reached, timeout=timeout, what=f"Job {obj['metadata']['name']} to be {state}")
        except AssertionError as error:
            conditions = (self.workload(obj) or {}).get("status", {}).get("conditions")
            raise AssertionError(f"{error}; its Workload's conditions: {conditions}") from None

    def reserved(self, team: str, gpus: int, flavor: str = "ml.p5.48xlarge") -> None:
        """Wait until the team's ClusterQueue status says ``gpus`` GPUs of ``flavor`` are reserved (Kueue writes
        the queue's status a moment after the Workloads')."""
        queue = {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": names.cluster_queue(team)}}

        def settled() -> bool:
            status = (self.cluster.admin.get(queue) or {}).get("status", {})
            for fl in status.get("flavorsReservation", []):
                for res in fl["resources"] if fl["name"] == flavor else ():
                    if res["name"] == GPU:
                        return str(res["total"]) == str(gpus)
            return False

        try:
            wait_until(settled, timeout=60, what=f"{team}'s queue to show {gpus} GPUs reserved")
        except AssertionError as error:
            status = (self.cluster.admin.get(queue) or {}).get("status", {})
            raise AssertionError(f"{error}; its status: {status.get('flavorsReservation')}") from None

    def delete(self, obj: dict[str, Any]) -> None:
        self.cluster.admin.delete(obj, propagation="Foreground")
        wait_until(
            lambda: self.cluster.admin.get(obj) is None and self.workload(obj) is None,
            timeout=90,
            what=f"Job {obj['metadata']['name']} and its Workload to be gone",
        )
        self.jobs.remove(obj)

    def close(self) -> None:
        for obj in list(self.jobs):
            self.delete(obj)


@contextlib.contextmanager
def scenario(cluster: OnCluster) -> Iterator[Scenario]:
    s = Scenario(cluster)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def cluster(kueue_on_cluster: OnCluster) -> OnCluster:
    kueue_on_cluster.await_admission()
    return kueue_on_cluster


@pytest.fixture(scope="module")
def platform() -> Platform:
    return platforms.kueue_platform()


@pytest.fixture(scope="module")
def kubeconfigs(cluster: OnCluster) -> dict[str, Path]:
    """A kubeconfig per team of a member's own identity: a client certificate for the EKS user name and groups."""
    out = {}
    for team in ("research", "vision", "inference"):
        user = member(f"explain-{team}", team)
        out[team] = cluster.plane.kubeconfig(
            f"explain-{team}", user=user["username"], groups=tuple(user["groups"])
        )
    return out


#: What real Kueue wrote per case, normalised (checked against the recordings and, in record mode, saved).
LIVE: dict[str, list[str]] = {}


def explain(
    platform: Platform, kubeconfigs: dict[str, Path], obj: dict[str, Any], case: str
) -> tuple[list[Diagnosis], Objects]:
    """Explain's live path for the Job ``obj`` as a member of its team; record what Kueue wrote for ``case``."""
    namespace = obj["metadata"]["namespace"]
    team = namespace.removeprefix(names.NAMESPACE_PREFIX)
    objects = read_live(
        namespace=namespace,
        asked=obj["metadata"]["name"],
        denials=(),
        kubeconfig=str(kubeconfigs[team]),
        context=None,
    )
    assert objects.workload is not None
    LIVE[case] = written_by_kueue(objects.workload)
    diagnoses = diagnose(platform, objects)
    if RECORD:
        record(case, objects, diagnoses)
    return diagnoses, objects


def _kept(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``managedFields`` (noise in a recording)."""
    kept = json.loads(json.dumps(obj))
    kept.get("metadata", {}).pop("managedFields", None)
    return dict(kept)


def record(case: str, objects: Objects, diagnoses: list[Diagnosis]) -> None:
    """Write what explain read for ``case`` as a ``kubectl get -o json`` List, and the causes it found."""
    items = [objects.workload, *(w for w in objects.workloads if w is not objects.workload)]
    items += [objects.cluster_queue, *objects.events, *objects.pods]
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "explained": {"asked": objects.asked, "causes": [d.cause.value for d in diagnoses]},
        "items": [_kept(o) for o in items if o is not None],
    }
    LIVE_CASES.mkdir(exist_ok=True)
    (LIVE_CASES / f"{case}.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def written_by_kueue(workload: dict[str, Any]) -> list[str]:
    """The Workload's conditions as ``type/status/reason: message`` with names and numbers normalised."""
    return sorted(
        f"{c['type']}/{c['status']}/{c.get('reason', '')}: {normalised(c.get('message', ''))}"
        for c in workload.get("status", {}).get("conditions", [])
        if c["type"] in ("QuotaReserved", "Evicted", "Preempted")
    )


def text(diagnoses: list[Diagnosis]) -> str:
    return "\n".join(d.render() for d in diagnoses)


def cli_json(
    kubeconfig: Path, obj: dict[str, Any], capsys: pytest.CaptureFixture[str], *, policy: bool = True
) -> dict[str, Any]:
    """``hyperpod-tenancy explain <job> -n <ns> --kubeconfig <member's> --json``, as the member runs it (with
    ``--platform``, or without it from a folder that has no ``platform.yaml``)."""
    argv = ["explain", obj["metadata"]["name"], "-n", obj["metadata"]["namespace"], "--kubeconfig"]
    argv += [str(kubeconfig), "--json"]
    if policy:
        status = cli.main([*argv, "--platform", str(platforms.PLATFORM_YAML)])
    else:
        assert not Path("platform.yaml").exists()
        status = cli.main(argv)
    out, err = capsys.readouterr()
    assert status == 0, err
    return dict(json.loads(out))


# --------------------------------------------------------------------------------------------- the cases


def test_waiting_lenders_larger_than_the_ceiling_no_flavor_and_unentitled(
    cluster: OnCluster,
    platform: Platform,
    kubeconfigs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Own quota (inference), lenders busy, maximum capacity, no flavor (research) and an unentitled class."""
    with scenario(cluster) as s:
        serving = job("inference", "ex-serve", pods=3, gpus=4, priority="inference-priority")
        batch = job("inference", "ex-batch", pods=1, gpus=4, priority="inference-priority")
        research = job("research", "ex-big", pods=9, gpus=8, priority="training-priority")
        vision = job("vision", "ex-vision", pods=6, gpus=8, priority="training-priority")
        for obj in (serving, research, vision):
            s.submit(obj)
            s.wait(obj, "admitted")
        finetune = job("research", "ex-finetune", pods=1, gpus=8, priority="experimentation-priority")
        huge = job("research", "ex-huge", pods=14, gpus=8, priority="training-priority")
        p4 = job(
            "research",
            "ex-p4",
            pods=1,
            gpus=8,
            priority="training-priority",
            node_selector={"node.kubernetes.io/instance-type": "ml.p4d.24xlarge"},
        )
        for obj in (batch, finetune, huge, p4):
            s.submit(obj)
            s.wait(obj, "pending")

        diagnoses, _ = explain(platform, kubeconfigs, batch, "own_quota")
        assert diagnoses[0].cause is Cause.OWN_QUOTA, text(diagnoses)
        assert "12 of your 12 nvidia.com/gpu are in use" in diagnoses[0].summary
        assert "held by: job-ex-serve-" in text(diagnoses)
        assert cli_json(kubeconfigs["inference"], batch, capsys)["diagnoses"][0]["cause"] == "own-quota"

        diagnoses, _ = explain(platform, kubeconfigs, finetune, "lenders_busy")
        assert diagnoses[0].cause is Cause.LENDERS_BUSY, text(diagnoses)
        assert "needs to borrow 8 nvidia.com/gpu (within your ceiling of 108)" in diagnoses[0].summary
        assert diagnoses[0].not_visible

        diagnoses, objects = explain(platform, kubeconfigs, huge, "exceeds_ceiling")
        assert diagnoses[0].cause is Cause.BORROWING_CEILING, text(diagnoses)
        assert "112 nvidia.com/gpu against a ceiling of 108" in diagnoses[0].summary
        assert "never be admitted" in diagnoses[0].summary
        # --platform alone, only the Workload at hand: the guarantee and the ceiling still come from the policy
        only = tmp_path / "workload.json"
        only.write_text(json.dumps(objects.workload), encoding="utf-8")
        argv = ["explain", "ex-huge", "--from-file", str(only), "--platform", str(platforms.PLATFORM_YAML)]
        assert cli.main(argv) == 0
        out = capsys.readouterr().out
        assert "112 nvidia.com/gpu against a ceiling of 108" in out, out
        assert "your team's guarantee: 72; borrowing limit: 36" in out and "from platform.yaml" in out, out

        diagnoses, _ = explain(platform, kubeconfigs, p4, "no_matching_flavor")
        assert diagnoses[0].cause is Cause.FLAVOR_MISSING, text(diagnoses)
        assert "node.kubernetes.io/instance-type to one of: ml.p5.48xlarge" in diagnoses[0].fix[0]

        # an unentitled class: admission refuses it, and the refusal (as kubectl prints it) is explained
        vip = job("research", "ex-vip", pods=1, gpus=8, priority="inference-priority")
        answer = cluster.as_identity(member("alice", "research")).create(vip)
        assert answer.status == 403, answer
        printed = f'Error from server (Forbidden): error when creating "ex-vip.yaml": {answer.message}'
        LIVE["priority_denied"] = [normalised(answer.message)]
        assert (
            cli.main(
                [
                    "explain",
                    "-n",
                    "hyperpod-ns-research",
                    "--denial",
                    printed,
                    "--platform",
                    str(platforms.PLATFORM_YAML),
                ]
            )
            == 0
        )
        out = capsys.readouterr().out
        assert "(cause: priority-not-entitled)" in out, out
        assert "training-priority, experimentation-priority" in out


def test_preempted_in_the_queue_then_reclaimed(
    cluster: OnCluster, platform: Platform, kubeconfigs: dict[str, Path]
) -> None:
    """Research's own training work preempts its experimentation; vision takes back what it lent and research's
    borrowing work is preempted, then waits for lenders."""
    with scenario(cluster) as s:
        base = job("research", "ex-base", pods=9, gpus=8, priority="training-priority")
        small = job("research", "ex-sweep", pods=1, gpus=8, priority="experimentation-priority")
        wide = job("research", "ex-wide", pods=3, gpus=8, priority="training-priority")
        s.submit(base)
        s.wait(base, "admitted")
        # Kueue picks victims newest quota reservation first, to the second, and breaks a tie by UID
        # (pkg/scheduler/preemption/common/ordering.go CandidatesOrdering): the base Job must be a second older
        # than the others, or a tie may pick it (its 72 alone would make room)
        time.sleep(1.0)
        for obj in (small, wide):
            s.submit(obj)
            s.wait(obj, "admitted")
        # 104 of 108 held: a training Job of 8 preempts the team's own lower-priority work
        urgent = job("research", "ex-urgent", pods=1, gpus=8, priority="training-priority")
        s.submit(urgent)
        s.wait(small, "preempted")
        s.wait(urgent, "admitted")
        diagnoses, _ = explain(platform, kubeconfigs, small, "preempted_in_queue")
        assert diagnoses[0].cause is Cause.PREEMPTED, text(diagnoses)
        assert "preempted by your team's workload job-ex-urgent-" in diagnoses[0].summary
        assert "(training-priority)" in diagnoses[0].summary
        assert "a higher-priority job of your own team needed the quota" in diagnoses[0].summary

        # vision takes back its 48: research's borrowing work is preempted
        vision = job("vision", "ex-reclaim", pods=6, gpus=8, priority="training-priority")
        s.submit(vision)
        s.wait(wide, "preempted")
        s.wait(vision, "admitted")
        s.reserved("research", 72)
        # Kueue first writes "Workload no longer fits after processing another workload" on the requeued Job, then
        # why it does not fit once it looks at it again: explain the settled message
        wait_until(
            lambda: (
                "couldn't assign flavors"
                in str((condition_of(s.workload(wide), "QuotaReserved")).get("message"))
            ),
            timeout=90,
            what="Kueue to say why the preempted Job waits",
        )
        diagnoses, _ = explain(platform, kubeconfigs, wide, "preempted_reclaim")
        assert diagnoses[0].cause is Cause.PREEMPTED, text(diagnoses)
        assert "preempted by a workload of team vision" in diagnoses[0].summary, text(diagnoses)
        assert "the lending team took back capacity it had lent" in diagnoses[0].summary
        assert diagnoses[1].cause is Cause.LENDERS_BUSY, text(diagnoses)


def test_the_borrowing_ceiling(
    cluster: OnCluster,
    platform: Platform,
    kubeconfigs: dict[str, Path],
    *,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Research holds 104 of its 108 (32 borrowed from vision's idle quota): 8 more do not fit."""
    with scenario(cluster) as s:
        base = job("research", "ex-base", pods=9, gpus=8, priority="training-priority")
        wide = job("research", "ex-wide", pods=4, gpus=8, priority="training-priority")
        for obj in (base, wide):
            s.submit(obj)
            s.wait(obj, "admitted")
        late = job("research", "ex-late", pods=1, gpus=8, priority="training-priority")
        s.submit(late)
        s.wait(late, "pending")
        s.reserved("research", 104)
        diagnoses, _ = explain(platform, kubeconfigs, late, "borrowing_ceiling")
        assert diagnoses[0].cause is Cause.BORROWING_CEILING, text(diagnoses)
        assert "holds 104 nvidia.com/gpu (32 borrowed) of at most 108" in diagnoses[0].summary
        # a member without platform.yaml: the same causes and figures, from what the team's Role lets them read
        with_policy = cli_json(kubeconfigs["research"], late, capsys)
        monkeypatch.chdir(tmp_path)
        without = cli_json(kubeconfigs["research"], late, capsys, policy=False)
        assert [(d["cause"], d["summary"]) for d in without["diagnoses"]] == [
            (d["cause"], d["summary"]) for d in with_policy["diagnoses"]
        ]
        assert "platform.yaml" not in json.dumps(without)


@contextlib.contextmanager
def pods_kept(cluster: OnCluster, job_name: str) -> Iterator[None]:
    """The pods of the Job ``job_name`` cannot be deleted while the context is open: a ValidatingAdmissionPolicy
    refuses their DELETE, so the Job controller cannot stop a preempted Job and Kueue keeps waiting for it (the
    moment a real node's slow shutdown or a stuck kubelet holds)."""
    name = f"explain-test-keep-{job_name}"
    selector = "oldObject.metadata.?labels[?'batch.kubernetes.io/job-name'].orValue('')"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["DELETE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "validations": [
                {"expression": f"{selector} != '{job_name}'", "message": "kept by the explain test"}
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    for obj in (policy, binding):
        answer = cluster.admin.create(obj)
        assert answer.ok, answer.message
    try:
        yield
    finally:
        cluster.admin.delete(binding)
        cluster.admin.delete(policy)


def test_a_preemption_in_progress(
    cluster: OnCluster, platform: Platform, kubeconfigs: dict[str, Path]
) -> None:
    """Research's training Job needs the place of its own experimentation Job, whose pods do not go away: Kueue
    has evicted the victim and writes ``Pending the preemption of 1 workload(s)`` on the Job that waits."""
    with scenario(cluster) as s:
        base = job("research", "ex-base", pods=9, gpus=8, priority="training-priority")
        held = job("research", "ex-held", pods=1, gpus=8, priority="experimentation-priority")
        wide = job("research", "ex-wide", pods=3, gpus=8, priority="training-priority")
        for obj in (base, held, wide):
            s.submit(obj)
            s.wait(obj, "admitted")
        ns = held["metadata"]["namespace"]
        selector = "batch.kubernetes.io/job-name=ex-held"

        def the_pod() -> dict[str, Any] | None:
            # exactly one pod that is not going away (the Job controller may still be replacing one)
            pods = cluster.admin.list("v1", "Pod", namespace=ns, labelSelector=selector)
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            return live[0] if len(live) == 1 else None

        wait_until(the_pod, timeout=60, what="the experimentation Job's pod")
        with pods_kept(cluster, "ex-held"):
            pod = wait_until(the_pod, timeout=60, what="the experimentation Job's one pod")
            wait_until(
                lambda: (
                    not cluster.admin.request(
                        "DELETE",
                        f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                        params={"dryRun": "All"},
                    ).ok
                ),
                timeout=30,
                what="the policy keeping the pod to be in force",
            )
            urgent = job("research", "ex-urgent", pods=1, gpus=8, priority="training-priority")
            s.submit(urgent)

            def preempting() -> dict[str, Any] | None:
                wl = s.workload(urgent) or {}
                for c in wl.get("status", {}).get("conditions", []):
                    if c["type"] == "QuotaReserved" and "Pending the preemption" in c.get("message", ""):
                        return wl
                return None

            wait_until(preempting, timeout=90, what="Kueue to wait for the preemption")
            diagnoses, _ = explain(platform, kubeconfigs, urgent, "preemption_in_progress")
            assert "Kueue is preempting 1 workload(s) to make room for it" in text(diagnoses), text(diagnoses)
        s.wait(urgent, "admitted")


def test_a_flavor_that_does_not_exist(
    cluster: OnCluster, platform: Platform, kubeconfigs: dict[str, Path]
) -> None:
    """Research's ClusterQueue names a ResourceFlavor nobody created: Kueue marks the queue inactive
    (``FlavorNotFound``) and every Job on it waits with ``ClusterQueue <cq> is inactive``."""
    queue_ref = {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": names.cluster_queue("research")},
    }
    queue = cluster.admin.get(queue_ref)
    assert queue is not None
    groups = queue["spec"]["resourceGroups"]
    widened = json.loads(json.dumps(groups))
    first = widened[0]["flavors"][0]
    missing = {
        "name": "ml.p4d.24xlarge",
        "resources": [{"name": r["name"], "nominalQuota": 0} for r in first["resources"]],
    }
    widened[0]["flavors"].append(missing)
    answer = cluster.admin.merge_patch(queue_ref, {"spec": {"resourceGroups": widened}})
    assert answer.ok, answer.message
    try:
        with scenario(cluster) as s:
            late = job("research", "ex-flavorless", pods=1, gpus=8, priority="training-priority")
            s.submit(late)
            s.wait(late, "pending")
            diagnoses, _ = explain(platform, kubeconfigs, late, "flavor_missing")
            assert diagnoses[0].cause is Cause.FLAVOR_MISSING, text(diagnoses)
            assert "does not exist (ml.p4d.24xlarge)" in diagnoses[0].summary, text(diagnoses)
    finally:
        restored = cluster.admin.merge_patch(queue_ref, {"spec": {"resourceGroups": groups}})
        assert restored.ok, restored.message


# ------------------------------------------------------------------------------ recordings against real Kueue


def kept_fullest(live: dict[str, list[str]]) -> dict[str, list[str]]:
    """``live`` to record, keeping a message already recorded where this run wrote a part of it.

    Kueue lists a clause only when it applies at that moment (``insufficient unused quota ... more needed``
    while a lender's usage is being counted), so one scenario is written in fuller or shorter forms from run to
    run: the fullest form seen is kept, and every run must write a part of it.
    """
    saved = json.loads(LIVE_MESSAGES.read_text(encoding="utf-8")) if LIVE_MESSAGES.exists() else {}
    out: dict[str, list[str]] = {}
    for case, lines in live.items():
        known = dict(parse_written(line) for line in saved.get(case, []))
        out[case] = []
        for head, message in (parse_written(line) for line in lines):
            fuller = head in known and clauses(message) <= clauses(known[head])
            out[case].append(f"{head}: {known[head] if fuller else message}")
    return out


def test_the_recorded_messages_are_what_kueue_writes() -> None:
    """Runs last: what Kueue wrote in every case above, against ``explain_cases/live_messages.json`` (which
    tests/test_explain.py holds the hand recordings to): the same conditions, and no clause the file lacks."""
    assert LIVE, "the cases above did not run"
    if RECORD:
        LIVE_MESSAGES.write_text(
            json.dumps(kept_fullest(LIVE), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    saved = json.loads(LIVE_MESSAGES.read_text(encoding="utf-8"))
    rerecord = "Kueue writes other messages: rerun with HYPERPOD_TENANCY_RECORD_EXPLAIN=1 and review the diff"
    assert set(saved) == set(LIVE), rerecord
    for case, lines in LIVE.items():
        known = dict(parse_written(line) for line in saved[case])
        for head, message in (parse_written(line) for line in lines):
            assert head in known, f"{case}: Kueue wrote {head}. {rerecord}"
            assert clauses(message) <= clauses(known[head]), f"{case}: {message}. {rerecord}"

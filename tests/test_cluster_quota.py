"""The offline quota model (``tests/support/quota_eval.py``) against real quota admission, case by case.

``test_hostile_2_quota_backstop`` and ``test_hostile_9_uncounted_resources`` judge the rendered ResourceQuotas and
LimitRanges with :mod:`quota_eval`. Here those test functions are run again (on both fairness backends) with
every call to :func:`quota_eval.refusals` and :func:`quota_eval.apply_limit_ranges` recorded, and each recorded
case is replayed on the real control plane:

* the namespace's LimitRanges and ResourceQuotas, as rendered, are created in a scratch namespace of their own
  (no team policy or webhook there: quota and LimitRange admission alone judge), and kube-controller-manager
  computes each quota's usage before the first pod;
* the case's ``running`` pods are created for real (the quota admission charges them), the case's pod is
  created with server-side dry run, which runs the whole admission chain, quota included, and stores nothing;
* the verdict must be the model's: refused with the API server's ``exceeded quota`` (naming a quota the model
  names), or admitted. A refusal for another reason is a flip too. A LimitRange case compares the container
  resources the server stored with the model's.

Every flip is listed in one assertion. Pods are deleted, and usage returns to zero, between cases that do not
share running pods.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import inspect
import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import platforms
import pytest
import quota_eval
from cluster_apply import same_value
from control_plane import ControlPlane
from kube_client import Answer, KubeClient, wait_until
from synth import Synth

from hyperpod_tenancy.k8s.team_manifests.quotas import compute_ceiling

pytestmark = pytest.mark.cluster

#: The test modules whose quota cases are replayed.
MODULES = ("test_hostile_2_quota_backstop.py", "test_hostile_9_uncounted_resources.py")
TESTS = Path(__file__).parent


@dataclass
class Case:
    """One call of the model: the namespace's objects, the pod, the running pods, and the model's answer."""

    origin: str
    objects: list[dict[str, Any]]
    pod: dict[str, Any]
    running: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] | None = None
    stored: dict[str, Any] | None = None  # a LimitRange case: the pod as the model stores it


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"replayed_{name[:-3]}", TESTS / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _calls(fn: Callable[..., Any], synth: Synth) -> Iterator[dict[str, Any]]:
    """Every argument set pytest would call ``fn`` with (``synth`` and its ``parametrize`` marks)."""
    params = inspect.signature(fn).parameters
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    grids: list[list[dict[str, Any]]] = []
    for mark in marks:
        argnames, values = mark.args[0], mark.args[1]
        keys = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        grids.append([dict(zip(keys, v if len(keys) > 1 else (v,), strict=True)) for v in values])
    for combo in itertools.product(*grids):
        kwargs: dict[str, Any] = {k: v for part in combo for k, v in part.items()}
        if "synth" in params:
            kwargs["synth"] = synth
        yield kwargs


def recorded_cases(synths: Sequence[Synth], monkeypatch: pytest.MonkeyPatch) -> list[Case]:
    """Run every test function of :data:`MODULES` that calls the model, recording each call."""
    cases: list[Case] = []
    origin = [""]
    inner = [False]
    refusals, apply_limit_ranges = quota_eval.refusals, quota_eval.apply_limit_ranges

    def recording_refusals(objects: Any, pod: Any, *, running: Sequence[Any] = ()) -> list[str]:
        inner[0] = True
        try:
            found = refusals(objects, pod, running=running)
        finally:
            inner[0] = False
        cases.append(
            Case(
                origin[0],
                copy.deepcopy(list(objects)),
                copy.deepcopy(pod),
                copy.deepcopy(list(running)),
                found,
            )
        )
        return found

    def recording_limits(pod: Any, limit_ranges: Sequence[Any]) -> dict[str, Any]:
        stored = apply_limit_ranges(pod, limit_ranges)
        if not inner[0]:
            cases.append(
                Case(origin[0], copy.deepcopy(list(limit_ranges)), copy.deepcopy(pod), stored=stored)
            )
        return stored

    monkeypatch.setattr(quota_eval, "refusals", recording_refusals)
    monkeypatch.setattr(quota_eval, "apply_limit_ranges", recording_limits)
    for name in MODULES:
        module = _module(name)
        for fn_name, fn in inspect.getmembers(module, inspect.isfunction):
            if not fn_name.startswith("test_") or "quota_eval." not in inspect.getsource(fn):
                continue
            runs = synths if "synth" in inspect.signature(fn).parameters else synths[:1]
            for synth in runs:
                for kwargs in _calls(fn, synth):
                    origin[0] = f"{name}::{fn_name}[{synth.platform.fairness_backend.value}]"
                    fn(**kwargs)
    return cases


# ------------------------------------------------------------------------------------------------ replay


class Scratch:
    """Scratch namespaces holding a case's LimitRanges and ResourceQuotas, one per distinct set."""

    def __init__(self, admin: KubeClient, prefix: str) -> None:
        self.admin = admin
        self.prefix = prefix
        self.namespaces: dict[str, str] = {}
        self.running: dict[str, list[str]] = {}  # namespace -> the running pods' specs, as created, in order
        self.serial = itertools.count()
        #: Pods created for real (the running pods of the cases).
        self.created = 0

    def namespace_for(self, objects: Sequence[Mapping[str, Any]]) -> str:
        kept = [o for o in objects if o["kind"] in ("LimitRange", "ResourceQuota")]
        key = json.dumps(sorted(kept, key=lambda o: (o["kind"], o["metadata"]["name"])), sort_keys=True)
        if key in self.namespaces:
            return self.namespaces[key]
        ns = f"{self.prefix}-{len(self.namespaces)}"
        assert self.admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).ok
        for obj in kept:
            copied = copy.deepcopy(obj)
            copied["metadata"] = {"name": obj["metadata"]["name"], "namespace": ns}
            answer = self.admin.create(copied)
            assert answer.ok, answer
        quotas = [o for o in kept if o["kind"] == "ResourceQuota"]
        for quota in quotas:  # kube-controller-manager computes usage: admission waits for it
            path = f"/api/v1/namespaces/{ns}/resourcequotas/{quota['metadata']['name']}"
            wait_until(
                lambda p=path: bool(self.admin.call("GET", p).get("status", {}).get("used") is not None),
                timeout=60,
                what=f"the usage of {path}",
            )
        self.namespaces[key] = ns
        self.running[ns] = []
        return ns

    def pod(self, pod: Mapping[str, Any], ns: str) -> dict[str, Any]:
        copied = copy.deepcopy(dict(pod))
        copied["metadata"] = {"name": f"replay-{next(self.serial)}", "namespace": ns}
        return copied

    def set_running(self, ns: str, running: Sequence[Mapping[str, Any]]) -> None:
        """Make ``running`` the namespace's pods: add to the current ones when they extend them, else start over."""
        specs = [json.dumps(p["spec"], sort_keys=True) for p in running]
        current = self.running[ns]
        if specs[: len(current)] != current:
            self.clear(ns)
            current = self.running[ns]
        for pod in running[len(current) :]:
            answer = self.admin.create(self.pod(pod, ns))
            assert answer.ok, answer
            self.created += 1
        self.running[ns] = specs

    def clear(self, ns: str) -> None:
        if not self.running[ns]:
            return
        self.admin.request("DELETE", f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})

        def idle() -> bool:
            quotas = self.admin.list("v1", "ResourceQuota", namespace=ns)
            return all(
                all(same_value(0, v) or v == "0" for v in q.get("status", {}).get("used", {}).values())
                for q in quotas
            ) and not self.admin.list("v1", "Pod", namespace=ns)

        wait_until(idle, timeout=60, what=f"the pods of {ns} gone and its quota usage back to zero")
        self.running[ns] = []

    def remove(self) -> None:
        for ns in self.namespaces.values():
            self.admin.request("DELETE", f"/api/v1/namespaces/{ns}")


def _resources(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        c.get("resources", {})
        for key in ("initContainers", "containers")
        for c in pod["spec"].get(key, []) or []
    ]


def _same_resources(model: list[dict[str, Any]], served: list[dict[str, Any]]) -> bool:
    def norm(items: list[dict[str, Any]]) -> list[dict[str, dict[str, Any]]]:
        return [{k: v for k, v in r.items() if v} for r in items]

    mine, theirs = norm(model), norm(served)
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=True):
        if set(a) != set(b):
            return False
        for kind in a:
            if set(a[kind]) != set(b[kind]) or not all(same_value(a[kind][k], b[kind][k]) for k in a[kind]):
                return False
    return True


def _limit_range_flip(scratch: Scratch, case: Case, ns: str) -> str | None:
    """A LimitRange case: the container resources the server stores must be the model's."""
    assert case.stored is not None
    answer = scratch.admin.create(scratch.pod(case.pod, ns), dry_run=True)
    if not answer.ok:
        return f"{case.origin}: LimitRange case refused by the server: {answer.message}"
    if not _same_resources(_resources(case.stored), _resources(answer.body)):
        return f"{case.origin}: stored {_resources(answer.body)}, model {_resources(case.stored)}"
    return None


def _verdict_flip(case: Case, answer: Answer) -> str | None:
    what = f"{case.origin}: {json.dumps(case.pod['spec'], sort_keys=True)[:300]} with {len(case.running)} running"
    refused = bool(case.refusals)
    if answer.ok:
        return f"{what}: model refused ({case.refusals}), server admitted" if refused else None
    if answer.status != 403 or "exceeded quota" not in answer.message:
        return f"{what}: server refused for another reason: {answer.status} {answer.message}"
    named = answer.message.split("exceeded quota: ", 1)[1].split(",", 1)[0]
    if not refused:
        return f"{what}: model admitted, server refused: {answer.message}"
    if not any(f"exceeded quota: {named}," in r for r in case.refusals or []):
        return f"{what}: server refused by {named}, model by {case.refusals}"
    return None


def replay(scratch: Scratch, case: Case) -> str | None:
    """The flip of one case, or None when the server agrees."""
    ns = scratch.namespace_for(case.objects)
    if case.stored is not None:
        return _limit_range_flip(scratch, case, ns)
    scratch.set_running(ns, case.running)
    return _verdict_flip(case, scratch.admin.create(scratch.pod(case.pod, ns), dry_run=True))


# --------------------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def cases(reference: Synth, kueue_reference: Synth) -> list[Case]:
    with pytest.MonkeyPatch.context() as mp:
        return recorded_cases([reference, kueue_reference], mp)


def test_every_quota_case_gets_the_real_servers_verdict(
    control_plane: ControlPlane, cases: list[Case]
) -> None:
    assert len(cases) > 50, "the hostile quota suites' cases are recorded"
    scratch = Scratch(control_plane.admin, "quota-replay")
    started = time.monotonic()
    try:
        found = [flip for case in cases if (flip := replay(scratch, case)) is not None]
    finally:
        with contextlib.suppress(Exception):
            scratch.remove()
    refusals = sum(1 for c in cases if c.refusals)
    took = time.monotonic() - started
    print(
        f"{len(cases)} quota cases ({refusals} refused by the model, {scratch.created} pods run) in {took:.1f} s"
    )
    assert found == [], f"{len(found)} of {len(cases)} cases flipped:\n" + "\n".join(found)


def test_a_flipped_verdict_is_caught(control_plane: ControlPlane, cases: list[Case]) -> None:
    """The same replay reports a model that admits what the server refuses, and refuses what it admits."""
    over = next(c for c in cases if c.refusals and not c.running)
    fits = next(c for c in cases if c.refusals == [] and not c.running)
    scratch = Scratch(control_plane.admin, "quota-flipped")
    try:
        assert "model admitted, server refused" in str(
            replay(scratch, Case(**{**vars(over), "refusals": []}))
        )
        wrong = Case(**{**vars(fits), "refusals": ["exceeded quota: x, requested: pods=1"]})
        assert "server admitted" in str(replay(scratch, wrong))
    finally:
        scratch.remove()


def test_a_fraction_of_a_core_and_of_a_gib_is_counted_exactly_by_the_real_server(
    control_plane: ControlPlane,
) -> None:
    """The backstop of a team holding a fraction of an instance (``platforms.odd_fractions``: 3750m CPU, 16128Mi)
    admits a pod at exactly the ClusterQueue's ceiling and refuses one millicore or one MiB more."""
    platform = platforms.odd_fractions()
    ceiling = compute_ceiling(platform, platform.team("vision"))
    assert ceiling is not None
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute-ceiling"}}
    scratch = Scratch(control_plane.admin, "quota-fraction")
    try:
        ns = scratch.namespace_for([{**quota, "spec": {"hard": ceiling}}])

        def pod(cpu: str, memory: str) -> dict[str, Any]:
            requests = {"cpu": cpu, "memory": memory}
            container = {
                "name": "c",
                "image": "busybox",
                "resources": {"requests": requests, "limits": requests},
            }
            return scratch.pod({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [container]}}, ns)

        answer = control_plane.admin.create(pod("3750m", "16128Mi"), dry_run=True)
        assert answer.ok, answer.message
        for cpu, memory, resource in (("3751m", "16128Mi", "cpu"), ("3750m", "16129Mi", "memory")):
            answer = control_plane.admin.create(pod(cpu, memory), dry_run=True)
            assert answer.status == 403, answer
            assert f"exceeded quota: compute-ceiling, requested: requests.{resource}=" in answer.message, (
                answer
            )
    finally:
        scratch.remove()

"""``hyp`` (the HyperPod CLI, ``sagemaker-hyperpod`` 3.12.0) against the real API server, as a team member.

The CLI runs in its own venv (:mod:`hyperpod_cli_live`), with ``KUBECONFIG`` naming the local control plane and a
research member's own identity: a client certificate for the user name EKS gives an Identity Center user (the
assumed-role ARN, which the POSIX identity webhook reads) in the team's group. Nothing of its traffic is
captured: the API server's RBAC, the platform's admission policies and the webhook judge what ``hyp`` sends.

* Task Governance backend (``cluster_platforms.on("reference", ...)``): the ``hyp`` lines of
  docs/submitting-work.md create their HyperPodPyTorchJob; lines without the queue and priority, or at a class
  the team is not entitled to, are refused and nothing is stored;
* Kueue backend (``kueue_on_cluster``): HyperPodPyTorchJob has no Kueue integration, so the same line is
  refused and nothing is stored.

``hyp`` 3.12.0 does not show the member the platform's message on a refusal (see :func:`refused`): what it
prints is pinned here, so a release that starts showing it is noticed.

Every object created is deleted before the module ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from hyperpod_sdk import sdk_python
from kube_client import wait_until
from synth import Synth
from webhook_server import sso_user

pytestmark = pytest.mark.cluster


def _submissions() -> Any:
    """The ``hyp`` lines of tests/test_hyperpod_cli_submissions.py (docs/submitting-work.md's and the refused)."""
    path = Path(__file__).with_name("test_hyperpod_cli_submissions.py")
    spec = importlib.util.spec_from_file_location("hyp_submissions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LINES = _submissions()
README_LINES: dict[str, str] = _LINES.README_LINES
DENIED_LINES: dict[str, tuple[str, str]] = _LINES.DENIED_LINES

_RUNNER = Path(__file__).parent / "support" / "hyperpod_cli_live.py"
JOBS = {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob"}


def hyp(kubeconfig: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Run each ``hyp ...`` line through the real CLI with ``kubeconfig``; return each outcome."""
    import shlex

    argv = [shlex.split(line)[1:] for line in lines]
    proc = subprocess.run(
        [str(sdk_python()), str(_RUNNER), json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PYTHONWARNINGS": "ignore",
            "HOME": str(kubeconfig.parent),
        },
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def member_kubeconfig(cluster: OnCluster, person: str, team: str) -> Path:
    user = sso_user(person, team)
    return cluster.plane.kubeconfig(f"hyp-{person}", user=user["username"], groups=tuple(user["groups"]))


def refused(cluster: OnCluster, name: str, outcome: dict[str, Any], shown: str) -> None:
    """``hyp`` failed, nothing was stored, and what it printed is ``shown``.

    sagemaker-hyperpod 3.12.0 does not print the API server's message: on a refused create it reads the
    namespace to explain the error (``read_namespace``, which a team member may not: 403) and prints a generic
    line. The platform's message naming the fix is what ``kubectl create --dry-run=server`` shows.
    """
    assert outcome["exit_code"] == 1, outcome
    assert f"Failed to create HyperPodPytorchJob {name}!" in outcome["output"], outcome
    assert shown in outcome["output"], outcome
    assert cluster.admin.get(_job(name)) is None


def _job(name: str) -> dict[str, Any]:
    return {**JOBS, "metadata": {"name": name, "namespace": "hyperpod-ns-research"}}


def test_hyp_on_task_governance(cluster_platforms: ClusterPlatforms, reference: Synth) -> None:
    cluster = cluster_platforms.on("reference", reference)
    cluster.await_admission()
    kubeconfig = member_kubeconfig(cluster, "alice", "research")
    # a policy denying with reason Invalid answers 422, with reason Forbidden 403: hyp prints either generically
    denied = {
        "no queue or priority": ("bare", "Unhandled Kubernetes error: 422 Unprocessable Entity"),
        "unentitled class": ("vip", "Access denied to resource 'vip' in namespace 'hyperpod-ns-research'"),
    }
    lines = [*README_LINES.values(), *(DENIED_LINES[d][0] for d in denied)]
    try:
        outcomes = hyp(kubeconfig, lines)
        for line, outcome in zip(README_LINES.values(), outcomes, strict=False):
            assert outcome["exit_code"] == 0, (line, outcome)
        for name in ("llama-ft", "llama-sweep"):
            stored = wait_until(lambda n=name: cluster.admin.get(_job(n)), timeout=30, what=f"{name} stored")
            assert (
                stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-research-localqueue"
            )
        for (name, shown), outcome in zip(denied.values(), outcomes[len(README_LINES) :], strict=True):
            refused(cluster, name, outcome, shown)
    finally:
        for name in ("llama-ft", "llama-sweep", "bare", "vip"):
            cluster.admin.delete(_job(name))


def test_hyp_on_kueue_is_refused_with_the_fix(kueue_on_cluster: OnCluster) -> None:
    cluster = kueue_on_cluster
    cluster.await_admission()
    kubeconfig = member_kubeconfig(cluster, "alice", "research")
    try:
        (outcome,) = hyp(kubeconfig, [README_LINES["training"]])
        refused(
            cluster,
            "llama-ft",
            outcome,
            "Access denied to resource 'llama-ft' in namespace 'hyperpod-ns-research'",
        )
    finally:
        cluster.admin.delete(_job("llama-ft"))

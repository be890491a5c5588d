"""``hyperpod-tenancy probe`` run for real against the real control plane, and against its stand-in, same verdicts.

The Kueue-backend reference platform is applied as a deploy applies it (``kueue_on_cluster``). The operator runs
the probe through a kubeconfig of their own (a client certificate of a cluster administrator); the probe
impersonates each team's members, so the real admission chain and the real RBAC authorizer judge every request.

KWOK nodes run no containers, and the probe's pods ask for HyperPod's own node labels: A's probe server is never
scheduled, so the network checks (which read the pods' logs) are inconclusive, as the probe says when a pod does
not start. The admission and RBAC checks (A's honest Job admitted, each of B's crossings refused) are judged for
real. The same command against ``probe_cluster.ProbeCluster`` (the stand-in of ``test_probe.py``), its server pod
scripted unschedulable, must give the same verdict for every check: one flipped verdict fails the test.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_platform import OnCluster
from platforms import all_objects, reference_data
from probe_cluster import PodScript, ProbeCluster

from hyperpod_tenancy import cli
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster

OWNER, INTRUDER = "research", "vision"
ROLES = {
    OWNER: "AWSReservedSSO_Research_0123456789abcdef",
    INTRUDER: "AWSReservedSSO_ComputerVision_fedcba9876543210",
}
#: The checks the real server judges (admission and RBAC); the others read the probe pods' logs.
JUDGED = ("a-admitted-own-queue", "b-job-on-a-queue", "b-unentitled-class", "b-gpu-visibility")


def _probe(policy: Path, kubeconfig: Path) -> tuple[int, dict[str, Any], str]:
    """Run ``hyperpod-tenancy probe`` (JSON); its status, report and stderr."""
    out, err = io.StringIO(), io.StringIO()
    args = [
        "probe",
        str(policy),
        "--teams",
        OWNER,
        INTRUDER,
        *(f"--member-role={team}={role}" for team, role in ROLES.items()),
        "--kubeconfig",
        str(kubeconfig),
        "--format",
        "json",
        "--timeout",
        "10",  # the server pod is never scheduled: the wait is the timeout, in both runs
    ]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(args)
    return status, json.loads(out.getvalue()), err.getvalue()


def _stand_in_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "operator", "user": {"token": "operator-token"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "operator"}}],
                "current-context": "c",
            }
        )
    )
    return path


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each check's verdict and what was observed."""
    return {check["id"]: (check["status"], check["observed"]) for check in report["checks"]}


def test_the_probe_on_the_real_server_gives_the_stand_ins_verdicts(
    kueue_on_cluster: OnCluster, tmp_path: Path
) -> None:
    on = kueue_on_cluster
    on.await_admission()
    platform = on.synth.platform
    policy = tmp_path / "platform.yaml"
    policy.write_text(yaml.safe_dump(reference_data() | {"fairnessBackend": "kueue"}))
    operator = on.plane.kubeconfig("probe-operator", user="platform-admin", groups=("system:masters",))
    status, report, err = _probe(policy, operator)
    # nothing of the run is left in either team's namespace
    for team in (OWNER, INTRUDER):
        for kind in ("Job", "Service"):
            version = "batch/v1" if kind == "Job" else "v1"
            left = on.admin.list(
                version, kind, namespace=names.namespace(team), labelSelector=labels.PROBE_LABEL
            )
            assert [o["metadata"]["name"] for o in left if not o["metadata"].get("deletionTimestamp")] == []
    real = _verdicts(report)
    for check in (*JUDGED, "b-creates-in-a-namespace"):
        assert real[check][0] == "pass", (check, report)
    refusal = next(c for c in report["checks"] if c["id"] == "b-creates-in-a-namespace")
    assert (
        f'cannot create resource "jobs" in API group "batch" in the namespace "{names.namespace(OWNER)}"'
        in str(refusal)
    )
    assert {real[c][0] for c in real if c not in (*JUDGED, "b-creates-in-a-namespace")} == {"inconclusive"}
    assert status == report["exitStatus"] == 3, err

    namespaces = {}
    for team in platform.teams:
        ns = names.namespace(team.name)
        namespaces[ns] = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "labels": {**labels.namespace_labels(platform, team), labels.NAMESPACE_NAME_LABEL: ns},
            },
        }
    with ProbeCluster(
        rbac_objects=all_objects(platform),
        policies=admission_policies(platform),
        namespaces=namespaces,
        script={"server": PodScript(unschedulable=True)},
    ) as stand_in:
        stand_in_status, stand_in_report, _ = _probe(
            policy, _stand_in_kubeconfig(tmp_path / "kc", stand_in.url)
        )
    assert (stand_in_status, _verdicts(stand_in_report)) == (status, real)

"""A teammate who changes what a teammate's workload runs: the pods then run as the one who changed it.

The attack: replace the image and command of a teammate's PyTorchJob, RayCluster, HyperPodPyTorchJob or
(inference team) Deployment, delete its pods, and let the controller recreate them running your code as the
teammate's UID with the teammate's home directory mounted. The decision (``webhook/admission.py``): an UPDATE that
changes what runs (``patch.what_runs``: the spec without replica counts, ``suspend`` and the restart annotation)
is re-stamped with the updater's identity; one that does not (scaling, ``kubectl rollout restart`` by an on-call
teammate) keeps the creator's. A requester who is no person (a Studio session) may not change what runs.
Every kind a team may write is attacked, through the real webhook over TLS.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from webhook_server import (
    ACCOUNT,
    GIDS,
    STUDIO_ROLE,
    Certificates,
    WebhookProcess,
    apply_patch,
    certificates,
    create_table,
    pod_specs_of,
    review,
    serial_moto_server,
    sso_user,
    values_at,
    webhook_config,
    workload,
)

from hyperpod_tenancy.k8s import fsx_dirs, posix_identity, workloads
from hyperpod_tenancy.k8s.workloads import TeamAccess, WorkloadKindSpec
from hyperpod_tenancy.policy import names

ATTACKER_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/mallory:latest"
#: Every kind a team may write, with the team whose Role grants it.
KINDS = [
    (k, "inference" if k.team_access is TeamAccess.INFERENCE else "research")
    for k in workloads.kinds_for(inference=True)
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    with serial_moto_server():
        directory = tmp_path_factory.mktemp("webhook")
        certs: Certificates = certificates(directory)
        (directory / "teams.json").write_text(json.dumps(webhook_config()))
        with WebhookProcess(
            certs=certs, table=create_table(), config_path=Path(directory / "teams.json")
        ) as p:
            yield p


def _obj(kind: WorkloadKindSpec, team: str) -> dict[str, Any]:
    obj = workload(kind, team)
    if not kind.pod_specs:  # the inference operator's kinds: the operator renders the pods from the spec
        obj["spec"] = {"modelName": "llama", "image": "model-server:1", "instanceType": "ml.g5.12xlarge"}
    return obj


def _created(server: WebhookProcess, kind: WorkloadKindSpec, team: str, person: str) -> dict[str, Any]:
    obj = _obj(kind, team)
    response = server.client.mutate(review(obj, user=sso_user(person, team)))
    assert response["allowed"], response
    return apply_patch(obj, response)


def _uid(server: WebhookProcess, person: str, team: str) -> int:
    """The UID the webhook gives ``person`` (by stamping a throwaway Job)."""
    job = workload(next(k for k in workloads.WORKLOAD_KINDS if k.kind == "Job"), team, name="probe")
    response = server.client.mutate(review(job, user=sso_user(person, team)))
    return int(apply_patch(job, response)["metadata"]["annotations"][posix_identity.POSIX_UID_ANNOTATION])


def _replace_code(obj: dict[str, Any], kind: WorkloadKindSpec) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    if not kind.pod_specs:
        changed["spec"]["image"] = ATTACKER_IMAGE
    for spec in pod_specs_of(changed, kind):
        for container in spec["containers"]:
            container["image"] = ATTACKER_IMAGE
            container["command"] = ["sh", "-c", "cat ~/.aws/credentials ~/.ssh/id_ed25519"]
    return changed


def _record(obj: dict[str, Any]) -> tuple[str, str]:
    annotations = obj["metadata"]["annotations"]
    return annotations[posix_identity.POSIX_USER_ANNOTATION], annotations[posix_identity.POSIX_UID_ANNOTATION]


@pytest.mark.parametrize(("kind", "team"), KINDS, ids=[k.kind for k, _ in KINDS])
def test_a_teammate_who_changes_the_code_runs_it_as_themselves(
    server: WebhookProcess, kind: WorkloadKindSpec, team: str
) -> None:
    stored = _created(server, kind, team, "alice@example.com")
    alice_uid = int(_record(stored)[1])
    mallory_uid = _uid(server, "mallory@example.com", team)
    changed = _replace_code(stored, kind)
    response = server.client.mutate(
        review(changed, user=sso_user("mallory@example.com", team), operation="UPDATE", old=stored)
    )
    assert response["allowed"], response
    assert any("now run as you" in w for w in response.get("warnings", [])), response
    result = apply_patch(changed, response)
    assert _record(result) == ("sso:mallory@example.com", str(mallory_uid))
    for spec in pod_specs_of(result, kind):
        assert spec["securityContext"]["runAsUser"] == mallory_uid
        assert spec["securityContext"]["runAsGroup"] == GIDS[team]
        (init,) = [c for c in spec["initContainers"] if c["name"] == fsx_dirs.HOME_INIT_CONTAINER_NAME]
        assert init["securityContext"]["runAsUser"] == mallory_uid
        for container in spec["containers"]:
            homes = [m for m in container["volumeMounts"] if m["mountPath"] == fsx_dirs.HOME_MOUNT_PATH]
            assert [m["subPath"] for m in homes] == [fsx_dirs.home_subpath(mallory_uid)]
        assert str(alice_uid) not in json.dumps(spec), "nothing of alice's identity is left in the pods"
        assert spec["containers"][0]["image"] == ATTACKER_IMAGE
        for meta in _template_metadata(result, kind):
            assert meta["annotations"][posix_identity.POSIX_USER_ANNOTATION] == "sso:mallory@example.com"


def _template_metadata(obj: dict[str, Any], kind: WorkloadKindSpec) -> list[dict[str, Any]]:
    """The metadata of every pod template (the sibling of each pod spec)."""
    found = []
    for dotted in kind.pod_specs:
        parent = dotted.removesuffix(".spec") + ".metadata"
        found += values_at(obj, parent)
    return found


@pytest.mark.parametrize(("kind", "team"), KINDS, ids=[k.kind for k, _ in KINDS])
def test_the_creator_changing_their_own_code_keeps_their_identity(
    server: WebhookProcess, kind: WorkloadKindSpec, team: str
) -> None:
    stored = _created(server, kind, team, "alice@example.com")
    changed = _replace_code(stored, kind)
    response = server.client.mutate(
        review(changed, user=sso_user("alice@example.com", team), operation="UPDATE", old=stored)
    )
    assert response["allowed"], response
    assert _record(apply_patch(changed, response)) == _record(stored)


def test_an_on_call_teammate_restarting_or_scaling_an_endpoint_keeps_its_identity(
    server: WebhookProcess,
) -> None:
    deployment = next(k for k in workloads.WORKLOAD_KINDS if k.kind == "Deployment")
    stored = _created(server, deployment, "inference", "gina@example.com")
    restarted = copy.deepcopy(stored)
    restarted["spec"]["replicas"] = 4
    restarted["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = (
        "2026-12-01T03:12:00Z"
    )
    response = server.client.mutate(
        review(restarted, user=sso_user("henry@example.com", "inference"), operation="UPDATE", old=stored)
    )
    assert response["allowed"] and "patch" not in response, response
    assert not response.get("warnings")


def test_an_autoscaler_changing_ray_worker_replicas_keeps_the_identity(server: WebhookProcess) -> None:
    raycluster = next(k for k in workloads.WORKLOAD_KINDS if k.kind == "RayCluster")
    stored = _created(server, raycluster, "research", "alice@example.com")
    scaled = copy.deepcopy(stored)
    scaled["spec"]["workerGroupSpecs"][0]["replicas"] = 8
    scaled["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": ["train-worker-abc"]}
    response = server.client.mutate(
        review(scaled, user=sso_user("mallory@example.com"), operation="UPDATE", old=stored)
    )
    assert response["allowed"] and "patch" not in response, response


def test_a_studio_session_may_not_change_what_runs(server: WebhookProcess) -> None:
    pytorchjob = next(k for k in workloads.WORKLOAD_KINDS if k.kind == "PyTorchJob")
    stored = _created(server, pytorchjob, "research", "alice@example.com")
    arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/{STUDIO_ROLE}/SageMaker"
    studio = {
        "username": arn,
        "groups": [names.kubernetes_group("research"), "system:authenticated"],
        "extra": {"arn": [arn], "sessionName": ["SageMaker"]},
    }
    response = server.client.mutate(
        review(_replace_code(stored, pytorchjob), user=studio, operation="UPDATE", old=stored)
    )
    assert not response["allowed"]
    assert "changes what sso:alice@example.com's PyTorchJob runs" in response["status"]["message"]

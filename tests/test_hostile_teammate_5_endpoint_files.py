"""A teammate who serves a teammate's files through an inference endpoint's FSx model source.

``hyp create hyp-custom-endpoint --model-source-type fsx --fsx-file-system-id fs-... --model-location <dir>``
posts an InferenceEndpointConfig with ``modelSourceConfig.fsxStorage`` and ``modelLocation``, a directory of the
file system that the inference operator mounts into the endpoint's pods (the CRD and the SDK model
``sagemaker/hyperpod/inference/config/hp_endpoint_config.py`` ``FsxStorage``: ``fileSystemId``, ``dnsName``,
``mountName``). Pointing it at ``<team>/home/<uid>`` would put a teammate's home directory into pods the
operator builds, outside the POSIX identity webhook. The model location of an FSx source must be under the
team's shared model area ``<team>/models/`` (created by the platform's FSx directory Job), never a home and
never another team's directory. The policies of the synthesized platform, on both fairness backends.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import tenant_admission as ta
from synth import Synth, manifests_in

from hyperpod_tenancy.k8s import fsx_dirs
from hyperpod_tenancy.k8s.operator_guards import OPERATOR_FIELDS_POLICY
from hyperpod_tenancy.policy import names

TEAM = "inference"
MODELS = f"{TEAM}/{fsx_dirs.MODELS_DIRECTORY}/"


def endpoint(location: str, *, fsx: bool = True) -> dict[str, Any]:
    """An InferenceEndpointConfig as ``hyp create hyp-custom-endpoint --model-source-type fsx`` posts it."""
    source: dict[str, Any] = {"modelSourceType": "fsx", "modelLocation": location}
    if fsx:
        source["fsxStorage"] = {"fileSystemId": "fs-0123456789abcdef0"}
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {
            "name": "llm",
            "namespace": names.namespace(TEAM),
            "labels": ta.kueue_labels(TEAM, "inference-priority"),
        },
        "spec": {
            "endpointName": "llm",
            "instanceType": "ml.g5.12xlarge",
            "modelName": "llm",
            "modelSourceConfig": source,
            "worker": {
                "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/serve:1",
                "modelInvocationPort": {"containerPort": 8080},
                "modelVolumeMount": {"name": "model", "mountPath": "/opt/ml/model"},
                "resources": {},
            },
        },
    }


def _denials(synth: Synth, obj: dict[str, Any], operation: str = "CREATE") -> list[str]:
    decision = ta.decide(
        synth, obj, team=TEAM, operation=operation, old=obj if operation == "UPDATE" else None
    )
    return [m for o in decision.outcomes if o.policy == OPERATOR_FIELDS_POLICY for m in o.failures]


@pytest.mark.parametrize(
    "location",
    [
        f"{TEAM}/home/200001",
        f"{TEAM}/home/200001/",
        f"/{TEAM}/home/200001",
        "research/home/200001",
        "research/models/llama/",
        f"{MODELS}../home/200001",
        f"{MODELS}llama/../../home/200001",
        f"{TEAM}/",
        f"{TEAM}",
        f"{TEAM}/modelsx/llama",
        "",
        "/",
    ],
)
@pytest.mark.parametrize("fsx", [True, False], ids=["fsxStorage", "modelSourceType-only"])
def test_an_fsx_model_location_outside_the_team_model_area_is_refused(
    synth: Synth, location: str, fsx: bool
) -> None:
    for operation in ("CREATE", "UPDATE"):
        denials = _denials(synth, endpoint(location, fsx=fsx), operation)
        assert any(MODELS in m and "home" in m for m in denials), (location, denials)


@pytest.mark.parametrize(
    "location",
    [f"{MODELS}llama-3-8b", f"{MODELS}llama-3-8b/", f"/{MODELS}team/v2/", MODELS, MODELS.rstrip("/")],
)
def test_an_honest_fsx_endpoint_passes(synth: Synth, location: str) -> None:
    obj = endpoint(location)
    assert _denials(synth, obj) == []
    assert ta.decide(synth, obj, team=TEAM).allowed


def test_an_honest_s3_endpoint_still_passes(synth: Synth) -> None:
    obj = endpoint(f"teams/{TEAM}/models/llm/", fsx=False)
    obj["spec"]["modelSourceConfig"] = {
        "modelSourceType": "s3",
        "modelLocation": f"teams/{TEAM}/models/llm/",
        "s3Storage": {"bucketName": "ml-platform-data", "region": "us-east-1"},
    }
    assert _denials(synth, copy.deepcopy(obj)) == []


def test_the_platform_creates_the_team_model_area(synth: Synth) -> None:
    """The FSx directory Job creates ``/fsx/<team>/models`` (root, the team GID, setgid and sticky)."""
    script = next(
        c["command"][-1]
        for o in [*synth.manifests(), *manifests_in(synth.team(TEAM))]
        if o["kind"] == "Job" and o["metadata"]["name"] == names.fsx_directory_job(TEAM)
        for c in o["spec"]["template"]["spec"]["containers"]
    )
    assert f"{names.fsx_directory(TEAM)}/{fsx_dirs.MODELS_DIRECTORY}" in script

"""Operators acting on fields a tenant chose: each path closed, on both fairness backends.

* KubeRay (ray-project/kuberay v1.4.2 = 34ea80e0): ``enableIngress`` makes it create an Ingress carrying every
  RayCluster annotation (``ray-operator/controllers/ray/common/ingress.go`` lines 28-40); ``autoscalerOptions``
  ``securityContext``/``volumeMounts`` are copied into the autoscaler sidecar (``common/pod.go``
  ``mergeAutoscalerOverrides``, lines 554-576).
* The HyperPod inference operator (source not public): ``spec.kubernetes.initContainers``/``volumes`` and S3
  URIs outside ``teams/<team>/`` of an InferenceEndpointConfig are refused (field names: the CRD in
  aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/config/crd/`` @011ca927).
* The HyperPod dependencies chart's RBAC subcharts (``team-role-and-bindings`` binds ``pods create`` and Kueue
  ``workloads/status patch`` to a team group; Chart.yaml ``dependencies`` conditions) are pinned off in the
  values the platform installs it with, not left to the chart's default.

The honest objects (the SDK's endpoints, the RayCluster and RayJob builders) pass: see also
``test_hyperpod_cli_submissions.py``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import tenant_admission as ta
from synth import Synth, resources_of

from hyperpod_tenancy.k8s.operator_guards import OPERATOR_FIELDS_POLICY


def _denials(synth: Synth, obj: dict[str, Any], team: str = "research") -> list[str]:
    decision = ta.decide(synth, obj, team=team)
    return [m for o in decision.outcomes if o.policy == OPERATOR_FIELDS_POLICY for m in o.failures]


def _endpoint(**spec: Any) -> dict[str, Any]:
    """An InferenceEndpointConfig as ``hyp create hyp-custom-endpoint`` posts it (S3 model source)."""
    body: dict[str, Any] = {
        "endpointName": "llm",
        "instanceType": "ml.g5.12xlarge",
        "modelName": "llm",
        "modelSourceConfig": {
            "modelSourceType": "s3",
            "modelLocation": "teams/inference/models/llm/",
            "s3Storage": {"bucketName": "ml-platform-data", "region": "us-east-1"},
        },
        "worker": {
            "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/serve:1",
            "modelInvocationPort": {"containerPort": 8080},
            "modelVolumeMount": {"name": "model"},
            "resources": {},
        },
    }
    body.update(spec)
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {
            "name": "llm",
            "namespace": "hyperpod-ns-inference",
            "labels": ta.kueue_labels("inference", "inference-priority"),
        },
        "spec": body,
    }


def test_an_honest_s3_endpoint_passes(synth: Synth) -> None:
    assert _denials(synth, _endpoint(), team="inference") == []
    assert ta.decide(synth, _endpoint(), team="inference").allowed


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("initContainers", [{"name": "x", "image": "busybox", "securityContext": {"runAsUser": 200001}}]),
        ("volumes", [{"name": "home", "persistentVolumeClaim": {"claimName": "fsx"}}]),
    ],
)
def test_endpoint_init_containers_and_volumes_are_refused(synth: Synth, field: str, value: Any) -> None:
    denials = _denials(synth, _endpoint(kubernetes={field: value}), team="inference")
    assert any("spec.kubernetes.initContainers and spec.kubernetes.volumes" in m for m in denials), denials


@pytest.mark.parametrize(
    "change",
    [
        {
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "modelLocation": "teams/research/models/secret/",
                "s3Storage": {"bucketName": "ml-platform-data", "region": "us-east-1"},
            }
        },
        {
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "modelLocation": "teams/inference-old/x/",
                "s3Storage": {"bucketName": "ml-platform-data", "region": "us-east-1"},
            }
        },
        {"dataCapture": {"s3Uri": "s3://ml-platform-data/teams/research/capture/"}},
        {"tlsConfig": {"tlsCertificateOutputS3Uri": "s3://ml-platform-data/teams/research/tls/"}},
        {"tlsConfig": {"tlsCertificateOutputS3Uri": "s3://other-bucket/"}},
    ],
    ids=["model-of-another-team", "prefix-lookalike", "data-capture", "tls-output", "tls-bucket-root"],
)
def test_endpoint_s3_locations_outside_the_team_prefix_are_refused(
    synth: Synth, change: dict[str, Any]
) -> None:
    denials = _denials(synth, _endpoint(**change), team="inference")
    assert any("teams/inference/" in m for m in denials), denials


def test_endpoint_s3_locations_under_the_team_prefix_pass(synth: Synth) -> None:
    ok = _endpoint(
        dataCapture={"s3Uri": "s3://ml-platform-data/teams/inference/capture/"},
        tlsConfig={"tlsCertificateOutputS3Uri": "s3://ml-platform-data/teams/inference/tls/"},
    )
    assert _denials(synth, ok, team="inference") == []


def test_ray_ingress_is_refused_on_clusters_and_jobs(synth: Synth) -> None:
    cluster = ta.raycluster(
        annotations={**ta.CHECKPOINT, "alb.ingress.kubernetes.io/scheme": "internet-facing"}
    )
    assert _denials(synth, cluster) == []
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    assert any("enableIngress" in m for m in _denials(synth, cluster))
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": copy.deepcopy(cluster["metadata"]),
        "spec": {"entrypoint": "python train.py", "rayClusterSpec": copy.deepcopy(cluster["spec"])},
    }
    job["metadata"]["name"] = "rayjob"
    assert any("enableIngress" in m for m in _denials(synth, job))
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["enableIngress"] = False
    assert _denials(synth, job) == []


@pytest.mark.parametrize(
    "options",
    [
        {"securityContext": {"runAsUser": 200001, "allowPrivilegeEscalation": False}},
        {"volumeMounts": [{"name": "hyperpod-tenancy-team", "mountPath": "/x", "subPath": "home/200001"}]},
    ],
    ids=["securityContext", "volumeMounts"],
)
def test_ray_autoscaler_overrides_that_escape_the_webhook_are_refused(
    synth: Synth, options: dict[str, Any]
) -> None:
    cluster = ta.raycluster(annotations=dict(ta.CHECKPOINT))
    cluster["spec"]["enableInTreeAutoscaling"] = True
    cluster["spec"]["autoscalerOptions"] = {"image": "rayproject/ray:2.46.0", **options}
    assert any("autoscalerOptions" in m for m in _denials(synth, cluster))
    cluster["spec"]["autoscalerOptions"] = {
        "image": "rayproject/ray:2.46.0",
        "resources": {"limits": {"cpu": "1"}},
    }
    assert _denials(synth, cluster) == [], "an honest autoscaler image and resources pass"


def test_controllers_are_not_held_to_it(synth: Synth) -> None:
    cluster = ta.raycluster(annotations=dict(ta.CHECKPOINT))
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    decision = ta.decide(synth, cluster, user=ta.KUBERAY_OPERATOR, operation="UPDATE", old=cluster)
    assert OPERATOR_FIELDS_POLICY not in decision.policies()


def test_the_hyperpod_chart_rbac_subcharts_are_pinned_off(synth: Synth) -> None:
    charts = resources_of(synth.cluster, "Custom::AWSCDK-EKS-HelmChart")
    (hyperpod,) = [c for k, c in charts.items() if k.startswith("ClusterHyperPodDependencies")]
    values = json.loads(hyperpod["Properties"]["Values"])
    for subchart in ("team-role-and-bindings", "namespaced-role-and-bindings", "cluster-role-and-bindings"):
        assert values[subchart] == {"enabled": False}, subchart

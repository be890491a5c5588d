"""The team chart's manifest, built the fast way, is the resource ``eks.KubernetesManifest`` builds, byte for byte.

``kubernetes_manifest`` hands the objects to the CDK as one JSON string and adds the prune label itself; each case
below synthesizes it beside ``eks.KubernetesManifest`` given the same objects, in two stacks of the same shape, and
compares the templates as text: tokens inside the objects (a cross-stack reference, an import), text beyond ASCII,
objects with and without labels, pruning on and off, and numbers (a fraction takes the CDK's own path).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3 as s3

from hyperpod_tenancy.constructs._private.kubectl import PRUNE_LABEL_PREFIX, kubernetes_manifest

ENV = cdk.Environment(account="111122223333", region="us-east-1")


def objects(bucket: s3.Bucket) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hyperpod-ns-a"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "hyperpod-ns-a", "labels": {"team": "a"}},
            "data": {
                "bucket": bucket.bucket_arn,
                "imported": cdk.Fn.import_value("SomeExport"),
                "note": 'quotes " and \\ and é and 日本 and </script>',
                "replicas": 3,
                "enabled": True,
                "nothing": None,
                "list": ["x", None, {"y": None}],
            },
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "labels": {}}},
    ]


def synthesized(tmp_path: Path, *, prune: bool, fast: bool, extra: dict[str, Any] | None = None) -> str:
    app = cdk.App(outdir=str(tmp_path / ("fast" if fast else "cdk")))
    shared = cdk.Stack(app, "Shared", env=ENV)
    bucket = s3.Bucket(shared, "Data")
    stack = cdk.Stack(app, "Team", env=ENV)
    cluster = eks.Cluster.from_cluster_attributes(
        stack,
        "Cluster",
        cluster_name="shared",
        prune=prune,
        kubectl_provider=eks.KubectlProvider.from_kubectl_provider_attributes(
            stack, "Kubectl", service_token="arn:aws:lambda:us-east-1:111122223333:function:kubectl"
        ),
    )
    manifest = objects(bucket)
    if extra:
        manifest.append(extra)
    if fast:
        kubernetes_manifest(stack, "Chart", cluster=cluster, objects=manifest, overwrite=True)
    else:
        eks.KubernetesManifest(
            stack, "Chart", cluster=cluster, manifest=copy.deepcopy(manifest), overwrite=True
        )
    assembly = app.synth()
    return Path(assembly.get_stack_by_name("Team").template_full_path).read_text(encoding="utf-8")


@pytest.mark.parametrize("prune", [True, False])
def test_the_same_template_as_kubernetes_manifest(tmp_path: Path, prune: bool) -> None:
    fast = synthesized(tmp_path, prune=prune, fast=True)
    assert fast == synthesized(tmp_path, prune=prune, fast=False)
    template = json.loads(fast)
    [resource] = [
        r for r in template["Resources"].values() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
    ]
    rendered = json.dumps(resource["Properties"]["Manifest"], ensure_ascii=False)
    assert ("Fn::ImportValue" in rendered) and ("日本" in rendered)
    assert (PRUNE_LABEL_PREFIX in rendered) is prune


def test_a_fraction_or_a_huge_integer_takes_the_cdks_own_path(tmp_path: Path) -> None:
    extra = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "f"},
        "data": {"ratio": 0.5, "one": 1.0},
    }
    assert synthesized(tmp_path, prune=True, fast=True, extra=extra) == synthesized(
        tmp_path, prune=True, fast=False, extra=extra
    )

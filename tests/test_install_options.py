"""What a user of the installed package may need to set is reachable from platform.yaml, the stage and the construct.

The POSIX identity webhook's image (``cluster.posixIdentity.imageUri``, ``PlatformStage(cluster_options=...)``,
``SharedHyperPodCluster(posix_identity_image_uri=...)``) and the usage-report operator's chart
(``chargeback.usageReportChart``, ``PlatformStage(chargeback=ChargebackOptions(usage_report_chart=...))``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
from aws_cdk import aws_eks_v2 as eks
from synth import Synth, manifests_in, resources_of, synthesize

from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.stacks import ClusterOptions, ClusterStack

POLICY_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/hyperpod-tenancy-webhook:0.1.0"
STAGE_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/hyperpod-tenancy-webhook@sha256:" + "ab" * 32
CHART = "oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/hyperpod/sagemaker-hyperpod-usage-report"


def _edit(data: dict[str, Any]) -> None:
    data["cluster"]["posixIdentity"]["imageUri"] = POLICY_IMAGE
    data["chargeback"]["usageReportChart"] = {"ociRepository": CHART, "version": "0.1.0"}


@pytest.fixture(scope="module")
def from_policy(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform naming its webhook image and usage-report chart in platform.yaml."""
    return synthesize(
        platforms.variant("platform.yaml with an image and a chart", _edit), tmp_path_factory.mktemp("p")
    )


@pytest.fixture(scope="module")
def from_stage(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The same platform with the stage naming another image: the stage's option wins over the policy's."""
    platform = platforms.variant("platform.yaml with an image and a chart", _edit)
    options = ClusterOptions(posix_identity_image_uri=STAGE_IMAGE)
    return synthesize(platform, tmp_path_factory.mktemp("s"), cluster_options=options)


def _webhook_image(synth: Synth) -> str:
    (deployment,) = [
        o
        for o in manifests_in(synth.cluster)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == posix_identity.DEPLOYMENT
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    image: str = container["image"]
    return image


def _docker_assets(synth: Synth) -> list[Any]:
    assert synth.outdir is not None
    return [
        image
        for manifest in synth.outdir.rglob("*.assets.json")
        for image in json.loads(manifest.read_text()).get("dockerImages", {}).values()
    ]


def test_the_policy_names_the_webhook_image_and_nothing_is_built(from_policy: Synth) -> None:
    assert _webhook_image(from_policy) == POLICY_IMAGE
    assert _docker_assets(from_policy) == []
    assert from_policy.stage.cluster_stack.cluster.posix_identity.image is None


def test_the_stage_option_overrides_the_policy_image(from_stage: Synth) -> None:
    assert _webhook_image(from_stage) == STAGE_IMAGE
    assert _docker_assets(from_stage) == []


def test_the_policy_names_the_usage_report_chart(from_policy: Synth) -> None:
    chargeback = from_policy.templates[from_policy.stage.chargeback_stack.stack_name]  # type: ignore[union-attr]
    charts = [r["Properties"] for r in resources_of(chargeback, "Custom::AWSCDK-EKS-HelmChart").values()]
    assert [(c["Repository"], c["Version"]) for c in charts] == [(CHART, "0.1.0")]


def test_the_reference_platform_builds_the_image_from_the_package(reference: Synth) -> None:
    (image,) = _docker_assets(reference)
    assert image["source"]["dockerFile"] == "webhook/Dockerfile"
    assert reference.stage.cluster_stack.cluster.posix_identity.image is not None


def test_a_bad_image_option_or_an_unknown_option_is_refused_by_name(tmp_path: Path) -> None:
    platform = platforms.reference_platform()
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "S", env=cdk.Environment(account=platform.account, region=platform.region))
    with pytest.raises(TenancyError, match=r"image_uri: 'webhook:latest' is not pinned"):
        SharedHyperPodCluster(stack, "Cluster", platform=platform, posix_identity_image_uri="webhook:latest")
    with pytest.raises(
        TenancyError, match=r"cluster_options is a dict; pass ClusterOptions\(...\) with any of vpc, "
    ):
        ClusterStack(app, "C", platform=platform, cluster_options={"image": POLICY_IMAGE})  # type: ignore[arg-type]
    with pytest.raises(TenancyError, match=r"ClusterOptions.posix_identity_image_uri: 3 is not a string"):
        ClusterOptions(posix_identity_image_uri=3)  # type: ignore[arg-type]
    # the construct's own option types pass
    ClusterOptions(endpoint_access=eks.EndpointAccess.PRIVATE, vpc_cidr_blocks=["10.0.0.0/16"])

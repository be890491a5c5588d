"""The CloudFormation template of a :class:`ChargebackPipeline` on an imported reference cluster (one synth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def chargeback_pipeline_template(directory: Path, **pipeline: Any) -> dict[str, Any]:
    """Synthesize a stack holding only the reference platform's chargeback pipeline; return its template.

    ``pipeline`` are keyword arguments of the pipeline on top of ``billing_rule=usage, idle_owner=shared``.
    """
    import aws_cdk as cdk
    import platforms
    from aws_cdk.assertions import Template
    from synth import new_app

    from hyperpod_tenancy.chargeback.model import BillingRule
    from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import ChargebackPipeline

    app = new_app(directory)
    stack = cdk.Stack(app, "Cb", env=cdk.Environment(account="111122223333", region="us-east-1"))
    cluster = imported_cluster(stack, platforms.reference_platform())
    props: dict[str, Any] = {"billing_rule": BillingRule.USAGE, "idle_owner": "shared", **pipeline}
    ChargebackPipeline(stack, "Chargeback", cluster=cluster, **props)
    return dict(Template.from_stack(stack).to_json())


def imported_cluster(stack: Any, platform: Any) -> Any:
    """``SharedHyperPodCluster.from_attributes`` of ``platform`` in ``stack``'s account and region (fixed ids)."""
    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster

    arn = f"{stack.region}:{stack.account}"
    return SharedHyperPodCluster.from_attributes(
        stack,
        "Cluster",
        platform=platform,
        eks_cluster_name="eks",
        kubectl_provider_service_token=f"arn:aws:lambda:{arn}:function:kubectl",
        hyperpod_cluster_arn=f"arn:aws:sagemaker:{arn}:cluster/abc",
        vpc_id="vpc-0123456789abcdef0",
        private_subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        api_endpoint_security_group_id="sg-0123456789abcdef0",
        data_bucket_name="data",
        file_system_id="fs-1",
        file_system_dns_name="fs-1.fsx",
        file_system_mount_name="mnt",
        network_policy_enforced=True,
    )

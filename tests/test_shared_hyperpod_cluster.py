"""Structural promises of SharedHyperPodCluster, asserted on the synthesized reference platform."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from synth import Synth, depends_on, one, resources_of, transitively_depends

from hyperpod_tenancy.policy import Platform


def addon(template: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    found = Template.from_json(template).find_resources(
        "AWS::EKS::Addon", {"Properties": {"AddonName": name}}
    )
    assert len(found) == 1, f"add-on {name}: {sorted(found)}"
    ((logical_id, resource),) = found.items()
    return logical_id, dict(resource)


def hyperpod_chart(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The HyperPod dependencies chart (release ``dependencies``; other charts, e.g. KubeRay, sit beside it)."""
    (found,) = [
        (k, v)
        for k, v in resources_of(template, "Custom::AWSCDK-EKS-HelmChart").items()
        if v["Properties"]["Release"] == "dependencies"
    ]
    return found


def test_eks_uses_api_authentication_mode(reference: Synth) -> None:
    template = reference.template()
    template.resource_count_is("AWS::EKS::Cluster", 1)
    template.has_resource_properties("AWS::EKS::Cluster", {"AccessConfig": {"AuthenticationMode": "API"}})


def test_eks_uses_managed_node_groups_not_auto_mode(reference: Synth) -> None:
    template = reference.template()
    # Auto Mode is not supported by HyperPod
    template.has_resource_properties("AWS::EKS::Cluster", {"ComputeConfig": {"Enabled": False}})
    spec = reference.platform.cluster.system_node_group
    template.resource_count_is("AWS::EKS::Nodegroup", 1)
    template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {"InstanceTypes": [spec.instance_type], "ScalingConfig": {"DesiredSize": spec.count}},
    )


def test_eks_logs_every_control_plane_component(reference: Synth) -> None:
    types = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    reference.template().has_resource_properties(
        "AWS::EKS::Cluster", {"Logging": {"ClusterLogging": {"EnabledTypes": [{"Type": t} for t in types]}}}
    )


def test_eks_endpoint_is_private_and_secrets_are_encrypted(reference: Synth) -> None:
    reference.template().has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "ResourcesVpcConfig": {"EndpointPublicAccess": False, "EndpointPrivateAccess": True},
            "EncryptionConfig": [{"Resources": ["secrets"]}],
        },
    )


def test_vpc_cni_enforces_network_policies(reference: Synth) -> None:
    reference.template().has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "vpc-cni",
            "ConfigurationValues": Match.serialized_json(Match.object_like({"enableNetworkPolicy": "true"})),
        },
    )
    assert reference.stage.cluster_stack.cluster.network_policy_enforced


@pytest.mark.parametrize(
    "name",
    [
        "vpc-cni",
        "kube-proxy",
        "coredns",
        "eks-pod-identity-agent",
        "aws-fsx-csi-driver",
        "cert-manager",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
    ],
)
def test_required_addons_are_installed(reference: Synth, name: str) -> None:
    addon(reference.cluster, name)  # exactly one
    reference.template().has_resource_properties(
        "AWS::EKS::Addon", {"AddonName": name, "ResolveConflicts": "OVERWRITE"}
    )


def test_security_group_allows_efa_and_lustre_within_itself(reference: Synth) -> None:
    _, file_system = one(reference.cluster, "AWS::FSx::FileSystem")
    ((sg_ref,),) = [file_system["Properties"]["SecurityGroupIds"]]
    sg_id = sg_ref["Fn::GetAtt"][0]
    sg = reference.cluster["Resources"][sg_id]
    egress = sg["Properties"]["SecurityGroupEgress"]
    assert {
        "CidrIp": "0.0.0.0/0",
        "Description": "Allow all outbound traffic by default",
        "IpProtocol": "-1",
    } in egress
    rules = [
        r["Properties"] for r in resources_of(reference.cluster, "AWS::EC2::SecurityGroupIngress").values()
    ]
    self_rules = {
        (r["IpProtocol"], r.get("FromPort"), r.get("ToPort"))
        for r in rules
        if r["SourceSecurityGroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
        and r["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    }
    assert self_rules == {("-1", None, None), ("tcp", 988, 988), ("tcp", 1018, 1023)}
    # no ingress from anywhere else
    assert not [r for r in rules if "CidrIp" in r]


def test_hyperpod_cluster_orchestrated_by_eks_with_recovery_and_deep_checks(
    reference: Synth, reference_platform: Platform
) -> None:
    _, hp = one(reference.cluster, "AWS::SageMaker::Cluster")
    props = hp["Properties"]
    eks_id, _ = one(reference.cluster, "AWS::EKS::Cluster")
    assert props["Orchestrator"]["Eks"]["ClusterArn"] == {"Fn::GetAtt": [eks_id, "Arn"]}
    assert props["NodeRecovery"] == "Automatic"
    groups = {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}
    for spec in reference_platform.cluster.instance_groups:
        group = groups[spec.name]
        assert group["InstanceType"] == spec.instance_type
        assert group["InstanceCount"] == spec.count
        assert group["ThreadsPerCore"] == spec.threads_per_core
        assert group["OnStartDeepHealthChecks"] == [c.value for c in spec.deep_health_checks]
        assert group["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
    assert groups["p5-training"]["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]


def test_instance_groups_are_pinned_to_their_availability_zone(reference: Synth) -> None:
    _, hp = one(reference.cluster, "AWS::SageMaker::Cluster")
    subnets = resources_of(reference.cluster, "AWS::EC2::Subnet")
    for group, zone in (("p5-training", "us-east-1a"), ("g5-inference", "us-east-1b")):
        spec = next(g for g in hp["Properties"]["InstanceGroups"] if g["InstanceGroupName"] == group)
        (subnet_ref,) = spec["OverrideVpcConfig"]["Subnets"]
        assert subnets[subnet_ref["Ref"]]["Properties"]["AvailabilityZone"] == zone
        assert subnet_ref["Ref"].startswith("ClusterVpcprivate")


def test_no_placeholder_availability_zones(reference: Synth, kueue_reference: Synth) -> None:
    for synth in (reference, kueue_reference):
        for name, template in synth.templates.items():
            assert "dummy1" not in json.dumps(template), name


@pytest.mark.parametrize("type_", ["AWS::SageMaker::Cluster", "AWS::FSx::FileSystem", "AWS::S3::Bucket"])
def test_stateful_resources_are_retained(reference: Synth, type_: str) -> None:
    template = reference.template()
    assert template.find_resources(type_), f"no {type_} to check"
    template.all_resources(type_, {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_team_studio_domains_are_retained(reference: Synth) -> None:
    for team in reference.platform.teams:
        template = reference.template(team.name)
        template.resource_count_is("AWS::SageMaker::Domain", 1)
        template.has_resource(
            "AWS::SageMaker::Domain",
            {
                "DeletionPolicy": "Retain",
                "Properties": {"AppNetworkAccessType": "VpcOnly", "AuthMode": "SSO"},
            },
        )


def test_fsx_lustre_matches_policy(reference: Synth, reference_platform: Platform) -> None:
    spec = reference_platform.cluster.fsx
    template = reference.template()
    template.resource_count_is("AWS::FSx::FileSystem", 1)
    template.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": spec.storage_capacity_gib,
            "LustreConfiguration": {
                "DeploymentType": spec.deployment_type,
                "PerUnitStorageThroughput": spec.per_unit_storage_throughput,
            },
        },
    )


def test_deploy_order_helm_chart_hyperpod_task_governance_scheduler(reference: Synth) -> None:
    t = reference.cluster
    helm_id, _ = hyperpod_chart(t)
    hp_id, _ = one(t, "AWS::SageMaker::Cluster")
    tg_id, _ = addon(t, "amazon-sagemaker-hyperpod-taskgovernance")
    waits = resources_of(t, "Custom::AWSCDK-EKS-KubernetesObjectValue")
    ((ready_id, ready),) = [(k, v) for k, v in waits.items() if k.startswith("ClusterKueueReady")]
    sched_id, _ = one(t, "AWS::SageMaker::ClusterSchedulerConfig")
    cni_id, _ = addon(t, "vpc-cni")
    assert transitively_depends(t, helm_id, cni_id), "Helm chart after the base add-ons"
    assert helm_id in depends_on(t, hp_id), "HyperPod cluster after the Helm chart"
    assert hp_id in depends_on(t, tg_id), "Task Governance add-on after the HyperPod cluster"
    assert tg_id in depends_on(t, ready_id), "Kueue readiness probe after the add-on"
    assert ready["Properties"]["ObjectName"] == "kueue-controller-manager"
    assert ready_id in depends_on(t, sched_id), "scheduler config after Kueue is ready"
    assert not transitively_depends(t, hp_id, sched_id)


def test_team_quota_and_chart_come_after_the_scheduler_config(reference: Synth) -> None:
    cluster_stack = reference.stage.cluster_stack
    for name, stack in reference.stage.team_stacks.items():
        assert cluster_stack in stack.dependencies, name
        t = reference.team(name)
        quota_id, _ = one(t, "AWS::SageMaker::ComputeQuota")
        patch_id, patch = one(t, "Custom::AWSCDK-EKS-KubernetesPatch")
        (chart_id,) = resources_of(t, "Custom::AWSCDK-EKS-KubernetesResource")
        wait_id, wait = one(t, "Custom::AWSCDK-EKS-KubernetesObjectValue")
        assert wait["Properties"]["ObjectType"] == "namespace"
        assert wait["Properties"]["ObjectName"] == f"hyperpod-ns-{name}"
        assert quota_id in depends_on(t, wait_id)
        assert wait_id in depends_on(t, patch_id)
        assert {quota_id, patch_id} <= depends_on(t, chart_id)
        assert patch["Properties"]["ResourceName"] == f"namespace/hyperpod-ns-{name}"


def test_scheduler_config_values_come_from_policy(reference: Synth, reference_platform: Platform) -> None:
    _, sched = one(reference.cluster, "AWS::SageMaker::ClusterSchedulerConfig")
    config = sched["Properties"]["SchedulerConfig"]
    assert config["PriorityClasses"] == [
        {"Name": p.name, "Weight": p.weight} for p in reference_platform.scheduling.priority_classes
    ]
    assert config["FairShare"] == "Enabled"
    assert config["IdleResourceSharing"] == "Enabled"


def test_hyperpod_helm_chart_installed_from_the_named_mirror(
    reference: Synth, reference_platform: Platform
) -> None:
    hyperpod_chart(reference.cluster)  # exactly one release "dependencies"
    source = reference_platform.cluster.hyperpod_helm_chart
    reference.template().has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {
            "Release": "dependencies",
            "Repository": source.oci_repository,
            "Version": source.version,
            "Namespace": "kube-system",
            "Values": Match.serialized_json(
                Match.object_like({"health-monitoring-agent": Match.object_like({"region": "us-east-1"})})
            ),
        },
    )


def test_execution_role_reads_only_the_lifecycle_prefix_and_uses_the_hyperpod_policy(
    reference: Synth,
) -> None:
    roles = resources_of(reference.cluster, "AWS::IAM::Role")
    (role_id,) = [
        k
        for k, v in roles.items()
        if v["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
        == {"Service": "sagemaker.amazonaws.com"}
    ]
    managed = json.dumps(roles[role_id]["Properties"]["ManagedPolicyArns"])
    assert "AmazonSageMakerClusterInstanceRolePolicy" in managed
    policies = [
        p
        for p in resources_of(reference.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    s3 = [s for s in statements if any(str(a).startswith("s3:") for a in _list(s["Action"]))]
    for statement in s3:
        for resource in _list(statement["Resource"]):
            rendered = json.dumps(resource)
            assert "LifecycleBucket" in rendered, rendered
            assert rendered.endswith('/lifecycle/*"]]}') or "/*" not in rendered, rendered
    assert not [s for s in statements if "*" in _list(s["Action"])]


def test_kueue_backend_installs_upstream_kueue_instead_of_task_governance(kueue_reference: Synth) -> None:
    t = kueue_reference.cluster
    template = kueue_reference.template()
    template.resource_count_is("AWS::SageMaker::ClusterSchedulerConfig", 0)
    assert not template.find_resources(
        "AWS::EKS::Addon", {"Properties": {"AddonName": "amazon-sagemaker-hyperpod-taskgovernance"}}
    )
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart", {"Release": "kueue", "Version": "0.19.2"}
    )
    hp_id, _ = one(t, "AWS::SageMaker::Cluster")
    kueue_id = next(
        k
        for k, v in resources_of(t, "Custom::AWSCDK-EKS-HelmChart").items()
        if v["Properties"]["Release"] == "kueue"
    )
    assert hp_id in depends_on(t, kueue_id)
    for name in kueue_reference.stage.team_stacks:
        kueue_reference.template(name).resource_count_is("AWS::SageMaker::ComputeQuota", 0)


def test_observability_addon_writes_to_managed_prometheus(reference: Synth) -> None:
    ws_id, _ = one(reference.cluster, "AWS::APS::Workspace")
    _, obs = addon(reference.cluster, "amazon-sagemaker-hyperpod-observability")
    assert obs["Properties"]["PodIdentityAssociations"][0]["ServiceAccount"] == (
        "hyperpod-observability-operator-otel-collector"
    )
    assert ws_id in json.dumps(obs["Properties"]["ConfigurationValues"])


def test_task_governance_is_pinned_to_the_release_that_packages_kueue_0_19_2(reference: Synth) -> None:
    """SageMaker Developer Guide, "Upgrade the task governance add-on": "Version v1.6.0-eksbuild.1 packages Kueue
    v0.19.2". Unpinned, EKS installs its default version; before Kueue 0.14 the eviction counter has no
    ``priority_class`` label, and the preemption alert would select nothing."""
    _, tg = addon(reference.cluster, "amazon-sagemaker-hyperpod-taskgovernance")
    assert tg["Properties"]["AddonVersion"] == "v1.6.0-eksbuild.1"


def _configuration(obs: dict[str, Any]) -> dict[str, Any]:
    """The add-on's configuration values (an ``Fn::Sub`` of JSON; the substitutions are workspace attributes)."""
    text = obs["Properties"]["ConfigurationValues"]["Fn::Sub"][0]
    return dict(json.loads(text))


def test_task_governance_metrics_are_collected_at_a_level_the_add_on_accepts(reference: Synth) -> None:
    """aws/sagemaker-hyperpod-cluster-setup ``eks/cloudformation/observability-template.yaml``:
    ``TaskGovernanceMetricLevel`` allows ``DISABLED`` and ``ADVANCED`` only; the preemption alert needs Kueue's
    series, so it is ``ADVANCED``."""
    _, obs = addon(reference.cluster, "amazon-sagemaker-hyperpod-observability")
    providers = _configuration(obs)["metricsProvider"]
    assert providers["taskGovernanceMetrics"]["level"] == "ADVANCED"


def test_the_observability_role_has_the_reference_logs_actions(reference: Synth) -> None:
    """The reference role (observability-template.yaml, ``HyperPodObservabilityAddonRole``, Sid
    ``CloudwatchLogsAccess``) and the add-on's troubleshooting page ("Verify Pod Identity association") grant
    these eleven actions on ``/aws/sagemaker/Clusters/*``; nothing else of CloudWatch Logs."""
    _, obs = addon(reference.cluster, "amazon-sagemaker-hyperpod-observability")
    role = obs["Properties"]["PodIdentityAssociations"][0]["RoleArn"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in resources_of(reference.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    logs = [st for st in statements if any(a.startswith("logs:") for a in _list(st["Action"]))]
    assert len(logs) == 1
    assert set(_list(logs[0]["Action"])) == {
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:DescribeLogGroups",
        "logs:DescribeLogStreams",
        "logs:PutLogEvents",
        "logs:GetLogEvents",
        "logs:FilterLogEvents",
        "logs:GetLogRecord",
        "logs:StartQuery",
        "logs:StopQuery",
        "logs:GetQueryResults",
    }
    assert ":log-group:/aws/sagemaker/Clusters/*" in json.dumps(logs[0]["Resource"])


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]

"""AWS service rules the schemas do not know, asserted on the synthesized cluster (issue 7, cluster side).

cfn-lint and the resource schemas accept each mistake below; AWS then rolls the stack back, or the resource
deploys and does not work. Each rule cites its source and, where AWS publishes a reference template for the
same resources (aws/sagemaker-hyperpod-cluster-setup), the rule is also run against that reference, encoded
here as fixtures (tests run offline), and must accept it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from iam_eval import is_allowed
from sg_model import Endpoint, SecurityGroupModel
from sg_places import platform_places
from synth import Synth, new_app, one, resources_of, transitively_depends

from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import NODE_BOOTSTRAP_ADDONS
from hyperpod_tenancy.stacks import PlatformStage

# Commit of aws/sagemaker-hyperpod-cluster-setup the reference fixtures below were read from.
HP_SETUP = "aws/sagemaker-hyperpod-cluster-setup@b920fcf430f1fd3b36c01bb63b63348f95f0b9fb"


def _concrete(value: Any, account: str, region: str) -> Any:
    """Resolve the intrinsics of an IAM document: pseudo parameters concrete, other references ``<Id>``."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Fn::Join":
                sep, parts = arg
                return sep.join(str(_concrete(p, account, region)) for p in parts)
            if key == "Ref":
                return {"AWS::Partition": "aws", "AWS::Region": region, "AWS::AccountId": account}.get(
                    arg, f"<{arg}>"
                )
            if key == "Fn::GetAtt":
                return f"<{'.'.join(arg)}>"
        return {k: _concrete(v, account, region) for k, v in value.items()}
    if isinstance(value, list):
        return [_concrete(v, account, region) for v in value]
    return value


def _execution_role(synth: Synth) -> tuple[str, dict[str, Any]]:
    """The role every HyperPod instance group runs with (read from the AWS::SageMaker::Cluster)."""
    _, cluster = one(synth.cluster, "AWS::SageMaker::Cluster")
    roles = {json.dumps(g["ExecutionRole"]) for g in cluster["Properties"]["InstanceGroups"]}
    assert len(roles) == 1, roles
    role_id = json.loads(roles.pop())["Fn::GetAtt"][0]
    return role_id, synth.cluster["Resources"][role_id]


def _inline_policies(synth: Synth, role_id: str) -> list[dict[str, Any]]:
    env = synth.stage.cluster_stack
    docs = [
        p["Properties"]["PolicyDocument"]
        for p in resources_of(synth.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    docs += [
        p["PolicyDocument"] for p in synth.cluster["Resources"][role_id]["Properties"].get("Policies", [])
    ]
    return [_concrete(d, env.account, env.region) for d in docs]


# ---------------------------------------------------------------------------------------------- 1. AMI family
# EKS publishes no Amazon Linux 2 AMIs for Kubernetes 1.33 and later; a managed node group with an AL2_* AMI
# type fails to create (https://docs.aws.amazon.com/eks/latest/userguide/al2023.html; research/hyperpod.md §21).
def _al2_forbidden(kubernetes_version: str) -> bool:
    return tuple(int(p) for p in kubernetes_version.split(".")) >= (1, 33)


def test_every_managed_node_group_names_an_ami_type_published_for_its_version(reference: Synth) -> None:
    _, eks_cluster = one(reference.cluster, "AWS::EKS::Cluster")
    version = eks_cluster["Properties"]["Version"]
    nodegroups = resources_of(reference.cluster, "AWS::EKS::Nodegroup")
    assert nodegroups
    for logical_id, nodegroup in nodegroups.items():
        ami_type = nodegroup["Properties"].get("AmiType")
        # explicit: left out, the type is whatever the CDK version or a feature flag picks
        assert ami_type is not None, f"{logical_id}: no AmiType"
        if _al2_forbidden(version):
            assert not ami_type.startswith("AL2_"), f"{logical_id}: {ami_type} on Kubernetes {version}"


def test_system_node_ami_matches_the_instance_architecture(reference: Synth) -> None:
    _, nodegroup = one(reference.cluster, "AWS::EKS::Nodegroup")
    (instance_type,) = nodegroup["Properties"]["InstanceTypes"]
    # Graviton families carry a "g" after the generation (m7g, c7g, t4g): EC2 instance type naming
    # (https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html)
    family = instance_type.split(".")[0]
    arm = len(family) > 2 and family[2:].startswith("g")
    assert nodegroup["Properties"]["AmiType"] == (
        "AL2023_ARM_64_STANDARD" if arm else "AL2023_x86_64_STANDARD"
    )


def _stage_with_extra_nodegroup(ami_type: eks.NodegroupAmiType, platform: Any, outdir: str) -> cdk.App:
    app = new_app(Path(outdir))
    stage = PlatformStage(app, platform.name, platform=platform)
    stage.cluster_stack.cluster.eks_cluster.add_nodegroup_capacity(
        "Extra", instance_types=[ec2.InstanceType("m6i.large")], ami_type=ami_type, min_size=0
    )
    return app


def test_synth_refuses_an_al2_node_group_on_kubernetes_1_33(reference: Synth, tmp_path: Any) -> None:
    assert _al2_forbidden(reference.platform.cluster.kubernetes_version)
    app = _stage_with_extra_nodegroup(eks.NodegroupAmiType.AL2_X86_64, reference.platform, str(tmp_path))
    with pytest.raises(Exception, match=r"HPT-NODEGROUP-AMI.*NodegroupExtra.*AL2_x86_64.*AL2023"):
        app.synth()


def test_synth_accepts_an_al2023_node_group(reference: Synth, tmp_path: Any) -> None:
    app = _stage_with_extra_nodegroup(
        eks.NodegroupAmiType.AL2023_X86_64_STANDARD, reference.platform, str(tmp_path)
    )
    app.synth()


# ---------------------------------------------------------------------------------------------- 2. image pulls
# Registries the HyperPod nodes must pull from, per region. EKS add-on images (vpc-cni, kube-proxy, pod identity
# agent, FSx CSI driver, EFA device plugin): "View Amazon container image registries for Amazon EKS add-ons"
# (https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html). HyperPod health-monitoring agent:
# aws/sagemaker-hyperpod-cli@011ca927 helm_chart/HyperPodHelmChart/charts/health-monitoring-agent/templates/
# _helpers.tpl (region -> account map). AmazonSageMakerClusterInstanceRolePolicy grants no ECR actions, so the
# inline policy must.
AWS_REGISTRY_ACCOUNTS = {
    "us-east-1": {"eks-addons": "602401143452", "health-monitoring-agent": "767398015722"},
    "us-west-2": {"eks-addons": "602401143452", "health-monitoring-agent": "905418368575"},
    "af-south-1": {"eks-addons": "877085696533"},
}
PULL_ACTIONS = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability")

# The reference execution role's ECR statement: HP_SETUP eks/cloudformation/sagemaker-iam-role-template.yaml,
# resource ExecutionRole, Policies[0].
REFERENCE_EXECUTION_ROLE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:GetAuthorizationToken",
                "ecr:GetDownloadUrlForLayer",
                "cloudwatch:DescribeAlarms",
            ],
            "Resource": "*",
        }
    ],
}


def _pull_failures(policies: list[dict[str, Any]], region: str) -> list[str]:
    failures = []
    if not is_allowed(policies, "ecr:GetAuthorizationToken", "*"):
        failures.append("ecr:GetAuthorizationToken")
    for source, account in AWS_REGISTRY_ACCOUNTS[region].items():
        repository = f"arn:aws:ecr:{region}:{account}:repository/{source}"
        failures += [f"{a} on {repository}" for a in PULL_ACTIONS if not is_allowed(policies, a, repository)]
    return failures


def test_execution_role_pulls_from_the_aws_owned_registries_of_its_region(reference: Synth) -> None:
    role_id, _ = _execution_role(reference)
    assert _pull_failures(_inline_policies(reference, role_id), reference.platform.region) == []


@pytest.mark.parametrize("region", sorted(AWS_REGISTRY_ACCOUNTS))
def test_pull_rule_accepts_the_reference_execution_role(region: str) -> None:
    assert _pull_failures([REFERENCE_EXECUTION_ROLE_POLICY], region) == []


def test_pull_rule_rejects_a_role_limited_to_this_account() -> None:
    own_account_only = {
        "Statement": [
            {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": list(PULL_ACTIONS),
                "Resource": "arn:aws:ecr:us-east-1:111122223333:repository/*",
            },
        ]
    }
    assert len(_pull_failures([own_account_only], "us-east-1")) == 2 * len(PULL_ACTIONS)


def test_execution_role_acknowledgment_no_longer_claims_pulls_from_this_account(reference: Synth) -> None:
    text = json.dumps(reference.cluster)
    assert "repositories of this account" not in text


# Confused-deputy guard (issue 8 class 8): the trust names the account SageMaker acts for
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html). aws:SourceArn is not used: no
# source states HyperPod passes it when its instances assume the execution role.
def test_execution_role_trust_is_limited_to_this_account(reference: Synth) -> None:
    _, role = _execution_role(reference)
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": reference.stage.cluster_stack.account}
    }


# ---------------------------------------------------------------------------------------------- 3. reachability
# Where each component's network interfaces sit, read from the templates:
# * HyperPod nodes: the groups of AWS::SageMaker::Cluster InstanceGroups[].OverrideVpcConfig (else VpcConfig);
# * system nodes: an AWS::EKS::Nodegroup without a launch template gets the EKS cluster security group only
#   (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html); CoreDNS, Kueue and the operators run
#   there;
# * API endpoint: the EKS control-plane ENIs carry the cluster security group and the additional groups of
#   ResourcesVpcConfig.SecurityGroupIds (same page);
# * FSx: AWS::FSx::FileSystem SecurityGroupIds;
# * Studio: AWS::SageMaker::Domain DefaultUserSettings.SecurityGroups (team stacks).
# Pods take their node's groups (VPC CNI without security groups for pods).


# (source, destination, protocol, port, why). Ports: CoreDNS 53 (kube-dns Service); kubelet 10250 and webhooks
# (Kueue 9443, cert-manager 10250, HyperPod training operator 9443) per
# https://kubernetes.io/docs/reference/networking/ports-and-protocols/; Lustre 988 and 1018-1023
# (https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html); API endpoint 443.
REQUIRED_FLOWS = [
    ("hyperpod", "system", "udp", 53, "pods on HyperPod nodes resolve names with CoreDNS"),
    ("hyperpod", "system", "tcp", 53, "DNS over TCP (large answers)"),
    ("system", "hyperpod", "tcp", 10250, "metrics-server/operators reach the kubelet on HyperPod nodes"),
    ("system", "hyperpod", "tcp", 9443, "webhooks served from HyperPod nodes"),
    ("api", "hyperpod", "tcp", 10250, "the control plane reaches kubelets (logs, exec)"),
    ("api", "system", "tcp", 9443, "the control plane calls webhooks on system nodes"),
    ("hyperpod", "hyperpod", "tcp", 29500, "node to node (NCCL/EFA, torch rendezvous)"),
    ("hyperpod", "fsx", "tcp", 988, "Lustre from HyperPod nodes"),
    ("hyperpod", "fsx", "tcp", 1021, "Lustre from HyperPod nodes"),
    ("fsx", "hyperpod", "tcp", 988, "Lustre servers to clients"),
    ("system", "fsx", "tcp", 988, "Lustre from system nodes (platform jobs that mount FSx)"),
    ("system", "fsx", "tcp", 1023, "Lustre from system nodes"),
    ("fsx", "system", "tcp", 1018, "Lustre servers to clients on system nodes"),
    ("hyperpod", "api", "tcp", 443, "kubelets on HyperPod nodes reach the private API endpoint"),
    ("system", "api", "tcp", 443, "kubelets on system nodes reach the private API endpoint"),
]


def _failures(model: SecurityGroupModel, places: dict[str, Endpoint], flows: list[Any]) -> list[str]:
    return [
        f"{src} -> {dst} {proto}/{port} ({why})"
        for src, dst, proto, port, why in flows
        if not model.can_reach(places[src], places[dst], proto, port)
    ]


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_required_flows_are_open(backend: str, request: pytest.FixtureRequest) -> None:
    model, places = platform_places(request.getfixturevalue(backend))
    assert _failures(model, places, REQUIRED_FLOWS) == []


def test_each_team_studio_reaches_the_api_endpoint_and_not_the_nodes(reference: Synth) -> None:
    model, places = platform_places(reference)
    studios = [p for p in places if p.startswith("studio:")]
    assert studios
    for studio in studios:
        assert model.can_reach(places[studio], places["api"], "tcp", 443), studio
        # admitted to the endpoint only: the rule must not open the nodes' kubelets or webhooks
        for target, port in (("hyperpod", 10250), ("system", 10250), ("hyperpod", 443), ("system", 443)):
            assert not model.can_reach(places[studio], places[target], "tcp", port), (studio, target, port)


def test_reachability_model_rejects_hyperpod_nodes_in_their_own_group_only(reference: Synth) -> None:
    # The layout before the fix: HyperPod nodes in a group that admits only itself. The model must see that
    # DNS and system -> HyperPod traffic are dropped (otherwise the flow checks above prove nothing).
    model, places = platform_places(reference)
    own_group_only = Endpoint(places["fsx"].groups)
    broken = {**places, "hyperpod": own_group_only}
    failures = _failures(model, broken, REQUIRED_FLOWS)
    assert any("CoreDNS" in f for f in failures)
    assert any("kubelet on HyperPod" in f for f in failures)


# The reference security groups, HP_SETUP eks/cloudformation/security-group-template.yaml with
# createNewSGCondition true (Fn::If resolved to NoIngressSecurityGroup). main-stack-eks-based-template.yaml
# passes that one group to the EKS cluster (ResourcesVpcConfig.SecurityGroupIds), the HyperPod cluster
# (VpcConfig) and FSx (fsx-template.yaml SecurityGroupIds). The reference creates no managed node group:
# CoreDNS and the operators run on the HyperPod nodes, so "system" is the HyperPod nodes there.
_X = {"Ref": "NoIngressSecurityGroup"}
REFERENCE_SECURITY_GROUPS = {
    "Resources": {
        "NoIngressSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {"GroupDescription": "Security group with no ingress rule", "VpcId": "vpc-1"},
        },
        "IntraSGCommunicationRule": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {"GroupId": _X, "IpProtocol": "-1", "SourceSecurityGroupId": _X},
        },
        "IntraSGCommunicationRuleEgress": {
            "Type": "AWS::EC2::SecurityGroupEgress",
            "Properties": {"GroupId": _X, "IpProtocol": "-1", "DestinationSecurityGroupId": _X},
        },
        "InternetCommunicationRuleEgress": {
            "Type": "AWS::EC2::SecurityGroupEgress",
            "Properties": {"GroupId": _X, "IpProtocol": "-1", "CidrIp": "0.0.0.0/0"},
        },
        "FSxForLustreRule1": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": _X,
                "IpProtocol": "tcp",
                "FromPort": 988,
                "ToPort": 988,
                "SourceSecurityGroupId": _X,
            },
        },
        "FSxForLustreRule2": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": _X,
                "IpProtocol": "tcp",
                "FromPort": 1018,
                "ToPort": 1023,
                "SourceSecurityGroupId": _X,
            },
        },
    }
}


def test_reachability_rules_accept_the_aws_reference_security_groups() -> None:
    model = SecurityGroupModel().add_templates({"reference": REFERENCE_SECURITY_GROUPS})
    x = model.name("reference", "NoIngressSecurityGroup")
    eks_sg = model.name("reference", "EKSCluster", "ClusterSecurityGroupId")
    model.add_eks_cluster_security_group(eks_sg)
    nodes = Endpoint.of(x)
    places = {"hyperpod": nodes, "system": nodes, "api": Endpoint.of(eks_sg, x), "fsx": Endpoint.of(x)}
    assert _failures(model, places, REQUIRED_FLOWS) == []


# ---------------------------------------------------------------------------------------------- 4. kinds
# Who installs the API of each (group, resource) teams are granted or the admission policies govern. Written
# here independently of k8s/workloads.py. CRD sources: aws/sagemaker-hyperpod-cli@011ca927
# helm_chart/HyperPodHelmChart/charts/training-operators/crds/{pytorchjobs,tfjobs,xgboostjobs,paddlejobs}.kubeflow.org-
# CustomResourceDefinition.yaml (subchart condition trainingOperators.enabled) and
# charts/mpi-operator/templates/mpijob-crd.yaml (condition mpi-operator.enabled); HyperPodPyTorchJob: the EKS
# add-on amazon-sagemaker-hyperpod-training-operator (research/hyperpod.md section 2.2); ray.io: the KubeRay
# operator chart kuberay-operator (https://ray-project.github.io/kuberay-helm/); inference.sagemaker.aws.amazon.com:
# the EKS add-on amazon-sagemaker-hyperpod-inference (charts/inference-operator/config/crd/ are its CRDs,
# migration/helm_to_addon.sh installs it; test_deploy_rules_inference.py); kueue.x-k8s.io: the Task
# Governance add-on or the upstream Kueue chart; "", batch, apps, events.k8s.io and rbac.authorization.k8s.io (the
# drift audit lists bindings) are built into Kubernetes.
BUILT_IN = "built-in"
HYPERPOD_CHART = ("helm", "dependencies")  # release of the HyperPod dependencies chart
INSTALLERS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("kubeflow.org", "pytorchjobs"): (HYPERPOD_CHART,),
    ("kubeflow.org", "tfjobs"): (HYPERPOD_CHART,),
    ("kubeflow.org", "xgboostjobs"): (HYPERPOD_CHART,),
    ("kubeflow.org", "paddlejobs"): (HYPERPOD_CHART,),
    ("kubeflow.org", "mpijobs"): (HYPERPOD_CHART,),
    ("sagemaker.amazonaws.com", "hyperpodpytorchjobs"): (
        ("addon", "amazon-sagemaker-hyperpod-training-operator"),
    ),
    ("ray.io", "rayjobs"): (("chart", "kuberay-operator"),),
    ("ray.io", "rayclusters"): (("chart", "kuberay-operator"),),
    ("inference.sagemaker.aws.amazon.com", "inferenceendpointconfigs"): (
        ("addon", "amazon-sagemaker-hyperpod-inference"),
    ),
    ("inference.sagemaker.aws.amazon.com", "jumpstartmodels"): (
        ("addon", "amazon-sagemaker-hyperpod-inference"),
    ),
    ("kueue.x-k8s.io", "*"): (("addon", "amazon-sagemaker-hyperpod-taskgovernance"), ("chart", "kueue")),
}
BUILT_IN_GROUPS = {"", "batch", "apps", "events.k8s.io", "rbac.authorization.k8s.io"}
#: Subchart switches of the HyperPod chart per kubeflow resource (values.yaml conditions in Chart.yaml).
HYPERPOD_SUBCHART = {"mpijobs": ("mpi-operator", "enabled")}
HYPERPOD_SUBCHART_DEFAULT = ("trainingOperators", "enabled")


def _granted_and_governed(synth: Synth) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for manifest in synth.manifests():
        if manifest["kind"] in {"Role", "ClusterRole"}:
            rules = manifest.get("rules", [])
        elif manifest["kind"] == "ValidatingAdmissionPolicy":
            rules = manifest["spec"]["matchConstraints"].get("resourceRules", [])
        else:
            continue
        for rule in rules:
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    found.add((group, resource.split("/")[0]))
    return found


def _installed(synth: Synth) -> set[tuple[str, str]]:
    present = {
        ("addon", a["Properties"]["AddonName"])
        for a in resources_of(synth.cluster, "AWS::EKS::Addon").values()
    }
    for chart in resources_of(synth.cluster, "Custom::AWSCDK-EKS-HelmChart").values():
        present.add(("chart", chart["Properties"]["Chart"]))
        present.add(("helm", chart["Properties"]["Release"]))
    return present


def _hyperpod_values(synth: Synth) -> dict[str, Any]:
    (chart,) = [
        c
        for c in resources_of(synth.cluster, "Custom::AWSCDK-EKS-HelmChart").values()
        if c["Properties"]["Release"] == HYPERPOD_CHART[1]
    ]
    values = chart["Properties"].get("Values")
    return json.loads(values) if isinstance(values, str) else {}


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_granted_or_governed_kind_has_its_installer_in_the_cluster(
    backend: str, request: pytest.FixtureRequest
) -> None:
    synth = request.getfixturevalue(backend)
    kinds = _granted_and_governed(synth)
    assert ("sagemaker.amazonaws.com", "hyperpodpytorchjobs") in kinds  # the derivation sees the CRD kinds
    installed = _installed(synth)
    values = _hyperpod_values(synth)
    missing = []
    for group, resource in sorted(kinds):
        if group in BUILT_IN_GROUPS:
            continue
        key = (group, "*") if (group, "*") in INSTALLERS else (group, resource)
        assert key in INSTALLERS, (
            f"{group}/{resource}: no known installer; add it to INSTALLERS with its source"
        )
        if not any(i in installed for i in INSTALLERS[key]):
            missing.append(f"{group}/{resource} needs one of {INSTALLERS[key]}")
        if INSTALLERS[key] == (HYPERPOD_CHART,):
            section, flag = HYPERPOD_SUBCHART.get(resource, HYPERPOD_SUBCHART_DEFAULT)
            assert values.get(section, {}).get(flag, True) is not False, (
                f"{group}/{resource}: {section} disabled"
            )
    assert missing == []


# Kinds of the workload table whose installer the platform does not deploy, with the installer the cluster
# template would carry: the spaces' operator (no installer modelled: the kind is documented as not granted,
# docs/submitting-work.md).
NOT_INSTALLED: dict[tuple[str, str], tuple[str, str] | None] = {
    ("workspace.jupyter.org", "workspaces"): None,
}


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_kinds_without_their_installer_are_neither_granted_nor_governed(
    backend: str, request: pytest.FixtureRequest
) -> None:
    from hyperpod_tenancy.k8s import workloads

    synth = request.getfixturevalue(backend)
    table = {(k.group, k.resource) for k in workloads.WORKLOAD_KINDS}
    served = {(k.group, k.resource) for k in workloads.served_kinds()}
    assert table - served == set(NOT_INSTALLED)
    kinds, installed = _granted_and_governed(synth), _installed(synth)
    for key, installer in NOT_INSTALLED.items():
        assert key not in kinds, f"{key} is granted or governed but nothing installs its CRD"
        # when the installer appears in the template, add its Installer to workloads.PLATFORM_INSTALLERS
        assert installer is None or installer not in installed, (
            f"{key}: {installer} installed, serve the kind"
        )


def test_training_operator_addon_has_its_pod_identity_and_deploy_order(reference: Synth) -> None:
    # awsome-distributed-training@7217859f .../modules/hyperpod_training_operator/main.tf: pod identity for
    # hp-training-operator-controller-manager with AmazonSageMakerHyperPodTrainingOperatorAccess; needs
    # cert-manager and the pod identity agent, after the HyperPod cluster (research/hyperpod.md section 2.2)
    (logical_id, addon), *rest = [
        (k, a)
        for k, a in resources_of(reference.cluster, "AWS::EKS::Addon").items()
        if a["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-training-operator"
    ]
    assert not rest
    (association,) = addon["Properties"]["PodIdentityAssociations"]
    assert association["ServiceAccount"] == "hp-training-operator-controller-manager"
    role_id = association["RoleArn"]["Fn::GetAtt"][0]
    role = reference.cluster["Resources"][role_id]["Properties"]
    assert any(
        "AmazonSageMakerHyperPodTrainingOperatorAccess" in json.dumps(m) for m in role["ManagedPolicyArns"]
    )
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    names = {
        a["Properties"]["AddonName"]: k for k, a in resources_of(reference.cluster, "AWS::EKS::Addon").items()
    }
    hyperpod_id, _ = one(reference.cluster, "AWS::SageMaker::Cluster")
    for prerequisite in (names["cert-manager"], names["eks-pod-identity-agent"], hyperpod_id):
        assert transitively_depends(reference.cluster, logical_id, prerequisite), prerequisite


def test_kuberay_chart_is_pinned_and_installed_after_the_hyperpod_cluster(reference: Synth) -> None:
    (logical_id, chart), *rest = [
        (k, c)
        for k, c in resources_of(reference.cluster, "Custom::AWSCDK-EKS-HelmChart").items()
        if c["Properties"]["Chart"] == "kuberay-operator"
    ]
    assert not rest
    source = reference.platform.cluster.kuberay_chart
    assert chart["Properties"]["Repository"] == source.repository
    assert chart["Properties"]["Version"] == source.version
    assert chart["Properties"]["Namespace"] == "kuberay-system"
    # the admission exemptions name the operator's service account: the chart must create exactly that one
    assert json.loads(chart["Properties"]["Values"])["serviceAccount"]["name"] == "kuberay-operator"
    hyperpod_id, _ = one(reference.cluster, "AWS::SageMaker::Cluster")
    assert transitively_depends(reference.cluster, logical_id, hyperpod_id)


# ---------------------------------------------------------------------------------------------- 5. waits
# A kubectl-provider resource waits inside the provider's Lambdas: the provider-framework onEvent function
# (the ServiceToken) and the kubectl handler it invokes (USER_ON_EVENT_FUNCTION_ARN), both 900 s in
# aws-cdk-lib aws-eks-v2/lib/kubectl-provider.ts and custom-resources provider-framework. A Helm --timeout or a
# KubernetesObjectValue wait that reaches the Lambda timeout is killed with the Lambda and CloudFormation waits
# for a response that never comes, instead of reporting the handler's error.
WAITING_TYPES = {
    "Custom::AWSCDK-EKS-HelmChart": "Timeout",
    "Custom::AWSCDK-EKS-KubernetesObjectValue": "TimeoutSeconds",
}
MIN_HEADROOM_SECONDS = 60


def _seconds(value: Any) -> int:
    text = str(value)
    if text.endswith("s"):  # Helm duration as CDK renders it ("780s")
        text = text[:-1]
    return int(text)


def _lambda_timeouts(synth: Synth, stack: str, token: Any) -> list[int]:
    exports = {
        o["Export"]["Name"]: (name, o["Value"])
        for name, tpl in synth.templates.items()
        for o in tpl.get("Outputs", {}).values()
        if "Export" in o
    }
    if "Fn::ImportValue" in token:
        stack, token = exports[token["Fn::ImportValue"]]
    function_id = token["Fn::GetAtt"][0]
    function = synth.templates[stack]["Resources"][function_id]
    assert function["Type"] == "AWS::Lambda::Function", function_id
    timeouts = [int(function["Properties"].get("Timeout", 3))]  # Lambda default: 3 s
    user = (
        (function["Properties"].get("Environment") or {})
        .get("Variables", {})
        .get("USER_ON_EVENT_FUNCTION_ARN")
    )
    if user is not None:
        timeouts += _lambda_timeouts(synth, stack, user)
    return timeouts


def _too_long_waits(synth: Synth) -> list[str]:
    problems = []
    for stack, template in synth.templates.items():
        for logical_id, resource in template["Resources"].items():
            key = WAITING_TYPES.get(resource["Type"])
            if key is None or key not in resource["Properties"]:
                continue
            wait = _seconds(resource["Properties"][key])
            limit = min(_lambda_timeouts(synth, stack, resource["Properties"]["ServiceToken"]))
            if wait > limit - MIN_HEADROOM_SECONDS:
                problems.append(f"{stack}/{logical_id}: waits {wait}s, its Lambda stops at {limit}s")
    return problems


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_kubectl_wait_ends_before_its_lambda(backend: str, request: pytest.FixtureRequest) -> None:
    synth = request.getfixturevalue(backend)
    waits = [
        r for t in synth.templates.values() for r in t["Resources"].values() if r["Type"] in WAITING_TYPES
    ]
    assert len(waits) >= 3  # HyperPod chart, KubeRay chart, and the Kueue wait or chart
    assert _too_long_waits(synth) == []


def test_wait_rule_flags_a_wait_equal_to_the_lambda_timeout(reference: Synth) -> None:
    broken = copy.deepcopy(reference.templates)
    cluster = broken[reference.stage.cluster_stack.stack_name]
    (chart,) = [
        c for c in cluster["Resources"].values() if c.get("Properties", {}).get("Release") == "dependencies"
    ]
    chart["Properties"]["Timeout"] = "900s"  # aws-eks-v2's maximum, and what the platform used to set
    flagged = _too_long_waits(dataclasses.replace(reference, templates=broken))
    assert len(flagged) == 1 and "900s" in flagged[0]


# ---------------------------------------------------------------------------------------------- 6. NAT per zone
# Each private subnet's default route must use a NAT gateway in its own zone: otherwise its egress crosses
# zones (charged) and fails with the other zone (https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-basics.html).
def test_each_private_subnet_egresses_through_a_nat_gateway_in_its_zone(reference: Synth) -> None:
    resources = reference.cluster["Resources"]
    azs = {
        k: r["Properties"]["AvailabilityZone"]
        for k, r in resources_of(reference.cluster, "AWS::EC2::Subnet").items()
    }
    table_subnets: dict[str, list[str]] = {}
    for association in resources_of(reference.cluster, "AWS::EC2::SubnetRouteTableAssociation").values():
        props = association["Properties"]
        table_subnets.setdefault(props["RouteTableId"]["Ref"], []).append(props["SubnetId"]["Ref"])
    checked = set()
    for route in resources_of(reference.cluster, "AWS::EC2::Route").values():
        props = route["Properties"]
        if props.get("DestinationCidrBlock") != "0.0.0.0/0" or "NatGatewayId" not in props:
            continue
        nat = resources[props["NatGatewayId"]["Ref"]]["Properties"]
        nat_zone = azs[nat["SubnetId"]["Ref"]]
        for subnet in table_subnets[props["RouteTableId"]["Ref"]]:
            assert azs[subnet] == nat_zone, f"{subnet} in {azs[subnet]} egresses through a NAT in {nat_zone}"
            checked.add(azs[subnet])
    assert checked == set(reference.platform.cluster.availability_zones)


# ---------------------------------------------------------------------------------------------- 7. Service CIDR
# Set explicitly (EKS otherwise picks 10.100.0.0/16 or 172.20.0.0/16 by the VPC range), so team egress rules
# can exclude it (issue 8 class 4); EKS refuses one that overlaps the VPC
# (https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html).
def test_service_cidr_is_explicit_and_outside_the_vpc(reference: Synth) -> None:
    import ipaddress

    _, eks_cluster = one(reference.cluster, "AWS::EKS::Cluster")
    service_cidr = eks_cluster["Properties"]["KubernetesNetworkConfig"]["ServiceIpv4Cidr"]
    assert service_cidr == reference.platform.cluster.service_cidr
    assert reference.stage.cluster_stack.cluster.service_cidr == service_cidr
    _, vpc = one(reference.cluster, "AWS::EC2::VPC")
    assert not ipaddress.ip_network(service_cidr).overlaps(
        ipaddress.ip_network(vpc["Properties"]["CidrBlock"])
    )


# --- add-ons whose pods need a node ----------------------------------------------------------------------------
#: Add-ons that run only DaemonSets a node needs to become Ready (the CNI makes a node Ready; kube-proxy and the
#: Pod Identity agent run on every node): EKS creates them with the cluster, and the nodes wait for them.
DAEMONSET_ADDONS = {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_addon_with_a_deployment_is_created_after_the_system_nodes(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A Deployment-kind add-on created before any node can schedule its pods stays DEGRADED and fails the create
    (terraform-aws-modules/terraform-aws-eks#1801, fixed by making add-ons depend on node groups in PR #1840;
    aws/containers-roadmap#1389). coredns, cert-manager, the FSx and Mountpoint CSI controllers, metrics-server and
    the HyperPod operators all run Deployments: each waits for the system node group. The DaemonSets the nodes
    themselves need (vpc-cni above all: a node is NotReady until its CNI runs) must not wait for the nodes."""
    synth: Synth = request.getfixturevalue(backend)
    template = synth.cluster
    (nodegroup,) = resources_of(template, "AWS::EKS::Nodegroup")
    addons = {
        props["Properties"]["AddonName"]: key
        for key, props in resources_of(template, "AWS::EKS::Addon").items()
    }
    assert {"coredns", "cert-manager", "aws-fsx-csi-driver", "vpc-cni"} <= set(addons)
    racing = sorted(
        name
        for name, key in addons.items()
        if name not in DAEMONSET_ADDONS and not transitively_depends(template, key, nodegroup)
    )
    assert racing == [], f"created in parallel with the system node group: {racing}"
    waiting = sorted(
        n for n in DAEMONSET_ADDONS & set(addons) if transitively_depends(template, addons[n], nodegroup)
    )
    assert waiting == [], f"node bootstrap add-ons must not wait for the nodes they make Ready: {waiting}"
    assert NODE_BOOTSTRAP_ADDONS == DAEMONSET_ADDONS


#: The CRDs the HyperPod chart's ``training-operators`` subchart installs (on by default:
#: ``trainingOperators.enabled: true``): aws/sagemaker-hyperpod-cli @011ca92,
#: ``helm_chart/HyperPodHelmChart/charts/training-operators/crds/*.yaml`` (the Kubeflow training operator).
HYPERPOD_CHART_KUBEFLOW_CRDS = {
    ("kubeflow.org", "mxjobs"),
    ("kubeflow.org", "paddlejobs"),
    ("kubeflow.org", "pytorchjobs"),
    ("kubeflow.org", "tfjobs"),
    ("kubeflow.org", "xgboostjobs"),
}


def test_the_chart_kubeflow_operator_and_the_training_operator_addon_claim_no_kind_twice() -> None:
    """The HyperPod chart's Kubeflow training operator serves ``kubeflow.org`` jobs; the HyperPod training operator
    add-on serves ``sagemaker.amazonaws.com`` ``HyperPodPyTorchJob``. No (group, resource) is served by both, so
    neither controller reconciles the other's jobs, and every governed kind has exactly one installer."""
    from hyperpod_tenancy.k8s.workloads import WORKLOAD_KINDS, Installer

    by_installer: dict[Installer, set[tuple[str, str]]] = {}
    for kind in WORKLOAD_KINDS:
        by_installer.setdefault(kind.installed_by, set()).add((kind.group, kind.resource))
    kubeflow = by_installer[Installer.HYPERPOD_CHART_TRAINING_OPERATORS]
    addon = by_installer[Installer.HYPERPOD_TRAINING_OPERATOR_ADDON]
    assert kubeflow <= HYPERPOD_CHART_KUBEFLOW_CRDS
    assert addon == {("sagemaker.amazonaws.com", "hyperpodpytorchjobs")}
    assert not addon & HYPERPOD_CHART_KUBEFLOW_CRDS
    pairs = [(k.group, k.resource) for k in WORKLOAD_KINDS]
    assert len(pairs) == len(set(pairs)), "a kind listed with two installers"

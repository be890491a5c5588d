"""Deploy-time needs of the HyperPod inference operator add-on, checked on the synthesized cluster template.

Each rule cites its source (see :mod:`hyperpod_tenancy.constructs._private.inference_operator`): the HyperPod
CLI chart's migration script to the add-on (aws/sagemaker-hyperpod-cli @011ca927
``helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh``), its ``Chart.yaml``
dependencies, and the AWS troubleshooting page on the execution role's trust
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-ts-trust.html).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from iam_eval import is_allowed
from synth import TOKEN, Synth, one, render_intrinsics, resources_of, synthesize, transitively_depends

from hyperpod_tenancy.constructs._private import inference_operator as io
from hyperpod_tenancy.k8s import workloads

ADDON = "amazon-sagemaker-hyperpod-inference"
#: Add-ons the operator needs before it starts (Chart.yaml dependencies; helm_to_addon.sh steps 4-5, and
#: metrics-server at its end; the load balancer controller and KEDA come inside the add-on).
PREREQUISITE_ADDONS = ("cert-manager", "aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver", "metrics-server")
#: Configuration keys of the add-on (helm_to_addon.sh step 7, ADDON_CONFIG).
#: The load balancer controller's cluster tag (on everything it creates).
TAG = "elbv2.k8s.aws/cluster"
CONFIG_KEYS = {"executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn", "alb", "keda"}


def _addons(synth: Synth) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        a["Properties"]["AddonName"]: (k, a)
        for k, a in resources_of(synth.cluster, "AWS::EKS::Addon").items()
    }


def _config(synth: Synth) -> dict[str, Any]:
    """The add-on's configuration values, each CloudFormation reference rendered as ``<logical id>``."""
    _, addon = _addons(synth)[ADDON]
    joined = addon["Properties"]["ConfigurationValues"]["Fn::Join"]
    text = "".join(p if isinstance(p, str) else f"<{_ref(p)}>" for p in joined[1])
    value: dict[str, Any] = json.loads(text)
    return value


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return list(action) if isinstance(action, list) else [action]


def _ref(value: dict[str, Any]) -> str:
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def _role_for(synth: Synth, service_account: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The IRSA role trusting exactly ``system:serviceaccount:<service_account>``: id, role, trust condition."""
    found = []
    for role_id, role in resources_of(synth.cluster, "AWS::IAM::Role").items():
        for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
            if statement["Action"] != "sts:AssumeRoleWithWebIdentity":
                continue
            (json_id,) = {_ref(v) for v in statement["Condition"].values()}
            joined = synth.cluster["Resources"][json_id]["Properties"]["Value"]["Fn::Join"][1]
            condition = json.loads("".join(p if isinstance(p, str) else "<issuer>" for p in joined))
            if condition.get("<issuer>:sub") == f"system:serviceaccount:{service_account}":
                found.append((role_id, role, {"statement": statement, "values": condition}))
    (match,) = found
    return match


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_the_addon_is_installed_after_its_prerequisites(backend: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue(backend)
    addons = _addons(synth)
    addon_id, _ = addons[ADDON]
    hyperpod_id, _ = one(synth.cluster, "AWS::SageMaker::Cluster")
    for prerequisite in (*(addons[name][0] for name in PREREQUISITE_ADDONS), hyperpod_id):
        assert transitively_depends(synth.cluster, addon_id, prerequisite), prerequisite
    assert set(_config(synth)) == CONFIG_KEYS
    assert _config(synth)["hyperpodClusterArn"] == f"<{hyperpod_id}>"


def test_every_role_trusts_one_service_account_through_the_clusters_oidc_provider(reference: Synth) -> None:
    provider_id, _ = one(reference.cluster, "AWS::IAM::OIDCProvider")
    config = _config(reference)
    operator = next(c for c in workloads.INFERENCE_OPERATORS if "EKS add-on" in c.description)
    expected = {
        # the execution role's subject is the add-on's controller: the identity admission exempts
        config["executionRoleArn"]: f"{operator.namespace}:{operator.service_account}",
        config["alb"]["serviceAccount"][
            "roleArn"
        ]: f"{workloads.HYPERPOD_INFERENCE_NAMESPACE}:aws-load-balancer-controller",
        config["keda"]["auth"]["aws"]["irsa"][
            "roleArn"
        ]: f"{workloads.HYPERPOD_INFERENCE_NAMESPACE}:keda-operator",
    }
    addon_id, _ = _addons(reference)[ADDON]
    for role_ref, service_account in expected.items():
        role_id, _, trust = _role_for(reference, service_account)
        assert role_ref == f"<{role_id}>"
        assert trust["statement"]["Principal"] == {"Federated": {"Ref": provider_id}}
        assert set(trust["statement"]["Condition"]) == {"StringEquals"}  # exact subject, no wildcard
        assert trust["values"]["<issuer>:aud"] == "sts.amazonaws.com"
        assert transitively_depends(reference.cluster, addon_id, role_id)
    # the S3 Mountpoint driver's role is bound through the add-on's service account role (IRSA)
    s3_id, s3_addon = _addons(reference)["aws-mountpoint-s3-csi-driver"]
    role_id, _, _ = _role_for(reference, ":".join(io.S3_CSI_SERVICE_ACCOUNT))
    assert _ref(s3_addon["Properties"]["ServiceAccountRoleArn"]) == role_id
    assert transitively_depends(reference.cluster, s3_id, role_id)


def test_the_execution_role_has_the_documented_policy_and_the_tls_bucket_only(reference: Synth) -> None:
    config = _config(reference)
    role_id = config["executionRoleArn"].strip("<>")
    role = reference.cluster["Resources"][role_id]["Properties"]
    assert any(io.EXECUTION_POLICY in json.dumps(m) for m in role["ManagedPolicyArns"])
    # SageMaker may assume it too (the documented trust), only from this account
    (service,) = [s for s in role["AssumeRolePolicyDocument"]["Statement"] if s["Action"] == "sts:AssumeRole"]
    assert service["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert "aws:SourceAccount" in service["Condition"]["StringEquals"]
    bucket_id = config["tlsCertificateS3Bucket"].strip("<>")
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources_of(reference.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert set(statements) == {
        "TlsCertificatesWrite",
        "TlsCertificatesRead",
        "TlsCertificatesList",
        "CertificateTagging",
    }
    for sid in ("TlsCertificatesWrite", "TlsCertificatesRead"):
        assert _ref(statements[sid]["Resource"]["Fn::Join"][1][0]) == bucket_id
    assert _ref(statements["TlsCertificatesList"]["Resource"]) == bucket_id
    # the documented execution policy ("Inference operator fails to start" troubleshooting page) lists the bucket
    rendered = render_intrinsics(policy)
    assert is_allowed(rendered, "s3:ListBucket", TOKEN)
    assert {a for s in policy["Statement"] for a in _actions(s)} == {
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
        "s3:DeleteObject",
        "s3:ListBucket",
        "acm:AddTagsToCertificate",
    }
    # inference operator 3.0 tags the ACM certificates it imports (release notes v3.0, prerequisites): allowed on
    # this account's certificates in the region, not on another account's
    certificates = statements["CertificateTagging"]["Resource"]
    assert (
        certificates == f"arn:aws:acm:{reference.platform.region}:{reference.platform.account}:certificate/*"
    )
    assert is_allowed(rendered, "acm:AddTagsToCertificate", certificates.replace("*", "0123-abcd"))
    other = f"arn:aws:acm:{reference.platform.region}:444455556666:certificate/0123-abcd"
    assert not is_allowed(rendered, "acm:AddTagsToCertificate", other)


def test_the_tls_bucket_is_retained_encrypted_private_and_tls_only(reference: Synth) -> None:
    bucket_id = _config(reference)["tlsCertificateS3Bucket"].strip("<>")
    bucket = reference.cluster["Resources"][bucket_id]
    assert bucket["DeletionPolicy"] == "Retain" and bucket["UpdateReplacePolicy"] == "Retain"
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["LoggingConfiguration"]["DestinationBucketName"]
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources_of(reference.cluster, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert any(
        s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["Statement"]
    )


def test_the_load_balancer_role_changes_only_what_the_controller_tagged(reference: Synth) -> None:
    role_id, _, _ = _role_for(reference, f"{workloads.HYPERPOD_INFERENCE_NAMESPACE}:{io.ALB_SERVICE_ACCOUNT}")
    policies = [
        render_intrinsics(p["Properties"]["PolicyDocument"])
        for p in resources_of(reference.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    # ARNs as the rendered template has them: partition, region, account and VPC id are tokens
    elb = f"arn:{TOKEN}:elasticloadbalancing:{TOKEN}:{TOKEN}"
    balancer = f"{elb}:loadbalancer/app/k8s-llm/0123456789abcdef"
    group = f"arn:{TOKEN}:ec2:{TOKEN}:{TOKEN}:security-group/sg-0123"
    tagged = {f"aws:ResourceTag/{TAG}": "shared-gpu"}
    assert is_allowed(policies, "elasticloadbalancing:DeleteLoadBalancer", balancer, tagged)
    assert not is_allowed(
        policies, "elasticloadbalancing:DeleteLoadBalancer", balancer
    )  # not the controller's
    assert not is_allowed(policies, "elasticloadbalancing:CreateLoadBalancer", "*")  # untagged request
    request = {f"aws:RequestTag/{TAG}": "x"}
    scheme = "elasticloadbalancing:Scheme"  # Service Authorization Reference, Elastic Load Balancing keys
    assert is_allowed(
        policies, "elasticloadbalancing:CreateLoadBalancer", "*", {**request, scheme: "internal"}
    )
    # an internet-facing load balancer (an annotated Ingress or Service) is refused, and so is one that names
    # no scheme (the API's default is internet-facing)
    for refused in ({**request, scheme: "internet-facing"}, request):
        assert not is_allowed(policies, "elasticloadbalancing:CreateLoadBalancer", "*", refused), refused
    assert is_allowed(policies, "elasticloadbalancing:CreateTargetGroup", "*", request)
    assert not is_allowed(policies, "ec2:DeleteSecurityGroup", group)
    platform = reference.platform
    cluster_vpc = {"ec2:Vpc": f"arn:aws:ec2:{platform.region}:{platform.account}:vpc/{TOKEN}"}
    assert is_allowed(policies, "ec2:AuthorizeSecurityGroupIngress", group, cluster_vpc)
    other_vpc = {"ec2:Vpc": "arn:aws:ec2:us-east-1:111122223333:vpc/vpc-0other"}
    assert not is_allowed(policies, "ec2:AuthorizeSecurityGroupIngress", group, other_vpc)
    # another account's load balancers are out of reach even when tagged
    assert not is_allowed(
        policies,
        "elasticloadbalancing:AddTags",
        "arn:aws:elasticloadbalancing:us-east-1:999999999999:loadbalancer/app/x/1",
        {f"aws:ResourceTag/{TAG}": "x"},
    )
    for left_out in ("wafv2:AssociateWebACL", "shield:CreateProtection", "elasticloadbalancing:SetWebAcl"):
        assert not is_allowed(policies, left_out, "*"), left_out


def test_the_s3_driver_lists_and_reads_team_prefixes_only(reference: Synth) -> None:
    """The S3 Mountpoint driver mounts model weights with its own role (driver-level credentials, Mountpoint's
    default): it lists and reads under ``teams/`` of the data bucket and nothing else, so a volume of the whole
    bucket, another area of it or another bucket does not mount. A prefix mount needs ``s3:ListBucket`` only
    with ``s3:prefix`` under it (awslabs/mountpoint-s3 doc/CONFIGURATION.md, "IAM permissions"). Which team's
    prefix an endpoint may name is held by admission (tests/test_hostile_10_operators.py)."""
    role_id, _, _ = _role_for(reference, ":".join(io.S3_CSI_SERVICE_ACCOUNT))
    policies = [
        render_intrinsics(p["Properties"]["PolicyDocument"])
        for p in resources_of(reference.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    bucket = TOKEN  # the data bucket's ARN, a token in the template
    assert is_allowed(policies, "s3:ListBucket", bucket, {"s3:prefix": "teams/inference/models/"})
    assert is_allowed(policies, "s3:GetObject", f"{bucket}/teams/inference/models/llama/config.json")
    for prefix in ("", "platform/", "Teams/inference/"):
        assert not is_allowed(policies, "s3:ListBucket", bucket, {"s3:prefix": prefix}), prefix
    assert not is_allowed(policies, "s3:ListBucket", bucket)  # no prefix: the whole bucket
    assert not is_allowed(policies, "s3:GetObject", f"{bucket}/platform/config.json")
    assert not is_allowed(policies, "s3:PutObject", f"{bucket}/teams/inference/models/x")
    assert not is_allowed(policies, "s3:GetObject", "arn:aws:s3:::another-bucket/teams/inference/x")


@pytest.fixture(scope="module")
def training_only(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform without its inference team."""
    from platforms import variant

    def drop(data: dict[str, Any]) -> None:
        data["teams"] = [t for t in data["teams"] if t.get("workload") != "inference"]

    return synthesize(
        variant("platform.yaml without inference teams", drop), tmp_path_factory.mktemp("noinf")
    )


def test_without_an_inference_team_nothing_of_the_operator_is_installed(training_only: Synth) -> None:
    addons = _addons(training_only)
    assert ADDON not in addons and "aws-mountpoint-s3-csi-driver" not in addons
    assert not resources_of(training_only.cluster, "AWS::IAM::OIDCProvider")  # no IRSA role needs it
    granted = [
        r
        for m in training_only.manifests()
        if m["kind"] in {"Role", "ClusterRole"}
        for r in m.get("rules", [])
        if "inference.sagemaker.aws.amazon.com" in r.get("apiGroups", [])
    ]
    assert granted == []


@pytest.mark.parametrize(
    ("null", "context", "allowed"),
    [("true", {}, True), ("true", {"k": "v"}, False), ("false", {}, False), ("false", {"k": "v"}, True)],
)
def test_the_evaluator_reads_null_conditions(null: str, context: dict[str, str], allowed: bool) -> None:
    # the tag conditions above are Null conditions: the key absent ("true") or present ("false")
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*", "Condition": {"Null": {"k": null}}}
        ]
    }
    assert is_allowed(policy, "s3:GetObject", "arn:aws:s3:::b/o", context) is allowed

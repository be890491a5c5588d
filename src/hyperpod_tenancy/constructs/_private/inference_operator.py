"""The HyperPod inference operator, installed as its EKS add-on, with the roles and bucket it needs.

The add-on ``amazon-sagemaker-hyperpod-inference`` serves ``InferenceEndpointConfig`` and ``JumpStartModel``
(``hyp create hyp-custom-endpoint`` / ``hyp-jumpstart-endpoint``). What it needs, and where each fact comes
from (aws/sagemaker-hyperpod-cli @011ca927, ``helm_chart/HyperPodHelmChart/charts/inference-operator/``:
``migration/helm_to_addon.sh``, the script AWS ships to move a Helm installation to the add-on, and
``values.yaml``/``Chart.yaml``; AWS docs "Setting up your HyperPod clusters for model deployment"
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html and
"IAM trust relationship issue" .../sagemaker-hyperpod-model-deployment-ts-trust.html):

* **Configuration values** (``helm_to_addon.sh`` step 7, ``ADDON_CONFIG``): ``executionRoleArn``,
  ``tlsCertificateS3Bucket``, ``hyperpodClusterArn``, ``alb`` (the add-on runs its own AWS Load Balancer
  Controller, ``serviceAccount.create`` with ``roleArn``) and ``keda`` (its own KEDA, ``auth.aws.irsa``).
  ``jumpstartGatedModelDownloadRoleArn`` is left out: gated JumpStart models are not offered (no role
  that trusts every ``hyperpod-inference-service-account*`` of every namespace is created).
* **The roles authenticate with IRSA, not Pod Identity**: the operator assumes its execution role with
  ``sts:AssumeRoleWithWebIdentity`` (the troubleshooting page's error and trust policy), the script derives
  every role's trust from the cluster's OIDC issuer (``Federated: …:oidc-provider/<issuer>``, condition on
  ``<issuer>:sub``), and the add-on takes the role ARNs in its configuration, not as Pod Identity
  associations. So the cluster gets its IAM OIDC provider, and each role trusts exactly one service account:

  ======================= ============================================================ =====================
  role                    service account (``sub``)                                    policy
  ======================= ============================================================ =====================
  execution               ``hyperpod-inference-system:hyperpod-inference-controller-   ``AmazonSageMakerHyperPodInferenceAccess``
                          manager`` (and ``sagemaker.amazonaws.com``, as documented)   + the TLS bucket's objects
  load balancer ctrl.     ``hyperpod-inference-system:aws-load-balancer-controller``   ALB controller actions
  KEDA                    ``hyperpod-inference-system:keda-operator``                  CloudWatch metric reads
  S3 Mountpoint CSI       ``kube-system:s3-csi-driver-sa``                             the data bucket's
                                                                                       ``teams/``, read
  ======================= ============================================================ =====================

* **The TLS certificate bucket**: the operator writes each endpoint's certificate there (``PutObject``,
  ``PutObjectTagging``, ``GetObject``, ``DeleteObject`` on the bucket's objects, the script's
  ``TLSBucketsAccess`` policy, same account only). Encrypted, TLS-only, no public access, versioned, access
  logged, retained.
* **Dependencies installed before it** (``Chart.yaml`` dependencies; ``helm_to_addon.sh`` steps 4-5 and the
  end: ``aws-mountpoint-s3-csi-driver``, ``aws-fsx-csi-driver``, ``cert-manager``, ``metrics-server`` as EKS
  add-ons; the load balancer controller and KEDA come inside the add-on): the FSx CSI driver and cert-manager
  are base add-ons of the cluster; this module adds the S3 Mountpoint CSI driver and metrics-server.

Installed only when the platform has a team with ``workload: inference``: no other team may write the
operator's kinds (:data:`hyperpod_tenancy.k8s.workloads.TeamAccess.INFERENCE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from hyperpod_tenancy.constructs._private.annotations import acknowledge_role, skip_checkov
from hyperpod_tenancy.constructs._private.kubectl import eks_addon
from hyperpod_tenancy.k8s.workloads import HYPERPOD_INFERENCE_NAMESPACE, INFERENCE_OPERATORS, Installer
from hyperpod_tenancy.policy import names

__all__ = [
    "ALB_SERVICE_ACCOUNT",
    "EXECUTION_POLICY",
    "KEDA_SERVICE_ACCOUNT",
    "S3_CSI_SERVICE_ACCOUNT",
    "InferenceOperator",
    "install_inference_operator",
]

#: AWS managed policy of the operator's execution role (``helm_to_addon.sh``, "Attach managed policy").
EXECUTION_POLICY = "AmazonSageMakerHyperPodInferenceAccess"
#: Service account of the add-on's load balancer controller (``helm_to_addon.sh``, the ALB trust policy).
ALB_SERVICE_ACCOUNT = "aws-load-balancer-controller"
#: Service account of the add-on's KEDA operator (``helm_to_addon.sh``, the KEDA trust policy).
KEDA_SERVICE_ACCOUNT = "keda-operator"
#: Namespace and service account of the S3 Mountpoint CSI driver add-on (``helm_to_addon.sh`` step 4).
S3_CSI_SERVICE_ACCOUNT = ("kube-system", "s3-csi-driver-sa")
_S3_CSI_ADDON = "aws-mountpoint-s3-csi-driver"
_METRICS_SERVER_ADDON = "metrics-server"
#: ID of the native IAM OIDC provider under the EKS cluster (the one ``Cluster.open_id_connect_provider`` gives).
_OIDC_PROVIDER_ID = "OidcProviderNative"
# The add-on's controller (the EKS add-on form of INFERENCE_OPERATORS; the Helm form is not installed here).
_OPERATOR = next(
    c for c in INFERENCE_OPERATORS if c.service_account == "hyperpod-inference-controller-manager"
)
# Tag the load balancer controller puts on what it creates (aws-load-balancer-controller
# docs/install/iam_policy.json conditions); mutations are limited to resources carrying it.
_ELBV2_CLUSTER_TAG = "elbv2.k8s.aws/cluster"


@dataclass(frozen=True, kw_only=True)
class InferenceOperator:
    """What :func:`install_inference_operator` created."""

    #: The ``amazon-sagemaker-hyperpod-inference`` add-on.
    addon: eks.CfnAddon
    #: The operator's execution role (IRSA).
    execution_role: iam.Role
    #: Role of the add-on's AWS Load Balancer Controller (IRSA).
    load_balancer_role: iam.Role
    #: Role of the add-on's KEDA operator (IRSA).
    keda_role: iam.Role
    #: Role of the S3 Mountpoint CSI driver (IRSA).
    s3_csi_role: iam.Role
    #: The S3 Mountpoint CSI driver add-on.
    s3_csi_addon: eks.CfnAddon
    #: The metrics-server add-on.
    metrics_server_addon: eks.CfnAddon
    #: Bucket of the endpoints' TLS certificates.
    tls_bucket: s3.IBucket


def _native_oidc_provider(cluster: eks.Cluster) -> eks.OidcProviderNative:
    """Return the cluster's IAM OIDC provider as the native ``AWS::IAM::OIDCProvider``, whatever the app's flags.

    ``Cluster.open_id_connect_provider`` picks the native resource or a deprecated custom resource by the app's
    ``@aws-cdk/aws-eks:useNativeOidcProvider`` flag; this creates what it creates with the flag on (same ID, same
    scope), so the template does not depend on the app's ``cdk.json``.
    """
    existing = cluster.node.try_find_child(_OIDC_PROVIDER_ID)
    if isinstance(existing, eks.OidcProviderNative):
        return existing
    return eks.OidcProviderNative(cluster, _OIDC_PROVIDER_ID, url=cluster.cluster_open_id_connect_issuer_url)


def _irsa(scope: Construct, id: str, cluster: eks.Cluster, namespace: str, service_account: str) -> iam.Role:
    """Create a role only ``system:serviceaccount:<namespace>:<service_account>`` of ``cluster`` assumes (IRSA)."""
    provider = _native_oidc_provider(cluster)
    issuer = provider.open_id_connect_provider_issuer
    # the condition keys contain the issuer, a token: CfnJson resolves them at deploy time
    conditions = cdk.CfnJson(
        scope,
        f"{id}Conditions",
        value={
            cdk.Fn.join("", [issuer, ":sub"]): f"system:serviceaccount:{namespace}:{service_account}",
            cdk.Fn.join("", [issuer, ":aud"]): "sts.amazonaws.com",
        },
    )
    return iam.Role(
        scope,
        id,
        assumed_by=iam.OpenIdConnectPrincipal(provider, conditions={"StringEquals": conditions}),
        description=f"IRSA role of {namespace}/{service_account} (HyperPod inference operator)",
    )


def _load_balancer_statements(vpc_arn: str) -> list[iam.PolicyStatement]:
    """Return what the add-on's AWS Load Balancer Controller needs, by the controller's published IAM policy.

    Source of the actions and conditions: the controller's ``docs/install/iam_policy.json``
    (kubernetes-sigs/aws-load-balancer-controller, v2 series, the ``elbv2.k8s.aws/cluster`` tag; the chart the
    HyperPod CLI pins is ``aws-load-balancer-controller`` 1.13.2). Kept: reads (the Describe APIs have no
    resource level), creating load balancers and target groups only with the controller's cluster tag in the
    request, and changing, re-tagging or deleting them and its security groups only with that tag on the
    resource. Narrowed: resource ARNs are this account's and region's; security-group ingress changes are
    limited to the cluster's VPC (``ec2:Vpc``). Left out: associating WAF web ACLs and creating Shield
    protections (the operator's Ingress sets neither; their reads stay, the controller calls them).
    """
    stack = cdk.Aws
    elb = f"arn:{stack.PARTITION}:elasticloadbalancing:{stack.REGION}:{stack.ACCOUNT_ID}"
    security_groups = f"arn:{stack.PARTITION}:ec2:{stack.REGION}:{stack.ACCOUNT_ID}:security-group/*"
    balancers = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"]
    listeners = [
        f"{elb}:listener/net/*/*/*",
        f"{elb}:listener/app/*/*/*",
        f"{elb}:listener-rule/net/*/*/*",
        f"{elb}:listener-rule/app/*/*/*",
    ]
    request_tag = f"aws:RequestTag/{_ELBV2_CLUSTER_TAG}"
    resource_tag = f"aws:ResourceTag/{_ELBV2_CLUSTER_TAG}"
    own = {"Null": {resource_tag: "false"}}
    retag_own = {"Null": {request_tag: "true", resource_tag: "false"}}
    ec2_reads = (
        "AccountAttributes Addresses AvailabilityZones InternetGateways Vpcs VpcPeeringConnections Subnets "
        "SecurityGroups Instances NetworkInterfaces Tags CoipPools IpamPools RouteTables"
    )
    elb_reads = (
        "LoadBalancers LoadBalancerAttributes Listeners ListenerCertificates SSLPolicies Rules TargetGroups "
        "TargetGroupAttributes TargetHealth Tags TrustStores ListenerAttributes CapacityReservation"
    )
    reads = [
        *(f"ec2:Describe{r}" for r in ec2_reads.split()),
        "ec2:GetCoipPoolUsage",
        "ec2:GetSecurityGroupsForVpc",
        *(f"elasticloadbalancing:Describe{r}" for r in elb_reads.split()),
        "cognito-idp:DescribeUserPoolClient",
        "acm:ListCertificates",
        "acm:DescribeCertificate",
        "iam:ListServerCertificates",
        "iam:GetServerCertificate",
        "waf-regional:GetWebACL",
        "waf-regional:GetWebACLForResource",
        "wafv2:GetWebACL",
        "wafv2:GetWebACLForResource",
        "shield:GetSubscriptionState",
        "shield:DescribeProtection",
    ]
    modify_own = [
        f"elasticloadbalancing:{a}"
        for a in [
            "ModifyLoadBalancerAttributes",
            "SetIpAddressType",
            "SetSecurityGroups",
            "SetSubnets",
            "DeleteLoadBalancer",
            "ModifyTargetGroup",
            "ModifyTargetGroupAttributes",
            "DeleteTargetGroup",
            "ModifyListenerAttributes",
            "ModifyCapacityReservation",
            "ModifyIpPools",
        ]
    ]
    listener_actions = [
        f"elasticloadbalancing:{a}"
        for a in [
            "CreateListener",
            "DeleteListener",
            "CreateRule",
            "DeleteRule",
            "ModifyListener",
            "AddListenerCertificates",
            "RemoveListenerCertificates",
            "ModifyRule",
            "SetRulePriorities",
        ]
    ]
    return [
        iam.PolicyStatement(sid="Describe", actions=reads, resources=["*"]),
        iam.PolicyStatement(
            sid="ElbServiceLinkedRole",
            actions=["iam:CreateServiceLinkedRole"],
            resources=["*"],
            conditions={"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        ),
        iam.PolicyStatement(sid="CreateSecurityGroup", actions=["ec2:CreateSecurityGroup"], resources=["*"]),
        iam.PolicyStatement(
            sid="IngressInTheClusterVpc",
            actions=["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            resources=[security_groups],
            conditions={"StringEquals": {"ec2:Vpc": vpc_arn}},
        ),
        iam.PolicyStatement(
            sid="TagSecurityGroupOnCreate",
            actions=["ec2:CreateTags"],
            resources=[security_groups],
            conditions={
                "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                "Null": {request_tag: "false"},
            },
        ),
        iam.PolicyStatement(
            sid="RetagOwnSecurityGroups",
            actions=["ec2:CreateTags", "ec2:DeleteTags"],
            resources=[security_groups],
            conditions=retag_own,
        ),
        iam.PolicyStatement(
            sid="DeleteOwnSecurityGroups",
            actions=["ec2:DeleteSecurityGroup"],
            resources=[security_groups],
            conditions=own,
        ),
        iam.PolicyStatement(
            sid="CreateTaggedTargetGroups",
            actions=["elasticloadbalancing:CreateTargetGroup"],
            resources=["*"],
            conditions={"Null": {request_tag: "false"}},
        ),
        # internal load balancers only: no tenant reaches the internet through an Ingress or a Service it
        # annotates (condition key elasticloadbalancing:Scheme, "Actions, resources, and condition keys for
        # Elastic Load Balancing", Service Authorization Reference). An allow on `internal` rather than a deny
        # on `internet-facing`: a request that names no scheme is refused, not defaulted to the internet.
        iam.PolicyStatement(
            sid="CreateTaggedInternalLoadBalancers",
            actions=["elasticloadbalancing:CreateLoadBalancer"],
            resources=["*"],
            conditions={
                "Null": {request_tag: "false"},
                "StringEquals": {"elasticloadbalancing:Scheme": "internal"},
            },
        ),
        iam.PolicyStatement(
            sid="TagLoadBalancersOnCreate",
            actions=["elasticloadbalancing:AddTags"],
            resources=balancers,
            conditions={
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                },
                "Null": {request_tag: "false"},
            },
        ),
        iam.PolicyStatement(
            sid="RetagOwnLoadBalancers",
            actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            resources=balancers,
            conditions=retag_own,
        ),
        iam.PolicyStatement(
            sid="ModifyOwnLoadBalancers", actions=modify_own, resources=["*"], conditions=own
        ),
        # listeners and rules carry no cluster tag when created (the controller's policy grants these on *)
        iam.PolicyStatement(sid="ListenersAndRules", actions=listener_actions, resources=["*"]),
        iam.PolicyStatement(
            sid="TagListenersAndRules",
            actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            resources=listeners,
        ),
        iam.PolicyStatement(
            sid="Targets",
            actions=["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            resources=[f"{elb}:targetgroup/*/*"],
        ),
    ]


def _acknowledge(execution: iam.Role, load_balancer: iam.Role, keda: iam.Role, s3_csi: iam.Role) -> None:
    """Acknowledge the cdk-nag findings of the four roles, each with its reason."""
    acknowledge_role(
        execution,
        managed_policies=f"{EXECUTION_POLICY} is the policy AWS documents for the inference operator's "
        "execution role (helm_to_addon.sh attaches it)",
        wildcards="the operator writes one certificate object per endpoint under keys it chooses, in the "
        "TLS bucket only, and tags the ACM certificates it imports, whose IDs exist only at run time, in this "
        "account and region only",
    )
    acknowledge_role(
        load_balancer,
        wildcards="the load balancer controller's Describe APIs have no resource level, and what it creates "
        "gets ARNs at run time: creating and changing load balancers, target groups and security groups "
        "require its cluster tag, ingress changes the cluster VPC; listeners and rules carry no tag",
    )
    skip_checkov(
        load_balancer.node.find_child("DefaultPolicy"),
        "CKV_AWS_111",
        "the AWS Load Balancer Controller creates and changes load balancers, listeners, rules and target groups "
        "whose ARNs exist only at run time; creating them requires the cluster's elbv2.k8s.aws/cluster tag and "
        "ingress changes are limited to the cluster VPC (the controller's published policy, narrowed)",
    )
    acknowledge_role(keda, wildcards="CloudWatch metric reads have no resource level")
    acknowledge_role(
        s3_csi,
        wildcards="model weights are objects under the data bucket's teams/ prefix, named by the teams",
    )


def install_inference_operator(
    scope: Construct,
    *,
    cluster: eks.Cluster,
    vpc: ec2.IVpc,
    hyperpod_cluster_arn: str,
    tls_bucket: s3.IBucket,
    data_bucket: s3.IBucket,
    after: Sequence[IConstruct],
) -> InferenceOperator:
    """Install the inference operator add-on with its roles and the two dependency add-ons it lacks.

    Args:
        scope: parent of the created constructs (one ``InferenceOperator`` construct under it).
        cluster: the EKS cluster (its IAM OIDC provider is created for the IRSA roles).
        vpc: the cluster's VPC (the load balancer controller changes security groups there only).
        hyperpod_cluster_arn: the HyperPod cluster the operator watches (``hyperpodClusterArn``).
        tls_bucket: bucket for the endpoints' TLS certificates (encrypted, TLS-only, retained).
        data_bucket: the team data bucket; the S3 Mountpoint driver may read it, nothing else.
        after: what the add-on must wait for: the HyperPod cluster, cert-manager, the FSx CSI driver.

    """
    root = Construct(scope, "InferenceOperator")
    execution = _irsa(root, "ExecutionRole", cluster, HYPERPOD_INFERENCE_NAMESPACE, _OPERATOR.service_account)
    # the documented trust also lets SageMaker assume the role (ts-trust page): it registers the endpoint
    execution.assume_role_policy.add_statements(  # type: ignore[union-attr]
        iam.PolicyStatement(
            actions=["sts:AssumeRole"],
            principals=[iam.ServicePrincipal("sagemaker.amazonaws.com")],
            conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}},
        )
    )
    execution.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(EXECUTION_POLICY))
    objects = tls_bucket.arn_for_objects("*")
    same_account = {"StringEquals": {"aws:ResourceAccount": cdk.Aws.ACCOUNT_ID}}
    execution.add_to_policy(
        iam.PolicyStatement(
            sid="TlsCertificatesWrite",
            actions=["s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"],
            resources=[objects],
            conditions=same_account,
        )
    )
    execution.add_to_policy(
        iam.PolicyStatement(sid="TlsCertificatesRead", actions=["s3:GetObject"], resources=[objects])
    )
    # the documented execution policy lists the bucket too ("Inference operator fails to start" page:
    # s3:ListBucket, PutObject, GetObject, DeleteObject), on this bucket only here
    execution.add_to_policy(
        iam.PolicyStatement(
            sid="TlsCertificatesList", actions=["s3:ListBucket"], resources=[tls_bucket.bucket_arn]
        )
    )
    # inference operator 3.0 tags the certificates it imports into ACM ("SageMaker HyperPod Inference release
    # notes", v3.0 prerequisites: acm:AddTagsToCertificate on certificate/*), in this account and region only
    execution.add_to_policy(
        iam.PolicyStatement(
            sid="CertificateTagging",
            actions=["acm:AddTagsToCertificate"],
            resources=[
                cdk.Stack.of(scope).format_arn(service="acm", resource="certificate", resource_name="*")
            ],
        )
    )

    load_balancer = _irsa(
        root, "LoadBalancerRole", cluster, HYPERPOD_INFERENCE_NAMESPACE, ALB_SERVICE_ACCOUNT
    )
    vpc_arn = cdk.Stack.of(scope).format_arn(service="ec2", resource="vpc", resource_name=vpc.vpc_id)
    for statement in _load_balancer_statements(vpc_arn):
        load_balancer.add_to_policy(statement)
    keda = _irsa(root, "KedaRole", cluster, HYPERPOD_INFERENCE_NAMESPACE, KEDA_SERVICE_ACCOUNT)
    # KEDA's aws-cloudwatch scaler (the endpoints' autoscaling triggers, sagemaker-hyperpod 3.12.0
    # inference/config/hp_endpoint_config.py CloudWatchTrigger) reads metrics; these APIs have no resources
    keda.add_to_policy(
        iam.PolicyStatement(
            sid="ReadMetrics",
            actions=["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics", "cloudwatch:ListMetrics"],
            resources=["*"],
        )
    )
    s3_csi = _irsa(root, "S3CsiRole", cluster, *S3_CSI_SERVICE_ACCOUNT)
    # Model weights are read from the team data bucket (teams/<team>/...): the driver lists and reads under
    # teams/ only: Mountpoint mounting a prefix needs s3:ListBucket only under it, scoped with the s3:prefix
    # condition key (awslabs/mountpoint-s3 doc/CONFIGURATION.md, "IAM permissions"). The
    # driver is one identity for every team: which team's prefix an endpoint mounts is held by admission
    # (k8s/operator_guards.py: modelSourceConfig.modelLocation under the endpoint's own teams/<team>/).
    s3_csi.add_to_policy(
        iam.PolicyStatement(
            sid="ListTeamData",
            actions=["s3:ListBucket"],
            resources=[data_bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{names.DATA_PREFIX_ROOT}*"]}},
        )
    )
    s3_csi.add_to_policy(
        iam.PolicyStatement(
            sid="ReadTeamData",
            actions=["s3:GetObject"],
            resources=[data_bucket.arn_for_objects(f"{names.DATA_PREFIX_ROOT}*")],
        )
    )
    _acknowledge(execution, load_balancer, keda, s3_csi)

    name = cluster.cluster_name
    s3_csi_addon = eks_addon(
        root,
        "S3CsiDriver",
        cluster_name=name,
        addon_name=_S3_CSI_ADDON,
        service_account_role_arn=s3_csi.role_arn,
    )
    s3_csi_addon.node.add_dependency(s3_csi)  # its policy too, before the driver mounts anything
    metrics_server = eks_addon(root, "MetricsServer", cluster_name=name, addon_name=_METRICS_SERVER_ADDON)
    configuration = {
        "executionRoleArn": execution.role_arn,
        "tlsCertificateS3Bucket": tls_bucket.bucket_name,
        "hyperpodClusterArn": hyperpod_cluster_arn,
        "alb": {"enabled": True, "serviceAccount": {"create": True, "roleArn": load_balancer.role_arn}},
        "keda": {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda.role_arn}}}},
    }
    operator = eks_addon(
        root,
        "Addon",
        cluster_name=name,
        addon_name=Installer.HYPERPOD_INFERENCE_ADDON.value,
        configuration_values=cdk.Stack.of(scope).to_json_string(configuration),
    )
    operator.node.add_dependency(s3_csi_addon, metrics_server, *after)
    # the roles (and the OIDC provider) exist before the operator starts assuming them
    operator.node.add_dependency(execution, load_balancer, keda)
    return InferenceOperator(
        addon=operator,
        execution_role=execution,
        load_balancer_role=load_balancer,
        keda_role=keda,
        s3_csi_role=s3_csi,
        s3_csi_addon=s3_csi_addon,
        metrics_server_addon=metrics_server,
        tls_bucket=tls_bucket,
    )

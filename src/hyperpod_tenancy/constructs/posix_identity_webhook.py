"""``PosixIdentityWebhook``: every pod in a team namespace runs as its submitter's UID and its team's GID.

A mutating admission webhook (the ``hyperpod-tenancy webhook serve`` server of :mod:`hyperpod_tenancy.webhook`)
resolves the submitter from the request's IAM session, allocates their UID from a DynamoDB map on first sight and
stamps the pod templates; the ValidatingAdmissionPolicy of :mod:`hyperpod_tenancy.k8s.posix_identity` (in the
platform chart) re-checks every Pod. This construct deploys the webhook::

    DynamoDB table (retained, PITR) + image asset + Pod Identity role
      -> Namespace, ServiceAccount, ConfigMap, cert-manager CA and serving certificate, Deployment, PDB, Service
      -> wait: Deployment ready -> Mutating- and ValidatingWebhookConfiguration -> wait: CA injected (``ready``)

The pods serve Prometheus metrics on a plain-HTTP port of their own (``metrics``,
:data:`~hyperpod_tenancy.k8s.posix_identity.METRICS_PORT`) with the conventional ``prometheus.io/*`` scrape
annotations; the cluster-wide alerts of ``ChargebackPipeline`` (``cluster_rules``) read them and
kube-state-metrics' series of this Deployment.

cert-manager is the cluster's EKS add-on ``cert-manager`` (``SharedHyperPodCluster.cert_manager_addon``, also
needed by the HyperPod training operator); pass it in ``after`` so the issuers are created once it serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import acknowledge_role
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.posix_identity import WebhookDeployment
from hyperpod_tenancy.policy.model import WebhookFailurePolicy
from hyperpod_tenancy.policy.rules.identity import WEBHOOK_TIMEOUT_RANGE, image_reference_findings

__all__ = ["IMAGE_CONTEXT", "IMAGE_DOCKERFILE", "IMAGE_EXCLUDE", "TABLE_ACTIONS", "PosixIdentityWebhook"]

#: Build context of the server image: the installed ``hyperpod_tenancy`` package directory (``src/hyperpod_tenancy``
#: of a checkout, ``site-packages/hyperpod_tenancy`` of a ``pip install``), so the image builds wherever the
#: library is installed.
IMAGE_CONTEXT = Path(__file__).resolve().parents[1]
#: The server image's ``Dockerfile``, relative to :data:`IMAGE_CONTEXT`.
IMAGE_DOCKERFILE = "webhook/Dockerfile"
#: What the image leaves out of :data:`IMAGE_CONTEXT`: the layers the server never imports (the import contract of
#: ``pyproject.toml``) and bytecode, so changing a construct does not change the image or its asset hash.
IMAGE_EXCLUDE = (
    "constructs",
    "stacks",
    "runtime",
    "tools/chargeback/offline",
    "**/__pycache__",
    "**/*.pyc",
)
#: The only DynamoDB actions the server needs (``hyperpod_tenancy.webhook.uids``: a consistent ``GetItem`` to look a
#: person up; a ``TransactWriteItems`` of conditional puts to allocate a UID, which IAM authorizes per contained
#: action: there is no ``dynamodb:TransactWriteItems`` action; ``UpdateItem`` as the server's documentation lists it).
TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
#: What the server's role may do on the team records (read them, under their path only).
RECORD_ACTIONS = ("ssm:GetParametersByPath",)


class PosixIdentityWebhook(Construct):
    """The POSIX identity admission webhook of a shared HyperPod cluster.

    Creates: a DynamoDB table (partition key ``pk`` String, on-demand, point-in-time recovery, **retained**) holding
    the person -> UID map; the server image, built from the ``Dockerfile`` shipped inside the installed package
    (:data:`IMAGE_CONTEXT`) as a CDK asset (synth needs no Docker; ``cdk deploy`` builds and pushes it) unless an
    image is named; an EKS Pod Identity role
    allowed only :data:`TABLE_ACTIONS` on that table; and, in namespace
    :data:`~hyperpod_tenancy.k8s.posix_identity.WEBHOOK_NAMESPACE`, the objects of
    :func:`~hyperpod_tenancy.k8s.posix_identity.webhook_objects` (two replicas on the system nodes, a
    PodDisruptionBudget, a Service, a cert-manager CA and serving certificate) and the
    ``MutatingWebhookConfiguration`` and the ``ValidatingWebhookConfiguration`` of requests into running pods
    (team namespaces only, ``failurePolicy`` as given).

    The primary child (``node.default_child``'s parent, construct ID ``Resource``) is the DynamoDB table: it is
    the one resource whose loss loses data (every person's UID, which their files on ``/fsx`` carry).

    Args:
        scope: parent construct.
        id: construct ID.
        cluster: the shared cluster (created in this app or imported); its policy gives the UID range, the cache
            TTL and the teams.
        failure_policy: what the API server does when the webhook does not answer; required, no default: ``Fail``
            stops workloads from starting in team namespaces while the webhook or DynamoDB is down, ``Ignore``
            admits them unstamped (pods may then run as another person's UID).
        timeout_seconds: how long the API server waits for the webhook (1-30). Default: the policy's
            ``cluster.posixIdentity.timeoutSeconds``.
        image_uri: a server image you built and pushed yourself (pinned by tag or digest). Default: the
            policy's ``cluster.posixIdentity.imageUri``; without one, ``cdk deploy`` builds the image from the
            ``Dockerfile`` inside the installed package and pushes it to the CDK asset repository.
        system_instance_type: instance type of the nodes the webhook runs on, for the image's CPU architecture.
            Default: the policy's ``cluster.systemNodeGroup.instanceType``.
        after: constructs the Kubernetes objects are created after (the cert-manager add-on).

    Attributes:
        table, role, image, image_uri, pod_identity, objects, webhook_configuration, deployment_ready, ready,
        config, failure_policy, timeout_seconds: see each attribute.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        failure_policy: WebhookFailurePolicy,
        timeout_seconds: int | None = None,
        image_uri: str | None = None,
        system_instance_type: str | None = None,
        after: Sequence[Construct] = (),
    ) -> None:
        super().__init__(scope, id)
        self._cluster = cluster
        platform = cluster.platform
        spec = platform.cluster.posix_identity
        if not isinstance(failure_policy, WebhookFailurePolicy):
            raise TenancyError(
                f"{self.node.path}: failure_policy is {failure_policy!r}; pass WebhookFailurePolicy.FAIL or "
                "WebhookFailurePolicy.IGNORE (cluster.posixIdentity.failurePolicy): the platform owner decides."
            )
        timeout = spec.timeout_seconds if timeout_seconds is None else timeout_seconds
        low, high = WEBHOOK_TIMEOUT_RANGE
        if not low <= timeout <= high:
            raise TenancyError(
                f"{self.node.path}: timeout_seconds is {timeout}; Kubernetes accepts {low}-{high} for a webhook."
            )
        #: ``failurePolicy`` of the MutatingWebhookConfiguration.
        self.failure_policy: WebhookFailurePolicy = failure_policy
        #: ``timeoutSeconds`` of both webhook configurations (the cluster's latency alert stays well below it).
        self.timeout_seconds: int = timeout
        #: The server's configuration file (``--teams``), as rendered into the ConfigMap.
        self.config = posix_identity.webhook_config(platform)
        #: The person -> UID map (partition key ``pk``; retained: people's files carry these UIDs).
        self.table = dynamodb.Table(
            self,
            "Resource",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        #: The server image asset (``None`` when an image was named).
        self.image: ecr_assets.DockerImageAsset | None = None
        if image_uri is not None and not cdk.Token.is_unresolved(image_uri):
            for finding in image_reference_findings(image_uri, path="image_uri"):
                raise TenancyError(f"{self.node.path}: image_uri: {finding.message} Fix: {finding.fix}")
        image_uri = image_uri or spec.image_uri
        if image_uri is None:
            self.image = self._image(system_instance_type or platform.cluster.system_node_group.instance_type)
            image_uri = self.image.image_uri
        #: URI of the server image the Deployment runs.
        self.image_uri: str = image_uri
        #: Pod Identity role of the server: :data:`TABLE_ACTIONS` on :attr:`table` only.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=pod_identity_principal(cluster.kubernetes),
            description="POSIX identity webhook (EKS Pod Identity): the person -> UID map",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=list(TABLE_ACTIONS), resources=[self.table.table_arn])
        )
        # the team records each team stack writes (the configuration lists no team)
        stack = cdk.Stack.of(self)
        records = posix_identity.team_records_path(platform).rstrip("/")
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=list(RECORD_ACTIONS),
                resources=[
                    stack.format_arn(service="ssm", resource="parameter", resource_name=records.lstrip("/")),
                    stack.format_arn(
                        service="ssm", resource="parameter", resource_name=f"{records.lstrip('/')}/*"
                    ),
                ],
            )
        )
        acknowledge_role(
            self.role,
            wildcards="reads the team records under /hyperpod-tenancy/<cluster>/posix-identity/ only: one SSM "
            "parameter per team, written by the team stacks, so the cluster's configuration lists no team",
        )
        if cluster.platform_key is not None:
            # the platform's encryption aspect puts the table under the key; the server reads it through DynamoDB
            cluster.platform_key.grant_data(self.role, service="dynamodb")
        #: The association of the role with the server's ServiceAccount.
        self.pod_identity = eks.CfnPodIdentityAssociation(
            self,
            "PodIdentity",
            cluster_name=cluster.eks_cluster_name,
            namespace=posix_identity.WEBHOOK_NAMESPACE,
            service_account=posix_identity.SERVICE_ACCOUNT,
            role_arn=self.role.role_arn,
        )
        target = WebhookDeployment(
            image=self.image_uri, table_name=self.table.table_name, region=cdk.Stack.of(self).region
        )
        #: Namespace, ServiceAccount, ConfigMap, certificates, Deployment, PodDisruptionBudget and Service.
        self.objects = eks.KubernetesManifest(
            self,
            "Objects",
            cluster=cluster.kubernetes,
            manifest=posix_identity.webhook_objects(platform, target),
            overwrite=True,
        )
        self.objects.node.add_dependency(self.pod_identity, *after)
        #: Waits until the Deployment has a ready replica (its certificate issued, DynamoDB reachable).
        self.deployment_ready = self._wait(
            "DeploymentReady",
            object_type="deployment",
            object_name=posix_identity.DEPLOYMENT,
            json_path=".status.readyReplicas",
        )
        self.deployment_ready.node.add_dependency(self.objects)
        #: The MutatingWebhookConfiguration and the ValidatingWebhookConfiguration of exec, attach, port-forward,
        #: proxy and ephemeral containers (only the pod's person), applied once the server answers.
        self.webhook_configuration = eks.KubernetesManifest(
            self,
            "WebhookConfiguration",
            cluster=cluster.kubernetes,
            manifest=[
                posix_identity.mutating_webhook_configuration(
                    failure_policy=failure_policy, timeout_seconds=timeout
                ),
                posix_identity.connect_webhook_configuration(
                    failure_policy=failure_policy, timeout_seconds=timeout
                ),
            ],
            overwrite=True,
        )
        self.webhook_configuration.node.add_dependency(self.deployment_ready)
        #: Waits until cert-manager injected the CA into the ValidatingWebhookConfiguration: until then the API
        #: server cannot call the webhook, and every exec, attach or port-forward into a team pod is refused
        #: (``failurePolicy: Fail``) or let through unchecked (``Ignore``).
        self.connect_ready = self._wait(
            "ConnectCaInjected",
            object_type="validatingwebhookconfiguration",
            object_name=posix_identity.WEBHOOK_CONFIGURATION,
            json_path=".webhooks[0].clientConfig.caBundle",
        )
        self.connect_ready.node.add_dependency(self.webhook_configuration)
        #: Waits until cert-manager injected the CA into both webhook configurations (the mutating one here,
        #: after :attr:`connect_ready`): team work comes after this.
        self.ready = self._wait(
            "CaInjected",
            object_type="mutatingwebhookconfiguration",
            object_name=posix_identity.WEBHOOK_CONFIGURATION,
            json_path=".webhooks[0].clientConfig.caBundle",
        )
        self.ready.node.add_dependency(self.webhook_configuration, self.connect_ready)

    def _wait(
        self, id: str, *, object_type: str, object_name: str, json_path: str
    ) -> eks.KubernetesObjectValue:
        """Wait (up to :data:`KUBECTL_WAIT`) until ``json_path`` of an object of the webhook has a value."""
        return eks.KubernetesObjectValue(
            self,
            id,
            cluster=self._cluster.kubernetes,
            object_type=object_type,
            object_name=object_name,
            object_namespace=posix_identity.WEBHOOK_NAMESPACE,
            json_path=json_path,
            timeout=KUBECTL_WAIT,
        )

    def _image(self, instance_type: str) -> ecr_assets.DockerImageAsset:
        dockerfile = IMAGE_CONTEXT / IMAGE_DOCKERFILE
        if not dockerfile.is_file():
            raise TenancyError(
                f"{self.node.path}: {dockerfile} does not exist: this installation of cdk-hyperpod-tenancy is "
                "incomplete. Reinstall the package, or build and push the webhook image yourself and name it in "
                "cluster.posixIdentity.imageUri (or pass posix_identity_image_uri)."
            )
        arm = ec2.InstanceType(instance_type).architecture == ec2.InstanceArchitecture.ARM_64
        return ecr_assets.DockerImageAsset(
            self,
            "Image",
            directory=str(IMAGE_CONTEXT),
            file=IMAGE_DOCKERFILE,
            exclude=list(IMAGE_EXCLUDE),
            platform=ecr_assets.Platform.LINUX_ARM64 if arm else ecr_assets.Platform.LINUX_AMD64,
        )

"""``PlatformKey``: the platform's optional customer-managed KMS key (``encryption.kmsKey`` in ``platform.yaml``).

Without ``encryption.kmsKey`` nothing changes: every service keeps encrypting with its AWS-managed (or owned) key,
and the checkov checks that ask for a customer-managed key are skipped on those resources with that reason.

With it, the key encrypts: every CloudWatch log group of the platform's stacks (``KmsKeyId``), the Studio domains'
volumes (``AWS::SageMaker::Domain`` ``KmsKeyId``: its EFS home volume and the spaces' EBS volumes), the team data
bucket and the chargeback report bucket (SSE-KMS with an S3 bucket key) and the Athena query results in it, FSx for
Lustre (``KmsKeyId``, PERSISTENT deployment types) and every DynamoDB table of the platform's stacks
(``SSESpecification``). A created key is retained on delete and rotates yearly; its policy:

* ``KeyAdministration``: the account (IAM policies) may administer the key, not use it;
* ``CloudWatchLogs``: ``logs.<region>.amazonaws.com`` may use it for this account's log groups only
  (``kms:EncryptionContext:aws:logs:arn``; "Encrypt log data in CloudWatch Logs using AWS KMS",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html);
* ``UseThroughServices``: principals of the account that IAM allows may use it only through the services that
  hold data encrypted with it (``kms:ViaService``, computed at synthesis from the resources that use the key;
  https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-via-service);
* ``DataExports`` (with a chargeback pipeline): the CUR 2.0 export services may encrypt the objects they deliver to
  the report bucket, through S3, for this account only.

The roles that read or write that data get IAM grants through the same service only (:meth:`PlatformKey.grant_data`).
An imported key's policy is the owner's: the cluster warns (``HPT-KMS-IMPORTED-KEY-POLICY``) with what it must allow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import aws_cdk as cdk
import jsii
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from hyperpod_tenancy.constructs._private.annotations import skip_checkov, warn
from hyperpod_tenancy.constructs._private.memo import stack_of
from hyperpod_tenancy.constructs._private.team_iam import DATA_KEY_ACTIONS
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.policy.model import CREATE_KMS_KEY

__all__ = [
    "DATA_KEY_ACTIONS",
    "PlatformKey",
    "encrypt_new_log_groups_and_tables",
    "encrypt_platform_resources",
]

#: What CloudWatch Logs needs on the key (the CloudWatch Logs user guide's key policy).
LOGS_KEY_ACTIONS: Final = (
    "kms:Encrypt*",
    "kms:Decrypt*",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:Describe*",
)
#: What the services holding data may do with the key on behalf of an allowed principal.
SERVICE_KEY_ACTIONS: Final = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
    "kms:CreateGrant",
)
#: Administration of the key, without using it (aws-cdk-lib ``aws-kms/lib/perms.ts`` ADMIN_ACTIONS).
ADMIN_ACTIONS: Final = (
    "kms:Create*",
    "kms:Describe*",
    "kms:Enable*",
    "kms:List*",
    "kms:Put*",
    "kms:Update*",
    "kms:Revoke*",
    "kms:Disable*",
    "kms:Get*",
    "kms:Delete*",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
)
#: Services that call KMS for each kind of resource encrypted with the key (``kms:ViaService`` prefixes). A Studio
#: domain's key encrypts the EFS home volume SageMaker creates and the EBS volumes of its spaces.
SERVICES_BY_RESOURCE_TYPE: Final[dict[str, tuple[str, ...]]] = {
    "AWS::S3::Bucket": ("s3",),
    "AWS::Athena::WorkGroup": ("s3",),
    "AWS::SageMaker::Domain": ("sagemaker", "elasticfilesystem", "ec2"),
    "AWS::FSx::FileSystem": ("fsx",),
    "AWS::DynamoDB::Table": ("dynamodb",),
}
#: Services delivering CUR 2.0 exports (the report bucket policy's principals).
DATA_EXPORT_PRINCIPALS: Final = ("bcm-data-exports.amazonaws.com", "billingreports.amazonaws.com")
_NO_KEY = "platform.yaml sets no encryption.kmsKey, so {how} encrypts {what}; set encryption.kmsKey for a key you control"


class PlatformKey(Construct):
    """The platform's customer-managed key: created (``encryption.kmsKey: create``) or imported (a key ARN).

    Args:
        scope: parent (the cluster construct).
        id: construct ID.
        platform: the policy; ``platform.encryption.kms_key`` must be set.
        key_arn: the ARN of the key created with the cluster, for a cluster imported into another app. Default:
            the policy's ARN.
        imported_cluster: the key belongs to an imported cluster (never created here). Default: ``False``.

    Attributes:
        key: the key. created: whether this construct created it (its policy is then written here).

    Raises:
        TenancyError: the policy has no ``encryption.kmsKey``, or says ``create`` for an imported cluster without
            ``key_arn``.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        key_arn: str | None = None,
        imported_cluster: bool = False,
    ) -> None:
        super().__init__(scope, id)
        spec = platform.encryption.kms_key
        if spec is None:
            raise TenancyError(f"{self.node.path}: platform.yaml sets no encryption.kmsKey")
        self._services: set[str] = set()
        #: Whether the key was created here (only the cluster's own app creates it).
        self.created = spec == CREATE_KMS_KEY and key_arn is None and not imported_cluster
        #: The key.
        self.key: kms.IKey
        if self.created:
            self.key = kms.Key(
                self,
                "Key",
                description=f"Customer-managed key of HyperPod platform {platform.name} ({platform.cluster.name})",
                enable_key_rotation=True,
                removal_policy=cdk.RemovalPolicy.RETAIN,
                policy=iam.PolicyDocument(statements=self._key_policy()),
            )
        else:
            arn = key_arn or spec
            if arn == CREATE_KMS_KEY:
                raise TenancyError(
                    f"{self.node.path}: encryption.kmsKey is `create`, but this cluster is imported: pass the key's "
                    "ARN (kms_key_arn=, the cluster app's SharedHyperPodCluster.platform_key.key_arn)"
                )
            self.key = kms.Key.from_key_arn(self, "Key", arn)
            warn(
                self,
                "HPT-KMS-IMPORTED-KEY-POLICY",
                f"encryption.kmsKey {arn} is imported: its key policy must let logs.{platform.region}.amazonaws.com "
                "use it for this account's log groups (kms:EncryptionContext:aws:logs:arn), and principals of the "
                "account use it through the services listed in the synthesized roles' kms:ViaService conditions "
                "(s3, fsx, sagemaker, elasticfilesystem, ec2, dynamodb as used)",
            )

    def _key_policy(self) -> list[iam.PolicyStatement]:
        stack = cdk.Stack.of(self)
        account = iam.AccountRootPrincipal()
        return [
            iam.PolicyStatement(
                sid="KeyAdministration", principals=[account], actions=list(ADMIN_ACTIONS), resources=["*"]
            ),
            iam.PolicyStatement(
                sid="CloudWatchLogs",
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=list(LOGS_KEY_ACTIONS),
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": f"arn:{stack.partition}:logs:{stack.region}:"
                        f"{stack.account}:log-group:*"
                    }
                },
            ),
            iam.PolicyStatement(
                sid="UseThroughServices",
                principals=[account],
                actions=list(SERVICE_KEY_ACTIONS),
                resources=["*"],
                conditions={
                    "StringEquals": {
                        "kms:CallerAccount": stack.account,
                        "kms:ViaService": cdk.Lazy.list(_ViaServices(self)),
                    }
                },
            ),
        ]

    def via_service(self, service: str) -> str:
        """Return the ``kms:ViaService`` value of ``service`` in the key's region (``<service>.<region>.amazonaws.com``)."""
        return f"{service}.{cdk.Stack.of(self).region}.amazonaws.com"

    @property
    def key_arn(self) -> str:
        """ARN of the key."""
        return self.key.key_arn

    @property
    def services(self) -> tuple[str, ...]:
        """Services that hold data encrypted with the key (the ``UseThroughServices`` statement's), so far."""
        return tuple(sorted(self._services))

    def use(self, resource_type: str) -> kms.IKey:
        """Record that a resource of ``resource_type`` is encrypted with the key; return the key.

        Raises:
            ValueError: a resource type :data:`SERVICES_BY_RESOURCE_TYPE` does not know.

        """
        services = SERVICES_BY_RESOURCE_TYPE.get(resource_type)
        if services is None:
            raise ValueError(f"no KMS service known for {resource_type}; add it to SERVICES_BY_RESOURCE_TYPE")
        self._services.update(services)
        return self.key

    def grant_data(self, grantee: iam.IGrantable, *, service: str) -> iam.Grant:
        """Let ``grantee`` read and write data encrypted with the key, through ``service`` only (e.g. ``s3``)."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(DATA_KEY_ACTIONS),
            resource_arns=[self.key_arn],
            conditions={"StringEquals": {"kms:ViaService": self.via_service(service)}},
        )

    def allow_data_exports(self) -> None:
        """Let the CUR 2.0 export services encrypt the objects they deliver to an SSE-KMS bucket, through S3.

        Only on a created key (an imported key's owner adds the statement; the import warning says so).
        """
        if not self.created:
            return
        stack = cdk.Stack.of(self)
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DataExports",
                principals=[iam.ServicePrincipal(p) for p in DATA_EXPORT_PRINCIPALS],
                actions=["kms:GenerateDataKey", "kms:Decrypt"],
                resources=["*"],
                conditions={
                    "StringEquals": {
                        "aws:SourceAccount": stack.account,
                        "kms:ViaService": self.via_service("s3"),
                    }
                },
            )
        )


@jsii.implements(cdk.IStableListProducer)
class _ViaServices:
    """The ``kms:ViaService`` values of the services using a key, produced at synthesis (after the aspects)."""

    def __init__(self, key: PlatformKey) -> None:
        self._key = key

    def produce(self) -> list[str]:
        return [self._key.via_service(s) for s in self._key.services]


@jsii.implements(cdk.IAspect)
class _PlatformEncryption:
    """Puts the platform key on every log group and DynamoDB table of a stack, or records why not.

    A log group or table that names its own encryption keeps it.
    """

    def __init__(self, key: PlatformKey | None) -> None:
        self._key = key

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, logs.CfnLogGroup):
            if self._key is not None:
                if node.kms_key_id is None:
                    node.kms_key_id = self._key.key_arn
            else:
                skip_checkov(
                    node,
                    "CKV_AWS_158",
                    _NO_KEY.format(what="the log group", how="CloudWatch Logs' service-managed key"),
                )
        elif isinstance(node, dynamodb.CfnTable):
            if node.sse_specification is not None:
                return  # the table's own choice stands (checkov judges it)
            if self._key is not None:
                node.sse_specification = dynamodb.CfnTable.SSESpecificationProperty(
                    sse_enabled=True,
                    sse_type="KMS",
                    kms_master_key_id=self._key.use(node.cfn_resource_type).key_arn,
                )
            else:
                skip_checkov(
                    node, "CKV_AWS_119", _NO_KEY.format(what="the table", how="DynamoDB's AWS-owned key")
                )


_MARKER = "HyperPodTenancyEncryption"


def encrypt_platform_resources(scope: IConstruct, key: PlatformKey | None) -> None:
    """Encrypt every log group and DynamoDB table of ``scope``'s stack with ``key`` (once per stack).

    ``None``: no platform key; the checkov findings asking for one are skipped with that reason.
    """
    stack = cdk.Stack.of(scope)
    if stack.node.try_find_child(_MARKER) is not None:
        return
    Construct(stack, _MARKER)
    cdk.Aspects.of(stack).add(_PlatformEncryption(key))


@jsii.implements(cdk.IPropertyInjector)
class _KeyInjection:
    """Adds the platform key to the props of each construct of one L2 type created under a scope.

    Props that already name any of ``own`` (the construct's own encryption choice) are kept as they are.
    """

    def __init__(
        self, construct_unique_id: str, own: tuple[str, ...], add: Callable[[], dict[str, Any]]
    ) -> None:
        self._construct_unique_id = construct_unique_id
        self._own = own
        self._add = add

    @property
    def construct_unique_id(self) -> str:
        return self._construct_unique_id

    def inject(self, original_props: Any, *, id: str, scope: Construct) -> Any:
        if any(original_props.get(name) is not None for name in self._own):
            return original_props
        return {**original_props, **self._add()}


_INJECTION_MARKER = "HyperPodTenancyEncryptionInjection"


def encrypt_new_log_groups_and_tables(scope: IConstruct, key: PlatformKey | None) -> None:
    """Encrypt with ``key`` every ``logs.LogGroup`` and ``dynamodb.Table`` created in ``scope``'s stack from now on.

    The lighter sibling of :func:`encrypt_platform_resources` for stacks that exist once per team: CDK's property
    injection calls back once per log group or table created, where an aspect calls back for every construct of
    the stack at synthesis. It covers those two L2 constructs (whoever creates them, after this call) and not a
    ``CfnLogGroup`` or ``CfnTable`` created directly; a log group or table that names its own key keeps it.
    ``None`` (no platform key): nothing to inject; the callers skip the checkov finding on the log groups they
    create (:func:`skip_without_key`). Registered once per stack.
    """
    if key is None:
        return
    stack = stack_of(scope)
    if stack.node.try_find_child(_INJECTION_MARKER) is not None:
        return
    Construct(stack, _INJECTION_MARKER)
    cdk.PropertyInjectors.of(stack).add(
        _KeyInjection(
            logs.LogGroup.PROPERTY_INJECTION_ID, ("encryptionKey",), lambda: {"encryptionKey": key.key}
        ),
        _KeyInjection(
            dynamodb.Table.PROPERTY_INJECTION_ID,
            ("encryption", "encryptionKey"),
            lambda: {
                "encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED,
                "encryptionKey": key.use(dynamodb.CfnTable.CFN_RESOURCE_TYPE_NAME),
            },
        ),
    )


def skip_without_key(resources: Iterable[IConstruct], check_id: str, what: str, how: str) -> None:
    """Skip a "customer-managed key" check on ``resources`` because the platform has no key (with that reason)."""
    for resource in resources:
        skip_checkov(resource, check_id, _NO_KEY.format(what=what, how=how))

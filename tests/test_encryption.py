"""The platform's customer-managed key (``encryption.kmsKey``): what uses it, and what its policy grants.

Read from the synthesized templates: every resource docs/compliance.md lists (log groups of every stack, Studio domains,
the data and report buckets, Athena results, FSx, DynamoDB tables) names the key, and the created key's policy
grants exactly CloudWatch Logs (its service principal, this account's log groups only), the CUR export services
(through S3) and the account's principals through the services of those resources (``kms:ViaService``), nothing
else. An imported key is used by its ARN and its policy is left to its owner (a warning says what it needs).
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Annotations, Match, Template
from iam_eval import is_allowed
from synth import TOKEN, Synth, render_intrinsics, resources_of

from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.encryption import (
    SERVICES_BY_RESOURCE_TYPE,
    PlatformKey,
    encrypt_new_log_groups_and_tables,
    encrypt_platform_resources,
)
from hyperpod_tenancy.errors import TenancyError

REGION = "us-east-1"
#: Resource types encrypted with the key, and the property path holding it.
KEY_PROPERTIES: dict[str, tuple[str, ...]] = {
    "AWS::Logs::LogGroup": ("KmsKeyId",),
    "AWS::SageMaker::Domain": ("KmsKeyId",),
    "AWS::FSx::FileSystem": ("KmsKeyId",),
    "AWS::Athena::WorkGroup": (
        "WorkGroupConfiguration",
        "ResultConfiguration",
        "EncryptionConfiguration",
        "KmsKey",
    ),
}
CRYPTO_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt", "kms:GenerateDataKey")


def _platform_key(synth: Synth) -> tuple[str, dict[str, Any]]:
    keys = {
        k: v
        for k, v in resources_of(synth.cluster, "AWS::KMS::Key").items()
        if k.startswith("ClusterPlatformKey")
    }
    assert len(keys) == 1, sorted(keys)
    return next(iter(keys.items()))


def _key_references(synth: Synth) -> list[Any]:
    """Every way a template can name the created key: its GetAtt Arn, or the import of the export of it."""
    logical_id, _ = _platform_key(synth)
    arn = {"Fn::GetAtt": [logical_id, "Arn"]}
    exports = [
        {"Fn::ImportValue": o["Export"]["Name"]}
        for o in synth.cluster.get("Outputs", {}).values()
        if o["Value"] == arn
    ]
    return [arn, *exports]


def _get(properties: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = properties
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _bucket_key(bucket: dict[str, Any]) -> tuple[Any, bool]:
    (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    default = rule["ServerSideEncryptionByDefault"]
    return (default.get("KMSMasterKeyID") if default["SSEAlgorithm"] == "aws:kms" else None), bool(
        rule.get("BucketKeyEnabled")
    )


def _encrypted_resources(synth: Synth) -> dict[str, Any]:
    """``<stack>/<logical id>`` -> the key value, for every resource of :data:`KEY_PROPERTIES` and every bucket."""
    found: dict[str, Any] = {}
    for stack, template in synth.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] in KEY_PROPERTIES:
                found[f"{stack}/{logical_id}"] = _get(
                    resource["Properties"], KEY_PROPERTIES[resource["Type"]]
                )
            elif resource["Type"] == "AWS::S3::Bucket":
                key, bucket_key = _bucket_key(resource)
                found[f"{stack}/{logical_id}"] = key if bucket_key or key is None else ("no bucket key", key)
    return found


def _listed(name: str) -> bool:
    """Whether a resource is one the key must encrypt (the access-log and lifecycle buckets keep SSE-S3)."""
    return not ("AccessLogs" in name or "LifecycleBucket" in name)


def test_every_listed_resource_uses_the_created_key(kms_reference: Synth) -> None:
    references = _key_references(kms_reference)
    found = _encrypted_resources(kms_reference)
    listed = {name: value for name, value in found.items() if _listed(name)}
    types = {kms_reference.templates[n.split("/")[0]]["Resources"][n.split("/")[1]]["Type"] for n in listed}
    assert types == {*KEY_PROPERTIES, "AWS::S3::Bucket"}
    assert {n for n, v in listed.items() if v not in references} == set()
    # one log group per handler at least, in the cluster and chargeback stacks
    assert sum(1 for n in listed if "Logs" in n or "LogGroup" in n) >= 10
    # the access-log target buckets and the lifecycle-script bucket keep SSE-S3
    assert {n: v for n, v in found.items() if not _listed(n)} == {n: None for n in found if not _listed(n)}


def test_the_created_key_is_retained_rotated_and_grants_exactly_the_services_using_it(
    kms_reference: Synth,
) -> None:
    _, key = _platform_key(kms_reference)
    assert key["DeletionPolicy"] == "Retain" and key["UpdateReplacePolicy"] == "Retain"
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = {s["Sid"]: s for s in key["Properties"]["KeyPolicy"]["Statement"]}
    assert set(statements) == {"KeyAdministration", "CloudWatchLogs", "UseThroughServices", "DataExports"}
    assert all(s["Effect"] == "Allow" for s in statements.values())
    # administration does not include using the key
    assert not [a for a in statements["KeyAdministration"]["Action"] if a.startswith(CRYPTO_ACTIONS)]
    services = {p for s in statements.values() for p in _list(s["Principal"].get("Service", []))}
    assert services == {
        f"logs.{REGION}.amazonaws.com",
        "bcm-data-exports.amazonaws.com",
        "billingreports.amazonaws.com",
    }
    assert statements["CloudWatchLogs"]["Condition"] == {
        "ArnLike": {"kms:EncryptionContext:aws:logs:arn": f"arn:aws:logs:{REGION}:111122223333:log-group:*"}
    }
    # the services that hold data encrypted with the key, from the resources that use it: exactly those
    types = {r["Type"] for tpl in kms_reference.templates.values() for r in tpl["Resources"].values()}
    using = types & set(SERVICES_BY_RESOURCE_TYPE)
    expected = {f"{s}.{REGION}.amazonaws.com" for t in using for s in SERVICES_BY_RESOURCE_TYPE[t]}
    through = statements["UseThroughServices"]["Condition"]["StringEquals"]
    assert set(through["kms:ViaService"]) == expected
    assert expected == {  # dynamodb: the POSIX identity webhook's person -> UID table
        f"{s}.{REGION}.amazonaws.com"
        for s in ("s3", "sagemaker", "elasticfilesystem", "ec2", "fsx", "dynamodb")
    }
    assert through["kms:CallerAccount"] == "111122223333"
    assert statements["DataExports"]["Condition"]["StringEquals"] == {
        "aws:SourceAccount": "111122223333",
        "kms:ViaService": f"s3.{REGION}.amazonaws.com",
    }


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _role_statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and any(
            r.get("Ref", "").startswith(role_prefix) for r in resource["Properties"].get("Roles", [])
        ):
            found += resource["Properties"]["PolicyDocument"]["Statement"]
    return found


def test_team_roles_use_the_key_through_s3_and_studio_volumes_through_sagemaker_and_ec2(
    kms_reference: Synth,
) -> None:
    references = _key_references(kms_reference)
    for team in kms_reference.platform.hosted_teams:
        template = kms_reference.team(team.name)
        for role in ("TenantWorkloadRole", "TenantExecutionRole"):
            kms_statements = [
                s for s in _role_statements(template, role) if "kms:Decrypt" in _list(s["Action"])
            ]
            s3 = [
                s
                for s in kms_statements
                if s["Condition"]["StringEquals"]["kms:ViaService"] == f"s3.{REGION}.amazonaws.com"
            ]
            assert len(s3) == 1, (team.name, role, kms_statements)
            assert set(_list(s3[0]["Action"])) == {"kms:Decrypt", "kms:GenerateDataKey"}
            assert s3[0]["Resource"] in references
        volumes = [
            s
            for s in _role_statements(template, "TenantExecutionRole")
            if "kms:CreateGrant" in _list(s["Action"])
        ]
        assert len(volumes) == 1
        assert set(volumes[0]["Condition"]["StringEquals"]["kms:ViaService"]) == {
            f"sagemaker.{REGION}.amazonaws.com",
            f"ec2.{REGION}.amazonaws.com",
        }


def test_the_chargeback_functions_can_use_the_key_of_the_report_bucket(kms_reference: Synth) -> None:
    assert kms_reference.stage.chargeback_stack is not None
    template = kms_reference.templates[kms_reference.stage.chargeback_stack.stack_name]
    references = _key_references(kms_reference)
    for function in ("ChargebackMonthlyJob", "ChargebackNodeInventory", "ChargebackEvictionCollector"):
        statements = _role_statements(template, function)
        assert any(
            s["Resource"] in references and {"kms:GenerateDataKey*", "kms:Encrypt"} & set(_list(s["Action"]))
            for s in statements
        ), function


def test_an_imported_key_is_used_by_its_arn_and_its_policy_is_left_to_its_owner(
    kms_arn_reference: Synth,
) -> None:
    found = _encrypted_resources(kms_arn_reference)
    listed = {n: v for n, v in found.items() if _listed(n)}
    assert listed and set(listed.values()) == {platforms.KMS_KEY_ARN}
    assert not [
        k
        for tpl in kms_arn_reference.templates.values()
        for k in resources_of(tpl, "AWS::KMS::Key")
        if "PlatformKey" in k
    ]
    Annotations.from_stack(kms_arn_reference.stage.cluster_stack).has_warning(
        "*", Match.string_like_regexp(r"HPT-KMS-IMPORTED-KEY-POLICY")
    )


def test_without_a_key_every_service_keeps_its_aws_managed_key(reference: Synth) -> None:
    found = _encrypted_resources(reference)
    assert {n for n, v in found.items() if v is not None} == set()
    assert not [k for k in resources_of(reference.cluster, "AWS::KMS::Key") if "PlatformKey" in k]


# ---------------------------------------------------------------------------------------- DynamoDB tables
def _table_stack(*, with_key: bool, encrypt: Any = encrypt_platform_resources) -> Template:
    platform = platforms.kms_platform() if with_key else platforms.reference_platform()
    stack = cdk.Stack(
        cdk.App(), "Tables", env=cdk.Environment(account=platform.account, region=platform.region)
    )
    key = PlatformKey(stack, "PlatformKey", platform=platform) if with_key else None
    encrypt(stack, key)
    dynamodb.Table(
        stack, "Table", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    return Template.from_stack(stack)


#: The aspect of the shared stacks, and the property injection of the stacks that exist once per team.
ENCRYPTORS = pytest.mark.parametrize(
    "encrypt", [encrypt_platform_resources, encrypt_new_log_groups_and_tables], ids=["aspect", "injection"]
)


@ENCRYPTORS
def test_dynamodb_tables_of_the_platform_stacks_are_encrypted_with_the_key(encrypt: Any) -> None:
    template = _table_stack(with_key=True, encrypt=encrypt)
    (key_id,) = template.find_resources("AWS::KMS::Key")
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "SSESpecification": {
                "SSEEnabled": True,
                "SSEType": "KMS",
                "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]},
            }
        },
    )
    (key,) = template.find_resources("AWS::KMS::Key").values()
    (through,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s["Sid"] == "UseThroughServices"]
    assert through["Condition"]["StringEquals"]["kms:ViaService"] == [f"dynamodb.{REGION}.amazonaws.com"]


def test_without_a_key_a_table_records_why_checkov_may_skip_the_key_check() -> None:
    template = _table_stack(with_key=False)
    (table,) = template.find_resources("AWS::DynamoDB::Table").values()
    (skip,) = table["Metadata"]["checkov"]["skip"]
    assert skip["id"] == "CKV_AWS_119" and "sets no encryption.kmsKey" in skip["comment"]
    assert "SSESpecification" not in table["Properties"]


@ENCRYPTORS
def test_a_log_group_added_later_gets_the_key_and_one_naming_its_own_key_keeps_it(encrypt: Any) -> None:
    """What a team stack gains after its tenant registered the encryption (an extension's function logs)."""
    platform = platforms.kms_platform()
    stack = cdk.Stack(
        cdk.App(), "Logs", env=cdk.Environment(account=platform.account, region=platform.region)
    )
    key = PlatformKey(stack, "PlatformKey", platform=platform)
    encrypt(stack, key)
    encrypt(stack, key)  # once per stack, whoever asks again
    own = kms.Key(stack, "OwnKey")
    logs.LogGroup(stack, "Added", retention=logs.RetentionDays.ONE_WEEK)
    logs.LogGroup(stack, "Own", encryption_key=own)
    template = Template.from_stack(stack)
    (platform_key_id,) = [k for k in template.find_resources("AWS::KMS::Key") if k.startswith("PlatformKey")]
    (own_id,) = [k for k in template.find_resources("AWS::KMS::Key") if k.startswith("OwnKey")]
    groups = {
        k.rstrip("0123456789ABCDEF"): v["Properties"]
        for k, v in template.find_resources("AWS::Logs::LogGroup").items()
    }
    assert groups["Added"] == {"KmsKeyId": {"Fn::GetAtt": [platform_key_id, "Arn"]}, "RetentionInDays": 7}
    assert groups["Own"]["KmsKeyId"] == {"Fn::GetAtt": [own_id, "Arn"]}


def test_without_a_key_the_team_stacks_log_groups_record_why_checkov_may_skip_the_key_check(
    reference: Synth,
) -> None:
    for name in reference.stage.team_stacks:
        for group in resources_of(reference.team(name), "AWS::Logs::LogGroup").values():
            (skip,) = group["Metadata"]["checkov"]["skip"]
            assert skip["id"] == "CKV_AWS_158" and "sets no encryption.kmsKey" in skip["comment"], name


def test_an_imported_cluster_needs_the_arn_of_a_created_key() -> None:
    platform = platforms.kms_platform()
    stack = cdk.Stack(
        cdk.App(), "Tenants", env=cdk.Environment(account=platform.account, region=platform.region)
    )
    with pytest.raises(TenancyError, match=r"encryption.kmsKey is `create`, but this cluster is imported"):
        SharedHyperPodCluster.from_attributes(
            stack,
            "Shared",
            platform=platform,
            eks_cluster_name="shared-gpu",
            kubectl_provider_service_token="arn:aws:lambda:us-east-1:111122223333:function:kubectl",
            hyperpod_cluster_arn=platforms.CLUSTER_ARN,
            vpc_id="vpc-0123456789abcdef0",
            private_subnet_ids=["subnet-00", "subnet-01"],
            api_endpoint_security_group_id="sg-0123456789abcdef0",
            data_bucket_name="data",
            file_system_id=platforms.FSX.file_system_id,
            file_system_dns_name=platforms.FSX.dns_name,
            file_system_mount_name=platforms.FSX.mount_name,
            network_policy_enforced=True,
        )


def test_the_inference_operator_reads_and_writes_its_buckets_through_s3_only(kms_reference: Synth) -> None:
    """The TLS bucket and the data bucket are SSE-KMS under the key: the operator's execution role writes
    certificates, the S3 Mountpoint driver reads model weights; each may use the key through S3 only, the
    load balancer controller and KEDA not at all."""
    references = _key_references(kms_reference)
    cluster = kms_reference.cluster
    roles = {
        logical_id
        for logical_id, r in resources_of(cluster, "AWS::IAM::Role").items()
        if logical_id.startswith("ClusterInferenceOperator")
    }
    assert roles, "the reference platform has an inference team: the operator's roles exist"
    granted = {}
    for role in sorted(roles):
        granted[role] = [
            s
            for s in _role_statements(cluster, role)
            if s.get("Resource") in references and "kms:Decrypt" in _list(s["Action"])
        ]
    with_key = {role for role, statements in granted.items() if statements}
    assert {r for r in with_key if "ExecutionRole" in r} and {r for r in with_key if "S3CsiRole" in r}, (
        with_key
    )
    assert not {r for r in with_key if "LoadBalancer" in r or "Keda" in r}, with_key
    for role in with_key:
        (statement,) = granted[role]
        assert statement["Condition"]["StringEquals"]["kms:ViaService"] == f"s3.{REGION}.amazonaws.com"


def test_the_posix_identity_table_and_its_server_use_the_key_through_dynamodb(kms_reference: Synth) -> None:
    """The person -> UID table is encrypted with the platform key, and only through DynamoDB may the webhook's
    role use the key."""
    references = _key_references(kms_reference)
    cluster = kms_reference.cluster
    tables = {k: v for k, v in resources_of(cluster, "AWS::DynamoDB::Table").items() if "PosixIdentity" in k}
    assert len(tables) == 1, sorted(tables)
    (table,) = tables.values()
    sse = table["Properties"]["SSESpecification"]
    assert sse["SSEEnabled"] is True and sse["KMSMasterKeyId"] in references
    roles = [k for k in resources_of(cluster, "AWS::IAM::Role") if "PosixIdentity" in k]
    assert len(roles) == 1, roles
    statements = [
        s
        for s in _role_statements(cluster, roles[0])
        if s.get("Resource") in references and "kms:Decrypt" in _list(s["Action"])
    ]
    assert len(statements) == 1, statements
    assert statements[0]["Condition"]["StringEquals"]["kms:ViaService"] == f"dynamodb.{REGION}.amazonaws.com"


def _permission_set_policy(template: dict[str, Any]) -> dict[str, Any]:
    (permission_set,) = resources_of(template, "AWS::SSO::PermissionSet").values()
    policy = permission_set["Properties"]["InlinePolicy"]
    return json.loads(policy) if isinstance(policy, str) else dict(policy)


def test_team_members_read_and_write_their_s3_data_under_the_key_through_s3_only(
    kms_reference: Synth,
) -> None:
    """A person of the team (the permission set's role) reads and writes ``teams/<team>/`` of the SSE-KMS data
    bucket: S3 asks KMS for a data key to upload and to decrypt to download ("Using server-side encryption with AWS
    KMS keys", S3 User Guide, Permissions), and the key policy defers to IAM. Exactly Decrypt and GenerateDataKey,
    through S3 in the region, on the platform key: nothing more."""
    references = _key_references(kms_reference)
    via_s3 = {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}
    for team in kms_reference.platform.hosted_teams:
        policy = _permission_set_policy(kms_reference.team(team.name))
        kms_statements = [
            s for s in policy["Statement"] if any(a.startswith("kms:") for a in _list(s["Action"]))
        ]
        assert len(kms_statements) == 1, (team.name, kms_statements)
        assert kms_statements[0]["Resource"] in references
        rendered = render_intrinsics(policy)
        for action in ("kms:Decrypt", "kms:GenerateDataKey"):
            assert is_allowed(rendered, action, TOKEN, via_s3), (team.name, action)
            assert not is_allowed(
                rendered, action, TOKEN, {"kms:ViaService": f"dynamodb.{REGION}.amazonaws.com"}
            )
            assert not is_allowed(rendered, action, TOKEN, {})
            assert not is_allowed(rendered, action, "arn:aws:kms:us-east-1:111122223333:key/other", via_s3)
        for action in (
            "kms:Encrypt",
            "kms:ReEncryptFrom",
            "kms:CreateGrant",
            "kms:GenerateDataKeyWithoutPlaintext",
            "kms:ScheduleKeyDeletion",
        ):
            assert not is_allowed(rendered, action, TOKEN, via_s3), (team.name, action)


def test_without_a_key_the_permission_set_has_no_kms_grant(reference: Synth) -> None:
    for team in reference.platform.hosted_teams:
        policy = _permission_set_policy(reference.team(team.name))
        assert not [s for s in policy["Statement"] if any(a.startswith("kms:") for a in _list(s["Action"]))]

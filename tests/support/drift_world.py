"""A deployed platform for the drift audit's tests: moto holds Identity Center, IAM, SSM and the Studio domains;
the EKS access entries and Task Governance compute quotas (which moto 5.2 does not serve) are answered by botocore
``Stubber`` clients, whose responses botocore validates against its service models.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import secrets
from typing import Any

import boto3
from botocore.stub import Stubber
from platforms import CLUSTER_ARN

from hyperpod_tenancy.constructs.drift_audit import AUDIT_GROUP, team_expectation
from hyperpod_tenancy.policy import FairnessBackend, Platform, names
from hyperpod_tenancy.runtime.drift_audit import AwsClients, Finding, TeamExpectation
from hyperpod_tenancy.runtime.sso_role_resolver import SSO_ROLE_PATH_PREFIX
from hyperpod_tenancy.tools.audit.aws import run_aws_checks
from hyperpod_tenancy.tools.audit.model import team_stack

TRUST = json.dumps({"Version": "2012-10-17", "Statement": []})
NOW = dt.datetime.now(dt.UTC)


def _later() -> dt.datetime:
    """A moment after every role created so far (an access entry is created after its role)."""
    return dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)


class AwsWorld:
    """A deployed platform: moto holds Identity Center, IAM, SSM and Studio; access entries and quotas are kept here.

    ``entries`` (principal ARN → ``AccessEntry``) and ``quotas`` (name → ``DescribeComputeQuota``) are what the
    stubbed EKS and SageMaker clients answer at :meth:`run`.
    """

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.session = boto3.session.Session(region_name=platform.region)
        self.sso = self.session.client("sso-admin")
        self.iam = self.session.client("iam")
        self.studio = self.session.client("sagemaker")
        ssm = self.session.client("ssm")
        self.instance = platform.identity_center.instance_arn
        self.entries: dict[str, dict[str, Any]] = {}
        self.quotas: dict[str, dict[str, Any]] = {}
        self.expectations: dict[str, TeamExpectation] = {}
        self.permission_sets: dict[str, str] = {}
        self.sso_roles: dict[str, dict[str, Any]] = {}
        self.execution_roles: dict[str, str] = {}
        cluster = platform.cluster.name
        # an access entry of the cluster's own: the nodes (EC2_LINUX entries carry system:nodes implicitly)
        self.entries["arn:aws:iam::123456789012:role/hyperpod-node-role"] = self._entry(
            "arn:aws:iam::123456789012:role/hyperpod-node-role", []
        )
        collector = "arn:aws:iam::123456789012:role/ml-platform-Chargeback-EvictionCollector"
        self.entries[collector] = self._entry(collector, ["hyperpod-tenancy:eviction-collector"])
        audit = "arn:aws:iam::123456789012:role/ml-platform-Chargeback-DriftAudit"
        self.entries[audit] = self._entry(audit, [AUDIT_GROUP])
        for team in platform.hosted_teams:
            name = team.identity.permission_set_name or names.permission_set(team.name)
            arn = self.sso.create_permission_set(Name=name, InstanceArn=self.instance)["PermissionSet"][
                "PermissionSetArn"
            ]
            self.permission_sets[team.name] = arn
            self.sso.create_account_assignment(
                InstanceArn=self.instance,
                TargetId=platform.account,
                TargetType="AWS_ACCOUNT",
                PermissionSetArn=arn,
                PrincipalType="GROUP",
                PrincipalId=team.identity.group_id,
            )
            role = self.new_sso_role(team.name)
            execution = self.iam.create_role(
                RoleName=f"{team.name}-ExecutionRole", AssumeRolePolicyDocument=TRUST
            )["Role"]["Arn"]
            self.execution_roles[team.name] = execution
            group = names.kubernetes_group(team.name)
            self.entries[role["Arn"]] = self._entry(role["Arn"], [group])
            if team.studio:
                self._domain(team.name, execution)
                self.entries[execution] = self._entry(execution, [group])
            expectation = team_expectation(
                platform,
                team,
                stack=team_stack(platform, team.name),
                permission_set_arn=arn,
                sso_role_arn=role["Arn"],
                execution_role_arn=execution,
                cluster_arn=CLUSTER_ARN,
                compute_quota=platform.fairness_backend is FairnessBackend.TASK_GOVERNANCE,
            )
            self.expectations[team.name] = expectation
            ssm.put_parameter(
                Name=names.drift_audit_record(cluster, team.name),
                Value=json.dumps(expectation.to_record()),
                Type="String",
            )
            if expectation.compute_quota:
                rendered = expectation.compute_quota
                quota_id = secrets.token_hex(6)
                self.quotas[rendered["Name"]] = {
                    "ComputeQuotaArn": f"arn:aws:sagemaker:us-east-1:123456789012:compute-quota/{quota_id}",
                    "ComputeQuotaId": quota_id,
                    "Name": rendered["Name"],
                    "ComputeQuotaVersion": 1,
                    "Status": "Created",
                    "ClusterArn": rendered["ClusterArn"],
                    "ComputeQuotaConfig": copy.deepcopy(rendered["ComputeQuotaConfig"]),
                    "ComputeQuotaTarget": copy.deepcopy(rendered["ComputeQuotaTarget"]),
                    "ActivationState": rendered["ActivationState"],
                    "CreationTime": NOW,
                }

    def delete_assignment(self, team: str) -> None:
        """Remove the assignment of ``team``'s permission set to its group in the platform account."""
        self.sso.delete_account_assignment(
            InstanceArn=self.instance,
            TargetId=self.platform.account,
            TargetType="AWS_ACCOUNT",
            PermissionSetArn=self.permission_sets[team],
            PrincipalType="GROUP",
            PrincipalId=self.platform.team(team).identity.group_id,
        )

    def new_sso_role(self, team: str) -> dict[str, Any]:
        """Create the role Identity Center provisions for ``team``'s permission set (a new random suffix)."""
        name = self.expectation_name(team)
        role: dict[str, Any] = self.iam.create_role(
            RoleName=f"AWSReservedSSO_{name}_{secrets.token_hex(8)}",
            Path=SSO_ROLE_PATH_PREFIX,
            AssumeRolePolicyDocument=TRUST,
        )["Role"]
        self.sso_roles[team] = role
        return role

    def expectation_name(self, team: str) -> str:
        spec = self.platform.team(team)
        return spec.identity.permission_set_name or names.permission_set(spec.name)

    def _domain(self, team: str, execution_role: str) -> None:
        self.studio.create_domain(
            DomainName=names.studio_domain(self.platform.cluster.name, team),
            AuthMode="SSO",
            DefaultUserSettings={"ExecutionRole": execution_role},
            SubnetIds=["subnet-0123456789abcdef0"],
            VpcId="vpc-0123456789abcdef0",
        )

    def replace_domain(self, team: str, execution_role: str) -> None:
        """Delete the team's domain and create it again with another execution role (moto has no UpdateDomain)."""
        name = names.studio_domain(self.platform.cluster.name, team)
        domain = next(d for d in self.studio.list_domains()["Domains"] if d["DomainName"] == name)
        self.studio.delete_domain(DomainId=domain["DomainId"])
        self._domain(team, execution_role)

    def _entry(self, arn: str, groups: list[str], *, created: dt.datetime | None = None) -> dict[str, Any]:
        return {
            "clusterName": self.platform.cluster.name,
            "principalArn": arn,
            "kubernetesGroups": groups,
            "accessEntryArn": f"arn:aws:eks:us-east-1:123456789012:access-entry/{self.platform.cluster.name}/role/x",
            "createdAt": created or _later(),
            "modifiedAt": created or _later(),
            "tags": {},
            "username": "arn:aws:sts::123456789012:assumed-role/x/{{SessionName}}",
            "type": "STANDARD",
        }

    def add_entry(self, arn: str, groups: list[str], *, created: dt.datetime | None = None) -> None:
        self.entries[arn] = self._entry(arn, groups, created=created)

    def _eks(self) -> tuple[Any, Stubber]:
        client = self.session.client("eks")
        stub = Stubber(client)
        cluster = self.platform.cluster.name
        stub.add_response(
            "list_access_entries", {"accessEntries": list(self.entries)}, {"clusterName": cluster}
        )
        for arn, entry in self.entries.items():
            stub.add_response(
                "describe_access_entry", {"accessEntry": entry}, {"clusterName": cluster, "principalArn": arn}
            )
        return client, stub

    def _quotas(self) -> tuple[Any, Stubber]:
        client = self.session.client("sagemaker")
        stub = Stubber(client)
        if not any(e.compute_quota for e in self.expectations.values()):
            return client, stub
        summaries = [
            {k: q[k] for k in q if k not in ("ComputeQuotaArn",)} | {"ComputeQuotaArn": q["ComputeQuotaArn"]}
            for q in self.quotas.values()
        ]
        stub.add_response(
            "list_compute_quotas", {"ComputeQuotaSummaries": summaries}, {"ClusterArn": CLUSTER_ARN}
        )
        for expectation in sorted(self.expectations.values(), key=lambda e: e.team):  # the audit's order
            quota = self.quotas.get(str((expectation.compute_quota or {}).get("Name")))
            if expectation.compute_quota and quota is not None:
                stub.add_response(
                    "describe_compute_quota", dict(quota), {"ComputeQuotaId": quota["ComputeQuotaId"]}
                )
        return client, stub

    def clients(self) -> tuple[AwsClients, list[Stubber]]:
        """The clients of a run: moto's, and the stubbed EKS and compute quota ones (activated)."""
        eks, eks_stub = self._eks()
        quotas, quota_stub = self._quotas()
        eks_stub.activate()
        quota_stub.activate()
        clients = AwsClients(sso=self.sso, iam=self.iam, eks=eks, studio=self.studio, quotas=quotas)
        return clients, [eks_stub, quota_stub]

    def run(self) -> list[Finding]:
        """Run the command's AWS checks; every stubbed response must have been asked for."""
        clients, stubs = self.clients()
        findings = run_aws_checks(self.platform, session=self.session, clients=clients)
        for stub in stubs:
            stub.assert_no_pending_responses()
        return findings

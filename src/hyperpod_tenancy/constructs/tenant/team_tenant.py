"""``TeamTenant``: one team's identity, cluster access, Studio domain, data, quota and namespace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import aws_cdk as cdk
import cdk8s
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_sso as sso
from constructs import Construct, IValidation

from hyperpod_tenancy.constructs._private.annotations import (
    warn,
)
from hyperpod_tenancy.constructs._private.extensions import ChartExtensions, chart_objects
from hyperpod_tenancy.constructs._private.kubectl import kubernetes_manifest
from hyperpod_tenancy.constructs._private.memo import once, stack_of
from hyperpod_tenancy.constructs._private.team_iam import (
    S3_OBJECT_ACTIONS,
    extend_policy,
    team_prefix,
)
from hyperpod_tenancy.constructs.backends import TeamFairness, backend_for
from hyperpod_tenancy.constructs.backends.task_governance import NAMESPACE_WAIT, ComputeQuota
from hyperpod_tenancy.constructs.drift_audit import (
    audit_record_parameter,
    kube_record_parameter,
    team_expectation,
)
from hyperpod_tenancy.constructs.encryption import encrypt_new_log_groups_and_tables
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.tenant.identity import build_identity
from hyperpod_tenancy.constructs.tenant.registry import register_tenant, registered_tenants
from hyperpod_tenancy.constructs.tenant.roles import build_roles
from hyperpod_tenancy.constructs.tenant.studio import (
    STUDIO_LIFECYCLE_SCRIPT,
    StudioApplicationRecord,
    build_studio,
    studio_lifecycle_script,
)
from hyperpod_tenancy.constructs.tenant.studio_peering import (
    StudioPeering,
    peer_team_studio,
    studio_execution_role_arn,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding, posix_identity
from hyperpod_tenancy.k8s.admission_check import check_team_objects
from hyperpod_tenancy.k8s.audit_record import kube_expectation
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT, FsxVolume
from hyperpod_tenancy.policy import Team, names
from hyperpod_tenancy.policy.plan import TeamPlan

__all__ = ["NAMESPACE_WAIT", "STUDIO_LIFECYCLE_SCRIPT", "TeamTenant", "studio_lifecycle_script", "tenants_of"]

#: Object actions :meth:`TeamTenant.grant_read_data` grants under the team prefix.
_READ_OBJECT_ACTIONS = ("s3:GetObject",)


@jsii.implements(IValidation)
class _RequireNetworkPolicyEnforcement:
    """A team's NetworkPolicies are only YAML unless the CNI enforces them: refuse to synthesize then."""

    def __init__(self, cluster: IHyperPodCluster, team: str) -> None:
        self._cluster = cluster
        self._team = team

    def validate(self) -> list[str]:
        if self._cluster.network_policy_enforced:
            return []
        return [
            f"[HPT-NETWORK-POLICY-ENFORCEMENT] team {self._team!r} relies on NetworkPolicies for isolation, but the "
            'cluster\'s vpc-cni add-on does not set enableNetworkPolicy="true": the policies would be accepted and '
            "never enforced. Keep the add-on configuration SharedHyperPodCluster sets."
        ]


def _stack_path(scope: Construct) -> str:
    """Return the path of the stack ``scope`` is in (asked of the CDK once per stack)."""
    stack = stack_of(scope)
    return once(stack, "path", lambda: stack.node.path)


def tenants_of(cluster: IHyperPodCluster) -> dict[str, TeamTenant]:
    """Return the tenants created on ``cluster`` in this app so far, by team name (a copy)."""
    return {team: cast("TeamTenant", tenant) for team, tenant in registered_tenants(cluster).items()}


class TeamTenant(Construct):
    """Everything one team needs on the shared cluster, isolated from the other teams.

    Creates: an IAM Identity Center permission set (inline policy: describe this EKS and HyperPod cluster,
    the team's S3 prefix, its Studio domain) assigned to the team's group; a custom resource that resolves the
    ``AWSReservedSSO_<PermissionSet>_<hash>`` role Identity Center provisions (through the cluster's one shared
    provider, ``IHyperPodCluster.sso_role_service_token``); EKS access entries (full ARN
    with path) for that role and the team's Studio execution role, mapped to the team's Kubernetes group only
    (no access policy, never cluster-admin); a SageMaker domain ``<cluster>-<team>`` (Identity Center auth, VPC
    only, retained) whose Identity Center application is assigned to the team's group (an ``AWS::SSO::
    ApplicationAssignment``: without it no user sees the domain) and whose security group may reach the private
    EKS API endpoint on 443; the team's execution role (trusted by SageMaker from this account only; S3 under
    ``teams/<team>/`` plus the apps and spaces of the team's own domain) and workload role (EKS Pod Identity, S3
    under ``teams/<team>/`` only); the fairness objects (a Task Governance ``ComputeQuota``, or the Kueue
    ClusterQueue/LocalQueue in the chart); and the team chart (namespace ``hyperpod-ns-<team>`` labels with an
    explicit ``allowed``/``denied`` for every platform priority class, so that removing a class from the policy
    revokes it on the next deploy, ``hyperpod-tenancy.io/borrows`` and ``hyperpod-tenancy.io/preempts-own-work``;
    RBAC, default-deny NetworkPolicies, pod security, LimitRange, ServiceAccount, the FSx directory Job, which
    waits for the first Schedulable HyperPod node however long its deep health checks take, and the PV/PVC).

    Identity Center resources are created in the stack's region (``identityCenter.region`` must equal ``region``).
    With ``identityCenter.account`` another account, this stack holds only the grants, as the policy the permission
    set references; ``PlatformStage`` puts the rest in the team's Identity Center and access stacks.

    Args:
        scope: parent construct (a :class:`~hyperpod_tenancy.stacks.TeamStack` keeps each team in its own stack).
        id: construct ID.
        cluster: the shared cluster (created in this app, or imported with
            :meth:`SharedHyperPodCluster.from_attributes <hyperpod_tenancy.constructs.SharedHyperPodCluster.from_attributes>`).
        team: name of a team of the cluster's platform policy.
        sso_role_timeout: how long to wait for Identity Center to provision the team's role, at most 1 hour (the
            cluster's shared role-lookup provider gives up after that). Default: 15 minutes.
        sso_start_url: the AWS access portal URL of the Identity Center instance, which the Studio lifecycle script
            writes into the members' ``~/.aws/config``. Default: the CDK context ``hyperpod-tenancy:ssoStartUrl``
            (``cdk.json``), else none (the script then tells the user to run ``aws configure sso``).

    Attributes:
        cluster, team, namespace, kubernetes_group, service_account, execution_role, workload_role,
        permission_set, sso_role_arn, access_entries, chart, chart_manifest: see each attribute.
        domain, studio_assignment, studio_security_group: Studio resources (``None`` when ``studio: false``).
        fairness: what the fairness backend built for the team; compute_quota: its Task Governance quota with
            its attributes typed (:class:`~hyperpod_tenancy.constructs.backends.task_governance.ComputeQuota`:
            ARN, ID, name, the resource; ``None`` with Kueue, whose queues are in the chart, or another backend).

    Raises:
        TenancyError: the team is not in the policy, or it is flagged for a dedicated cluster, or
            ``sso_role_timeout`` is longer than 1 hour.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        team: str,
        sso_role_timeout: cdk.Duration | None = None,
        sso_start_url: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        platform = cluster.platform
        #: The team resolved: its names, queues, classes, quotas and cost center.
        self.plan: TeamPlan = register_tenant(self, cluster, team)
        spec = self.plan.team
        #: The shared cluster.
        self.cluster = cluster
        #: The team's policy.
        self.team: Team = spec
        #: Namespace of the team, ``hyperpod-ns-<team>``.
        self.namespace = self.plan.namespace
        #: Kubernetes group the team's access entries map to.
        self.kubernetes_group = self.plan.kubernetes_group
        #: ServiceAccount of the team's workloads (bound to :attr:`workload_role`).
        self.service_account = DEFAULT_SERVICE_ACCOUNT
        self.node.add_validation(_RequireNetworkPolicyEnforcement(cluster, team))
        # once per team: property injection, not an aspect visiting every construct of the stack at synthesis
        encrypt_new_log_groups_and_tables(self, cluster.platform_key)
        context_url = self.node.try_get_context(onboarding.SSO_START_URL_CONTEXT)
        context_url = context_url if isinstance(context_url, str) and context_url else None
        #: What a team member needs (:func:`hyperpod_tenancy.k8s.onboarding.onboarding_facts`): the values of the
        #: team stack's outputs and of the Studio lifecycle script, the same ones ``hyperpod-tenancy onboarding``
        #: prints.
        self.onboarding: onboarding.OnboardingFacts = onboarding.onboarding_facts(
            platform,
            team,
            sso_start_url=sso_start_url or context_url,
        )

        roles = build_roles(
            self, cluster=cluster, team=spec, namespace=self.namespace, service_account=self.service_account
        )
        #: Studio execution role: S3 under ``teams/<team>/`` and the apps and spaces of the team's own domain only;
        #: trusted by SageMaker from this account only (``aws:SourceAccount``). ``None`` for a team in its own account.
        self.execution_role: iam.Role | None = roles.execution_role
        #: Role of the team's pods (EKS Pod Identity on :attr:`service_account`): S3 under ``teams/<team>/`` only; for
        #: a team in its own account, the first link of the chain to its target role there, and nothing else.
        self.workload_role: iam.Role = roles.workload_role
        #: ARN of the role the team's pods act as in its own account (``None`` in the cluster's account).
        self.target_role_arn: str | None = roles.target_role_arn
        studio = (
            build_studio(
                self, cluster=cluster, team=spec, facts=self.onboarding, execution_role=self.execution_role
            )
            if spec.studio and self.execution_role is not None
            else None
        )
        #: The team's SageMaker Studio domain (``None`` when ``studio: false``), retained on delete.
        self.domain: sagemaker.CfnDomain | None = studio.domain if studio else None
        #: Assignment of the team's Identity Center group to the domain's SSO application (``None`` without Studio).
        self.studio_assignment: sso.CfnApplicationAssignment | None = studio.assignment if studio else None
        #: With Identity Center in another account: the domain's application ARN published for it, and the one role
        #: that may read it (``None`` otherwise, and without Studio).
        self.studio_application: StudioApplicationRecord | None = (
            studio.application_record if studio else None
        )
        #: Security group of the team's Studio apps, admitted to the EKS API endpoint on 443 (``None`` without Studio).
        self.studio_security_group: ec2.SecurityGroup | None = studio.security_group if studio else None
        #: The Studio lifecycle configurations of the team's domain (JupyterLab, Code Editor; empty without Studio).
        self.lifecycle_configs: list[sagemaker.CfnStudioLifecycleConfig] = (
            list(studio.lifecycle_configs) if studio else []
        )
        #: The cluster's side of a Studio domain in the team's own account: peering, routes, reader (or ``None``).
        self.studio_peering: StudioPeering | None = (
            peer_team_studio(self, cluster=cluster, team=spec)
            if platform.studio_in_team_account(spec)
            else None
        )
        access = build_identity(
            self,
            cluster=cluster,
            team=spec,
            domain=self.domain,
            execution_role=self.execution_role,
            kubernetes_group=self.kubernetes_group,
            sso_role_timeout=sso_role_timeout,
        )
        #: Identity Center permission set of the team, assigned to the team's group (``None`` with Identity Center
        #: in another account: the team's Identity Center stack has it, and :attr:`permission_set_policy` its grants).
        self.permission_set: sso.CfnPermissionSet | None = access.permission_set
        #: With Identity Center in another account, the policy of this account the permission set references.
        self.permission_set_policy: iam.CfnManagedPolicy | None = access.permission_set_policy
        #: Full ARN (with its /aws-reserved/... path) of the team's Identity Center role (``None`` with Identity
        #: Center in another account: the team's access stack resolves it).
        self.sso_role_arn: str | None = access.sso_role_arn
        #: EKS access entries (Identity Center role, Studio role), mapped to :attr:`kubernetes_group` only.
        self.access_entries: list[eks.CfnAccessEntry] = list(access.access_entries)
        backend = backend_for(platform)
        #: What the fairness backend built for the team (its quota, what the chart is applied after).
        self.fairness: TeamFairness = backend.build_team(self, cluster, spec)
        #: The team's Task Governance quota, attributes typed (ARN, ID, name; ``.resource`` is the L1 escape hatch);
        #: ``None`` with Kueue, whose queues are in the chart.
        self.compute_quota: ComputeQuota | None = ComputeQuota.of(self.fairness.quota, team=spec.name)
        #: The team's own Kubernetes objects, rendered from the policy (a copy of them: ``chart.to_json()``).
        #: Read-only: add objects of your own with :meth:`add_manifest` or :meth:`add_cdk8s_chart`.
        self.chart: TeamChart = self._render_chart(
            fairness_objects=backend.team_manifests(platform, spec),
            include_namespace=backend.creates_team_namespace,
        )
        #: The team's record for the POSIX identity webhook (namespace, GID, queue, principals), which the webhook
        #: reads at run time: the cluster's configuration lists no team.
        self.identity_record = ssm.StringParameter(
            self,
            "IdentityRecord",
            parameter_name=names.posix_identity_record(platform.cluster.name, spec.name),
            string_value=posix_identity.team_record(platform, spec.name).to_json(),
            description=f"POSIX identity webhook record of team {spec.name} on HyperPod cluster {platform.cluster.name}",
            tier=ssm.ParameterTier.STANDARD,
        )
        #: The team's drift audit record: what this stack deployed, read by ``hyperpod-tenancy audit`` and the
        #: daily audit (:mod:`hyperpod_tenancy.constructs.drift_audit`).
        self.audit_record = self._audit_record()
        #: What the team's chart declares (namespace labels, bindings, quotas, limits), which the daily audit
        #: compares with the cluster (:func:`hyperpod_tenancy.constructs.drift_audit.kube_record_parameter`).
        self.kube_audit_record = kube_record_parameter(
            self,
            "KubernetesAuditRecord",
            cluster=platform.cluster.name,
            expectation=kube_expectation(platform, spec, self.chart.to_json(), stack=_stack_path(self)),
        )
        #: The team chart applied to the cluster (primary child, ID ``Resource``).
        self.chart_manifest: eks.KubernetesManifest = self._create_chart()
        # the webhook knows the team (within its refresh interval) before any team object exists
        self.chart_manifest.node.add_dependency(self.identity_record)
        self._extensions = ChartExtensions(
            self,
            cluster=cluster.kubernetes,
            chart=self.chart,
            after=self.chart_manifest,
            check=self._refuse_inadmissible,
        )

    # ------------------------------------------------------------------ data and identity
    @property
    def in_own_account(self) -> bool:
        """Whether the team has an account of its own (``teams[].account``): its data and people are there."""
        return self.cluster.platform.team_in_own_account(self.team)

    def _audit_record(self) -> ssm.StringParameter:
        platform = self.cluster.platform
        expectation = team_expectation(
            platform,
            self.team,
            stack=_stack_path(self),
            permission_set_arn=self.permission_set.attr_permission_set_arn if self.permission_set else None,
            sso_role_arn=self.sso_role_arn,
            execution_role_arn=(
                self.execution_role.role_arn
                if self.execution_role
                else studio_execution_role_arn(platform, self.team, partition=stack_of(self).partition)
                if platform.studio_in_team_account(self.team)
                else None
            ),
            cluster_arn=self.cluster.hyperpod_cluster_arn,
            compute_quota=self.compute_quota is not None,
        )
        return audit_record_parameter(
            self, "DriftAuditRecord", cluster=platform.cluster.name, expectation=expectation
        )

    # ------------------------------------------------------------------ console grants
    def allow_in_permission_set(self, *statements: Mapping[str, Any]) -> None:
        """Add IAM statements to what the team's permission set grants (its members' console session).

        Its inline policy, or with Identity Center in another account the policy here it references. For resources
        of the team's own (its dashboard, a custom widget's function), after the tenant's grants, in order.
        """
        if self.in_own_account:
            raise TenancyError(
                f"{self.node.path}: team {self.team.name!r} signs in to its own account "
                f"{self.cluster.platform.team_account(self.team)}, where grants on resources of the cluster's "
                "account have no effect. Add them to the policy of the team's account stack "
                "(TeamAccountStack.resources.permission_set_policy) for resources of that account."
            )
        if (ps := self.permission_set) is not None:
            ps.inline_policy = extend_policy(ps.inline_policy, statements)
        elif (policy := self.permission_set_policy) is not None:
            policy.policy_document = extend_policy(policy.policy_document, statements)

    # ------------------------------------------------------------------ data grants
    def grant_read_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the team's data: objects under ``teams/<team>/`` of the data bucket only.

        Grants ``s3:GetObject`` on ``teams/<team>/*`` and ``s3:ListBucket`` on the bucket with an ``s3:prefix``
        under ``teams/<team>/`` (a listing of the bucket root or of another team's prefix stays denied). An
        imported bucket encrypted with a KMS key also needs ``kms:Decrypt`` on that key, which this does not grant.
        """
        return self._grant_data(grantee, _READ_OBJECT_ACTIONS)

    def grant_write_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read, write and delete the team's data under ``teams/<team>/`` only.

        The actions of the team's own roles (:data:`~hyperpod_tenancy.constructs._private.team_iam.S3_OBJECT_ACTIONS`:
        get, put, delete, multipart uploads) on ``teams/<team>/*``, and the prefix-conditioned ``s3:ListBucket``
        of :meth:`grant_read_data`.
        """
        return self._grant_data(grantee, S3_OBJECT_ACTIONS)

    def _grant_data(self, grantee: iam.IGrantable, object_actions: tuple[str, ...]) -> iam.Grant:
        if self.in_own_account:
            raise TenancyError(
                f"{self.node.path}: team {self.team.name!r} keeps its data in its own account "
                f"{self.cluster.platform.team_account(self.team)}, not in the shared data bucket. Grant on the "
                "team's bucket there (TeamAccountStack.resources.data_bucket), in that account's stack."
            )
        prefix = team_prefix(self.team.name)
        bucket = self.cluster.data_bucket
        objects = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(object_actions),
            resource_arns=[bucket.arn_for_objects(f"{prefix}*")],
        )
        listing = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:ListBucket"],
            resource_arns=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        )
        return objects.combine(listing)

    # ------------------------------------------------------------------ chart
    def _render_chart(self, *, fairness_objects: list[dict[str, Any]], include_namespace: bool) -> TeamChart:
        return TeamChart(
            self.cluster.platform,
            self.team,
            fsx=FsxVolume(
                file_system_id=self.cluster.file_system_id,
                dns_name=self.cluster.file_system_dns_name,
                mount_name=self.cluster.file_system_mount_name,
            ),
            service_account=self.service_account,
            service_cidr=self.cluster.service_cidr,
            vpc_cidrs=self.cluster.vpc_cidr_blocks,
            fairness_objects=fairness_objects,
            include_namespace=include_namespace,
        )

    def _create_chart(self) -> eks.KubernetesManifest:
        manifest = kubernetes_manifest(
            self, "Resource", cluster=self.cluster.kubernetes, objects=self.chart.to_json(), overwrite=True
        )
        for dependency in self.fairness.chart_after:
            manifest.node.add_dependency(dependency)
        # escape hatch, as eks_v2.KubernetesManifest does: the tenant's default child is the L1 resource
        self.node.default_child = manifest.node.default_child
        return manifest

    # ------------------------------------------------------------------ extension
    def _refuse_inadmissible(self, where: str, objects: list[dict[str, Any]]) -> None:
        """Refuse objects the team's admission policies deny at deploy; warn for the ones they would warn about."""
        findings = check_team_objects(self.cluster.platform, self.team, objects)
        for finding in findings:
            if finding.action == "Warn":
                warn(self, "HPT-ADMISSION-WARN", f"{where}: {finding}")
        denied = [f for f in findings if f.action == "Deny"]
        if denied:
            lines = "\n".join(f"  - {f}" for f in denied)
            raise TenancyError(
                f"{where}: the team's admission policies would refuse {len(denied)} object(s) at deploy (checked "
                f"at synth with the policies' own CEL, as the deploying identity):\n{lines}\nFix each object as "
                "the message says (docs: Troubleshooting lists every admission denial)."
            )

    def add_manifest(
        self,
        id: str,
        *manifests: Mapping[str, Any],
        allow_namespaces: Sequence[str] = (),
        allow_cluster_scoped: bool = False,
    ) -> eks.KubernetesManifest:
        """Apply Kubernetes objects of your own to the team, after the team chart.

        Objects without a namespace go to the team's (:attr:`namespace`); the team chart (its Namespace, RBAC,
        quotas) is applied first (``DependsOn``). Objects are admitted like the team's own: workloads need the
        team's queue and priority labels. The team's admission policies are evaluated at synth on the objects in
        the team's namespace (their own CEL, by a CEL library, as the deploying identity): an object they deny
        stops synthesis naming the policy and its message; one they warn about gets ``HPT-ADMISSION-WARN``. Each
        call is one ``eks.KubernetesManifest`` with construct ID ``id``.

        Args:
            id: construct ID of the manifest (in this tenant).
            manifests: the objects (dicts as ``kubectl apply`` takes them).
            allow_namespaces: namespaces other than the team's that the objects may be in. Default: none.
            allow_cluster_scoped: accept cluster-scoped kinds (``ClusterRole``, ``PriorityClass``, ...; the
                built-in kinds and Kueue's, see ``CLUSTER_SCOPED_KINDS``). Default: refused: they reach beyond the
                team. A cluster-scoped kind of another CRD counts as namespaced.

        Returns:
            The manifest applying the objects.

        Raises:
            TenancyError: listing every refused object: in another namespace, cluster-scoped, unnamed, named
                like an object of the team chart or of an earlier addition, or denied by the team's admission
                policies (each with the policy and its message).

        Example::

            tenant.add_manifest(
                "Settings",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}},
            )

        """
        return self._extensions.add(
            id,
            manifests,
            namespace=self.namespace,
            allowed_namespaces={self.namespace, *allow_namespaces},
            allow_cluster_scoped=allow_cluster_scoped,
        )

    def add_cdk8s_chart(
        self,
        id: str,
        chart: cdk8s.Chart,
        *,
        allow_namespaces: Sequence[str] = (),
        allow_cluster_scoped: bool = False,
    ) -> eks.KubernetesManifest:
        """Apply the objects of a cdk8s chart of your own (cdk8s-plus or plain ``ApiObject``) to the team.

        As :meth:`add_manifest`. The chart is rendered now, as ``eks.Cluster.add_cdk8s_chart`` does: build it
        completely first (objects added to it afterwards are not applied). Give the objects explicit names
        (``metadata.name``) or the chart's generated, hashed ones change whenever the chart's tree does.

        Args:
            id: construct ID of the manifest (in this tenant).
            chart: the cdk8s chart (in its own ``cdk8s.App``).
            allow_namespaces: as for :meth:`add_manifest`.
            allow_cluster_scoped: as for :meth:`add_manifest`.

        Returns:
            The manifest applying the chart's objects.

        Raises:
            TenancyError: as :meth:`add_manifest`.

        """
        return self.add_manifest(
            id,
            *chart_objects(chart),
            allow_namespaces=allow_namespaces,
            allow_cluster_scoped=allow_cluster_scoped,
        )

"""Policy changes that CloudFormation carries out as a replacement (delete + create).

Some properties of the resources the platform deploys are *createOnly* in their CloudFormation schema:
changing them makes CloudFormation create a new resource and delete (or, with ``RETAIN``, orphan) the old
one. :func:`replacement_warnings` compares a deployed policy with a new one and names each such change, the
createOnly property behind it and what the replacement destroys, before ``cdk deploy`` does it.

Codes: ``HPT-REPLACE-STACKS``, ``HPT-REPLACE-CLUSTER``, ``HPT-REPLACE-VPC``, ``HPT-REPLACE-FSX``,
``HPT-REPLACE-TEAM``, ``HPT-REPLACE-PERMISSION-SET`` (also when a team moves to or from an account of its own),
``HPT-REPLACE-KEY``; and what an upgrade interrupts or refuses:
``HPT-UPGRADE-KUBERNETES`` (a Kubernetes minor version change) and ``HPT-UPGRADE-SCHEDULER`` (another Kueue chart
version, or the other fairness backend).
"""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import FairnessWording, fairness_of
from hyperpod_tenancy.policy.model import Platform, Team

__all__ = ["STUDIO_AUTH_MODE", "FairnessWording", "replacement_warnings", "studio_domain_create_only"]

#: Every team's Studio domain authenticates through Identity Center.
STUDIO_AUTH_MODE = "SSO"


def studio_domain_create_only(platform: Platform, team: Team) -> dict[str, str]:
    """Return what, in the policy, decides a team domain's create-only properties; a change replaces the domain.

    ``AWS::SageMaker::Domain``'s ``createOnlyProperties`` (its CloudFormation resource schema) are ``AuthMode``,
    ``DomainName``, ``KmsKeyId`` and an RStudio setting the platform does not set. A new domain has a new Identity
    Center application and an empty home file system.
    """
    return {
        "AuthMode": STUDIO_AUTH_MODE,
        "DomainName": names.studio_domain(platform.cluster.name, team.name),
        "KmsKeyId": platform.encryption.kms_key or "",
    }


#: Looks up the wording of a platform's fairness backend.
WordingLookup = Callable[[Platform], FairnessWording]


def _registered_wording(platform: Platform) -> FairnessWording:
    return fairness_of(platform).replacement_wording


def replacement_warnings(
    old: Platform, new: Platform, *, wording: WordingLookup | None = None
) -> list[PolicyIssue]:
    """Return one issue per change from ``old`` to ``new`` that CloudFormation performs as a replacement.

    Both policies should be valid. Paths point into ``new`` (a removed team points at ``teams``).
    Adding a team or changing quotas, weights, borrow limits or priority classes updates in place and is
    not reported.

    Args:
        old: the policy that is deployed (the baseline).
        new: the policy about to be deployed.
        wording: how each platform's fairness backend names the team objects it deletes. Default: the
            registered backend's ``replacement_wording``.

    Returns:
        The replacement warnings, empty when every change updates in place.

    """
    out: list[PolicyIssue] = []
    _stacks(old, new, out)
    _cluster(old, new, out)
    _network(old, new, out)
    _fsx(old, new, out)
    _key(old, new, out)
    _teams(old, new, out, wording or _registered_wording)
    _identity_center(old, new, out)
    _kubernetes(old, new, out)
    _scheduler(old, new, out)
    _mig(old, new, out)
    return out


def _mig(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    """Report a group whose MIG layout changes: the GPU operator applies it with the GPUs idle."""
    before = {g.name: g.mig_config for g in old.cluster.instance_groups}
    for i, group in enumerate(new.cluster.instance_groups):
        if group.name not in before or before[group.name] == group.mig_config:
            continue
        was, now = before[group.name] or "whole GPUs", group.mig_config or "whole GPUs"
        out.append(
            PolicyIssue(
                f"cluster.instanceGroups[{i}].migConfig",
                f"group {group.name!r} goes from {was} to {now}: the GPU operator's MIG manager applies a layout "
                "only with the GPUs idle, stopping every pod on them, and may reboot each node (the HyperPod chart "
                "sets WITH_REBOOT); the partitions teams hold change with it.",
                "drain the group first (cordon its nodes and let the teams checkpoint), deploy, and tell the teams "
                "whose quotas name its partitions.",
                "HPT-UPGRADE-MIG",
            )
        )


def _minor(version: str) -> tuple[int, int] | None:
    major, _, minor = version.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _kubernetes(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    """Report a Kubernetes version change: EKS updates one minor version at a time and never down."""
    before, after = old.cluster.kubernetes_version, new.cluster.kubernetes_version
    a, b = _minor(before), _minor(after)
    if before == after or a is None or b is None:
        return
    if b < a or b[1] - a[1] > 1 or b[0] != a[0]:
        why = "a downgrade" if b < a else "more than one minor version"
        out.append(
            PolicyIssue(
                "cluster.kubernetesVersion",
                f"kubernetesVersion changes from {before!r} to {after!r}: {why}, which EKS refuses (an existing "
                "cluster is updated one minor version at a time and never downgraded), so the cluster stack's "
                "update fails and rolls back.",
                f"deploy one minor version at a time ({before!r} to {a[0]}.{a[1] + 1}, then on), or keep {before!r}.",
                "HPT-UPGRADE-KUBERNETES",
            )
        )
        return
    out.append(
        PolicyIssue(
            "cluster.kubernetesVersion",
            f"kubernetesVersion changes from {before!r} to {after!r}: EKS updates the control plane in place, then "
            "the system node group rolls its nodes onto the new version's AMI; the HyperPod nodes keep theirs "
            "until `aws sagemaker update-cluster-software` patches them, which interrupts the work running on "
            "them. Add-ons must support the new version.",
            "deploy in a window; have every team's jobs checkpointed before patching the HyperPod nodes, and "
            "check each add-on's compatibility (`aws eks describe-addon-versions --kubernetes-version "
            f"{after}`).",
            "HPT-UPGRADE-KUBERNETES",
        )
    )


def _scheduler(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    """Report another fairness backend, or another Kueue chart on the kueue backend (queues, running work)."""
    if old.fairness_backend != new.fairness_backend:
        out.append(
            PolicyIssue(
                "fairnessBackend",
                f"fairnessBackend changes from {str(old.fairness_backend)!r} to {str(new.fairness_backend)!r}: the "
                "old scheduler's queues and priority classes are deleted and the new ones created, so every "
                "team's pending and running workloads lose their queue; running work is evicted or runs outside "
                "any quota until resubmitted.",
                "switch when the teams have drained their queues (or checkpointed), then resubmit.",
                "HPT-UPGRADE-SCHEDULER",
            )
        )
        return
    for path, message, fix in fairness_of(new).upgrade_problems(old, new):
        out.append(PolicyIssue(path, message, fix, "HPT-UPGRADE-SCHEDULER"))


def _stacks(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    why = {
        "name": "the platform name prefixes every stack name",
        "account": "the stacks are deployed to the account",
        "region": "the stacks are deployed to the region",
    }
    for key, before, after in (
        ("name", old.name, new.name),
        ("account", old.account, new.account),
        ("region", old.region, new.region),
    ):
        if before == after:
            continue
        out.append(
            PolicyIssue(
                key,
                f"{key} changes from {before!r} to {after!r}: {why[key]}, so `cdk deploy` creates a second, "
                "separate platform; the deployed stacks are neither updated nor deleted, and named "
                "resources (the cluster name) collide when both platforms share an account and region.",
                f"keep {key} {before!r} to update the deployed platform, or deploy the new one on purpose "
                "and destroy the old stacks after moving the teams.",
                "HPT-REPLACE-STACKS",
            )
        )


def _cluster(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    before, after = old.cluster.name, new.cluster.name
    if before == after:
        return
    out.append(
        PolicyIssue(
            "cluster.name",
            f"cluster.name changes from {before!r} to {after!r}: AWS::SageMaker::Cluster ClusterName and "
            "AWS::EKS::Cluster Name are createOnly, so CloudFormation replaces both clusters. Every node, "
            "team namespace, queue and running job of the old cluster is lost; the ComputeQuotas, the "
            "ClusterSchedulerConfig (ClusterArn createOnly) and the EKS access entries (ClusterName "
            "createOnly) are replaced with them; a retained (RETAIN) old HyperPod cluster keeps its "
            "instances running and billing until it is deleted by hand.",
            f"keep cluster.name {before!r}; to move to a new cluster, deploy a second platform and move "
            "the teams one by one.",
            "HPT-REPLACE-CLUSTER",
        )
    )


def _network(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    before, after = old.cluster.vpc_cidr, new.cluster.vpc_cidr
    if before != after:
        out.append(
            PolicyIssue(
                "cluster.vpcCidr",
                f"cluster.vpcCidr changes from {before!r} to {after!r}: AWS::EC2::VPC CidrBlock is "
                "createOnly, so the VPC and all its subnets are replaced, and with them the HyperPod "
                "cluster (VpcConfig createOnly) and the FSx file system (SubnetIds, SecurityGroupIds "
                "createOnly); an EKS cluster cannot move to another VPC, so the deployment fails or leaves "
                "the platform split across two VPCs.",
                f"keep cluster.vpcCidr {before!r}; for more addresses deploy a new platform.",
                "HPT-REPLACE-VPC",
            )
        )
    old_zones, new_zones = list(old.cluster.availability_zones), list(new.cluster.availability_zones)
    if old_zones != new_zones:
        out.append(
            PolicyIssue(
                "cluster.availabilityZones",
                f"cluster.availabilityZones changes from {old_zones} to {new_zones}: the subnets are laid "
                "out from this ordered list and AWS::EC2::Subnet AvailabilityZone and CidrBlock are "
                "createOnly, so subnets are replaced, and with them the HyperPod cluster (VpcConfig "
                "createOnly) and the FSx file system (SubnetIds createOnly): nodes, running jobs and the "
                "data on /fsx are lost.",
                f"keep cluster.availabilityZones {old_zones} (same zones, same order); to use another zone, "
                "deploy a new platform.",
                "HPT-REPLACE-VPC",
            )
        )


def _fsx(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    before, after = old.cluster.fsx.deployment_type, new.cluster.fsx.deployment_type
    if before == after:
        return
    out.append(
        PolicyIssue(
            "cluster.fsx.deploymentType",
            f"cluster.fsx.deploymentType changes from {before!r} to {after!r}: AWS::FSx::FileSystem "
            "LustreConfiguration.DeploymentType cannot be updated, so CloudFormation replaces the file "
            "system. The new one is empty: every team's /fsx/<team> data (checkpoints, datasets) stays "
            "only on the old, retained file system, which is no longer mounted.",
            f"keep cluster.fsx.deploymentType {before!r}; to change it, create the new file system beside "
            "the old one and copy the data (e.g. through an S3 data repository) before switching.",
            "HPT-REPLACE-FSX",
        )
    )


def _key(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    before, after = old.encryption.kms_key, new.encryption.kms_key
    if before == after:
        return
    had_studio = {t.name for t in old.hosted_teams if t.studio}
    studios = [t.name for t in new.hosted_teams if t.studio and t.name in had_studio]
    domains = (
        f" The Studio domains of {', '.join(studios)} are replaced too (AWS::SageMaker::Domain KmsKeyId is "
        "create-only), and cannot be: their names are fixed, so those team stacks' updates fail; a new domain "
        "would start with an empty home file system."
        if studios
        else ""
    )
    out.append(
        PolicyIssue(
            "encryption.kmsKey",
            f"encryption.kmsKey changes from {before or 'none'!r} to {after or 'none'!r}: AWS::FSx::FileSystem "
            "KmsKeyId cannot be updated, so CloudFormation replaces the file system. The new one is empty: every "
            f"team's /fsx/<team> data stays only on the old, retained file system.{domains} Buckets, tables and "
            "log groups take the new key in place (objects already written keep the old one).",
            f"keep encryption.kmsKey {before or 'unset'!r}; to change keys, copy the file system's data out first "
            "(e.g. through an S3 data repository) and, with Studio, back up the home directories and delete the "
            "domains before the deploy.",
            "HPT-REPLACE-KEY",
        )
    )


def _same_identity(a: Team, b: Team) -> str | None:
    if a.identity.group_id and a.identity.group_id == b.identity.group_id:
        return f"same identity.groupId {a.identity.group_id!r}"
    if a.identity.posix_gid == b.identity.posix_gid:
        return f"same identity.posixGid {a.identity.posix_gid}"
    return None


def _teams(old: Platform, new: Platform, out: list[PolicyIssue], wording: WordingLookup) -> None:
    old_hosted = {t.name: t for t in old.hosted_teams}
    new_hosted = {t.name: t for t in new.hosted_teams}
    new_index = {t.name: i for i, t in enumerate(new.teams)}
    added = [t for name, t in new_hosted.items() if name not in old_hosted]
    for name, before in old_hosted.items():
        if name in new_hosted:
            _permission_set(before, new_hosted[name], new_index[name], out)
            _team_account(old, new, before, new_hosted[name], index=new_index[name], out=out)
            continue
        renamed = next(((t, why) for t in added if (why := _same_identity(before, t))), None)
        if renamed is not None:
            after, why = renamed
            added.remove(after)
            out.append(_renamed(new, before, after, why, new_index[after.name], wording=wording(new)))
        elif name in new_index:
            out.append(_kept_off(new, before, new_index[name], wording(new)))
        else:
            out.append(_removed(old, before, wording(old)))


def _renamed(
    new: Platform, before: Team, after: Team, why: str, index: int, *, wording: FairnessWording
) -> PolicyIssue:
    old_ns, new_ns = names.namespace(before.name), names.namespace(after.name)
    cause = wording.rename_cause
    old_ps = before.permission_set
    new_ps = after.permission_set
    sso = ""
    if old_ps != new_ps:
        sso = f" Permission set {old_ps!r} is replaced by {new_ps!r} (Name is createOnly): members sign in "
        sso += "again."
    return PolicyIssue(
        f"teams[{index}].name",
        f"team renamed from {before.name!r} to {after.name!r} ({why}): {cause}: namespace {old_ns} with "
        f"its queues and running jobs is deleted and {new_ns} is created empty; files under "
        f"{names.fsx_directory(before.name)} are not moved.{sso}",
        f"keep the team name {before.name!r}; if the rename is intended, drain the team's jobs and copy "
        f"{names.fsx_directory(before.name)} to {names.fsx_directory(after.name)} first.",
        "HPT-REPLACE-TEAM",
    )


def _removed(old: Platform, before: Team, wording: FairnessWording) -> PolicyIssue:
    index = old.teams.index(before)
    return PolicyIssue(
        "teams",
        f"team {before.name!r} (baseline teams[{index}]) is removed: {wording.team_objects_deleted}, and with it "
        f"namespace {names.namespace(before.name)}, its queues and running jobs.",
        "drain the team's jobs before deploying, or keep the team; if it was renamed, keep its "
        f"identity.groupId ({before.identity.group_id!r}) so the rename is recognised.",
        "HPT-REPLACE-TEAM",
    )


def _kept_off(new: Platform, before: Team, index: int, wording: FairnessWording) -> PolicyIssue:
    after = new.teams[index]
    return PolicyIssue(
        f"teams[{index}].dataClassification",
        f"team {before.name!r} now holds {new.team_classification(after)!r} data and is kept off this "
        f"{new.cluster.data_classification!r} cluster: {wording.team_objects_deleted}, and with it namespace "
        f"{names.namespace(before.name)}, its queues and running jobs.",
        "drain the team's jobs and deploy its dedicated platform before deploying this change.",
        "HPT-REPLACE-TEAM",
    )


def _permission_set(before: Team, after: Team, index: int, out: list[PolicyIssue]) -> None:
    old_name = before.permission_set
    new_name = after.permission_set
    if old_name == new_name:
        return
    out.append(
        PolicyIssue(
            f"teams[{index}].identity.permissionSetName",
            f"team {after.name!r}: the permission set name changes from {old_name!r} to {new_name!r}: "
            "AWS::SSO::PermissionSet Name is createOnly, so the permission set and its group assignment "
            f"are replaced; role AWSReservedSSO_{old_name}_... is deleted and AWSReservedSSO_{new_name}_... "
            "created, the EKS access entry (PrincipalArn createOnly) is replaced, and members must sign in "
            "again.",
            f"set identity.permissionSetName: {old_name} to keep the current permission set.",
            "HPT-REPLACE-PERMISSION-SET",
        )
    )


def _team_account(
    old: Platform, new: Platform, before: Team, after: Team, *, index: int, out: list[PolicyIssue]
) -> None:
    was, now = old.team_account(before), new.team_account(after)
    if was == now or old.account != new.account:
        return
    out.append(
        PolicyIssue(
            f"teams[{index}].account",
            f"team {after.name!r} moves from account {was} to {now}: its permission set is assigned in {now} "
            "instead, so Identity Center provisions a new role there and the EKS access entry is replaced (members "
            f"sign in to {now}); the role of its pods is replaced; and its data stays where it is: "
            + (
                f"teams/{after.name}/ of the shared data bucket"
                if not old.team_in_own_account(before)
                else f"the bucket of its account stack in {was}, which is retained"
            )
            + "."
            + (
                f" Its Studio domain is created anew in {now} (a domain lives in one account): the one in {was} is "
                "retained with its members' home directories on its EFS volume, which nothing copies."
                if before.studio and after.studio
                else ""
            ),
            f"copy the team's S3 data to {'its new account' if new.team_in_own_account(after) else 'the shared data bucket'} "
            f"before its pods need it (`aws s3 sync`), deploy the team's stacks in their order (`cdk deploy --all`), "
            "and tell its members the account they sign in to now"
            + (
                " and to copy what they keep in Studio (a space of the old domain, `aws s3 sync` to the team's "
                "prefix) before the old domain is deleted"
                if before.studio and after.studio
                else ""
            )
            + ".",
            "HPT-REPLACE-PERMISSION-SET",
        )
    )


def _identity_center(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    _identity_center_account(old, new, out)
    before, after = old.identity_center.instance_arn, new.identity_center.instance_arn
    if before == after:
        return
    out.append(
        PolicyIssue(
            "identityCenter.instanceArn",
            f"identityCenter.instanceArn changes from {before!r} to {after!r}: AWS::SSO::PermissionSet and "
            "AWS::SSO::Assignment InstanceArn are createOnly, so every team's permission set, assignment, "
            "SSO role and EKS access entry is replaced.",
            f"keep identityCenter.instanceArn {before!r} unless Identity Center itself was moved.",
            "HPT-REPLACE-PERMISSION-SET",
        )
    )


def _identity_center_account(old: Platform, new: Platform, out: list[PolicyIssue]) -> None:
    before, after = old.identity_center_account, new.identity_center_account
    if before == after or old.account != new.account:
        return  # a new cluster account is reported as a new stack environment
    moved = "into the team stacks" if not new.identity_center_elsewhere else f"to account {after}"
    first = old.hosted_teams[0].name if old.hosted_teams else "<team>"
    example = names.stage_stack_name(old.name, names.team_identity_stack_id(first))
    out.append(
        PolicyIssue(
            "identityCenter.account",
            f"Identity Center's account changes from {before} to {after}: every team's permission set and "
            f"assignment moves {moved}, so each is deleted and created again; Identity Center deletes every "
            "team's AWSReservedSSO_... role and provisions a new one (a new suffix), the EKS access entries are "
            "replaced, and members sign in again.",
            (
                "deploy every team's stacks in their dependency order (`cdk deploy --all`): the old permission set "
                "is deleted before the new one of the same name is created; plan it as a maintenance window."
            )
            if new.identity_center_elsewhere
            else (
                f"first delete every team's Identity Center stack in account {before} and its access stack (`aws "
                f"cloudformation delete-stack --stack-name {example}`, then its `-Access` stack, for each team): "
                "they leave the app, and a permission set name is unique in the instance; then deploy."
            ),
            "HPT-REPLACE-PERMISSION-SET",
        )
    )

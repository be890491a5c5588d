"""replacement_warnings names every policy change that CloudFormation performs as delete + create."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import platforms
import pytest
from platforms import PLATFORM_YAML as REFERENCE
from platforms import reference_data

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict, replacement_warnings
from hyperpod_tenancy.policy.fairness import HYP_CLI_KUEUE_API_VERSION


@pytest.fixture(scope="module")
def old() -> Platform:
    return load_platform(REFERENCE)


def changed(edit: dict[str, Any] | None = None, /, **top: Any) -> Platform:
    """The reference policy with top-level keys replaced and ``edit``'s sections updated."""
    data = reference_data()
    data.update(copy.deepcopy(top))
    for section, values in (edit or {}).items():
        data[section].update(copy.deepcopy(values))
    return platform_from_dict(data)


def only(issues: list[PolicyIssue]) -> PolicyIssue:
    assert len(issues) == 1, "\n".join(map(str, issues))
    return issues[0]


def team_named(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["teams"] if t["name"] == name)


def test_unchanged_policy_has_no_replacements(old: Platform) -> None:
    assert replacement_warnings(old, load_platform(REFERENCE)) == []


def test_in_place_updates_are_not_reported(old: Platform) -> None:
    data = reference_data()
    research = team_named(data, "research")
    research["compute"].update(quotas={"ml.p5.48xlarge": 8}, borrowLimit=200, fairShareWeight=10)
    research["allowedPriorityClasses"] = ["experimentation"]
    data["scheduling"]["priorityClasses"][0]["weight"] = 90
    data["cluster"]["instanceGroups"][0]["count"] = 20
    data["cluster"]["fsx"]["storageCapacityGiB"] = 9600
    data["cluster"]["kubernetesVersion"] = "1.33"
    new_team = copy.deepcopy(research)
    new_team.update(
        name="speech",
        identity={"groupId": "0123456789-99999999-aaaa-bbbb-cccc-999999999999", "posixGid": 20009},
    )
    new_team["compute"]["quotas"] = {"ml.p5.48xlarge": 5}
    data["teams"].append(new_team)
    assert replacement_warnings(old, platform_from_dict(data)) == []


def test_cluster_name(old: Platform) -> None:
    issue = only(replacement_warnings(old, changed({"cluster": {"name": "shared-gpu-2"}})))
    assert (issue.code, issue.path) == ("HPT-REPLACE-CLUSTER", "cluster.name")
    assert "from 'shared-gpu' to 'shared-gpu-2'" in issue.message
    assert "AWS::SageMaker::Cluster ClusterName and AWS::EKS::Cluster Name are createOnly" in issue.message
    assert "running job" in issue.message
    assert "keep cluster.name 'shared-gpu'" in issue.fix


def test_vpc_cidr(old: Platform) -> None:
    issue = only(replacement_warnings(old, changed({"cluster": {"vpcCidr": "10.0.0.0/16"}})))
    assert (issue.code, issue.path) == ("HPT-REPLACE-VPC", "cluster.vpcCidr")
    assert "from '10.192.0.0/16' to '10.0.0.0/16'" in issue.message
    assert "AWS::EC2::VPC CidrBlock is createOnly" in issue.message
    assert "HyperPod cluster (VpcConfig createOnly)" in issue.message
    assert "keep cluster.vpcCidr '10.192.0.0/16'" in issue.fix


@pytest.mark.parametrize(
    "zones",
    [["us-east-1a", "us-east-1b", "us-east-1c"], ["us-east-1b", "us-east-1a"]],
    ids=["added", "reordered"],
)
def test_availability_zones(old: Platform, zones: list[str]) -> None:
    issue = only(replacement_warnings(old, changed({"cluster": {"availabilityZones": zones}})))
    assert (issue.code, issue.path) == ("HPT-REPLACE-VPC", "cluster.availabilityZones")
    assert f"to {zones}" in issue.message
    assert "AWS::EC2::Subnet AvailabilityZone and CidrBlock are createOnly" in issue.message
    assert "FSx file system (SubnetIds createOnly)" in issue.message
    assert "same zones, same order" in issue.fix


def test_fsx_deployment_type(old: Platform) -> None:
    fsx = {"storageCapacityGiB": 4800, "deploymentType": "PERSISTENT_1", "perUnitStorageThroughput": 200}
    issue = only(replacement_warnings(old, changed({"cluster": {"fsx": fsx}})))
    assert (issue.code, issue.path) == ("HPT-REPLACE-FSX", "cluster.fsx.deploymentType")
    assert "from 'PERSISTENT_2' to 'PERSISTENT_1'" in issue.message
    assert "LustreConfiguration.DeploymentType cannot be updated" in issue.message
    assert "/fsx/<team> data" in issue.message
    assert "keep cluster.fsx.deploymentType 'PERSISTENT_2'" in issue.fix


def test_removed_team(old: Platform) -> None:
    data = reference_data()
    data["teams"] = [t for t in data["teams"] if t["name"] != "vision"]
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert (issue.code, issue.path) == ("HPT-REPLACE-TEAM", "teams")
    assert "team 'vision' (baseline teams[1]) is removed" in issue.message
    assert "AWS::SageMaker::ComputeQuota is deleted" in issue.message
    assert "namespace hyperpod-ns-vision, its queues and running jobs" in issue.message
    assert "drain the team's jobs" in issue.fix


@pytest.mark.parametrize("kept", ["groupId", "posixGid"])
def test_renamed_team_is_recognised_by_its_identity(old: Platform, kept: str) -> None:
    data = reference_data()
    vision = team_named(data, "vision")
    vision["name"] = "computer-vision"
    if kept == "groupId":
        vision["identity"]["posixGid"] = 20042
    else:
        vision["identity"]["groupId"] = "0123456789-42424242-aaaa-bbbb-cccc-424242424242"
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert (issue.code, issue.path) == ("HPT-REPLACE-TEAM", "teams[1].name")
    assert f"team renamed from 'vision' to 'computer-vision' (same identity.{kept}" in issue.message
    assert "ComputeQuotaTarget/TeamName is createOnly" in issue.message
    assert "namespace hyperpod-ns-vision with its queues and running jobs is deleted" in issue.message
    assert "hyperpod-ns-computer-vision is created empty" in issue.message
    assert "Permission set" not in issue.message  # vision names its permission set explicitly
    assert "keep the team name 'vision'" in issue.fix


def test_rename_that_also_replaces_the_default_permission_set(old: Platform) -> None:
    data = reference_data()
    team_named(data, "research")["name"] = "research-lab"
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert "team renamed from 'research' to 'research-lab'" in issue.message
    assert "Permission set 'Research' is replaced by 'ResearchLab'" in issue.message


def test_removed_and_unrelated_added_team_are_not_a_rename(old: Platform) -> None:
    data = reference_data()
    vision = team_named(data, "vision")
    vision.update(
        name="speech",
        identity={"groupId": "0123456789-50505050-aaaa-bbbb-cccc-505050505050", "posixGid": 20050},
    )
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert "team 'vision' (baseline teams[1]) is removed" in issue.message


def test_team_moved_to_a_dedicated_cluster(old: Platform) -> None:
    data = reference_data()
    data["cluster"]["onDataClassificationMismatch"] = "dedicated-cluster"
    team_named(data, "inference")["dataClassification"] = "restricted"
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert (issue.code, issue.path) == ("HPT-REPLACE-TEAM", "teams[2].dataClassification")
    assert (
        "team 'inference' now holds 'restricted' data and is kept off this 'internal' cluster"
        in issue.message
    )
    assert "namespace hyperpod-ns-inference" in issue.message


def test_kueue_backend_names_the_kueue_objects(old: Platform) -> None:
    data = reference_data()
    data["fairnessBackend"] = "kueue"
    kueue_old = platform_from_dict(copy.deepcopy(data))
    data["teams"] = data["teams"][:2]
    issue = only(replacement_warnings(kueue_old, platform_from_dict(data)))
    assert "its Kueue ClusterQueue and LocalQueue are deleted" in issue.message


def test_permission_set_name(old: Platform) -> None:
    data = reference_data()
    team_named(data, "vision")["identity"]["permissionSetName"] = "Vision"
    issue = only(replacement_warnings(old, platform_from_dict(data)))
    assert (issue.code, issue.path) == ("HPT-REPLACE-PERMISSION-SET", "teams[1].identity.permissionSetName")
    assert "from 'ComputerVision' to 'Vision'" in issue.message
    assert "AWS::SSO::PermissionSet Name is createOnly" in issue.message
    assert "AWSReservedSSO_ComputerVision_... is deleted" in issue.message
    assert "permissionSetName: ComputerVision" in issue.fix


def test_identity_center_instance(old: Platform) -> None:
    issue = only(
        replacement_warnings(
            old,
            changed(
                identityCenter={
                    "instanceArn": "arn:aws:sso:::instance/ssoins-9999888877776666",
                    "region": "us-east-1",
                }
            ),
        )
    )
    assert (issue.code, issue.path) == ("HPT-REPLACE-PERMISSION-SET", "identityCenter.instanceArn")
    assert "InstanceArn are createOnly" in issue.message


@pytest.mark.parametrize("direction", ["away", "back"])
def test_identity_center_account(old: Platform, direction: str) -> None:
    elsewhere = platforms.example("identity-center-account")
    one = changed(teams=[{**t, "studio": False} for t in platforms.reference_data()["teams"]])
    one = dataclasses.replace(one, name=elsewhere.name)
    before, after = (one, elsewhere) if direction == "away" else (elsewhere, one)
    issue = only(replacement_warnings(before, after))
    assert (issue.code, issue.path) == ("HPT-REPLACE-PERMISSION-SET", "identityCenter.account")
    where = "to account 999988887777" if direction == "away" else "into the team stacks"
    assert f"moves {where}" in issue.message and "members sign in again" in issue.message
    if direction == "back":  # the stacks leave the app, and cdk deploy does not delete them
        assert "delete-stack --stack-name ml-platform-org-Team-Research-Identity" in issue.fix


@pytest.mark.parametrize(
    ("key", "value"), [("name", "ml-platform-2"), ("account", "444455556666")], ids=["name", "account"]
)
def test_platform_name_or_account(old: Platform, key: str, value: str) -> None:
    issue = only(replacement_warnings(old, changed(**{key: value})))
    assert (issue.code, issue.path) == ("HPT-REPLACE-STACKS", key)
    assert "creates a second, separate platform" in issue.message


def test_several_replacements_are_listed_in_order(old: Platform) -> None:
    data = reference_data()
    data["cluster"]["name"] = "gpu"
    data["cluster"]["vpcCidr"] = "10.1.0.0/16"
    data["teams"] = data["teams"][:2]
    codes = [i.code for i in replacement_warnings(old, platform_from_dict(data))]
    assert codes == ["HPT-REPLACE-CLUSTER", "HPT-REPLACE-VPC", "HPT-REPLACE-TEAM"]


# ------------------------------------------------------------------------------------------------ upgrades


def test_one_minor_kubernetes_upgrade_warns_what_it_interrupts(old: Platform) -> None:
    before = changed({"cluster": {"kubernetesVersion": "1.32"}})
    issue = only(replacement_warnings(before, old))
    assert (issue.code, issue.path) == ("HPT-UPGRADE-KUBERNETES", "cluster.kubernetesVersion")
    assert "from '1.32' to '1.33'" in issue.message
    assert "update-cluster-software" in issue.message and "checkpointed" in issue.fix
    assert "describe-addon-versions --kubernetes-version 1.33" in issue.fix


@pytest.mark.parametrize(
    ("before", "after", "why"), [("1.31", "1.33", "more than one minor"), ("1.33", "1.32", "a downgrade")]
)
def test_kubernetes_changes_eks_refuses_are_named(before: str, after: str, why: str) -> None:
    issue = only(
        replacement_warnings(
            changed({"cluster": {"kubernetesVersion": before}}),
            changed({"cluster": {"kubernetesVersion": after}}),
        )
    )
    assert issue.code == "HPT-UPGRADE-KUBERNETES"
    assert why in issue.message and "EKS refuses" in issue.message
    assert "one minor version at a time" in issue.fix


def test_switching_the_fairness_backend_warns_that_queues_are_recreated(old: Platform) -> None:
    issue = only(replacement_warnings(old, changed(fairnessBackend="kueue")))
    assert (issue.code, issue.path) == ("HPT-UPGRADE-SCHEDULER", "fairnessBackend")
    assert "'task-governance' to 'kueue'" in issue.message and "lose their queue" in issue.message


def test_another_kueue_chart_warns_on_the_kueue_backend_only(old: Platform) -> None:
    kueue = changed(fairnessBackend="kueue")
    newer = changed({"cluster": {"kueueChart": {"version": "0.20.8"}}}, fairnessBackend="kueue")
    issue = only(replacement_warnings(kueue, newer))
    assert (issue.code, issue.path) == ("HPT-UPGRADE-SCHEDULER", "cluster.kueueChart.version")
    assert "from '0.19.2' to '0.20.8'" in issue.message and "release notes" in issue.fix
    # the one API version the hyp CLI reads is named, with the command that shows what the new CRDs serve
    assert HYP_CLI_KUEUE_API_VERSION in issue.fix and "kubectl get crd workloads.kueue.x-k8s.io" in issue.fix
    # on Task Governance the chart is not installed: nothing to warn about
    assert replacement_warnings(old, changed({"cluster": {"kueueChart": {"version": "0.20.8"}}})) == []


@pytest.mark.parametrize(("before", "after"), [(None, "create"), ("create", None)])
def test_a_changed_platform_key_replaces_fsx_and_the_studio_domains(
    before: str | None, after: str | None
) -> None:
    """``AWS::FSx::FileSystem`` and ``AWS::SageMaker::Domain`` both have ``KmsKeyId`` create-only (their resource
    schemas); the buckets, tables and log groups take a new key in place."""

    def keyed(key: str | None) -> Platform:
        data = reference_data()
        data.pop("encryption", None)
        if key is not None:
            data["encryption"] = {"kmsKey": key}
        return platform_from_dict(data)

    old_platform, new_platform = keyed(before), keyed(after)
    issue = only(replacement_warnings(old_platform, new_platform))
    assert (issue.code, issue.path) == ("HPT-REPLACE-KEY", "encryption.kmsKey")
    assert "AWS::FSx::FileSystem KmsKeyId cannot be updated" in issue.message
    studios = [t.name for t in new_platform.hosted_teams if t.studio]
    assert studios  # the reference platform has Studio teams
    assert f"The Studio domains of {', '.join(studios)} are replaced too" in issue.message
    assert "copy the file system's data out first" in issue.fix


def test_a_key_change_without_studio_names_no_domain() -> None:
    data = reference_data()
    data.pop("encryption", None)
    for team in data["teams"]:
        team["studio"] = False
    old_platform = platform_from_dict(data)
    issue = only(
        replacement_warnings(old_platform, platform_from_dict({**data, "encryption": {"kmsKey": "create"}}))
    )
    assert issue.code == "HPT-REPLACE-KEY" and "Studio" not in issue.message

"""Service rules the schemas do not know, on the synthesized team side of the platform.

Each rule names its source. They catch what cfn-lint, cdk-nag and the Kubernetes schemas accept but AWS or the
CDK handlers would reject at deploy time, or what would deploy and silently not work:

* a Job that waits for a Schedulable HyperPod node must outlive on-start deep health checks;
* namespace label patches must revoke what a later policy removes (CDK's patch handler never removes keys);
* every SSO-auth Studio domain has its team's group assigned to the domain's Identity Center application;
* every team's Studio security group reaches the private EKS API endpoint;
* every kubectl-provider wait stays below the provider Lambda's own timeout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cel_admission import evaluate_policies
from k8s_patch import cdk_patch_handler, strategic_merge
from platforms import reference_data
from synth import Synth, manifests_in, render_intrinsics, resources_of, synthesize

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import Platform, names, platform_from_dict

#: HyperPod node label; ``Schedulable`` only after the node passed its health checks
#: (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-node-labels.html).
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
#: With on-start deep health checks (InstanceStress, InstanceConnectivity) a new instance is tested for about two
#: hours before it is Schedulable (HyperPod resiliency: deep health checks,
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-deep-health-checks.html;
#: research/hyperpod.md section 21).
DEEP_HEALTH_CHECK_SECONDS = 2 * 3600
KUBECTL_PATCH = "Custom::AWSCDK-EKS-KubernetesPatch"
OBJECT_VALUE = "Custom::AWSCDK-EKS-KubernetesObjectValue"
#: The research team loses the ``training`` class from policy A to policy B (it keeps the preemptible class it
#: needs to borrow).
REVOKED = "training"


# ------------------------------------------------------------------ helpers
def _jobs(synth: Synth) -> list[dict[str, Any]]:
    return [o for o in synth.manifests() if o["kind"] == "Job"]


def _waits_for_schedulable_hyperpod_node(job: dict[str, Any]) -> bool:
    spec = job["spec"]["template"]["spec"]
    if spec.get("nodeSelector", {}).get(HEALTH_LABEL) == "Schedulable":
        return True
    terms = (
        spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    return any(
        e["key"] == HEALTH_LABEL and e["operator"] == "In" and "Schedulable" in e["values"]
        for term in terms
        for e in term.get("matchExpressions", [])
    )


def deadline_violations(platform: Platform, jobs: list[dict[str, Any]]) -> list[str]:
    """Jobs pinned to Schedulable HyperPod nodes whose deadline ends before deep health checks do.

    ``activeDeadlineSeconds`` counts from the Job's start, Pending time included
    (https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup).
    """
    if not any(g.deep_health_checks for g in platform.cluster.instance_groups):
        return []
    out = []
    for job in jobs:
        deadline = job["spec"].get("activeDeadlineSeconds")
        if (
            _waits_for_schedulable_hyperpod_node(job)
            and deadline is not None
            and deadline <= DEEP_HEALTH_CHECK_SECONDS
        ):
            out.append(
                f"{job['metadata']['namespace']}/{job['metadata']['name']}: activeDeadlineSeconds {deadline}"
            )
    return out


def _patch(template: dict[str, Any]) -> dict[str, Any]:
    [patch] = resources_of(template, KUBECTL_PATCH).values()
    props = render_intrinsics(patch["Properties"])
    assert isinstance(props, dict)
    return props


def _task_governance_namespace(team: str) -> dict[str, Any]:
    """The namespace as Task Governance creates it, before our patch (its own label only)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": names.namespace(team),
            "labels": {
                labels.NAMESPACE_NAME_LABEL: names.namespace(team),
                "sagemaker.amazonaws.com/quota": "x",
            },
        },
    }


def _admission_objects(synth: Synth) -> list[dict[str, Any]]:
    kinds = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    return [o for o in manifests_in(synth.cluster) if o["kind"] in kinds]


def _job(team: str, priority_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": names.namespace(team),
            "labels": {
                labels.PRIORITY_CLASS_LABEL: names.workload_priority_class(priority_class),
                labels.QUEUE_NAME_LABEL: names.local_queue(team),
            },
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "train",
                            "env": [
                                {"name": labels.CHECKPOINT_DIR_ENV, "value": f"/fsx/{team}/runs/1"},
                                {"name": labels.CHECKPOINT_INTERVAL_ENV, "value": "30m"},
                            ],
                            "volumeMounts": [{"name": "fsx", "mountPath": f"/fsx/{team}"}],
                        }
                    ],
                    "volumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx"}}],
                }
            }
        },
    }


def _entitlement_denials(
    synth: Synth, namespace: dict[str, Any], team: str, priority_class: str
) -> list[str]:
    decision = evaluate_policies(
        _admission_objects(synth),
        obj=_job(team, priority_class),
        namespace=namespace,
        group="batch",
        resource="jobs",
    )
    wpc = names.workload_priority_class(priority_class)
    return [m for m in decision.denied if f"priority class {wpc} is not allowed" in m]


@pytest.fixture(scope="module")
def revoked(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Policy B: the reference platform with ``training`` removed from research's allowedPriorityClasses."""
    data = reference_data()
    research = next(t for t in data["teams"] if t["name"] == "research")
    research["allowedPriorityClasses"] = [c for c in research["allowedPriorityClasses"] if c != REVOKED]
    return synthesize(platform_from_dict(data), tmp_path_factory.mktemp("revoked"))


# ------------------------------------------------------------------ Job deadlines vs deep health checks
def test_jobs_waiting_for_hyperpod_nodes_outlive_deep_health_checks(
    reference: Synth, kueue_reference: Synth
) -> None:
    for synth in (reference, kueue_reference):
        jobs = _jobs(synth)
        assert any(_waits_for_schedulable_hyperpod_node(j) for j in jobs), "the FSx directory Jobs are pinned"
        assert deadline_violations(synth.platform, jobs) == []


def test_the_deadline_rule_rejects_the_old_fifteen_minute_job(reference: Synth) -> None:
    # the rule itself: the Job as it was (activeDeadlineSeconds 900) is rejected, and a Job not pinned to HyperPod
    # nodes is not this rule's business
    job = json.loads(json.dumps(next(j for j in _jobs(reference) if _waits_for_schedulable_hyperpod_node(j))))
    job["spec"]["activeDeadlineSeconds"] = 900
    assert deadline_violations(reference.platform, [job]) == [
        f"{job['metadata']['namespace']}/{job['metadata']['name']}: activeDeadlineSeconds 900"
    ]
    del job["spec"]["template"]["spec"]["affinity"]
    assert deadline_violations(reference.platform, [job]) == []


# ------------------------------------------------------------------ label patches whose removal takes effect
def test_strategic_merge_model_keeps_keys_a_patch_leaves_out() -> None:
    # the semantics the rule relies on (kubectl patch --type strategic on maps)
    live = {"metadata": {"labels": {"a": "allowed", "b": "x"}}}
    assert strategic_merge(live, {"metadata": {"labels": {"b": "y"}}}) == {
        "metadata": {"labels": {"a": "allowed", "b": "y"}}
    }
    assert strategic_merge(live, {"metadata": {"labels": {"a": None}}}) == {
        "metadata": {"labels": {"b": "x"}}
    }


def test_revoking_a_priority_class_takes_effect_on_update(reference: Synth, revoked: Synth) -> None:
    team = "research"
    before, after = _patch(reference.team(team)), _patch(revoked.team(team))
    live = cdk_patch_handler(_task_governance_namespace(team), "Create", before)
    assert live["metadata"]["labels"][labels.priority_entitlement_label(REVOKED)] == labels.ALLOWED
    assert _entitlement_denials(reference, live, team, REVOKED) == [], "policy A entitles the class"
    live = cdk_patch_handler(live, "Update", after)
    assert _entitlement_denials(revoked, live, team, REVOKED), "policy B must deny the revoked class"
    assert _entitlement_denials(revoked, live, team, "experimentation") == [], "the kept class still works"
    # the service's own labels survive our patches
    assert live["metadata"]["labels"]["sagemaker.amazonaws.com/quota"] == "x"


def test_deleting_the_patch_withdraws_every_entitlement(reference: Synth) -> None:
    for team in reference.platform.teams:
        props = _patch(reference.team(team.name))
        live = cdk_patch_handler(_task_governance_namespace(team.name), "Create", props)
        live = cdk_patch_handler(live, "Delete", props)
        for pc in reference.platform.scheduling.priority_classes:
            assert _entitlement_denials(reference, live, team.name, pc.name), (team.name, pc.name)
        assert live["metadata"]["labels"][labels.TENANT_LABEL] == "true", "the namespace stays governed"


def test_every_platform_class_is_explicit_in_both_backends(reference: Synth, kueue_reference: Synth) -> None:
    classes = {
        labels.priority_entitlement_label(pc.name) for pc in reference.platform.scheduling.priority_classes
    }
    for team in reference.platform.teams:
        patched = json.loads(_patch(reference.team(team.name))["ApplyPatchJson"])["metadata"]["labels"]
        [namespace] = [
            o
            for o in manifests_in(kueue_reference.team(team.name))
            if o["kind"] == "Namespace" and o["metadata"]["name"] == names.namespace(team.name)
        ]
        for rendered in (patched, namespace["metadata"]["labels"]):
            assert classes <= rendered.keys(), team.name
            assert {rendered[k] for k in classes} <= {labels.ALLOWED, labels.DENIED}
            allowed = {k for k in classes if rendered[k] == labels.ALLOWED}
            assert allowed == {labels.priority_entitlement_label(c) for c in team.allowed_priority_classes}


def test_borrows_label_follows_the_sharing_rule(reference: Synth, tmp_path: Path) -> None:
    # Task Governance: LendAndBorrow with a BorrowLimit borrows, Lend/DontLend never do
    # (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-policies.html)
    platform = reference.platform
    for team in platform.teams:
        rendered = json.loads(_patch(reference.team(team.name))["ApplyPatchJson"])["metadata"]["labels"]
        expected = "true" if platform.effective_sharing(team).borrows else "false"
        assert rendered[labels.BORROWS_LABEL] == expected, team.name
    assert {labels.namespace_labels(platform, t)[labels.BORROWS_LABEL] for t in platform.teams} == {
        "true",
        "false",
    }
    data = reference_data()
    data["scheduling"]["idleResourceSharing"] = False  # nobody lends or borrows then
    no_sharing = platform_from_dict(data)
    assert {labels.namespace_labels(no_sharing, t)[labels.BORROWS_LABEL] for t in no_sharing.teams} == {
        "false"
    }


# ------------------------------------------------------------------ Studio: SSO assignment, API endpoint
def test_every_sso_domain_is_assigned_to_its_own_team_group(reference: Synth, four_teams: Synth) -> None:
    # AuthMode SSO: the domain shows in a user's access portal only when the group is assigned to the domain's
    # Identity Center application (SageMaker "IAM Identity Center groups in a domain";
    # AWS::SSO::ApplicationAssignment, cfn-lint 1.58 schema)
    for synth in (reference, four_teams):
        for team in synth.platform.hosted_teams:
            template = synth.team(team.name)
            domains = resources_of(template, "AWS::SageMaker::Domain")
            sso_domains = [k for k, v in domains.items() if v["Properties"]["AuthMode"] == "SSO"]
            assert len(sso_domains) == (1 if team.studio else 0), team.name
            assignments = resources_of(template, "AWS::SSO::ApplicationAssignment").values()
            for domain_id in sso_domains:
                mine = [
                    a["Properties"]
                    for a in assignments
                    if a["Properties"]["ApplicationArn"]
                    == {"Fn::GetAtt": [domain_id, "SingleSignOnApplicationArn"]}
                ]
                assert mine == [
                    {
                        "ApplicationArn": {"Fn::GetAtt": [domain_id, "SingleSignOnApplicationArn"]},
                        "PrincipalType": "GROUP",
                        "PrincipalId": team.identity.group_id,
                    }
                ], team.name


def test_studio_apps_reach_the_api_endpoint_through_the_shared_client_group(reference: Synth) -> None:
    # Studio apps use kubectl / hyp against the private EKS endpoint (TCP 443)
    # (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html). They join the cluster's API client
    # group, admitted once by the endpoint's group: no rule per team on it (60 inbound rules by default, VPC
    # quota L-0EA8095F), so the cluster stack does not change with the teams.
    cluster = reference.cluster
    stack = reference.stage.cluster_stack
    client_ref = stack.resolve(
        reference.stage.cluster_stack.cluster.api_client_security_group.security_group_id
    )
    endpoint_ref = stack.resolve(
        reference.stage.cluster_stack.cluster.api_endpoint_security_group.security_group_id
    )
    admitted = [
        r["Properties"]
        for r in resources_of(cluster, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("SourceSecurityGroupId") == client_ref
        and r["Properties"]["GroupId"] == endpoint_ref
    ]
    assert [(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in admitted] == [("tcp", 443, 443)]
    (export,) = [name for name, output in cluster.get("Outputs", {}).items() if output["Value"] == client_ref]
    for team in reference.platform.teams:
        template = reference.team(team.name)
        domain = next(iter(resources_of(template, "AWS::SageMaker::Domain").values()))
        studio_sg, client = domain["Properties"]["DefaultUserSettings"]["SecurityGroups"]
        assert client == {"Fn::ImportValue": cluster["Outputs"][export]["Export"]["Name"]}, team.name
        assert studio_sg["Fn::GetAtt"][1] == "GroupId"
        # and the team adds no rule of its own to the endpoint's group
        assert not resources_of(template, "AWS::EC2::SecurityGroupIngress"), team.name


# ------------------------------------------------------------------ Studio's bill lines carry the team's tag
def test_the_studio_domain_passes_the_team_tag_to_its_spaces_and_apps(reference: Synth) -> None:
    # SageMaker AI developer guide, "Custom tag propagation": tags set on the domain reach the resources created
    # in Studio only with the domain's TagPropagation ENABLED (default DISABLED, CreateDomain API reference).
    # Without it a team's spaces (GPU instances too) carry no team tag and the chargeback charges them to no one.
    for team in reference.platform.teams:
        if not team.studio:
            continue
        domain = next(iter(resources_of(reference.team(team.name), "AWS::SageMaker::Domain").values()))
        assert domain["Properties"]["TagPropagation"] == "ENABLED", team.name
        tags = {t["Key"]: t["Value"] for t in domain["Properties"]["Tags"]}
        assert tags["hyperpod-tenancy:team"] == team.name, team.name
        assert tags["hyperpod-tenancy:cluster"] == reference.platform.cluster.name, team.name


# ------------------------------------------------------------------ waits below the kubectl Lambda's timeout
def test_kubectl_waits_stay_below_the_provider_lambda_timeout(reference: Synth) -> None:
    # the kubectl provider Lambda (aws-eks-v2 kubectl-provider.ts) is killed at its own timeout; a wait that long
    # hangs CloudFormation instead of reporting the handler's error
    [handler] = [
        f["Properties"]
        for f in resources_of(reference.cluster, "AWS::Lambda::Function").values()
        if "EKS kubectl resource provider" in f["Properties"].get("Description", "")
    ]
    limit = int(handler["Timeout"])
    waits = [
        int(r["Properties"]["TimeoutSeconds"])
        for name in reference.stage.team_stacks
        for r in resources_of(reference.team(name), OBJECT_VALUE).values()
    ]
    assert waits, "the Task Governance backend waits for the namespace"
    assert max(waits) < limit

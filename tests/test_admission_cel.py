"""Admission policies: Kubernetes 1.33 schemas, what they match, and every CEL expression on sample objects.

Expressions are evaluated with ``common-expression-language`` (a standard CEL engine) through
``tests/support/cel_admission.py``, which applies resource rules, namespace selectors, match conditions,
validations and binding actions in the API server's order.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import kubernetes_validate
import platforms
import pytest
from cel_admission import STANDARD_CEL_FUNCTIONS, AdmissionDecision, evaluate_policies, functions_used

from hyperpod_tenancy.k8s import admission, workloads
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.policy import Platform, names

PLATFORM = platforms.reference_platform()
POLICIES = admission.admission_policies(PLATFORM)


def namespace(team: str, platform: Platform = PLATFORM) -> dict[str, Any]:
    labels = {
        "kubernetes.io/metadata.name": names.namespace(team),
        **namespace_labels(platform, platform.team(team)),
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": names.namespace(team), "labels": labels},
    }


def job(
    team: str = "research",
    *,
    priority: str | None = "training-priority",
    queue: str | None = None,
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    kind: str = "Job",
    checkpoint: dict[str, str] | None = None,
    mount_path: str = "/fsx/research",
) -> dict[str, Any]:
    """A Job whose container declares ``checkpoint`` (default :data:`ENV_CHECKPOINT`; ``{}``: none) in its
    environment, below its mount of the team FSx claim at ``mount_path``."""
    labels = {}
    if priority is not None:
        labels["kueue.x-k8s.io/priority-class"] = priority
    labels["kueue.x-k8s.io/queue-name"] = queue if queue is not None else names.local_queue(team)
    metadata: dict[str, Any] = {"name": "train", "namespace": names.namespace(team), "labels": labels}
    if annotations is not None:
        metadata["annotations"] = annotations
    if owners is not None:
        metadata["ownerReferences"] = owners
    # research and vision borrow, so all their work declares a checkpoint (tests/test_hostile_6_*.py)
    env = ENV_CHECKPOINT if checkpoint is None else checkpoint
    container: dict[str, Any] = {
        "name": "train",
        "image": "train:1",
        "volumeMounts": [{"name": "fsx", "mountPath": mount_path}],
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    volumes = [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx"}}]
    obj: dict[str, Any] = {"apiVersion": "batch/v1", "kind": kind, "metadata": metadata}
    # the pod spec where the kind keeps it (Job: spec.template.spec, PyTorchJob: spec.pytorchReplicaSpecs{}...)
    (path, *_) = next(k.pod_specs for k in workloads.WORKLOAD_KINDS if k.kind == kind)
    node = obj
    *parents, last = path.split(".")
    for segment in parents:
        field = segment.removesuffix("{}").removesuffix("[]")
        child: dict[str, Any] = {}
        if segment.endswith("{}"):
            node[field] = {"Worker": child}
        elif segment.endswith("[]"):
            node[field] = [child]
        else:
            node[field] = child
        node = child
    node[last] = {"containers": [container], "volumes": volumes}
    return obj


DIR_ENV, INTERVAL_ENV = "HYPERPOD_TENANCY_CHECKPOINT_DIR", "HYPERPOD_TENANCY_CHECKPOINT_INTERVAL"
ENV_CHECKPOINT = {DIR_ENV: "/fsx/research/exp-1", INTERVAL_ENV: "30m"}
#: The annotations that once declared a checkpoint, now refused.
ANNOTATIONS = {
    "hyperpod-tenancy.io/checkpoint-path": "/fsx/research/runs/exp-1/",
    "hyperpod-tenancy.io/checkpoint-interval": "30m",
}


def decide(
    obj: dict[str, Any],
    *,
    team: str = "research",
    group: str = "batch",
    resource: str = "jobs",
    operation: str = "CREATE",
    policies: list[dict[str, Any]] | None = None,
    platform: Platform = PLATFORM,
    user: str | None = None,
) -> AdmissionDecision:
    return evaluate_policies(
        policies if policies is not None else POLICIES,
        obj=obj,
        namespace=namespace(team, platform),
        group=group,
        resource=resource,
        operation=operation,
        user_info={"username": user} if user is not None else None,
        old_object=copy.deepcopy(obj) if operation == "UPDATE" else None,
    )


def by_name(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


# ----------------------------------------------------------------------------------------- object shapes


@pytest.mark.parametrize("name", ["reference", "fair-share-disabled", "doc-example"])
def test_every_object_validates_against_kubernetes_1_33(name: str) -> None:
    for obj in admission.admission_policies(platforms.fairness_platform(name)):
        kubernetes_validate.validate(obj, "1.33.0", strict=True)


def test_policies_fail_closed_and_bind_only_tenant_namespaces() -> None:
    kinds = [(o["kind"], o["metadata"]["name"]) for o in POLICIES]
    names_ = [
        admission.WORKLOAD_POLICY,
        admission.CHECKPOINT_POLICY,
        admission.POD_SPEC_POLICY,
        admission.DELETE_POLICY,
    ]
    assert kinds == [
        (kind, name)
        for name in names_
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    ]
    for obj in POLICIES:
        if obj["kind"] == "ValidatingAdmissionPolicy":
            assert obj["spec"]["failurePolicy"] == "Fail"
            # team namespaces by name, in the first match condition; never by a label
            assert "namespaceSelector" not in obj["spec"]["matchConstraints"]
            assert obj["spec"]["matchConditions"][0] == {
                "name": "in-a-team-namespace",
                "expression": "request.namespace.startsWith('hyperpod-ns-')",
            }
        else:
            assert obj["spec"]["policyName"] == obj["metadata"]["name"]
            assert "matchResources" not in obj["spec"]
    bindings = {
        o["metadata"]["name"]: o["spec"]["validationActions"] for o in POLICIES if "Binding" in o["kind"]
    }
    assert bindings == {key: ["Deny"] for key in names_}


def test_match_constraints_cover_the_workload_kinds() -> None:
    # the one table of workload kinds (hyperpod_tenancy.k8s.workloads), never a second list
    expected = {(k.group, k.resource) for k in workloads.served_kinds()}
    assert ("batch", "jobs") in expected and ("", "pods") in expected
    operations = {
        admission.WORKLOAD_POLICY: ["CREATE", "UPDATE"],
        admission.CHECKPOINT_POLICY: ["CREATE", "UPDATE"],
        admission.POD_SPEC_POLICY: ["CREATE", "UPDATE"],
        admission.DELETE_POLICY: ["DELETE"],
    }
    for policy in (o for o in POLICIES if o["kind"] == "ValidatingAdmissionPolicy"):
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        extra = [r for r in rules if r["resources"] == ["pods/ephemeralcontainers"]]
        rules = [r for r in rules if r not in extra]
        matched = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
        assert matched == expected
        # ephemeral containers are added through a subresource: only the pod-spec policy needs it
        assert [r["operations"] for r in extra] == (
            [["UPDATE"]] if policy["metadata"]["name"] == admission.POD_SPEC_POLICY else []
        )
        for rule in rules:
            assert rule["operations"] == operations[policy["metadata"]["name"]]
            assert rule["apiVersions"] == ["*"]
            assert rule["scope"] == "Namespaced"


def test_checkpoint_binding_warns_when_the_policy_says_warn() -> None:
    objects = admission.admission_policies(platforms.fair_share_disabled())  # checkpointEnforcement: warn
    binding = by_name(objects)[("ValidatingAdmissionPolicyBinding", admission.CHECKPOINT_POLICY)]
    assert binding["spec"]["validationActions"] == ["Warn"]
    decision = decide(job(priority="experimentation-priority", checkpoint={}), policies=objects)
    assert decision.allowed
    assert any(f"{DIR_ENV}=/fsx/research/<job>" in w for w in decision.warnings)


def test_without_preemptible_classes_only_borrowing_or_self_preempting_namespaces_need_checkpoints() -> None:
    # The checkpoint policy is always rendered: whether a namespace borrows, and whether its own higher classes
    # preempt its work, are its labels, read at admission.
    classes = tuple(dataclasses.replace(pc, preemptible=False) for pc in PLATFORM.scheduling.priority_classes)
    platform = dataclasses.replace(
        PLATFORM, scheduling=dataclasses.replace(PLATFORM.scheduling, priority_classes=classes)
    )
    objects = admission.admission_policies(platform)
    assert admission.CHECKPOINT_POLICY in {o["metadata"]["name"] for o in objects}
    bare = job(priority="experimentation-priority", checkpoint={})
    assert not decide(bare, policies=objects).allowed  # research borrows
    ns = namespace("research")
    ns["metadata"]["labels"]["hyperpod-tenancy.io/borrows"] = "false"
    decision = evaluate_policies(objects, obj=bare, namespace=ns, group="batch", resource="jobs")
    # research may use training, above experimentation, and its training work preempts its own lower classes
    assert any("higher priority class than experimentation-priority" in m for m in decision.denied)
    ns["metadata"]["labels"]["hyperpod-tenancy.io/preempts-own-work"] = "false"
    decision = evaluate_policies(objects, obj=bare, namespace=ns, group="batch", resource="jobs")
    assert decision.allowed, decision.denied


def test_expressions_use_only_standard_cel() -> None:
    expressions = []
    for policy in (o for o in POLICIES if o["kind"] == "ValidatingAdmissionPolicy"):
        expressions += [c["expression"] for c in policy["spec"]["matchConditions"]]
        for v in policy["spec"]["validations"]:
            expressions += [v["expression"], v.get("messageExpression", "''")]
    kinds = len([k for k in workloads.served_kinds() if k.pod_specs])
    # conditions: 2 + 2 + 1 + 1 (whether work can be preempted is part of each checkpoint validation: match
    # conditions see no namespaceObject), and the team-namespace condition of each of the 4 policies;
    # validations: 7 + 6 (2 refusing the checkpoint annotations, 4 on the environment's declaration) + 4 per kind
    # with pod specs (priority class, GPU visibility, EFA with accelerators, entitled accelerators) + 1 (topology
    # requests) + 3, each with a messageExpression or ''
    assert len(expressions) == 6 + 4 + 2 * (7 + 6 + 4 * kinds + 1 + 3)
    for expression in expressions:
        assert functions_used(expression) <= STANDARD_CEL_FUNCTIONS, expression
        for forbidden in ("authorizer", "params", "variables."):
            assert forbidden not in expression


# ------------------------------------------------------------------------------------- workload labels


def test_entitled_job_on_own_queue_is_allowed() -> None:
    decision = decide(job())
    # training is not preemptible, but research borrows: the checkpoint policy applies (issue 8, class 6)
    assert decision.policies() == {
        admission.WORKLOAD_POLICY,
        admission.CHECKPOINT_POLICY,
        admission.POD_SPEC_POLICY,
    }
    assert decision.allowed, decision.denied


def test_inference_team_with_its_class_is_allowed() -> None:
    decision = decide(job("inference", priority="inference-priority"), team="inference")
    assert decision.allowed, decision.denied


def test_missing_priority_label_is_denied() -> None:
    (message,) = decide(job(priority=None)).denied
    assert "kueue.x-k8s.io/priority-class is required" in message
    (message,) = decide(job(priority="")).denied  # an empty value is no value
    assert "is required" in message


def test_unentitled_priority_class_is_denied() -> None:
    (message,) = decide(job(priority="inference-priority")).denied
    assert message.startswith(
        "priority class inference-priority is not allowed in namespace hyperpod-ns-research"
    )
    # a class that does not exist at all is not entitled either
    (message,) = decide(job(priority="vip-priority")).denied
    assert "vip-priority is not allowed" in message


def test_entitlement_label_must_say_allowed() -> None:
    ns = namespace("research")
    ns["metadata"]["labels"]["priority.hyperpod-tenancy.io/inference-priority"] = "denied"
    decision = evaluate_policies(
        POLICIES, obj=job(priority="inference-priority"), namespace=ns, group="batch", resource="jobs"
    )
    assert not decision.allowed


def test_foreign_or_missing_queue_is_denied() -> None:
    (message,) = decide(job(queue="hyperpod-ns-vision-localqueue")).denied
    assert "must be hyperpod-ns-research-localqueue" in message
    obj = job()
    del obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    (message,) = decide(obj).denied
    assert "hyperpod-ns-research-localqueue" in message


def test_object_without_labels_gets_both_label_denials() -> None:
    obj = job()
    del obj["metadata"]["labels"]
    assert len(decide(obj).denied) == 2


@pytest.mark.parametrize(
    ("group", "resource", "kind", "api_version"),
    [
        ("kubeflow.org", "pytorchjobs", "PyTorchJob", "kubeflow.org/v1"),
        ("kubeflow.org", "mpijobs", "MPIJob", "kubeflow.org/v2beta1"),
        ("ray.io", "rayjobs", "RayJob", "ray.io/v1"),
        (
            "sagemaker.amazonaws.com",
            "hyperpodpytorchjobs",
            "HyperPodPyTorchJob",
            "sagemaker.amazonaws.com/v1",
        ),
        ("apps", "deployments", "Deployment", "apps/v1"),
        ("apps", "statefulsets", "StatefulSet", "apps/v1"),
        ("", "pods", "Pod", "v1"),
    ],
)
def test_every_workload_kind_is_checked(group: str, resource: str, kind: str, api_version: str) -> None:
    obj = job(priority="inference-priority", kind=kind)
    obj["apiVersion"] = api_version
    assert not decide(obj, group=group, resource=resource).allowed
    assert decide(job(kind=kind), group=group, resource=resource).allowed


def test_update_is_checked_delete_only_by_the_delete_policy() -> None:
    bad = job(priority="inference-priority")
    assert not decide(bad, operation="UPDATE").allowed
    deleted = evaluate_policies(
        POLICIES,
        obj=bad,
        namespace=namespace("research"),
        group="batch",
        resource="jobs",
        operation="DELETE",
        options={"propagationPolicy": "Background"},
    )
    assert deleted.policies() == {admission.DELETE_POLICY}
    assert deleted.allowed


def test_objects_being_deleted_are_not_checked() -> None:
    bad = job(priority=None)
    bad["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    assert decide(bad, operation="UPDATE").policies() == set()


def test_pods_and_jobs_created_by_a_controller_are_skipped_by_identity_not_by_owner() -> None:
    unlabelled_pod = job(priority=None, queue="", kind="Pod")
    del unlabelled_pod["metadata"]["labels"]
    for owner in (
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "1", "controller": True},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "2", "controller": True},
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "pt", "uid": "3", "controller": True},
    ):
        pod = copy.deepcopy(unlabelled_pod)
        pod["metadata"]["ownerReferences"] = [owner]
        controller = {"Job": "job-controller", "ReplicaSet": "replicaset-controller"}.get(owner["kind"])
        user = (
            f"system:serviceaccount:kube-system:{controller}"
            if controller
            else "system:serviceaccount:kubeflow:training-operator"
        )
        assert decide(pod, group="", resource="pods", user=user).policies() == {admission.POD_SPEC_POLICY}, (
            owner
        )
        assert not decide(pod, group="", resource="pods").allowed, owner  # the same pod from a team member
    launcher = job(priority=None, kind="Job")
    launcher["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "name": "mpi",
            "uid": "4",
            "controller": True,
        }
    ]
    mpi_operator = "system:serviceaccount:kube-system:dependencies-mpi-operator"
    assert decide(launcher, user=mpi_operator).policies() == {admission.POD_SPEC_POLICY}
    assert not decide(launcher).allowed


def test_an_arbitrary_owner_does_not_exempt_a_workload() -> None:
    # Bare pods are pods without a checked controller: a ConfigMap owner, a non-controller reference or a
    # look-alike kind in another API group does not let a pod skip its queue.
    for owner in (
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "1", "controller": True},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "2", "controller": False},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "3"},
        {"apiVersion": "example.com/v1", "kind": "PyTorchJob", "name": "pt", "uid": "4", "controller": True},
    ):
        pod = job(priority=None, kind="Pod", owners=[owner])
        assert not decide(pod, group="", resource="pods").allowed, owner


def test_a_namespace_not_named_for_a_team_is_not_checked() -> None:
    """The name decides, not the tenant label: a platform namespace that carries it is still not governed."""
    ns = namespace("research")
    ns["metadata"]["name"] = "ml-sandbox"
    assert ns["metadata"]["labels"]["hyperpod-tenancy.io/tenant"] == "true"
    decision = evaluate_policies(
        POLICIES, obj=job(priority=None), namespace=ns, group="batch", resource="jobs"
    )
    assert decision.policies() == set()


def test_a_team_namespace_without_the_tenant_label_is_still_checked() -> None:
    ns = namespace("research")
    del ns["metadata"]["labels"]["hyperpod-tenancy.io/tenant"]
    decision = evaluate_policies(
        POLICIES, obj=job(priority=None), namespace=ns, group="batch", resource="jobs"
    )
    assert admission.WORKLOAD_POLICY in decision.policies() and not decision.allowed


# ------------------------------------------------------------------------------------------- checkpoints


def test_preemptible_class_with_checkpoint_is_allowed() -> None:
    decision = decide(job(priority="experimentation-priority"))
    assert decision.policies() == {
        admission.WORKLOAD_POLICY,
        admission.CHECKPOINT_POLICY,
        admission.POD_SPEC_POLICY,
    }
    assert decision.allowed, decision.denied
    for interval in ("1h", "60m", "5m"):  # training: the default maxCheckpointInterval 1h
        assert decide(job(checkpoint={**ENV_CHECKPOINT, INTERVAL_ENV: interval})).allowed, interval
    for interval in ("30m", "1m", "15m"):  # experimentation: maxCheckpointInterval 30m
        checkpoint = {**ENV_CHECKPOINT, INTERVAL_ENV: interval}
        assert decide(job(priority="experimentation-priority", checkpoint=checkpoint)).allowed, interval


def test_non_preemptible_class_of_a_team_that_does_not_borrow_needs_no_checkpoint() -> None:
    decision = decide(job("inference", priority="inference-priority", checkpoint={}), team="inference")
    assert admission.CHECKPOINT_POLICY not in decision.failed_policies()
    assert decision.allowed


def test_a_missing_checkpoint_declaration_is_denied() -> None:
    (message,) = decide(job(priority="experimentation-priority", checkpoint={})).denied
    assert f"{DIR_ENV}=/fsx/research/<job> and {INTERVAL_ENV}=30m" in message
    assert "--volume name=fsx,type=pvc,mount_path=/fsx/research,claim_name=fsx" in message
    only_dir = {DIR_ENV: "/fsx/research/x"}
    (message,) = decide(job(priority="experimentation-priority", checkpoint=only_dir)).denied
    assert f"must also set {INTERVAL_ENV}" in message


@pytest.mark.parametrize("where", ["object", "pod template"])
@pytest.mark.parametrize("key", list(ANNOTATIONS))
def test_the_checkpoint_annotations_are_refused_wherever_they_are(key: str, where: str) -> None:
    """One declaration, in the environment: an annotation beside it is a second one nothing reads or bounds."""
    for team, obj in (
        ("research", job(priority="experimentation-priority")),
        (
            "inference",
            job("inference", priority="inference-priority", checkpoint={}),
        ),  # needs none: refused too
    ):
        at = obj["metadata"] if where == "object" else obj["spec"]["template"].setdefault("metadata", {})
        at["annotations"] = {key: ANNOTATIONS[key]}
        (message,) = decide(obj, team=team).denied
        assert ("no longer declare a checkpoint" if where == "object" else "on a pod template") in message
        assert f"{DIR_ENV} (a directory below the container's mount of the team FSx claim fsx)" in message


@pytest.mark.parametrize(
    "path",
    [
        "/fsx/vision/runs",  # another team's directory
        "/fsx/research-old/runs",
        "/scratch/research",
        "fsx/research/runs",
        "/fsx/research/../vision/runs",
        "/fsx/research/runs/..",
    ],
)
def test_a_checkpoint_directory_outside_the_team_claim_is_denied(path: str) -> None:
    checkpoint = {**ENV_CHECKPOINT, DIR_ENV: path}
    (message,) = decide(job(priority="experimentation-priority", checkpoint=checkpoint)).denied
    assert message.startswith(
        f"environment variable {DIR_ENV} must name a directory where this container writes"
    )


@pytest.mark.parametrize("interval", ["30", "0m", "30s", "1d", "1h30m", "m", " 30m", "30min"])
def test_bad_checkpoint_interval_is_denied(interval: str) -> None:
    checkpoint = {**ENV_CHECKPOINT, INTERVAL_ENV: interval}
    (message,) = decide(job(priority="experimentation-priority", checkpoint=checkpoint)).denied
    assert message.startswith(f"a container that sets {DIR_ENV} must also set {INTERVAL_ENV}")


def test_the_missing_declaration_message_needs_the_team_label_on_the_namespace() -> None:
    ns = namespace("research")
    del ns["metadata"]["labels"]["hyperpod-tenancy.io/team"]
    decision = evaluate_policies(
        POLICIES,
        obj=job(priority="experimentation-priority", checkpoint={}),
        namespace=ns,
        group="batch",
        resource="jobs",
    )
    (message,) = decision.denied
    assert f"{DIR_ENV}=/fsx/<team>/<job>" in message


def test_every_validation_can_fail_and_pass() -> None:
    # Each validation of each policy is false for at least one sample above and true for another.
    samples = [
        job(),
        job(priority=None),
        job(priority="inference-priority"),
        job(queue="hyperpod-ns-vision-localqueue"),
        job(priority="experimentation-priority"),
        job(priority="experimentation-priority", checkpoint={}),
        job(priority="experimentation-priority", checkpoint={**ENV_CHECKPOINT, INTERVAL_ENV: "1d"}),
        job(priority="experimentation-priority", checkpoint={**ENV_CHECKPOINT, INTERVAL_ENV: "2h"}),
        job(annotations={"hyperpod-tenancy.io/checkpoint-interval": "30m"}),
        job(owners=[{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "1", "controller": True}]),
        {**job(), "metadata": {**job()["metadata"], "finalizers": ["orphan"]}},
        job(priority="experimentation-priority", mount_path="/scratch"),
        job(priority="experimentation-priority", checkpoint={DIR_ENV: "/fsx/research/exp-1"}),
        {
            **job(),
            "spec": {
                "template": {
                    "metadata": {"annotations": ANNOTATIONS},
                    "spec": job()["spec"]["template"]["spec"],
                }
            },
        },
    ]
    import cel

    ns = namespace("research")
    request = {"operation": "CREATE", "resource": {"group": "batch", "resource": "jobs"}}
    # the label and checkpoint rules here; the pod-spec, UPDATE and DELETE rules in tests/test_hostile_*.py
    for name in (admission.WORKLOAD_POLICY, admission.CHECKPOINT_POLICY):
        policy = by_name(POLICIES)[("ValidatingAdmissionPolicy", name)]
        for validation in policy["spec"]["validations"]:
            if "'UPDATE'" in validation["expression"]:
                continue
            context = {"namespaceObject": ns, "request": request, "oldObject": None}
            results = {cel.evaluate(validation["expression"], {**context, "object": s}) for s in samples}
            assert results == {True, False}, validation["expression"]


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_no_match_condition_reads_the_namespace(name: str) -> None:
    """The API server evaluates match conditions without ``namespaceObject`` (k8s.io/apiserver
    ``admission/plugin/webhook/matchconditions``: no namespace is passed), and an error there refuses the request
    under ``failurePolicy: Fail``: every honest job was refused when the checkpoint policy asked the namespace
    whether work can be preempted in a match condition (seen on the real control plane,
    ``tests/test_cluster_workload.py``)."""
    for obj in PlatformChart(platforms.fairness_platform(name)).to_json():
        conditions = obj.get("spec", {}).get("matchConditions", [])
        conditions += [c for hook in obj.get("webhooks", []) for c in hook.get("matchConditions", [])]
        assert not [c["name"] for c in conditions if "namespaceObject" in c["expression"]], obj["metadata"][
            "name"
        ]

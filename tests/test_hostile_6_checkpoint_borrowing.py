"""Class 6, the checkpoint rule follows borrowing: no work that can run on borrowed capacity lacks a checkpoint.

A team that borrows (namespace label ``hyperpod-tenancy.io/borrows: "true"``, rendered from the one sharing
rule both backends use) can have any of its work placed on borrowed quota and reclaimed, whatever its class:
Kueue reclaims borrowed quota by preempting the borrower's workloads (https://kueue.sigs.k8s.io/docs/concepts/
preemption/, ``reclaimWithinCohort``; Task Governance "idle compute sharing"). Every class has a maximum
checkpoint interval (``scheduling.priorityClasses[].maxCheckpointInterval``, default 1h), so the GPU time one
eviction throws away is bounded; ``9999h`` is denied.
"""

from __future__ import annotations

import copy
import re

import pytest
import tenant_admission as ta
from synth import Synth

from hyperpod_tenancy.k8s import admission, labels
from hyperpod_tenancy.policy import platform_from_dict
from hyperpod_tenancy.policy.model import interval_minutes


def _with_interval(value: str) -> dict[str, str]:
    return {**ta.CHECKPOINT, labels.CHECKPOINT_INTERVAL_ENV: value}


def test_the_borrowing_label_is_what_the_synthesized_namespaces_say(synth: Synth) -> None:
    assert ta.namespace(synth, "research")["metadata"]["labels"][labels.BORROWS_LABEL] == "true"
    assert ta.namespace(synth, "inference")["metadata"]["labels"][labels.BORROWS_LABEL] == "false"


@pytest.mark.parametrize(
    "obj",
    [ta.job(), ta.pytorchjob(), ta.hyperpod_pytorch_job(), ta.raycluster(), ta.mpijob()],
    ids=lambda o: o["kind"],
)
def test_non_preemptible_work_of_a_borrowing_team_must_checkpoint(synth: Synth, obj: dict) -> None:
    # training-priority is not preemptible, but research borrows: its training jobs can run on borrowed quota
    denied = ta.decide(synth, obj).denied
    assert any(
        m.startswith("namespace hyperpod-ns-research borrows idle capacity of other teams")
        and labels.CHECKPOINT_DIR_ENV in m
        for m in denied
    ), denied
    assert any(labels.CHECKPOINT_INTERVAL_ENV in m for m in denied)


def test_a_team_that_does_not_borrow_needs_no_checkpoint_for_a_non_preemptible_class(synth: Synth) -> None:
    decision = ta.decide(synth, ta.deployment(), team="inference")
    assert admission.CHECKPOINT_POLICY not in decision.failed_policies()
    assert decision.allowed, decision.denied


def test_the_own_preemption_label_is_what_the_platform_says(synth: Synth) -> None:
    for team in synth.platform.teams:
        own = team.compute.preempt_team_tasks.value == "LowerPriority"
        value = ta.namespace(synth, team.name)["metadata"]["labels"][labels.PREEMPTS_OWN_WORK_LABEL]
        assert value == ("true" if own else "false"), team.name


def _entitled_to_two_classes(synth: Synth, *, preempts_own: str) -> dict:
    """The inference namespace (which does not borrow) entitled to inference and training."""
    ns = ta.namespace(synth, "inference")
    ns["metadata"]["labels"][labels.priority_entitlement_label("training")] = labels.ALLOWED
    ns["metadata"]["labels"][labels.PREEMPTS_OWN_WORK_LABEL] = preempts_own
    return ns


@pytest.mark.parametrize("kind", ["Job", "Deployment"])
def test_work_its_own_team_may_preempt_must_checkpoint(synth: Synth, kind: str) -> None:
    """``preemptTeamTasks: LowerPriority``: the team's work at a higher class it may use preempts its work at a
    lower one, so the lower one must checkpoint even where the team neither borrows nor uses a preemptible
    class. The highest class the team may use needs nothing; ``Never`` lifts the rule."""
    from cel_admission import AdmissionDecision, evaluate_policies

    def decide(ns: dict, priority: str) -> AdmissionDecision:
        kueue = ta.kueue_labels("inference", priority=priority)
        obj = ta.job("inference", labels=kueue) if kind == "Job" else ta.deployment()
        obj["metadata"]["labels"] = kueue
        group, resource = ta.group_resource(obj)
        return evaluate_policies(ta.policies(synth), obj=obj, namespace=ns, group=group, resource=resource)

    ns = _entitled_to_two_classes(synth, preempts_own="true")
    assert ns["metadata"]["labels"][labels.BORROWS_LABEL] == "false"
    denied = decide(ns, "training-priority").denied
    assert any(
        m.startswith("work of the same team at a higher priority class than training-priority may preempt it")
        and labels.CHECKPOINT_DIR_ENV in m
        for m in denied
    ), denied
    top = decide(ns, "inference-priority")
    assert admission.CHECKPOINT_POLICY not in top.failed_policies() and top.allowed, top.denied
    never = decide(_entitled_to_two_classes(synth, preempts_own="false"), "training-priority")
    assert admission.CHECKPOINT_POLICY not in never.failed_policies() and never.allowed, never.denied
    # attack: name a class outside the weights to dodge the rule; the workload policy refuses the class itself
    spoofed = decide(ns, "bogus-priority")
    assert any("priority class bogus-priority is not allowed" in m for m in spoofed.denied), spoofed.denied
    # a higher class the team may not use preempts nothing of the team's (inference alone: training is denied)
    alone = ta.namespace(synth, "inference")
    assert alone["metadata"]["labels"][labels.PREEMPTS_OWN_WORK_LABEL] == "true"
    assert admission.CHECKPOINT_POLICY not in decide(alone, "inference-priority").failed_policies()


def test_a_preemptible_class_still_needs_a_checkpoint_where_the_team_does_not_borrow(synth: Synth) -> None:
    ns = ta.namespace(synth, "research")
    ns["metadata"]["labels"][labels.BORROWS_LABEL] = "false"
    from cel_admission import evaluate_policies

    obj = ta.job(labels=ta.kueue_labels(priority="experimentation-priority"))
    denied = evaluate_policies(
        ta.policies(synth), obj=obj, namespace=ns, group="batch", resource="jobs"
    ).denied
    assert any(m.startswith("priority class experimentation-priority is preemptible") for m in denied), denied
    training = evaluate_policies(
        ta.policies(synth), obj=ta.job(), namespace=ns, group="batch", resource="jobs"
    )
    assert training.allowed, training.denied


@pytest.mark.parametrize(
    ("priority", "interval", "allowed"),
    [
        ("experimentation-priority", "30m", True),  # its maxCheckpointInterval in platform.yaml
        ("experimentation-priority", "31m", False),
        ("experimentation-priority", "1h", False),
        ("experimentation-priority", "9999h", False),
        ("training-priority", "1h", True),  # the default 1h
        ("training-priority", "60m", True),
        ("training-priority", "61m", False),
        ("training-priority", "2h", False),
        ("training-priority", "9999h", False),
        ("training-priority", "100000m", False),
    ],
)
def test_the_interval_is_bounded_by_the_class(
    synth: Synth, priority: str, interval: str, allowed: bool
) -> None:
    obj = ta.job(labels=ta.kueue_labels(priority=priority), annotations=_with_interval(interval))
    decision = ta.decide(synth, obj)
    assert decision.allowed is allowed, decision.denied
    if not allowed:
        (message,) = decision.denied
        assert message.startswith(f"environment variable {labels.CHECKPOINT_INTERVAL_ENV} is longer than")
        assert f"of priority class {priority}" in message


def test_a_spoofed_or_missing_class_does_not_lift_the_bound(synth: Synth) -> None:
    # without a class the label rule denies; with a class the namespace may not use it, the bound still applies
    obj = ta.job(
        labels={"kueue.x-k8s.io/queue-name": "hyperpod-ns-research-localqueue"},
        annotations=_with_interval("9999h"),
    )
    assert not ta.decide(synth, obj).allowed
    obj = ta.job(labels=ta.kueue_labels(priority="inference-priority"), annotations=_with_interval("9999h"))
    denied = ta.decide(synth, obj).denied
    assert any("is longer than 1h" in m for m in denied), denied


@pytest.mark.parametrize(
    ("maximum", "limit"),
    [
        ("1m", 1),
        ("9m", 9),
        ("45m", 45),
        ("59m", 59),
        ("60m", 60),
        ("90m", 90),
        ("3h", 180),
        ("24h", 1440),
        ("1440m", 1440),
    ],
)
def test_generated_bound_matches_exactly_the_intervals_up_to_the_maximum(maximum: str, limit: int) -> None:
    assert interval_minutes(maximum) == limit  # the policy's reading of the maximum, checked by hand
    pattern = re.compile(admission.interval_regex(limit))
    for n in range(1, 3 * limit + 2):
        assert bool(pattern.search(f"{n}m")) is (n <= limit), (maximum, n)
    for n in range(1, 3 * limit // 60 + 3):
        assert bool(pattern.search(f"{n}h")) is (n * 60 <= limit), (maximum, n)
    for bad in ("0m", "01m", "m", "1h30m", " 1m", "1d"):
        assert not pattern.search(bad), bad


def test_a_class_maximum_from_the_policy_reaches_the_cel() -> None:
    from platforms import reference_data

    data = reference_data()
    data["scheduling"]["priorityClasses"][1]["maxCheckpointInterval"] = "15m"  # training
    platform = platform_from_dict(data)
    from cel_admission import evaluate_policies

    objects = admission.admission_policies(platform)
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "hyperpod-ns-research",
            "labels": labels.namespace_labels(platform, platform.team("research")),
        },
    }
    for interval, allowed in (("15m", True), ("16m", False), ("1h", False)):
        obj = ta.job(annotations=_with_interval(interval))
        decision = evaluate_policies(objects, obj=obj, namespace=ns, group="batch", resource="jobs")
        assert decision.allowed is allowed, (interval, decision.denied)


def test_honest_borrowing_work_with_a_checkpoint_passes(synth: Synth) -> None:
    for obj in (ta.job(annotations=ta.CHECKPOINT), ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT)):
        decision = ta.decide(synth, obj)
        assert admission.CHECKPOINT_POLICY in decision.policies()
        if obj["kind"] == "HyperPodPyTorchJob" and ta.on_kueue(synth):
            ta.assert_refused_on_kueue(decision)
        else:
            assert decision.allowed, decision.denied
    obj = ta.job(
        labels=ta.kueue_labels(priority="experimentation-priority"), annotations=copy.deepcopy(ta.CHECKPOINT)
    )
    assert ta.decide(synth, obj).allowed

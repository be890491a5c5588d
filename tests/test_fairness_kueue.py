"""Kueue rendering: upstream CRD schemas, Task Governance names, quotas, sharing, preemption, self-check."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import platforms
import pytest
import yaml
from kueue_crd_validator import validate_kueue

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.policy import InstanceGroup, Platform, ResourceShape, names


def render(platform: Platform) -> list[dict[str, Any]]:
    objects = kueue.cluster_objects(platform)
    for team in platform.hosted_teams:
        objects += kueue.team_objects(platform, team)
    return objects


def namespaces(platform: Platform) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": names.namespace(t.name), "labels": namespace_labels(platform, t)},
        }
        for t in platform.hosted_teams
    ]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def cq_of(platform: Platform, team: str) -> dict[str, Any]:
    return by_kind(kueue.team_objects(platform, platform.team(team)), "ClusterQueue")[
        names.cluster_queue(team)
    ]


def flavor_resources(cq: dict[str, Any], flavor: str) -> dict[str, dict[str, Any]]:
    (group,) = cq["spec"]["resourceGroups"]
    (entry,) = [f for f in group["flavors"] if f["name"] == flavor]
    return {r["name"]: r for r in entry["resources"]}


def walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


# ----------------------------------------------------------------------------------------- upstream schemas


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_every_object_passes_the_upstream_kueue_crds(name: str) -> None:
    platform = platforms.fairness_platform(name)
    objects = render(platform)
    issues = validate_kueue([*objects, *namespaces(platform)])
    assert issues == [], "\n".join(issues)
    assert {o["apiVersion"] for o in objects} == {"kueue.x-k8s.io/v1beta2"}


def test_the_validator_is_real() -> None:
    # The same validator rejects a v1beta1 field in a v1beta2 ClusterQueue and a float quantity.
    platform = platforms.kueue_platform()
    cq = cq_of(platform, "research")
    cq["spec"]["cohort"] = cq["spec"].pop("cohortName")
    flavor_resources(cq, "ml.p5.48xlarge")["cpu"]["nominalQuota"] = 864.5
    issues = validate_kueue([*kueue.cluster_objects(platform), cq])
    assert any("cohort" in i and "ERROR" in i for i in issues), issues
    assert any("864.5" in i for i in issues), issues


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_quantities_are_ints_or_strings_never_floats(name: str) -> None:
    for value in walk(render(platforms.fairness_platform(name))):
        assert not isinstance(value, float), value


# ----------------------------------------------------------------------------------------------- names


def test_names_are_the_task_governance_names() -> None:
    platform = platforms.kueue_platform()
    objects = render(platform)
    assert set(by_kind(objects, "ClusterQueue")) == {
        "hyperpod-ns-research-clusterqueue",
        "hyperpod-ns-vision-clusterqueue",
        "hyperpod-ns-inference-clusterqueue",
    }
    local = by_kind(objects, "LocalQueue")
    assert {(n, o["metadata"]["namespace"], o["spec"]["clusterQueue"]) for n, o in local.items()} == {
        (f"hyperpod-ns-{t}-localqueue", f"hyperpod-ns-{t}", f"hyperpod-ns-{t}-clusterqueue")
        for t in ("research", "vision", "inference")
    }
    wpcs = by_kind(objects, "WorkloadPriorityClass")
    assert {n: o["value"] for n, o in wpcs.items()} == {
        "inference-priority": 100,
        "training-priority": 70,
        "experimentation-priority": 30,
    }
    flavors = by_kind(objects, "ResourceFlavor")
    assert {n: o["spec"]["nodeLabels"] for n, o in flavors.items()} == {
        "ml.p5.48xlarge": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
        "ml.g5.12xlarge": {"node.kubernetes.io/instance-type": "ml.g5.12xlarge"},
    }
    (cohort,) = by_kind(objects, "Cohort").values()
    assert cohort["metadata"]["name"] == kueue.COHORT
    assert not cohort["spec"].get("resourceGroups"), "cohort quota is added on top of its members"


def test_cluster_queue_selects_exactly_the_team_namespace() -> None:
    cq = cq_of(platforms.kueue_platform(), "vision")
    assert cq["spec"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "hyperpod-ns-vision"}
    }
    assert cq["spec"]["cohortName"] == kueue.COHORT
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"


# ------------------------------------------------------------------------------------------------ quotas


def test_every_cluster_queue_lists_every_flavor_and_resource_in_order() -> None:
    platform = platforms.mixed_accelerators()
    types = ["ml.p5.48xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge", "ml.m5.2xlarge"]
    for team in platform.teams:
        (group,) = cq_of(platform, team.name)["spec"]["resourceGroups"]
        assert group["coveredResources"] == [
            "nvidia.com/gpu",
            "aws.amazon.com/neurondevice",
            "cpu",
            "memory",
            "vpc.amazonaws.com/efa",  # EFA gates multi-node jobs: counted like GPUs
        ]
        assert [f["name"] for f in group["flavors"]] == types
        for flavor in group["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]


def test_nominal_quota_is_count_times_schedulable_shape() -> None:
    platform = platforms.kueue_platform()
    p5 = flavor_resources(cq_of(platform, "research"), "ml.p5.48xlarge")
    # 9 x ml.p5.48xlarge (8 GPU, 192 vCPU, 2048 GiB, 32 EFA) with threadsPerCore 1: 96 schedulable cores each.
    assert {r: v["nominalQuota"] for r, v in p5.items()} == {
        "nvidia.com/gpu": 72,
        "cpu": 864,
        "memory": "18432Gi",
        "vpc.amazonaws.com/efa": 288,
    }
    g5 = flavor_resources(cq_of(platform, "inference"), "ml.g5.12xlarge")
    # 3 x ml.g5.12xlarge (4 GPU, 48 vCPU, 192 GiB, 1 EFA) with threadsPerCore 2: all 48 vCPUs schedulable.
    assert {r: v["nominalQuota"] for r, v in g5.items()} == {
        "nvidia.com/gpu": 12,
        "cpu": 144,
        "memory": "576Gi",
        "vpc.amazonaws.com/efa": 3,
    }
    # no quota on a flavor: listed with nominalQuota 0
    assert (
        flavor_resources(cq_of(platform, "research"), "ml.g5.12xlarge")["nvidia.com/gpu"]["nominalQuota"] == 0
    )


def test_trainium_and_cpu_only_flavors() -> None:
    platform = platforms.mixed_accelerators()
    trn = flavor_resources(cq_of(platform, "research"), "ml.trn1.32xlarge")
    assert trn["aws.amazon.com/neurondevice"]["nominalQuota"] == 48
    assert trn["nvidia.com/gpu"]["nominalQuota"] == 0
    assert trn["cpu"]["nominalQuota"] == 384  # 3 x 128 vCPU, threadsPerCore 2
    m5 = flavor_resources(cq_of(platform, "data-prep"), "ml.m5.2xlarge")
    assert {r: v["nominalQuota"] for r, v in m5.items()} == {
        "nvidia.com/gpu": 0,
        "aws.amazon.com/neurondevice": 0,
        "cpu": 16,
        "memory": "64Gi",
        "vpc.amazonaws.com/efa": 0,
    }


def test_odd_cpu_and_memory_become_milli_and_mebi_quantities() -> None:
    platform = platforms.doc_example()
    odd = dataclasses.replace(
        platform.cluster.instance_groups[0],
        resources=ResourceShape(accelerators=1, vcpus=3, memory_gib=5),
    )
    platform = dataclasses.replace(
        platform, cluster=dataclasses.replace(platform.cluster, instance_groups=(odd,))
    )
    res = flavor_resources(cq_of(platform, "team-b"), "ml.g5.8xlarge")
    # 5 x 1.5 cores = 7.5 cores; borrow 60%: 4.5 cores. Memory 25 GiB; borrow 60%: 15 GiB.
    assert res["cpu"]["nominalQuota"] == "7500m"
    assert res["cpu"]["borrowingLimit"] == "4500m"
    assert res["memory"]["borrowingLimit"] == "15Gi"
    team_a = flavor_resources(cq_of(platform, "team-a"), "ml.g5.8xlarge")
    # 6 x 5 GiB = 30 GiB; borrow 50%: 15 GiB; 6 x 1 GPU; borrow 50%: 3
    assert team_a["memory"]["borrowingLimit"] == "15Gi"
    assert team_a["nvidia.com/gpu"]["borrowingLimit"] == 3
    assert (
        validate_kueue([*kueue.cluster_objects(platform), *kueue.team_objects(platform, platform.teams[1])])
        == []
    )


# ------------------------------------------------------------------------------------------------- sharing


def test_lend_and_borrow_floors_the_borrow_limit_and_lends_everything() -> None:
    platform = platforms.mixed_accelerators()  # research: LendAndBorrow, borrowLimit 33
    p5 = flavor_resources(cq_of(platform, "research"), "ml.p5.48xlarge")
    assert p5["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 56,
        "borrowingLimit": 18,
    }  # 18.48
    assert p5["cpu"]["borrowingLimit"] == "221760m"  # 672 x 33% = 221.76 cores
    assert p5["memory"]["borrowingLimit"] == "4844421Mi"  # 14336 GiB = 14680064 MiB; x 33% = 4844421.12
    assert all("lendingLimit" not in r for r in p5.values())


def test_lend_never_borrows() -> None:
    res = flavor_resources(cq_of(platforms.mixed_accelerators(), "inference"), "ml.g5.12xlarge")
    assert {r: (v["borrowingLimit"], "lendingLimit" in v) for r, v in res.items()} == {
        "nvidia.com/gpu": (0, False),
        "aws.amazon.com/neurondevice": (0, False),
        "cpu": (0, False),
        "memory": ("0Gi", False),
        "vpc.amazonaws.com/efa": (0, False),
    }


def test_dont_lend_neither_lends_nor_borrows() -> None:
    res = flavor_resources(cq_of(platforms.mixed_accelerators(), "vision"), "ml.p5.48xlarge")
    assert res["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 40,
        "borrowingLimit": 0,
        "lendingLimit": 0,
    }
    assert all(r["lendingLimit"] in (0, "0Gi") and r["borrowingLimit"] in (0, "0Gi") for r in res.values())


def test_idle_sharing_disabled_stops_all_lending_and_borrowing() -> None:
    platform = platforms.idle_sharing_disabled()
    for team in platform.teams:
        cq = cq_of(platform, team.name)
        for flavor in cq["spec"]["resourceGroups"][0]["flavors"]:
            for r in flavor["resources"]:
                assert r["borrowingLimit"] in (0, "0Gi"), (team.name, r)
                assert r["lendingLimit"] in (0, "0Gi"), (team.name, r)
        assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Never"


# ---------------------------------------------------------------------------------------------- preemption


def test_preemption_follows_preempt_team_tasks_and_lending() -> None:
    platform = platforms.mixed_accelerators()
    pre = {t.name: cq_of(platform, t.name)["spec"]["preemption"] for t in platform.teams}
    assert pre["research"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert pre["vision"] == {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}  # DontLend, Never
    assert pre["inference"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def test_borrow_within_cohort_only_under_classic_preemption_for_borrowers() -> None:
    fair = platforms.kueue_platform()
    assert all("borrowWithinCohort" not in cq_of(fair, t.name)["spec"]["preemption"] for t in fair.teams)
    classic = platforms.fair_share_disabled()
    pre = {t.name: cq_of(classic, t.name)["spec"]["preemption"] for t in classic.teams}
    # Victims only at priorities where every class is preemptible: experimentation (30) < training (70).
    for borrower in ("research", "vision"):
        assert pre[borrower]["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 30}
        assert pre[borrower]["reclaimWithinCohort"] == "Any"
    assert "borrowWithinCohort" not in pre["inference"]  # Lend: never borrows


def test_borrow_within_cohort_needs_a_preemptible_class_at_the_bottom() -> None:
    classic = platforms.fair_share_disabled()
    classes = tuple(
        dataclasses.replace(pc, weight=20) if pc.name == "training" else pc
        for pc in classic.scheduling.priority_classes
    )  # training (not preemptible) now below experimentation (30)
    platform = dataclasses.replace(
        classic, scheduling=dataclasses.replace(classic.scheduling, priority_classes=classes)
    )
    assert "borrowWithinCohort" not in cq_of(platform, "research")["spec"]["preemption"]


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_borrow_within_cohort_never_without_reclaim(name: str) -> None:
    for cq in by_kind(render(platforms.fairness_platform(name)), "ClusterQueue").values():
        pre = cq["spec"]["preemption"]
        if "borrowWithinCohort" in pre:
            assert pre["reclaimWithinCohort"] != "Never"


def test_fair_share_weight() -> None:
    platform = platforms.kueue_platform()
    assert {t.name: cq_of(platform, t.name)["spec"]["fairSharing"] for t in platform.teams} == {
        "research": {"weight": 60},
        "vision": {"weight": 40},
        "inference": {"weight": 50},
    }


# ---------------------------------------------------------------------------------------------- errors


def test_instance_type_without_shape_names_the_group() -> None:
    base = (
        platforms.reference_platform()
    )  # task-governance backend: the policy accepts an uncatalogued type there
    group = InstanceGroup(name="cpu-tools", instance_type="ml.c5.2xlarge", count=2, reserved=0)
    platform = dataclasses.replace(
        base,
        cluster=dataclasses.replace(base.cluster, instance_groups=(*base.cluster.instance_groups, group)),
    )
    with pytest.raises(TenancyError, match=r"cpu-tools.*ml\.c5\.2xlarge") as err:
        kueue.team_objects(platform, platform.team("research"))
    assert "`resources:`" in str(err.value)


def test_one_instance_type_with_two_shapes_is_refused() -> None:
    base = platforms.kueue_platform()
    twin = dataclasses.replace(
        base.cluster.instance_groups[0], name="p5-more", threads_per_core=2, reserved=0
    )
    platform = dataclasses.replace(
        base, cluster=dataclasses.replace(base.cluster, instance_groups=(*base.cluster.instance_groups, twin))
    )
    with pytest.raises(TenancyError, match=r"p5-training.*p5-more"):
        kueue.team_objects(platform, platform.team("research"))


def test_team_on_a_dedicated_cluster_gets_no_queue() -> None:
    base = platforms.kueue_platform()
    outsider = dataclasses.replace(base.teams[0], name="secret", data_classification="restricted")
    platform = dataclasses.replace(base, teams=(*base.teams, outsider))
    with pytest.raises(TenancyError, match="secret"):
        kueue.team_objects(platform, outsider)


# --------------------------------------------------------------------------------------------- helm values


def manager_config(platform: Platform) -> dict[str, Any]:
    values = kueue.kueue_helm_values(platform)
    assert set(values) == {"managerConfig"}
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert isinstance(config, dict)
    return config


def test_helm_values_enable_fair_sharing_when_the_policy_does() -> None:
    on = manager_config(platforms.kueue_platform())
    assert on["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert on["kind"] == "Configuration"
    assert on["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert "enable" not in on["fairSharing"]  # a v1beta1 config field; v1beta2 enables by presence
    off = manager_config(platforms.fair_share_disabled())
    assert "fairSharing" not in off


def test_helm_values_enable_the_hyperpod_job_integrations() -> None:
    config = manager_config(platforms.kueue_platform())
    frameworks = config["integrations"]["frameworks"]
    for needed in ("batch/job", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob", "ray.io/rayjob", "pod"):
        assert needed in frameworks
    assert len(frameworks) == len(set(frameworks))
    assert config["managedJobsNamespaceSelector"] == {"matchLabels": {"hyperpod-tenancy.io/tenant": "true"}}
    assert config["manageJobsWithoutQueueName"] is True
    # EFA is counted by the ClusterQueues; huge pages and ephemeral storage by the ResourceQuota backstop
    assert config["resources"]["excludeResourcePrefixes"] == ["ephemeral-storage", "hugepages-"]
    # keys the chart's default configuration carries must still be there (the value replaces it whole)
    assert {"health", "metrics", "webhook", "leaderElection", "controller"} <= set(config)


# ------------------------------------------------------------------------------- self-check (one per lint ID)

Objects = list[dict[str, Any]]


def _cq(objects: Objects, team: str = "research") -> dict[str, Any]:
    return by_kind(objects, "ClusterQueue")[names.cluster_queue(team)]


def _first_resource(objects: Objects, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    return flavor_resources(_cq(objects), "ml.p5.48xlarge")[resource]


def _no_selector(o: Objects) -> None:
    del _cq(o)["spec"]["namespaceSelector"]


def _borrow_without_reclaim(o: Objects) -> None:
    _cq(o)["spec"]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}


def _limit_without_cohort(o: Objects) -> None:
    del _cq(o)["spec"]["cohortName"]


def _lending_above_nominal(o: Objects) -> None:
    _first_resource(o)["lendingLimit"] = 73


def _localqueue_target(o: Objects) -> None:
    by_kind(o, "LocalQueue")[names.local_queue("research")]["spec"]["clusterQueue"] = "no-such-queue"


def _flavor_undefined(o: Objects) -> None:
    o.remove(by_kind(o, "ResourceFlavor")["ml.g5.12xlarge"])


def _float_quantity(o: Objects) -> None:
    _first_resource(o, "cpu")["nominalQuota"] = 864.0


def _resource_order(o: Objects) -> None:
    flavor = _cq(o)["spec"]["resourceGroups"][0]["flavors"][0]
    flavor["resources"].reverse()


def _cohort_quota(o: Objects) -> None:
    cohort = by_kind(o, "Cohort")[kueue.COHORT]
    cohort["spec"]["resourceGroups"] = copy.deepcopy(_cq(o)["spec"]["resourceGroups"])
    for flavor in cohort["spec"]["resourceGroups"][0]["flavors"]:
        for r in flavor["resources"]:
            r.pop("borrowingLimit", None)
            r.pop("lendingLimit", None)


def _namespace_not_selected(o: Objects) -> None:
    _cq(o)["spec"]["namespaceSelector"] = {
        "matchLabels": {"kubernetes.io/metadata.name": "hyperpod-ns-vision"}
    }


GUARDRAILS: list[tuple[str, Callable[[Objects], None], str | None]] = [
    # (lint id, mutation, what the upstream validator says about the same mutation, None if nothing)
    (kueue.LINT_NO_NAMESPACE_SELECTOR, _no_selector, "unset namespaceSelector"),
    (kueue.LINT_BORROW_WITHOUT_RECLAIM, _borrow_without_reclaim, "reclaimWithinCohort=Never"),
    (kueue.LINT_LIMIT_WITHOUT_COHORT, _limit_without_cohort, "must be nil when cohort is empty"),
    (kueue.LINT_LENDING_ABOVE_NOMINAL, _lending_above_nominal, "less than or equal to the nominalQuota"),
    (kueue.LINT_LOCALQUEUE_TARGET, _localqueue_target, "is not in the given manifests"),
    (kueue.LINT_FLAVOR_UNDEFINED, _flavor_undefined, "FlavorNotFound"),
    (kueue.LINT_FLOAT_QUANTITY, _float_quantity, "must be an integer or a quantity string"),
    (kueue.LINT_RESOURCE_ORDER, _resource_order, "must match the name in coveredResources"),
    (kueue.LINT_COHORT_QUOTA, _cohort_quota, None),
    (kueue.LINT_NAMESPACE_NOT_SELECTED, _namespace_not_selected, "is not selected by ClusterQueue"),
]


def test_every_lint_id_has_a_guardrail_test() -> None:
    assert {g[0] for g in GUARDRAILS} == set(kueue.KUEUE_LINT_IDS)


@pytest.mark.parametrize(("lint_id", "mutate", "upstream"), GUARDRAILS, ids=[g[0] for g in GUARDRAILS])
def test_self_check_catches(lint_id: str, mutate: Callable[[Objects], None], upstream: str | None) -> None:
    platform = platforms.kueue_platform()
    objects = render(platform)
    assert kueue.lint_kueue_objects(objects) == []
    mutate(objects)
    findings = kueue.lint_kueue_objects(objects)
    assert findings, f"{lint_id} not reported"
    assert {f.split(" ", 1)[0] for f in findings} == {lint_id}, findings
    if upstream is not None:
        issues = validate_kueue([*objects, *namespaces(platform)])
        assert any(upstream in i for i in issues), issues


def test_renderers_raise_when_the_self_check_finds_something(monkeypatch: pytest.MonkeyPatch) -> None:
    platform = platforms.kueue_platform()
    monkeypatch.setattr(
        kueue.objects, "lint_kueue_objects", lambda objects: [f"{kueue.LINT_COHORT_QUOTA} Cohort/x: y"]
    )
    with pytest.raises(TenancyError, match="self-check"):
        kueue.cluster_objects(platform)
    with pytest.raises(TenancyError, match=kueue.LINT_COHORT_QUOTA):
        kueue.team_objects(platform, platform.team("research"))

"""``hyperpod-tenancy probe``: its plan checked against the suite's models, its verdicts, its live runner.

No cluster exists here, so the plan (:mod:`hyperpod_tenancy.tools.probe.plan`, a pure function of the policy)
is held to the same offline models the isolation suites use, on both fairness backends:

* every object validates against the Kubernetes 1.33 schemas;
* the CEL admission model (the synthesized ValidatingAdmissionPolicies) admits A's probe Jobs as A and their
  pods as the Job controller once the POSIX identity webhook stamped them, and denies each negative Job as B
  with the message the probe expects; RBAC (the rendered Roles) lets each team do what its probe does and
  forbids B to create in A's namespace; NCA says B's probe pod cannot reach A's probe server, A's can, and no
  probe pod reaches IMDS;
* broken variants (a NetworkPolicy removed, a leak on both sides, IMDS no longer excepted, an admission policy
  removed): the models then predict the crossing, and :func:`verdict` fed with those predictions says FAIL.

The live runner runs end to end through the CLI against :mod:`probe_cluster`, a fake API server over a real
socket that judges every request with the RBAC and CEL models and checks the impersonation headers; the same
command runs against the real control plane, with the same verdicts, in ``test_cluster_probe.py``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import nca_scheme
import platforms
import pytest
import yaml
from cel_admission import evaluate_policies
from probe_cluster import IMPERSONATION_HEADERS, PodScript, ProbeCluster
from rbac_eval import Authorizer, Subject
from synth import Synth
from tenant_admission import JOB_CONTROLLER, decide, group_resource, policies, posix_stamp

from hyperpod_tenancy import cli
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission import POD_SPEC_POLICY, WORKLOAD_POLICY, admission_policies
from hyperpod_tenancy.k8s.team_manifests import team_manifests
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.tools.probe.live import IMPERSONATION
from hyperpod_tenancy.tools.probe.plan import (
    PROBE_PORT,
    Check,
    Observed,
    Outcome,
    ProbePlan,
    Status,
    exit_status,
    probe_plan,
    verdict,
)

OWNER, INTRUDER = "research", "vision"
ROLES = {
    "research": "AWSReservedSSO_Research_0123456789abcdef",
    "vision": "AWSReservedSSO_ComputerVision_fedcba9876543210",
    "inference": "AWSReservedSSO_Inference_00112233aabbccdd",
}
RUN = "0a1b2c3d"
PLATFORM_YAML = str(platforms.PLATFORM_YAML)


def plan_for(platform: Platform, owner: str = OWNER, intruder: str = INTRUDER) -> ProbePlan:
    return probe_plan(platform, owner=owner, intruder=intruder, run=RUN, roles=ROLES)


@pytest.fixture(scope="module")
def plan(synth: Synth) -> ProbePlan:
    """The plan on the synthesized platform of each fairness backend."""
    return plan_for(synth.platform)


def every_object(plan: ProbePlan) -> list[dict[str, Any]]:
    return [*plan.objects(), *(obj for _, obj in plan.dry_runs.values())]


# ------------------------------------------------------------------------------------------ the manifests


def test_every_manifest_validates_against_the_kubernetes_schemas(plan: ProbePlan) -> None:
    objects = every_object(plan)
    assert {o["kind"] for o in objects} == {"Job", "Service"}
    for obj in objects:
        kubernetes_validate.validate(obj, "1.33.0", strict=True)


def test_strict_validation_of_the_probe_job_is_not_vacuous(plan: ProbePlan) -> None:
    job = copy.deepcopy(plan.clients[OWNER])
    job["spec"]["template"]["spec"]["restartPolicies"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, "1.33.0", strict=True)


def test_everything_created_carries_the_run_label_and_no_derived_name_is_spelt(plan: ProbePlan) -> None:
    for obj in every_object(plan):
        assert obj["metadata"]["labels"][labels.PROBE_LABEL] == RUN
        assert obj["metadata"]["name"].startswith(names.probe_object(RUN, ""))
        assert len(obj["metadata"]["name"]) <= 63 - 6  # a Job's pods append a suffix
    service = plan.server[1]
    server_pod_labels = plan.server[0]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= server_pod_labels.items()
    assert service["spec"]["type"] == "ClusterIP"


def test_probe_pods_are_small_unprivileged_and_on_hyperpod_nodes(plan: ProbePlan) -> None:
    for job in (plan.server[0], *plan.clients.values()):
        spec = job["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert container["image"] == "public.ecr.aws/docker/library/busybox:1.37.0"
        assert not any("gpu" in r or "neuron" in r for r in container["resources"]["limits"])
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert spec["automountServiceAccountToken"] is False
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"][0]["key"] == "sagemaker.amazonaws.com/node-health-status"
        assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] > 0


# ------------------------------------------------------------------------------------------ admission (CEL)


def _member(plan: ProbePlan, team: str) -> dict[str, Any]:
    who = plan.owner if team == plan.owner.team else plan.intruder
    extra = {k: [v] for k, v in who.extra.items()}
    return {"username": who.username, "groups": [who.group, "system:authenticated"], "extra": extra}


def test_the_probe_jobs_are_admitted_as_their_own_team(synth: Synth, plan: ProbePlan) -> None:
    for team, job in [(OWNER, plan.server[0]), *plan.clients.items(), plan.dry_runs["a-admitted-own-queue"]]:
        decision = decide(synth, job, team=team, user=_member(plan, team))
        assert decision.allowed, (job["metadata"]["name"], decision.denied)
        assert WORKLOAD_POLICY in decision.policies() and POD_SPEC_POLICY in decision.policies()


def test_the_probe_pods_pass_the_pod_policies_once_stamped(synth: Synth, plan: ProbePlan) -> None:
    # the Job controller creates the pods from the template the POSIX identity webhook stamped
    for team, job in [(OWNER, plan.server[0]), *plan.clients.items()]:
        template = job["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**template["metadata"], "name": job["metadata"]["name"] + "-x7k2q"},
            "spec": posix_stamp(template["spec"], team),
        }
        kubernetes_validate.validate(pod, "1.33.0", strict=True)
        decision = decide(synth, pod, team=team, user=JOB_CONTROLLER, resource="pods")
        assert decision.allowed, decision.denied
        assert "hyperpod-tenancy-posix-identity" in decision.policies()


NEGATIVE = ("b-job-on-a-queue", "b-unentitled-class", "b-gpu-visibility")


def test_each_negative_job_is_denied_as_b_with_the_message_the_probe_expects(
    synth: Synth, plan: ProbePlan
) -> None:
    assert set(NEGATIVE) <= set(plan.dry_runs), "the reference B (vision) is not entitled to inference"
    for check_id in NEGATIVE:
        team, job = plan.dry_runs[check_id]
        assert team == INTRUDER
        decision = decide(synth, job, team=INTRUDER, user=_member(plan, INTRUDER))
        check = plan.check(check_id)
        assert any(check.message in m for m in decision.denied), (check_id, check.message, decision.denied)
        # the probe's verdict on what the model predicts
        observed = {check_id: Observed(outcome=Outcome.DENIED, detail=" | ".join(decision.denied))}
        assert verdict(check, observed).status is Status.PASS


@pytest.mark.parametrize(
    ("removed", "check_id"),
    [
        (WORKLOAD_POLICY, "b-job-on-a-queue"),
        (WORKLOAD_POLICY, "b-unentitled-class"),
        (POD_SPEC_POLICY, "b-gpu-visibility"),
    ],
)
def test_without_the_admission_policy_the_model_admits_and_the_probe_says_fail(
    synth: Synth, plan: ProbePlan, removed: str, check_id: str
) -> None:
    broken = [
        o
        for o in policies(synth)
        if removed not in (o["metadata"]["name"], o.get("spec", {}).get("policyName"))
    ]
    assert len(broken) == len(policies(synth)) - 2
    team, job = plan.dry_runs[check_id]
    namespace = _namespace(synth.platform, team)
    decision = evaluate_policies(
        broken, obj=job, namespace=namespace, group="batch", resource="jobs", user_info=_member(plan, team)
    )
    check = plan.check(check_id)
    assert not any(check.message in m for m in decision.denied)
    outcome = (
        Observed(outcome=Outcome.OK)
        if decision.allowed
        else Observed(outcome=Outcome.DENIED, detail=decision.denied[0])
    )
    assert verdict(check, {check_id: outcome}).status is not Status.PASS
    if decision.allowed:
        assert verdict(check, {check_id: outcome}).status is Status.FAIL


def _namespace(platform: Platform, team: str) -> dict[str, Any]:
    ns = names.namespace(team)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": ns,
            "labels": {
                **labels.namespace_labels(platform, platform.team(team)),
                labels.NAMESPACE_NAME_LABEL: ns,
            },
        },
    }


# ------------------------------------------------------------------------------------------ RBAC


def test_rbac_lets_each_team_run_its_probe_and_forbids_b_in_a(synth: Synth, plan: ProbePlan) -> None:
    authz = Authorizer(synth.manifests())
    a = Subject(plan.owner.username, (plan.owner.group,))
    b = Subject(plan.intruder.username, (plan.intruder.group,))
    for who, team in ((a, OWNER), (b, INTRUDER)):
        ns = names.namespace(team)
        assert authz.can(who, "create", "jobs", group="batch", namespace=ns)
        assert authz.can(who, "delete", "jobs", group="batch", namespace=ns, name="x")
        assert authz.can(who, "list", "pods", namespace=ns)
        assert authz.can(who, "get", "pods/log", namespace=ns, name="x")
    assert authz.can(a, "create", "services", namespace=names.namespace(OWNER))
    assert authz.can(a, "delete", "services", namespace=names.namespace(OWNER), name="x")
    # the boundary: B creates nothing in A's namespace, nor bare pods anywhere
    assert not authz.can(b, "create", "jobs", group="batch", namespace=names.namespace(OWNER))
    assert not authz.can(b, "create", "pods", namespace=names.namespace(INTRUDER))
    team, job = plan.dry_runs["b-creates-in-a-namespace"]
    assert team == INTRUDER and job["metadata"]["namespace"] == names.namespace(OWNER)


def test_the_platform_admin_access_may_impersonate() -> None:
    # AmazonEKSClusterAdminPolicy maps to cluster-admin (EKS user guide, "Review access policy permissions"):
    # verbs * on * in every API group, so the impersonate rules the probe checks up front are granted
    cluster_admin = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "cluster-admin"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "admin"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "operator"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
    }
    authz = Authorizer([cluster_admin, binding, *platforms.all_objects(platforms.reference_platform())])
    for group, resource in IMPERSONATION:
        assert authz.can(Subject("operator"), "impersonate", resource, group=group, name="x")
        # and no team member may
        assert not authz.can(
            Subject("alice", (names.kubernetes_group(OWNER),)), "impersonate", resource, group=group, name="x"
        )


def _extra_from_headers(headers: dict[str, str]) -> dict[str, list[str]]:
    """``userInfo.extra`` as the API server builds it from ``Impersonate-Extra-*`` (keys lower-cased:
    apiserver ``endpoints/filters/impersonation.go``, ``unescapeExtraKey(strings.ToLower(...))``)."""
    prefix = "impersonate-extra-"
    return {k.lower()[len(prefix) :]: [v] for k, v in headers.items() if k.lower().startswith(prefix)}


@pytest.mark.parametrize("team", [OWNER, INTRUDER])
def test_the_posix_identity_webhook_resolves_the_probe_member_as_a_person_of_the_team(team: str) -> None:
    import dataclasses

    from hyperpod_tenancy.k8s.posix_identity import team_record, webhook_config
    from hyperpod_tenancy.webhook.config import parse_config, parse_team_record
    from hyperpod_tenancy.webhook.identity import Denied, Person, resolve

    platform = platforms.reference_platform()
    plan = plan_for(platform)
    who = plan.owner if team == OWNER else plan.intruder
    # the server's configuration plus the team records the team stacks write (what the server reads at run time)
    config = parse_config(webhook_config(platform))
    uids = (platform.cluster.posix_identity.uid_range.first, platform.cluster.posix_identity.uid_range.last)
    records = {
        names.namespace(t): parse_team_record(
            team_record(platform, t).to_document(), uid_range=uids, source=t
        )
        for t in (OWNER, INTRUDER)
    }
    config = dataclasses.replace(config, namespaces=records)
    headers = who.headers()
    extra = _extra_from_headers(headers)
    resolution = resolve(
        config, namespace=names.namespace(team), username=headers["Impersonate-User"], extra=extra
    )
    assert isinstance(resolution, Person), resolution
    assert resolution.key == "sso:hyperpod-tenancy-probe"
    # the same member is no person of the other team: the webhook, too, keeps B out of A
    other = names.namespace(INTRUDER if team == OWNER else OWNER)
    assert isinstance(resolve(config, namespace=other, username=who.username, extra=extra), Denied)


# ------------------------------------------------------------------------------------------ network (NCA)


def _probe_pods(plan: ProbePlan) -> list[dict[str, Any]]:
    pods = []
    for job in (plan.server[0], *plan.clients.values()):
        template = job["spec"]["template"]
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": job["metadata"]["name"],
                    "namespace": job["metadata"]["namespace"],
                    "labels": dict(template["metadata"]["labels"]),
                },
                "spec": {
                    "containers": [
                        {k: v for k, v in c.items() if k in ("name", "image", "ports")}
                        for c in template["spec"]["containers"]
                    ]
                },
            }
        )
    return pods


def _role(plan: ProbePlan, role: str) -> dict[str, Any]:
    return {"matchLabels": {labels.PROBE_LABEL: plan.run, labels.PROBE_ROLE_LABEL: role}}


def probe_queries(plan: ProbePlan) -> list[nca_scheme.Query]:
    """The probe's network checks as NCA questions about the probe pods themselves."""
    a, b = names.namespace(plan.owner.team), names.namespace(plan.intruder.team)
    port = [{"protocol": "TCP", "port": PROBE_PORT}]

    def into_server(name: str, source_ns: str, kind: str) -> nca_scheme.Query:
        source = {
            "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: source_ns}},
            "podSelector": _role(plan, "client"),
        }
        spec = {
            "podSelector": _role(plan, "server"),
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [source], "ports": port}],
        }
        return nca_scheme.Query(name, kind, [nca_scheme._policy("q", a, spec)])

    imds = {
        "podSelector": _role(plan, "client"),
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": nca_scheme.IMDS}}]}],
    }
    return [
        into_server("a-reaches-own-service", a, "permits"),
        into_server("b-to-a-service", b, "forbids"),
        nca_scheme.Query("imds-from-a", "forbids", [nca_scheme._policy("q", a, imds)]),
    ]


def network_policies(platform: Platform) -> list[dict[str, Any]]:
    return [
        o
        for t in platform.teams
        for o in team_manifests(platform, t, fsx=platforms.FSX)
        if o["kind"] == "NetworkPolicy"
    ]


def run_nca(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    plan: ProbePlan,
    platform: Platform,
    policies_: list[dict[str, Any]],
) -> dict[str, Observed]:
    """Run the probe's queries with the probe pods in the topology; return what the model predicts the pods see.

    A forbidden connection is predicted as a timeout (the policy engine drops the packets), a permitted one as ok.
    """
    original = nca_scheme.topology

    def with_probe_pods(team_namespaces: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        namespaces, pods = original(team_namespaces)
        return namespaces, [*pods, *_probe_pods(plan)]

    monkeypatch.setattr(nca_scheme, "topology", with_probe_pods)
    queries = probe_queries(plan)
    result = nca_scheme.run_scheme(
        tmp,
        policies=policies_,
        team_namespaces=[names.namespace(t.name) for t in platform.teams],
        vpc_cidr=platform.cluster.vpc_cidr,
        queries=queries,
    )
    assert nca_scheme.EMPTINESS_QUERY not in result.failed, (
        result.output
    )  # every question selects a probe pod
    for q in queries:
        assert f"Running query {q.name}\n" in result.output
    predicted = {}
    for q in queries:
        holds = q.name not in result.failed
        connects = holds if q.kind == "permits" else not holds
        predicted[q.name] = Observed(outcome=Outcome.OK if connects else Outcome.TIMEOUT, detail="NCA")
    return predicted


@pytest.mark.parametrize("backend", ["reference", "kueue"])
def test_nca_agrees_with_every_network_expectation(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = platforms.reference_platform() if backend == "reference" else platforms.kueue_platform()
    plan = plan_for(platform)
    predicted = run_nca(tmp_path, monkeypatch, plan, platform, network_policies(platform))
    assert predicted["a-reaches-own-service"].outcome is Outcome.OK
    assert predicted["b-to-a-service"].outcome is Outcome.TIMEOUT
    for check_id in predicted:
        assert verdict(plan.check(check_id), predicted).status is Status.PASS, check_id


def test_broken_network_variants_make_the_probe_report_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = platforms.reference_platform()
    plan = plan_for(platform)
    a, b = names.namespace(OWNER), names.namespace(INTRUDER)
    deployed = network_policies(platform)

    # 1. A's allow-same-namespace removed: the positive control fails, and with it nothing is "blocked"
    without = [
        p
        for p in deployed
        if (p["metadata"]["namespace"], p["metadata"]["name"]) != (a, "allow-same-namespace")
    ]
    predicted = run_nca(tmp_path / "one", monkeypatch, plan, platform, without)
    assert verdict(plan.check("a-reaches-own-service"), predicted).status is Status.FAIL
    assert verdict(plan.check("b-to-a-service"), predicted).status is Status.INCONCLUSIVE

    # 2. no single removal opens B -> A (each side denies); a leak on both sides does, and the probe says FAIL
    egress = nca_scheme._policy("leak-egress", b, {"policyTypes": ["Egress"], "egress": [{}]})
    ingress = nca_scheme._policy("leak-ingress", a, {"policyTypes": ["Ingress"], "ingress": [{}]})
    predicted = run_nca(tmp_path / "two", monkeypatch, plan, platform, [*deployed, egress, ingress])
    assert verdict(plan.check("a-reaches-own-service"), predicted).status is Status.PASS
    assert verdict(plan.check("b-to-a-service"), predicted).status is Status.FAIL

    # 3. IMDS no longer excepted from A's internet egress
    leaky = copy.deepcopy(deployed)
    for p in leaky:
        if (p["metadata"]["namespace"], p["metadata"]["name"]) == (a, "allow-internet-egress"):
            p["spec"]["egress"][0]["to"][0]["ipBlock"]["except"].remove(nca_scheme.IMDS)
    predicted = run_nca(tmp_path / "three", monkeypatch, plan, platform, leaky)
    assert verdict(plan.check("imds-from-a"), predicted).status is Status.FAIL


# ------------------------------------------------------------------------------------------ verdicts


def _checks(plan: ProbePlan) -> dict[str, Check]:
    return {c.id: c for c in plan.checks}


def test_verdicts_on_observations() -> None:
    plan = plan_for(platforms.reference_platform())
    c = _checks(plan)
    ok, timeout = Observed(outcome=Outcome.OK), Observed(outcome=Outcome.TIMEOUT)
    refused = Observed(outcome=Outcome.REFUSED)
    # a timeout is "blocked" only after the positive control passed
    assert (
        verdict(c["b-to-a-service"], {"a-reaches-own-service": ok, "b-to-a-service": timeout}).status
        is Status.PASS
    )
    before = verdict(c["b-to-a-service"], {"a-reaches-own-service": timeout, "b-to-a-service": timeout})
    assert before.status is Status.INCONCLUSIVE and "positive control a-reaches-own-service" in before.why
    assert verdict(c["b-to-a-service"], {"b-to-a-service": refused}).status is Status.INCONCLUSIVE
    assert (
        verdict(c["b-to-a-service"], {"a-reaches-own-service": ok, "b-to-a-service": ok}).status
        is Status.FAIL
    )
    # no capacity is never a pass
    unschedulable = Observed(outcome=Outcome.UNSCHEDULABLE, detail="0/4 nodes are available")
    for check_id in ("a-reaches-own-service", "b-to-a-service", "b-reads-a-fsx"):
        result = verdict(
            c[check_id], {"a-reaches-own-service": ok, "a-fsx-own-directory": ok, check_id: unschedulable}
        )
        assert result.status is Status.INCONCLUSIVE and "no capacity" in result.why
    # FSx: absent after A wrote its file passes; a read of A's token fails
    absent = Observed(outcome=Outcome.ABSENT, detail="No such file or directory")
    assert (
        verdict(c["b-reads-a-fsx"], {"a-fsx-own-directory": ok, "b-reads-a-fsx": absent}).status
        is Status.PASS
    )
    assert verdict(c["b-reads-a-fsx"], {"a-fsx-own-directory": ok, "b-reads-a-fsx": ok}).status is Status.FAIL
    # a denial by another rule does not prove the boundary
    other = Observed(outcome=Outcome.DENIED, detail="admission webhook denied the request: no UID yet")
    assert verdict(c["b-job-on-a-queue"], {"b-job-on-a-queue": other}).status is Status.INCONCLUSIVE
    assert verdict(c["b-job-on-a-queue"], {"b-job-on-a-queue": ok}).status is Status.FAIL
    # a positive control that is refused fails (the team cannot do its honest work)
    assert verdict(c["a-admitted-own-queue"], {"a-admitted-own-queue": other}).status is Status.FAIL
    assert verdict(c["a-reaches-own-service"], {}).status is Status.INCONCLUSIVE  # not observed


def test_exit_status() -> None:
    plan = plan_for(platforms.reference_platform())
    check = plan.checks[0]
    passed = verdict(check, {check.id: Observed(outcome=Outcome.OK)})
    failed = verdict(check, {check.id: Observed(outcome=Outcome.REFUSED)})
    unknown = verdict(check, {check.id: Observed(outcome=Outcome.UNSCHEDULABLE)})
    assert exit_status([passed, passed]) == 0
    assert exit_status([passed, unknown]) == 3
    assert exit_status([unknown, failed, passed]) == 1
    assert exit_status([]) == 3


def test_plan_errors_name_the_fix() -> None:
    platform = platforms.reference_platform()
    with pytest.raises(ValueError, match="two different teams"):
        probe_plan(platform, owner=OWNER, intruder=OWNER, run=RUN, roles=ROLES)
    with pytest.raises(ValueError, match=r"not a team of the shared cluster .*research"):
        probe_plan(platform, owner="nobody", intruder=INTRUDER, run=RUN, roles=ROLES)
    with pytest.raises(ValueError, match="--member-role vision="):
        probe_plan(platform, owner=OWNER, intruder=INTRUDER, run=RUN, roles={OWNER: ROLES[OWNER]})
    with pytest.raises(
        ValueError, match=r"AWSReservedSSO_ComputerVision_<16 hex digits>.*aws iam list-roles"
    ):
        probe_plan(
            platform,
            owner=OWNER,
            intruder=INTRUDER,
            run=RUN,
            roles={**ROLES, INTRUDER: "AWSReservedSSO_Vision_0123456789abcdef"},
        )


def test_a_team_entitled_to_every_class_skips_that_check() -> None:
    def entitle(data: dict[str, Any]) -> None:
        for team in data["teams"]:
            if team["name"] == INTRUDER:
                team["allowedPriorityClasses"] = [c["name"] for c in data["scheduling"]["priorityClasses"]]

    plan = plan_for(platforms.variant("vision entitled to all", entitle))
    assert "b-unentitled-class" not in {c.id for c in plan.checks}
    assert plan.skipped == [f"b-unentitled-class: team {INTRUDER} is entitled to every priority class"]


# ------------------------------------------------------------------------------------------ live, end to end


def _cluster(platform: Platform, **kw: Any) -> ProbeCluster:
    return ProbeCluster(
        rbac_objects=platforms.all_objects(platform),
        policies=kw.pop("policies", admission_policies(platform)),
        namespaces={names.namespace(t.name): _namespace(platform, t.name) for t in platform.teams},
        **kw,
    )


def _log(*lines: str) -> str:
    return "".join(f"PROBE-RESULT {line}\n" for line in lines)


HEALTHY = {
    "server": PodScript(phases=("Pending", "Running")),
    "a-client": PodScript(
        phases=("Succeeded",),
        log=_log(
            "a-reaches-own-service ok",
            "a-fsx-own-directory ok",
            "imds-from-a timeout wget: download timed out",
        ),
    ),
    "b-client": PodScript(
        phases=("Running", "Succeeded"),
        log=_log(
            "b-to-a-service timeout wget: download timed out",
            "b-reads-a-fsx absent cat: can't open '/fsx/research/.x': No such file or directory",
        ),
    ),
}


def kubeconfig(tmp_path: Path, url: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "shared-gpu", "cluster": {"server": url}}],
        "users": [{"name": "operator", "user": {"token": "operator-token"}}],
        "contexts": [{"name": "shared-gpu", "context": {"cluster": "shared-gpu", "user": "operator"}}],
        "current-context": "shared-gpu",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def probe(tmp_path: Path, cluster: ProbeCluster, *extra: str) -> list[str]:
    roles = [f"--member-role={t}={ROLES[t]}" for t in (OWNER, INTRUDER)]
    return [
        "probe",
        PLATFORM_YAML,
        "--teams",
        OWNER,
        INTRUDER,
        *roles,
        "--kubeconfig",
        str(kubeconfig(tmp_path, cluster.url)),
        *extra,
    ]


def test_live_probe_end_to_end_passes_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    platform = platforms.reference_platform()
    with _cluster(platform, script=HEALTHY) as cluster:
        status = cli.main([*probe(tmp_path, cluster), "--format", "json", "--timeout", "20"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert status == 0, captured.out
    assert report["exitStatus"] == 0 and {c["status"] for c in report["checks"]} == {"pass"}
    # every tenant request impersonated a member of the acting team; the operator made only access reviews
    assert not cluster.unimpersonated
    tenant = [s for s in cluster.seen if "selfsubjectaccessreviews" not in s.path]
    assert tenant and all(h in s.headers for s in tenant for h in IMPERSONATION_HEADERS)
    groups = {s.headers["Impersonate-Group"] for s in tenant}
    assert groups == {names.kubernetes_group(OWNER), names.kubernetes_group(INTRUDER)}
    for s in tenant:
        assert s.headers["Impersonate-Extra-arn"] == s.headers["Impersonate-User"]
    reviews = [s for s in cluster.seen if "selfsubjectaccessreviews" in s.path]
    assert len(reviews) == len(IMPERSONATION)
    # the real objects were created (server, Service, two clients) and every one deleted, Jobs in the background
    created = [
        (s.body["kind"], s.body["metadata"]["name"])
        for s in tenant
        if s.method == "POST" and "dryRun" not in s.path
    ]
    assert len(created) == 4
    assert not cluster.stored, cluster.stored
    jobs = [d for d in cluster.deleted if d[0] == "jobs"]
    assert len(jobs) == 3 and all(d[3]["propagationPolicy"] == "Background" for d in jobs)
    assert [d[0] for d in cluster.deleted].count("services") == 1
    # the dry-runs were judged by the admission and RBAC models: B's crossings denied, A's honest Job admitted
    dry = {s.body["metadata"]["name"]: s.status for s in tenant if "dryRun=All" in s.path}
    assert sorted(dry.values()) == [201, 403, 403, 403, 403]
    assert "probe: run " in captured.err and "deleted Job" in captured.err


def test_live_unschedulable_pod_is_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    platform = platforms.reference_platform()
    script = {**HEALTHY, "b-client": PodScript(unschedulable=True)}
    with _cluster(platform, script=script) as cluster:
        status = cli.main([*probe(tmp_path, cluster), "--timeout", "1"])
    out = capsys.readouterr().out
    assert status == 3, out
    lines = {
        line.split()[1]: line
        for line in out.splitlines()[2:]
        if line.startswith("  ") and len(line.split()) > 2
    }
    assert lines["b-to-a-service"].split()[0] == "inconclusive"
    assert "no capacity" in lines["b-to-a-service"] and "Unschedulable" in lines["b-reads-a-fsx"]
    assert lines["a-reaches-own-service"].split()[0] == "pass"
    assert not cluster.stored and not cluster.unimpersonated


def test_live_image_that_cannot_be_pulled_is_an_error_not_no_capacity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {**HEALTHY, "server": PodScript(waiting="ImagePullBackOff")}
    with _cluster(platforms.reference_platform(), script=script) as cluster:
        status = cli.main([*probe(tmp_path, cluster), "--format", "json", "--timeout", "30"])
    report = json.loads(capsys.readouterr().out)
    assert status == 3
    by_id = {c["id"]: c for c in report["checks"]}
    assert by_id["a-reaches-own-service"]["observed"] == "error"
    assert "ImagePullBackOff" in by_id["a-reaches-own-service"]["detail"]
    assert by_id["b-to-a-service"]["status"] == "inconclusive"
    assert by_id["b-job-on-a-queue"]["status"] == "pass"  # the dry-runs still ran
    assert not cluster.stored


def test_live_broken_admission_is_a_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    platform = platforms.reference_platform()
    broken = [
        p
        for p in admission_policies(platform)
        if POD_SPEC_POLICY not in (p["metadata"]["name"], p["spec"].get("policyName"))
    ]
    with _cluster(platform, script=HEALTHY, policies=broken) as cluster:
        status = cli.main([*probe(tmp_path, cluster), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    failed = {c["id"] for c in report["checks"] if c["status"] == "FAIL"}
    assert failed == {"b-gpu-visibility"}
    assert not cluster.stored


def test_live_without_impersonation_rights_nothing_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _cluster(platforms.reference_platform(), script=HEALTHY, impersonate=False) as cluster:
        status = cli.main(probe(tmp_path, cluster))
    err = capsys.readouterr().err
    assert status == 3
    assert "may not impersonate" in err and "core/users" in err
    assert all("selfsubjectaccessreviews" in s.path for s in cluster.seen)


def test_live_interrupted_run_still_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hyperpod_tenancy.tools.probe import live as _probe_live

    original = _probe_live.Runner._wait

    def interrupted(self: Any, team: str, job: dict[str, Any], *, until: str) -> Any:
        if until == "done":
            raise KeyboardInterrupt
        return original(self, team, job, until=until)

    monkeypatch.setattr(_probe_live.Runner, "_wait", interrupted)
    with _cluster(platforms.reference_platform(), script=HEALTHY) as cluster:
        status = cli.main(probe(tmp_path, cluster))
    assert status == 3
    assert "interrupted" in capsys.readouterr().err
    assert not cluster.stored and len(cluster.deleted) == 4


def test_live_keep_leaves_the_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _cluster(platforms.reference_platform(), script=HEALTHY) as cluster:
        status = cli.main([*probe(tmp_path, cluster), "--keep"])
    assert status == 0
    assert len(cluster.stored) == 4 and not cluster.deleted
    assert "--keep: left" in capsys.readouterr().err


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["probe", PLATFORM_YAML, "--teams", OWNER, INTRUDER]) == 2
    assert "--member-role research=" in capsys.readouterr().err
    assert cli.main(["probe", PLATFORM_YAML, "--teams", OWNER, INTRUDER, "--member-role", "nonsense"]) == 2
    assert "write TEAM=ROLE" in capsys.readouterr().err
    assert cli.main(["probe", "missing.yaml", "--teams", OWNER, INTRUDER]) == 2


def test_group_resource_of_the_probe_job_is_batch_jobs() -> None:
    plan = plan_for(platforms.reference_platform())
    assert group_resource(plan.clients[OWNER]) == ("batch", "jobs")


# ------------------------------------------------------------------------------------------ the client scripts

FAKE_WGET = """#!/bin/sh
# busybox wget's outcomes (networking/wget.c): the body on stdout, or one error line on stderr
case "$*" in
  *169.254.169.254*) out="$IMDS_OUT"; rc="$IMDS_RC";;
  *) out="$SERVICE_OUT"; rc="$SERVICE_RC";;
esac
if [ "$rc" = 0 ]; then echo "$out"; else echo "wget: $out" >&2; fi
exit "$rc"
"""


def run_script(tmp_path: Path, script: str, **env: str) -> dict[str, Observed]:
    """Run a client's script with ``sh``, a scripted ``wget`` and ``/fsx`` under ``tmp_path``; parse its log."""
    import os
    import subprocess

    from hyperpod_tenancy.tools.probe.live import _results

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "wget").write_text(FAKE_WGET)
    (bin_dir / "sleep").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("wget", "sleep"):
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "fsx" / OWNER).mkdir(parents=True, exist_ok=True)
    local = script.replace("/fsx/", f"{tmp_path}/fsx/")
    environment = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "IMDS_RC": "1", "SERVICE_RC": "1", **env}
    proc = subprocess.run(
        ["sh", "-c", local], capture_output=True, text=True, env=environment, timeout=30, check=True
    )
    return _results(proc.stdout)


def test_the_owner_client_script_reports_each_outcome(tmp_path: Path) -> None:
    plan = plan_for(platforms.reference_platform())
    script = plan.clients[OWNER]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    seen = run_script(tmp_path, script, SERVICE_OUT=RUN, SERVICE_RC="0", IMDS_OUT="download timed out")
    assert {k: v.outcome for k, v in seen.items()} == {
        "a-reaches-own-service": Outcome.OK,
        "a-fsx-own-directory": Outcome.OK,
        "imds-from-a": Outcome.TIMEOUT,
    }
    assert not list((tmp_path / "fsx" / OWNER).iterdir()), "the file A wrote is removed again"
    # a reachable IMDS answering 401 (IMDSv2 wants a token) is reached all the same
    seen = run_script(
        tmp_path,
        script,
        SERVICE_OUT="something else",
        SERVICE_RC="0",
        IMDS_OUT="server returned error: HTTP/1.1 401 Unauthorized",
    )
    assert seen["imds-from-a"].outcome is Outcome.OK
    assert seen["a-reaches-own-service"].outcome is Outcome.ERROR  # an answer without the run's token


def test_the_intruder_client_script_reports_each_outcome(tmp_path: Path) -> None:
    plan = plan_for(platforms.reference_platform())
    script = plan.clients[INTRUDER]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    refused = "can't connect to remote host (172.20.4.1): Connection refused"
    seen = run_script(tmp_path, script, SERVICE_OUT=refused)
    assert (
        seen["b-to-a-service"].outcome is Outcome.REFUSED
        and "Connection refused" in seen["b-to-a-service"].detail
    )
    assert seen["b-reads-a-fsx"].outcome is Outcome.ABSENT
    # were A's token file readable from B's pod, the probe would see it
    token = tmp_path / "fsx" / OWNER / f".{names.probe_object(RUN, 'token')}"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(RUN + "\n")
    seen = run_script(tmp_path, script, SERVICE_OUT=RUN, SERVICE_RC="0")
    assert seen["b-to-a-service"].outcome is Outcome.OK and seen["b-reads-a-fsx"].outcome is Outcome.OK
    seen = run_script(tmp_path, script, SERVICE_OUT="bad address 'x.svc'")
    assert seen["b-to-a-service"].outcome is Outcome.ERROR  # a DNS failure decides nothing


def test_the_server_script_keeps_its_token_only_while_it_runs(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import time

    plan = plan_for(platforms.reference_platform())
    script = plan.server[0]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "httpd").write_text("#!/bin/sh\nwhile :; do sleep 0.1; done\n")  # serves until killed
    (bin_dir / "httpd").chmod(0o755)
    (tmp_path / "fsx" / OWNER).mkdir(parents=True)
    local = script.replace("/tmp/", f"{tmp_path}/tmp/").replace("/fsx/", f"{tmp_path}/fsx/")
    token = tmp_path / "fsx" / OWNER / f".{names.probe_object(RUN, 'token')}"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    server = subprocess.Popen(["sh", "-c", local], env=env, start_new_session=True)
    try:
        for _ in range(100):
            if token.exists():
                break
            time.sleep(0.05)
        assert token.read_text() == RUN + "\n"
        assert (tmp_path / "tmp" / "www" / "token").read_text() == RUN + "\n"
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)  # only the process group this test started
            server.wait()
    assert not token.exists(), "the server removes its token from /fsx/<A> when the Job ends"


def test_sigterm_to_a_running_probe_still_cleans_up(tmp_path: Path) -> None:
    """A cancelled CI job sends SIGTERM: the probe process deletes what it created and exits 3."""
    import signal
    import subprocess
    import sys
    import time

    script = {**HEALTHY, "b-client": PodScript(unschedulable=True)}
    with _cluster(platforms.reference_platform(), script=script) as cluster:
        args = [sys.executable, "-m", "hyperpod_tenancy", *probe(tmp_path, cluster), "--timeout", "60"]
        with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                for _ in range(300):  # until B's client exists and the probe waits for it
                    if any(name.endswith("b-client") for _, _, name in cluster.stored):
                        break
                    time.sleep(0.1)
                assert any(name.endswith("b-client") for _, _, name in cluster.stored), proc.stderr
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()  # only the process this test started
        assert proc.returncode == 3, err
        assert "interrupted" in err
        assert not cluster.stored and len(cluster.deleted) == 4

"""Every request the admission suites judge offline, judged again by the real API server, as the person it models.

The offline suites (``admission_replay.SUITES``: the tenant- and teammate-hostile suites, the CEL, POSIX identity,
HyperPod CLI, onboarding and chart-extension tests) evaluate the rendered ValidatingAdmissionPolicies with a
standard CEL engine (``tests/support/cel_admission.py``). Here they run once more in a child pytest that records
each request; every request judged by the policies of a platform applied here (the reference platform on both
fairness backends) is sent to the real kube-apiserver with the same policies in force, through the real POSIX
identity webhook, impersonating the request's ``userInfo`` (``tests/support/admission_replay.py``).

One verdict that differs (admitted on one side and denied on the other, or denied by another policy or message)
fails the suite, listing every such case. Requests the real server refuses before or beside the policies (RBAC,
the webhook) are counted apart and printed; they are not agreements.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import tenant_admission as ta
from admission_replay import Case, Replay, Verdict, by_platform, identities, load, policies_of, record, replay
from cel_admission import TEAM_MEMBER
from cluster_platform import ClusterPlatforms, OnCluster
from kube_client import wait_until
from synth import Synth
from webhook_server import sso_user

from hyperpod_tenancy.k8s import workloads
from hyperpod_tenancy.policy import Platform, names

pytestmark = pytest.mark.cluster

#: The fixtures of the platforms replayed, and the name each is applied under.
APPLIED_AS = {"kueue_reference": "reference-kueue", "reference": "reference"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    """Every distinct request the offline admission suites judged (recorded now; or read from the folder
    ``HYPERPOD_TENANCY_ADMISSION_CASES`` names, a recording kept while working on this module)."""
    kept = os.environ.get("HYPERPOD_TENANCY_ADMISSION_CASES")
    if kept:
        return load(Path(kept))
    return record(tmp_path_factory.mktemp("admission-cases"))


@pytest.fixture(scope="module")
def replays(
    recorded: list[Case], cluster_platforms: ClusterPlatforms, request: pytest.FixtureRequest
) -> Iterator[dict[str, Replay]]:
    """Each applied platform's cases replayed on the real server (by fixture name)."""
    groups = dict(by_platform(recorded))
    found: dict[str, Replay] = {}
    for fixture, name in APPLIED_AS.items():
        synth: Synth = request.getfixturevalue(fixture)
        cases = groups.get(policies_of(ta.policies(synth)), [])
        assert cases, f"no recorded case was judged by the policies of {fixture}"
        on = cluster_platforms.on(name, synth)
        on.await_admission()
        namespaces = {
            ns["metadata"]["name"]: ns["metadata"].get("labels", {})
            for ns in on.admin.list("v1", "Namespace")
        }
        person = as_eks_authenticates(synth.platform)
        _allocate_uids(on, [person(i, n) for i, n in identities(cases)])
        found[fixture] = replay(on.admin, cases, namespaces=namespaces, person=person)
    yield found


def as_eks_authenticates(platform: Platform) -> Callable[[Mapping[str, Any], str], dict[str, Any]]:
    """The identity a case's ``userInfo`` models, as EKS authenticates it: the suites' default requester is a
    member of the team whose namespace the request is in; a person named by an e-mail address
    and a team's group is that team's Identity Center user (``webhook_server.sso_user``, in the team's
    permission set) with the case's groups; an assumed role or a service account is sent as recorded."""
    teams = {names.kubernetes_group(t.name): t for t in platform.hosted_teams}
    of_namespace = {names.namespace(t.name): t for t in platform.hosted_teams}

    def person(info: Mapping[str, Any], namespace: str) -> dict[str, Any]:
        if dict(info) == dict(TEAM_MEMBER) and namespace in of_namespace:  # the suites' default requester
            team = of_namespace[namespace]
            return sso_user("alice", team.name, permission_set=team.identity.permission_set_name)
        username = str(info["username"])
        team = next((teams[g] for g in info.get("groups", []) if g in teams), None)
        if username.startswith(("arn:aws:", "system:")) or team is None:
            return dict(info)
        modelled = sso_user(
            username.split("@", maxsplit=1)[0], team.name, permission_set=team.identity.permission_set_name
        )
        return {**modelled, "groups": list(info.get("groups", []))}

    return person


def _allocate_uids(on: OnCluster, people: list[dict[str, Any]]) -> None:
    """Each Identity Center person submits one honest Job for real first: the webhook allocates a POSIX UID on
    a person's first real submission and refuses a dry run before it (it does not allocate on a dry run)."""
    teams = {names.kubernetes_group(t.name): t.name for t in on.synth.platform.hosted_teams}
    for info in people:
        team = next((teams[g] for g in info.get("groups", []) if g in teams), None)
        if team is None or not str(info["username"]).startswith("arn:aws:sts::"):
            continue
        job = ta.job(team, annotations=ta.CHECKPOINT, name="uid-allocation")
        client = on.as_identity(info)
        if client.create(job).ok:
            on.admin.delete(job, propagation="Background")
            wait_until(lambda j=job: on.admin.get(j) is None, timeout=30, what="the allocation Job to go")


def _summary(name: str, result: Replay) -> str:
    compared = [v for v in result.verdicts if v.compared]
    denied = sum(1 for v in compared if v.outcome == "policy")
    return (
        f"{name}: {len(result.verdicts)} sent, {len(compared)} compared ({denied} denied by a policy), "
        f"{len(result.disagreements())} disagreements; refused elsewhere {dict(result.refused_elsewhere())}; "
        f"not sent {dict(result.unsent)}"
    )


@pytest.mark.parametrize("fixture", list(APPLIED_AS))
def test_the_real_server_agrees_with_every_offline_verdict(fixture: str, replays: dict[str, Replay]) -> None:
    result = replays[fixture]
    print(_summary(fixture, result))
    compared = [v for v in result.verdicts if v.compared]
    assert len(compared) >= 100, _summary(fixture, result)
    assert any(v.outcome == "policy" for v in compared) and any(v.outcome == "admitted" for v in compared)
    flips = result.disagreements()
    assert not flips, f"{len(flips)} disagreements:\n" + "\n".join(v.describe() for v in flips)


@pytest.mark.parametrize("fixture", list(APPLIED_AS))
def test_each_admitted_workload_comes_back_stamped_with_its_submitter(
    fixture: str, replays: dict[str, Replay], request: pytest.FixtureRequest
) -> None:
    """What a person's admitted workload runs as: each pod template of the object the server answered carries
    a person's POSIX UID (not root or a system UID) and the team's GID, as the webhook stamped them."""
    platform = request.getfixturevalue(fixture).platform
    gids = {names.namespace(t.name): t.identity.posix_gid for t in platform.hosted_teams}
    kinds = {(k.group, k.kind) for k in workloads.WORKLOAD_KINDS if k.kind != "Pod"}
    checked, wrong = 0, []
    for verdict in replays[fixture].verdicts:
        served, req = verdict.served, verdict.case.context["request"]
        if verdict.outcome != "admitted" or served is None or req["operation"] != "CREATE":
            continue
        if (served["apiVersion"].rpartition("/")[0], served["kind"]) not in kinds:
            continue
        if str(req["userInfo"]["username"]).startswith("system:"):  # a controller: nothing is stamped
            continue
        for spec in ta.pod_specs(served):
            context = spec.get("securityContext", {})
            checked += 1
            if context.get("runAsGroup") != gids[req["namespace"]] or int(context.get("runAsUser", 0)) < 1000:
                wrong.append(f"{verdict.case.test}: {served['kind']} runs as {context}")
    assert checked >= 10, checked
    assert wrong == [], "\n".join(wrong)


def test_a_flipped_verdict_is_a_disagreement(replays: dict[str, Replay]) -> None:
    """The comparison can fail: a case whose offline verdict is turned round disagrees with the same answer."""
    result = replays["kueue_reference"]
    admitted = next(v for v in result.verdicts if v.outcome == "admitted")
    denied = next(v for v in result.verdicts if v.outcome == "policy")
    as_denied = Case(admitted.case.test, admitted.case.policies, admitted.case.context, {"p": ["m"]})
    as_admitted = Case(denied.case.test, denied.case.policies, denied.case.context, {})
    other_message = Case(
        denied.case.test, denied.case.policies, denied.case.context, {denied.policy: ["other"]}
    )
    for case, verdict in ((as_denied, admitted), (as_admitted, denied), (other_message, denied)):
        flipped = Verdict(case, verdict.outcome, verdict.policy, verdict.message)
        assert flipped.compared and not flipped.agrees, flipped.describe()
    assert Replay([Verdict(as_denied, "admitted")]).disagreements()


def test_the_recording_holds_each_suite(recorded: list[Case]) -> None:
    """Every suite replayed recorded requests (a suite that stopped judging with the policies would vanish)."""
    files = {c.test.split("::", 1)[0] for c in recorded}
    for expected in ("test_admission_cel.py", "test_hostile_1_requester_fields.py", "test_onboarding.py"):
        assert any(Path(f).name == expected for f in files), sorted(files)

"""The admission case table sent to the real API server as the people it models, both fairness backends.

Each case of ``tests/support/admission_cases.py`` goes to the local control plane with the platform applied
(its ValidatingAdmissionPolicies, RBAC and the real POSIX identity webhook), impersonating the user name and
groups EKS gives the Identity Center user or the controller's service account: a CREATE as a server-side dry
run, an UPDATE as a dry-run merge patch of an object created for real first (deleted after). The real verdict
must equal the offline engine's (``cel_admission``) and the expected one; every disagreement is reported at
once. Each admitted pod template must come back stamped by the webhook (the submitter's UID, the team GID).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import admission_cases as ac
import pytest
import tenant_admission as ta
from cluster_platform import ClusterPlatforms, OnCluster
from kube_client import wait_until
from synth import Synth

pytestmark = pytest.mark.cluster


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) turning ``old`` into ``new``."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {k: None for k in old if k not in new}
    for key, value in new.items():
        if key not in old or old[key] != value:
            patch[key] = merge_patch(old.get(key), value)
    return patch


def pod_specs(obj: Any) -> list[dict[str, Any]]:
    """Every PodSpec in ``obj`` (a dict with ``containers``)."""
    if isinstance(obj, list):
        return [s for item in obj for s in pod_specs(item)]
    if not isinstance(obj, dict):
        return []
    if isinstance(obj.get("containers"), list):
        return [obj]
    return [s for value in obj.values() for s in pod_specs(value)]


def unstamped(body: Any, team: str = "research") -> list[str]:
    """The pod specs of an admitted object the webhook did not give a person's UID and the team GID."""
    gid = ta.team_gid(team)
    specs = pod_specs(body.get("spec", {}) if isinstance(body, dict) else {})
    problems = [] if specs else ["no pod spec in the answer"]
    for spec in specs:
        sc = spec.get("securityContext", {})
        uid = sc.get("runAsUser")
        if not (
            isinstance(uid, int) and uid >= 1000 and sc.get("runAsGroup") == gid and sc.get("fsGroup") == gid
        ):
            problems.append(f"securityContext {sc}")
    return problems


def sent_as(on: OnCluster, identity: dict[str, Any] | Any) -> Any:
    """A client impersonating ``identity``; a controller also gets ``system:masters``, standing in for the RBAC of
    its operator's own chart (not installed on the local control plane). Admission exempts by user name, so the
    policies see the controller as EKS would."""
    groups = list(identity["groups"])
    if "system:serviceaccounts" in groups:
        groups.append("system:masters")
    return on.as_identity({**identity, "groups": groups})


def as_stored(on: OnCluster, case: ac.Case) -> dict[str, Any]:
    """The old object of an UPDATE as the cluster would hold it.

    A controller builds the objects it owns from its parent's pod template, which the webhook stamped when the
    member created the parent; the old object then carries that stamped template. A member's UPDATE of it is
    stamped as the member again, which leaves the template as it is. Without this, the webhook's stamp would be
    the first change of the template, and a Job's template is immutable once Kueue admits it
    (``spec.template: field is immutable``) before any policy could judge the request.
    """
    assert case.old is not None
    identity = case.old_identity or case.identity
    if "system:serviceaccounts" not in identity["groups"]:
        return case.old
    parent = copy.deepcopy(case.old)
    meta = parent["metadata"]
    meta.pop("ownerReferences", None)
    meta["labels"] = {**meta.get("labels", {}), **ta.kueue_labels()}
    if "HYPERPOD_TENANCY_CHECKPOINT_DIR" not in json.dumps(parent["spec"]):
        # the parent of a launcher borrows like any training job, so it declared its checkpoint
        meta["annotations"] = {**meta.get("annotations", {}), **ta.CHECKPOINT}
        parent = ta.place_checkpoint(parent, "research")
    answer = on.as_identity(ac.member_of(on.synth.platform)).create(parent, dry_run=True)
    assert answer.ok, f"{case.name}: the parent's template was refused: {answer.message}"
    stored = copy.deepcopy(case.old)
    template = answer.body["spec"]["template"]
    # the Job controller's selector labels are the server's, generated again for the object created
    template["metadata"]["labels"] = case.old["spec"]["template"].get("metadata", {}).get("labels", {})
    stored["spec"]["template"] = template
    return stored


def real(on: OnCluster, case: ac.Case, readback: list[str]) -> ac.Verdict:
    """The API server's verdict on ``case`` (a dry run; an UPDATE's old object created for real, then deleted)."""
    client = sent_as(on, case.identity)
    if case.operation == "CREATE":
        answer = client.create(case.obj, dry_run=True)
        if answer.ok:
            readback.extend(f"{case.name}: {p}" for p in unstamped(answer.body))
        return ac.Verdict(answer.ok, [] if answer.ok else [answer.message])
    assert case.operation == "UPDATE" and case.old is not None
    old = as_stored(on, case)
    creator = sent_as(on, case.old_identity or case.identity)
    for _ in range(5):
        created = creator.create(old)
        assert created.ok, f"{case.name}: the old object was refused: {created.message}"
        try:
            answer = client.merge_patch(case.obj, merge_patch(case.old, case.obj), dry_run=True)
        finally:
            on.admin.delete(old)
        # an old object whose owner reference names no existing object is the garbage collector's to delete,
        # and it may be gone before the update: create it again
        if answer.status != 404:
            return ac.Verdict(answer.ok, [] if answer.ok else [answer.message])
        wait_until(lambda: on.admin.get(old) is None, timeout=30, what=f"{case.name}: the old object gone")
    raise AssertionError(f"{case.name}: the old object was deleted before every update")


@pytest.fixture(scope="module", params=["reference", "kueue_reference", "team_accounts_example"])
def on_backend(request: pytest.FixtureRequest, cluster_platforms: ClusterPlatforms) -> Iterator[OnCluster]:
    """The reference platform applied, on each fairness backend, its admission policies in force; and the platform
    with a team in its own account, whose member signs in there."""
    synth: Synth = request.getfixturevalue(request.param)
    on = cluster_platforms.on(
        {
            "reference": "reference",
            "kueue_reference": "reference-kueue",
            "team_accounts_example": "team-accounts",
        }[request.param],
        synth,
    )
    on.await_admission()
    # the MPIJob whose launcher the operator cases create: Kueue's Job webhook refuses a Job whose controller
    # owner it cannot find
    parent = ta.mpijob(annotations=ta.CHECKPOINT)
    created = on.as_identity(ac.member_of(on.synth.platform)).create(parent)
    assert created.ok, created.message
    try:
        yield on
    finally:
        on.admin.delete(parent)


def test_the_real_server_agrees_with_the_offline_engine_and_the_expectation(on_backend: OnCluster) -> None:
    table = ac.cases(ac.member_of(on_backend.synth.platform))
    mine = [ac.offline(on_backend.synth, case) for case in table]
    readback: list[str] = []
    theirs = [real(on_backend, case, readback) for case in table]
    found = ac.disagreements(table, ta.on_kueue(on_backend.synth), mine, theirs)
    print(f"{on_backend.name}: {len(table)} cases, {len(found)} disagreements")
    assert found == [], "\n".join(found)
    assert readback == [], "\n".join(readback)

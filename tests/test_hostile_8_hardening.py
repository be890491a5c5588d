"""Issue 8, class 8 (hardening): no non-expiring ServiceAccount tokens in tenant namespaces; FSx root.

RBAC grants teams ``secrets`` (registry credentials, API tokens) but withholds ``serviceaccounts/token``. A
Secret of type ``kubernetes.io/service-account-token`` annotated with a ServiceAccount name is filled by the
token controller with a token that never expires
(https://kubernetes.io/docs/concepts/configuration/secret/#serviceaccount-token-secrets), so RBAC alone
would give the token anyway; RBAC cannot restrict by ``type``, a ValidatingAdmissionPolicy does. Evaluated
with a standard CEL engine (tests/support/cel_admission.py) and RBAC with tests/support/rbac_eval.py, on
both fairness backends.

FSx root squash stays off (decision in docs/security-model.md): a team's PersistentVolume mounts only the
Lustre subdirectory ``/fsx/<team>``, so root in a team container is root inside the team's own directory
only; the last test pins the facts that decision rests on.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cel_admission import AdmissionDecision, evaluate_policies
from rbac_eval import Authorizer, Request, Subject
from synth import Synth
from tenant_admission import member, namespace, policies

from hyperpod_tenancy.k8s.labels import CREATED_BY_ANNOTATION
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT, FSX_CLAIM_NAME
from hyperpod_tenancy.policy import Team, names

SA_TOKEN = "kubernetes.io/service-account-token"


def secret(name: str, type_: str | None, *, service_account: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}
    if type_ is not None:
        obj["type"] = type_
    if service_account:
        obj["metadata"]["annotations"] = {"kubernetes.io/service-account.name": service_account}
    return obj


def created_by(obj: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the POSIX identity webhook returns it at CREATE: its creator recorded."""
    stamped = copy.deepcopy(obj)
    stamped["metadata"].setdefault("annotations", {})[CREATED_BY_ANNOTATION] = user["username"]
    return stamped


def admit(
    synth: Synth,
    team: Team,
    obj: dict[str, Any],
    *,
    operation: str = "CREATE",
    user: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
) -> AdmissionDecision:
    """The policies' decision on ``obj`` as the webhook passes it on (the creator recorded at CREATE)."""
    requester = user or member(team.name)
    if operation == "CREATE":
        obj = created_by(obj, requester)
    return evaluate_policies(
        policies(synth),
        obj=obj,
        namespace=namespace(synth, team.name),
        group="",
        resource="secrets",
        operation=operation,
        user_info=requester,
        old_object=old,
    )


@pytest.mark.parametrize("service_account", [DEFAULT_SERVICE_ACCOUNT, "default", None])
def test_a_team_member_cannot_mint_a_service_account_token_secret(
    synth: Synth, service_account: str | None
) -> None:
    for team in synth.platform.teams:
        decision = admit(synth, team, secret("token", SA_TOKEN, service_account=service_account))
        assert not decision.allowed, f"{team.name}: token Secret for {service_account} admitted"
        assert any(SA_TOKEN in m for m in decision.denied)


def test_an_update_cannot_retarget_a_token_secret(synth: Synth) -> None:
    # attack: edit an existing token Secret's annotation to another ServiceAccount (UPDATE is matched too)
    for team in synth.platform.teams:
        old = created_by(secret("token", SA_TOKEN, service_account="default"), member(team.name))
        new = copy.deepcopy(old)
        new["metadata"]["annotations"]["kubernetes.io/service-account.name"] = DEFAULT_SERVICE_ACCOUNT
        decision = admit(synth, team, new, operation="UPDATE", old=old)
        assert not decision.allowed and any(SA_TOKEN in m for m in decision.denied), decision.denied


def test_a_team_service_account_token_cannot_mint_one_either(synth: Synth) -> None:
    # attack: a pod that mounts its own token (automountServiceAccountToken: true) asks as its ServiceAccount
    for team in synth.platform.teams:
        ns = names.namespace(team.name)
        user = {
            "username": f"system:serviceaccount:{ns}:{DEFAULT_SERVICE_ACCOUNT}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}"],
        }
        assert not admit(synth, team, secret("token", SA_TOKEN, service_account="default"), user=user).allowed


def test_honest_secrets_pass_and_the_token_api_stays_withheld(synth: Synth) -> None:
    authz = Authorizer(synth.manifests())
    for team in synth.platform.teams:
        for honest in (
            secret("api-key", "Opaque"),
            secret("untyped", None),
            secret("registry", "kubernetes.io/dockerconfigjson"),
        ):
            assert admit(synth, team, honest).allowed, f"{team.name}: {honest['metadata']['name']} refused"
        # kube-controller-manager (its token controller) keeps working
        kcm = {"username": "system:kube-controller-manager", "groups": ["system:authenticated"]}
        assert admit(synth, team, secret("token", SA_TOKEN, service_account="default"), user=kcm).allowed
        ns = names.namespace(team.name)
        who = Subject("mallory@example.com", (names.kubernetes_group(team.name),))
        assert authz.check(who, Request("create", "secrets", "", ns)).allowed
        assert not authz.check(who, Request("create", "serviceaccounts/token", "", ns)).allowed
        # the guard is what stops the token: without it the Secret above would be admitted
        assert any(m["metadata"]["name"] == "hyperpod-tenancy-tenant-secrets" for m in synth.manifests())


def test_root_in_a_team_container_reaches_only_the_team_directory_on_fsx(synth: Synth) -> None:
    # the facts the "no root squash" decision rests on (docs/security-model.md): the team's only FSx volume
    # is a Lustre subdirectory mount of /fsx/<team> (fsx.csi.aws.com mounts <dns>@tcp:/<mountname>; a
    # mountname <mount>/<team> mounts that subdirectory), pre-bound to the team's claim; teams cannot create
    # PersistentVolumes or claims; the platform's root-mounting Job lives in a namespace teams cannot use
    authz = Authorizer(synth.manifests())
    pvs = [m for m in synth.manifests() if m["kind"] == "PersistentVolume"]
    for team in synth.platform.teams:
        ns = names.namespace(team.name)
        bound = [pv for pv in pvs if pv["spec"]["claimRef"]["namespace"] == ns]
        assert len(bound) == 1
        (pv,) = bound
        assert pv["spec"]["claimRef"]["name"] == FSX_CLAIM_NAME
        assert pv["spec"]["csi"]["volumeAttributes"]["mountname"].endswith(f"/{team.name}")
        who = Subject("mallory@example.com", (names.kubernetes_group(team.name),))
        for req in (
            Request("create", "persistentvolumes", "", None),
            Request("create", "persistentvolumeclaims", "", ns),
            Request("create", "jobs", "batch", "hyperpod-tenancy-system"),
            Request("create", "pods/exec", "", "hyperpod-tenancy-system"),
        ):
            assert not authz.check(who, req).allowed, f"{team.name}: {req}"
    # and no team may run privileged pods that could mount the file system root themselves
    for team in synth.platform.teams:
        assert team.pod_security.value != "privileged"

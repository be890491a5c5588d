"""Issue 8, class 7: configuration that silently gives node root.

``podSecurity: privileged`` lets a team's pods run privileged, with host namespaces and ``hostPath``
(Pod Security Standards, https://kubernetes.io/docs/concepts/security/pod-security-standards/): such a pod
owns its node, the kubelet's credentials, every other team's FSx mounts and Pod Identity tokens there.
The platform has no dedicated, tainted nodes per team, so the policy refuses it outright
(``HPT-POD-SECURITY-PRIVILEGED``), in YAML and in Python, for every team and both fairness backends, and
the namespace label a privileged team would get can never be rendered. Style of tests/test_policy_errors.py.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import platforms
import pytest

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict, validate_platform
from hyperpod_tenancy.policy.model import PodSecurityLevel

CODE = "HPT-POD-SECURITY-PRIVILEGED"
BACKENDS = ("task-governance", "kueue")


def reference_data(backend: str) -> dict[str, Any]:
    data = platforms.reference_data()
    data["fairnessBackend"] = backend
    return data


def issues_for(error: PolicyError, code: str) -> list[Any]:
    return [i for i in error.issues if i.code == code]


@pytest.mark.parametrize("backend", BACKENDS)
def test_privileged_is_refused_for_every_team_with_path_and_fix(backend: str) -> None:
    base = reference_data(backend)
    for index, team in enumerate(base["teams"]):
        data = copy.deepcopy(base)
        data["teams"][index]["podSecurity"] = "privileged"
        with pytest.raises(PolicyError) as info:
            platform_from_dict(data, source="test.yaml")
        (issue,) = issues_for(info.value, CODE)
        assert issue.path == f"teams[{index}].podSecurity"
        assert f"team {team['name']!r}" in issue.message
        assert "root on its node" in issue.message
        assert "podSecurity: baseline" in issue.fix and "own cluster" in issue.fix
        assert len(info.value.issues) == 1, str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_acknowledgment_like_key_does_not_unlock_it(backend: str) -> None:
    # attack: add something that looks like consent; the policy has no such field, and the refusal stays
    data = reference_data(backend)
    data["teams"][0]["podSecurity"] = "privileged"
    data["teams"][0]["acknowledgePrivileged"] = "we own these nodes"
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data, source="test.yaml")
    codes = {i.code for i in info.value.issues}
    assert "HPT-SCHEMA" in codes or CODE in codes
    # with the unknown key reported, the privileged setting is still never accepted
    del data["teams"][0]["acknowledgePrivileged"]
    with pytest.raises(PolicyError) as again:
        platform_from_dict(data, source="test.yaml")
    assert issues_for(again.value, CODE)


def test_a_platform_built_in_python_is_refused_too() -> None:
    # attack: skip the YAML loader and build the dataclasses directly
    platform: Platform = load_platform(platforms.PLATFORM_YAML)
    team = dataclasses.replace(platform.teams[1], pod_security=PodSecurityLevel.PRIVILEGED)
    hostile = dataclasses.replace(platform, teams=(platform.teams[0], team, platform.teams[2]))
    found = validate_platform(hostile, raise_on_error=False)
    assert [i.path for i in found if i.code == CODE] == ["teams[1].podSecurity"]
    with pytest.raises(PolicyError):
        validate_platform(hostile)


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_baseline_and_restricted_stay_accepted(level: str) -> None:
    data = reference_data("task-governance")
    for team in data["teams"]:
        team["podSecurity"] = level
    platform = platform_from_dict(data, source="test.yaml")
    assert {t.pod_security.value for t in platform.teams} == {level}
    # and privileged on one team among them is still refused
    data["teams"][2]["podSecurity"] = "privileged"
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data, source="test.yaml")
    assert [i.path for i in issues_for(info.value, CODE)] == ["teams[2].podSecurity"]

"""Replay the admission suites' requests on the real API server and compare its verdict with the offline one.

The offline suites judge each request with :func:`cel_admission.evaluate_policies`; run with
:data:`cel_admission.RECORD_DIR` set, that function records every request it judges (the policies, the request's
``object``, ``oldObject``, namespace, operation, resource and ``userInfo``) and its verdict. :func:`record` runs
those suites in a child pytest so recorded; :func:`replay` sends each recorded request to a control plane where
the same policies are in force, as the person the case models:

* ``CREATE``: a server-side dry-run create, impersonating the request's ``userInfo`` (name, groups, extra);
* ``UPDATE``: the old object is created for real by the administrator, then the new one is sent as a dry-run
  replace at the old object's ``resourceVersion`` as the case's person (a subresource, ``pods/ephemeralcontainers``,
  to its own path); the old object is deleted after;
* ``DELETE``: the object is created by the administrator, then deleted as the case's person with a dry run and
  the case's ``DeleteOptions``.

The real server's answer is read as the apiserver writes it: a ``ValidatingAdmissionPolicy 'P' with binding 'B'
denied request: M`` refusal names the first policy that denied (``k8s.io/apiserver/pkg/admission/plugin/policy/
validating/dispatcher.go``). A case compares when both sides reached the policies: it agrees when both admit, or
both deny and the real server's policy and message are among the offline verdict's. A refusal by something the
offline model does not judge (RBAC before admission, the POSIX identity webhook, PodSecurity, a schema) is
counted apart, by who refused, and never counted as agreement.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platforms
from cel_admission import POLICY_KINDS, RECORD_DIR, policy_digest
from kube_client import Answer, KubeClient, KubeError, wait_until

from hyperpod_tenancy.k8s.labels import CREATED_BY_ANNOTATION

#: The offline suites whose requests are replayed (every request they judge with the policies).
SUITES = (
    "tests/test_admission_cel.py",
    "tests/test_hostile_*.py",
    "tests/test_hostile_teammate_*.py",
    "tests/test_posix_identity_admission.py",
    "tests/test_posix_identity_strict_groups.py",
    "tests/test_hyperpod_cli_submissions.py",
    "tests/test_onboarding.py",
    "tests/test_deploy_rules_team.py",
    "tests/test_chart_extension.py",
)
_POLICY_DENIAL = re.compile(
    r"ValidatingAdmissionPolicy '([^']+)' with binding '[^']+' denied request: (.*)", re.S
)


@dataclass(frozen=True)
class Case:
    """One recorded request and its offline verdict."""

    test: str
    policies: str
    context: dict[str, Any]
    #: Offline verdict: each denying policy with its messages (empty: admitted).
    denied: dict[str, list[str]]

    @property
    def operation(self) -> str:
        """``CREATE``, ``UPDATE`` or ``DELETE``."""
        return str(self.context["request"]["operation"])

    def key(self) -> str:
        """The request itself, without the test that sent it (one request judged in several tests counts once)."""
        return json.dumps([self.policies, self.context], sort_keys=True, default=str)


def record(folder: Path) -> list[Case]:
    """Run :data:`SUITES` in a child pytest with recording on; return their distinct requests."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, RECORD_DIR: str(folder)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"]
    command += [str(p) for pattern in SUITES for p in sorted(platforms.REPO.glob(pattern))]
    done = subprocess.run(command, cwd=platforms.REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"the offline admission suites failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
    )
    return load(folder)


def load(folder: Path) -> list[Case]:
    """The distinct recorded requests of ``folder``."""
    seen: dict[str, Case] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            raw = json.loads(line)
            case = Case(raw["test"], raw["policies"], raw["context"], raw["denied"])
            seen.setdefault(case.key(), case)
    return list(seen.values())


def policies_of(objects: Iterable[Mapping[str, Any]]) -> str:
    """The digest of the policies among a platform's applied objects, as recorded cases name theirs."""
    return policy_digest([o for o in objects if o["kind"] in POLICY_KINDS])


# ---------------------------------------------------------------------------------------------- the replay


@dataclass
class Verdict:
    """What the real server answered one case."""

    case: Case
    #: ``admitted``, ``policy`` (denied by a ValidatingAdmissionPolicy) or who else refused.
    outcome: str
    policy: str = ""
    message: str = ""
    #: The object as the server answered an admitted request (what the webhook stamped on it).
    served: dict[str, Any] | None = None

    @property
    def compared(self) -> bool:
        """Whether both sides reached the policies."""
        return self.outcome in ("admitted", "policy")

    @property
    def agrees(self) -> bool:
        """Whether the real verdict is the offline one (see the module's docstring)."""
        if self.outcome == "admitted":
            return not self.case.denied
        if self.outcome == "policy":
            return any(self.message.strip() == m.strip() for m in self.case.denied.get(self.policy, []))
        return False

    def describe(self) -> str:
        """One line naming the case, the offline verdict and the real one."""
        offline = "admitted" if not self.case.denied else f"denied by {sorted(self.case.denied)}"
        real = self.outcome + (
            f" {self.policy}: {self.message[:200]}" if self.policy else f": {self.message[:200]}"
        )
        return f"{self.case.test} [{self.case.operation}]: offline {offline}; real {real}"


@dataclass
class Replay:
    """Every verdict, with the cases that could not be sent and why."""

    verdicts: list[Verdict] = field(default_factory=list)
    unsent: collections.Counter[str] = field(default_factory=collections.Counter)

    def disagreements(self) -> list[Verdict]:
        """Compared cases whose real verdict is not the offline one."""
        return [v for v in self.verdicts if v.compared and not v.agrees]

    def refused_elsewhere(self) -> collections.Counter[str]:
        """Cases refused before or beside the policies, by who refused."""
        return collections.Counter(v.outcome for v in self.verdicts if not v.compared)


def _who_refused(answer: Answer) -> tuple[str, str, str]:
    message = answer.message
    found = _POLICY_DENIAL.search(message)
    if found:
        return "policy", found.group(1), found.group(2)
    if answer.status == 403 and "cannot" in message:
        return "RBAC", "", message
    if "admission webhook" in message:
        hook = re.search(r'admission webhook "([^"]+)"', message)
        return f"webhook {hook.group(1) if hook else '?'}", "", message
    if "violates PodSecurity" in message:
        return "PodSecurity", "", message
    return f"server {answer.status} {answer.reason}", "", message


def _path(client: KubeClient, obj: Mapping[str, Any], namespace: str, name: str | None) -> str:
    resource = client.resource(obj["apiVersion"], obj["kind"])
    return resource.path(namespace=namespace, name=name)


def identities(cases: Iterable[Case]) -> list[tuple[dict[str, Any], str]]:
    """The distinct ``userInfo`` of the cases, each with a namespace it sent a request to."""
    seen: dict[str, tuple[dict[str, Any], str]] = {}
    for case in cases:
        request = case.context["request"]
        seen.setdefault(
            json.dumps([request["userInfo"], request["namespace"]], sort_keys=True),
            (request["userInfo"], request["namespace"]),
        )
    return list(seen.values())


def _as_person(admin: KubeClient, user_info: Mapping[str, Any]) -> KubeClient:
    return admin.as_user(user_info["username"], user_info.get("groups", []), user_info.get("extra"))


def _sendable(obj: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """``obj`` in ``namespace`` without the fields the server sets (its name kept: the policies' messages name
    it, and a dry run leaves nothing behind)."""
    sent = copy.deepcopy(dict(obj))
    meta = sent.setdefault("metadata", {})
    for server_set in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        meta.pop(server_set, None)
    meta["namespace"] = namespace
    if not meta.get("name") and not meta.get("generateName"):
        meta["name"] = "case"
    sent.pop("status", None)
    return sent


def _one(admin: KubeClient, case: Case, identity: Mapping[str, Any]) -> Verdict | str:
    sent = case.context["object"] or case.context["oldObject"]
    try:
        admin.resource(sent["apiVersion"], sent["kind"])
    except KubeError:
        return f"{sent['kind']} is not served on the control plane (no CRD)"
    request = case.context["request"]
    namespace = request["namespace"]
    person = _as_person(admin, identity)
    subresource = request.get("subResource") or ""
    if case.operation == "CREATE" and not subresource:
        obj = _sendable(case.context["object"], namespace)
        answer = person.request(
            "POST", _path(admin, obj, namespace, None), body=obj, params={"dryRun": "All"}
        )
        return _verdict(case, answer)
    old = case.context["oldObject"]
    if old is None:
        return "a subresource create without an object"
    existing = _sendable(old, namespace)
    existing["metadata"].pop("generateName", None)
    existing["metadata"]["name"] = existing["metadata"].get("name") or "case"
    creator = existing["metadata"].get("annotations", {}).get(CREATED_BY_ANNOTATION)
    # the webhook records who creates a ConfigMap or Secret: the old object is created by its recorded creator
    owner = _as_person(admin, {**identity, "username": creator}) if creator else admin
    created = owner.request("POST", _path(admin, existing, namespace, None), body=existing)
    if not created.ok:
        return f"its old object cannot be created: {_who_refused(created)[0]}"
    name = existing["metadata"]["name"]
    try:
        path = _path(admin, existing, namespace, name)
        if case.operation == "DELETE":
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                **{k: v for k, v in request.get("options", {}).items() if k not in ("apiVersion", "kind")},
            }
            answer = person.request("DELETE", path, body=body, params={"dryRun": "All"})
            return _verdict(case, answer)
        new = _sendable(case.context["object"], namespace)
        new["metadata"]["name"] = name
        new["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"]
        target = f"{path}/{subresource}" if subresource else path
        answer = person.request("PUT", target, body=new, params={"dryRun": "All"})
        return _verdict(case, answer)
    finally:
        gone = _path(admin, existing, namespace, name)
        owner.request("DELETE", gone, params={"gracePeriodSeconds": "0"})
        wait_until(lambda: admin.request("GET", gone).status == 404, timeout=30, what=f"{gone} to be deleted")


def _verdict(case: Case, answer: Answer) -> Verdict:
    if answer.ok:
        return Verdict(case, "admitted", served=answer.body if isinstance(answer.body, dict) else None)
    outcome, policy, message = _who_refused(answer)
    return Verdict(case, outcome, policy, message)


def replay(
    admin: KubeClient,
    cases: Iterable[Case],
    *,
    namespaces: Mapping[str, Mapping[str, str]],
    person: Callable[[Mapping[str, Any], str], Mapping[str, Any]],
) -> Replay:
    """Send each case (whose namespace is on the server with the labels it was judged under) as the identity
    ``person`` gives for its ``userInfo``."""
    result = Replay()
    for case in cases:
        namespace = case.context["namespaceObject"]["metadata"]
        live = namespaces.get(namespace["name"])
        if live is None:
            result.unsent["its namespace is not on the server"] += 1
            continue
        if dict(live) != dict(namespace.get("labels", {})):
            result.unsent["judged under namespace labels other than the server's"] += 1
            continue
        request = case.context["request"]
        outcome = _one(admin, case, person(request["userInfo"], request["namespace"]))
        if isinstance(outcome, str):
            result.unsent[outcome] += 1
        else:
            result.verdicts.append(outcome)
    return result


def by_platform(cases: Iterable[Case]) -> Iterator[tuple[str, list[Case]]]:
    """The cases grouped by the policies they were judged by."""
    groups: dict[str, list[Case]] = collections.defaultdict(list)
    for case in cases:
        groups[case.policies].append(case)
    yield from groups.items()

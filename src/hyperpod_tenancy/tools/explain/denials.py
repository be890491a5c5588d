"""Admission errors as a team member sees them, explained: which policy or webhook refused, and the fix.

Three shapes of text are recognised, wherever they appear (``kubectl apply`` output given with ``--denial``, or
the message of a Job controller's ``FailedCreate`` Event, ``Error creating: pods "..." is forbidden: ...``):

* a ValidatingAdmissionPolicy denial, as the API server writes it
  (``ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>``);
* a webhook denial (``admission webhook "<name>" denied the request: <message>``);
* a webhook that did not answer (``failed calling webhook "<name>": ...: connection refused`` or
  ``context deadline exceeded``), which with ``failurePolicy: Fail`` refuses every request it matches;
* the namespace's ResourceQuota backstop (``exceeded quota: <name>, requested: ..., used: ..., limited: ...``,
  the ResourceQuota admission plugin), which caps the team's pods at guarantee + borrowing ceiling.

The policy's rule is found by comparing the message with the ``message`` and the literal parts of the
``messageExpression`` of each validation of the policies the platform renders for this ``platform.yaml``
(:mod:`hyperpod_tenancy.k8s.admission`, :mod:`~hyperpod_tenancy.k8s.tenant_guards`,
:mod:`~hyperpod_tenancy.k8s.operator_guards`, :mod:`~hyperpod_tenancy.k8s.posix_identity`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import admission, labels, posix_identity
from hyperpod_tenancy.k8s.operator_guards import operator_guard_policies
from hyperpod_tenancy.k8s.team_manifests import (
    ACCELERATOR_QUOTA_NAME,
    COMPUTE_QUOTA_NAME,
    FSX_CLAIM_NAME,
    SYSTEM_PRIORITY_QUOTA_NAME,
)
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, SupplementalGroupsPolicy
from hyperpod_tenancy.policy.rules import GUARDRAILS
from hyperpod_tenancy.tools.explain.objects import Cause, Diagnosis
from hyperpod_tenancy.tools.explain.team import TeamFacts

__all__ = ["Denial", "diagnose_denial", "find_denials", "matching_rule", "parse_denial"]

_VAP = re.compile(
    r"ValidatingAdmissionPolicy '(?P<policy>[^']+)'(?: with binding '(?P<binding>[^']+)')? denied request: "
    r"(?P<message>.+)",
    re.DOTALL,
)
_WEBHOOK_DENIED = re.compile(
    r'admission webhook "(?P<name>[^"]+)" denied the request: (?P<message>.+)', re.DOTALL
)
_WEBHOOK_FAILED = re.compile(r'failed calling webhook "(?P<name>[^"]+)": (?P<message>.+)', re.DOTALL)
#: The ResourceQuota admission plugin (``exceeded quota: <name>, requested: ..., used: ..., limited: ...``).
_QUOTA = re.compile(r"exceeded quota: (?P<name>[^,]+), (?P<message>requested: .+)", re.DOTALL)
_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'")
#: Literal parts of a messageExpression shorter than this say too little to identify a rule.
_MIN_LITERAL = 12


@dataclass(frozen=True)
class Denial:
    """One admission refusal found in a text.

    ``kind`` is ``policy`` (a ValidatingAdmissionPolicy), ``webhook`` (a webhook said no), ``unavailable``
    (a webhook did not answer) or ``quota`` (a ResourceQuota of the namespace); ``name`` the policy, webhook or
    quota, ``binding`` the policy binding.
    """

    kind: str
    name: str
    message: str
    binding: str | None = None
    #: Where it was found (``--denial``, or ``Event <reason> on <kind>/<name>``).
    source: str = "--denial"


def _clean(message: str) -> str:
    return " ".join(message.split()).strip()


def parse_denial(text: str, *, source: str = "--denial") -> Denial | None:
    """Return the refusal in ``text``, or None when it holds none of the shapes this module knows."""
    if match := _VAP.search(text):
        return Denial("policy", match["policy"], _clean(match["message"]), match["binding"], source)
    if match := _WEBHOOK_DENIED.search(text):
        return Denial("webhook", match["name"], _clean(match["message"]), None, source)
    if match := _WEBHOOK_FAILED.search(text):
        return Denial("unavailable", match["name"], _clean(match["message"]), None, source)
    if match := _QUOTA.search(text):
        return Denial("quota", match["name"].strip(), _clean(match["message"]), None, source)
    return None


def find_denials(texts: Sequence[str], events: Iterable[dict[str, Any]]) -> list[Denial]:
    """Every refusal in the ``--denial`` texts and in the messages of Warning Events (newest Event first)."""
    found = [d for t in texts if (d := parse_denial(t)) is not None]
    ordered = sorted(
        events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""), reverse=True
    )
    for event in ordered:
        if event.get("type") not in (None, "Warning"):
            continue
        involved = event.get("involvedObject") or event.get("regarding") or {}
        source = f"Event {event.get('reason')} on {involved.get('kind')}/{involved.get('name')}"
        text = str(event.get("message") or event.get("note") or "")
        if (d := parse_denial(text, source=source)) is not None and d not in found:
            found.append(d)
    return found


def _policies(platform: Platform) -> list[dict[str, Any]]:
    strict = platform.cluster.posix_identity.supplemental_groups_policy is SupplementalGroupsPolicy.STRICT
    objects = [
        *admission.admission_policies(platform),
        *tenant_guard_policies(),
        *operator_guard_policies(),
        *posix_identity.posix_identity_policies(strict_groups=strict),
    ]
    return [o for o in objects if o.get("kind") == "ValidatingAdmissionPolicy"]


def _score(validation: dict[str, Any], message: str) -> int:
    """How well ``message`` matches a validation: exact static message, else the literal text it shares."""
    static = _clean(str(validation.get("message", "")))
    if static and static == message:
        return 10**6
    literals = [
        _clean(m.replace("\\'", "'")) for m in _LITERAL.findall(str(validation.get("messageExpression", "")))
    ]
    return sum(len(lit) for lit in literals if len(lit) >= _MIN_LITERAL and lit in message)


def matching_rule(platform: Platform, policy: str, message: str) -> tuple[int, dict[str, Any]] | None:
    """Return the index and validation of ``policy`` (as rendered for ``platform``) that wrote ``message``."""
    for obj in _policies(platform):
        if obj["metadata"]["name"] != policy:
            continue
        scored = [(_score(v, message), i, v) for i, v in enumerate(obj["spec"].get("validations") or ())]
        best: tuple[int, int, dict[str, Any]] = max(scored, default=(0, -1, {}), key=lambda s: s[0])
        return (best[1], best[2]) if best[0] > 0 else None
    return None


def _guardrail_failure(code: str) -> str | None:
    return next((g.failure for g in GUARDRAILS if g.code == code), None)


def _priority_fix(team: TeamFacts) -> list[str]:
    where = " in platform.yaml" if team.policy is not None else ""
    ask = (
        f"to use another class, ask the platform team to add it to `{team.field('allowedPriorityClasses')}` "
        f"(team {team.name}){where}"
    )
    if team.classes is None:
        return ["label the job `kueue.x-k8s.io/priority-class: <class>` with a class your team may use", ask]
    allowed = ", ".join(team.classes)
    return [
        f"label the job `kueue.x-k8s.io/priority-class: <class>` with one of your team's classes: {allowed}",
        ask,
    ]


def _policy_diagnosis(team: TeamFacts, denial: Denial) -> Diagnosis:
    policy = team.policy
    rule = matching_rule(policy.platform, denial.name, denial.message) if policy is not None else None
    details = [f"policy: {denial.name}" + (f" (binding {denial.binding})" if denial.binding else "")]
    if rule is not None:
        details.append(
            f"rule: validation {rule[0]} of {denial.name} (reason {rule[1].get('reason', 'Invalid')})"
        )
    if (failure := _guardrail_failure(denial.name)) is not None:
        details.append(f"it prevents: {failure}")
    details += [f"message: {denial.message}", f"seen in: {denial.source}"]
    cause = Cause.ADMISSION_DENIED
    fix = ["change what the message names, then submit again (kubectl apply -f <job.yaml>)"]
    queue = names.local_queue(team.name)
    # what the rule is about, from its static message (the same for every team and object)
    about = str(rule[1].get("message", "")) if rule is not None else denial.message
    if denial.name == admission.WORKLOAD_POLICY and "kueue.x-k8s.io/priority-class" in about:
        cause = Cause.PRIORITY_NOT_ENTITLED if "not allowed" in about else cause
        fix = _priority_fix(team)
    elif denial.name == admission.WORKLOAD_POLICY and "kueue.x-k8s.io/queue-name" in about:
        fix = [f"label the job and its pod templates `kueue.x-k8s.io/queue-name: {queue}`"]
    elif denial.name == admission.CHECKPOINT_POLICY:
        fix = [
            f"in the training container, mount the team's FSx claim {FSX_CLAIM_NAME} at "
            f"{names.fsx_directory(team.name)} and set {labels.CHECKPOINT_DIR_ENV}="
            f"{names.fsx_directory(team.name)}/<job> and {labels.CHECKPOINT_INTERVAL_ENV}=30m (at most the "
            "class's maxCheckpointInterval); with `hyp`: --volume and --environment (docs/submitting-work.md)",
            f"remove any annotation {' or '.join(admission.CHECKPOINT_ANNOTATIONS)} from the job and its pod "
            "templates: the environment is the one declaration",
        ]
    elif denial.name == posix_identity.POSIX_IDENTITY_POLICY:
        fix = [
            "remove runAsUser, runAsGroup, fsGroup and supplementalGroups from your pod spec: the POSIX identity "
            "webhook sets them to your UID and the team GID when the job is created",
            "set allowPrivilegeEscalation: false on every container and init container",
        ]
    summary = (
        f"Kubernetes refused to create the job's pods: the platform's policy {denial.name} denied them."
        if denial.source.startswith("Event")
        else f"Kubernetes refused the job at admission: the platform's policy {denial.name} denied it, so no "
        "Workload exists and Kueue never saw it."
    )
    if cause is Cause.PRIORITY_NOT_ENTITLED:
        summary = (
            f"Your team {team.name} is not entitled to the priority class the job asks for: admission "
            f"({denial.name}) refused it, so no Workload exists."
        )
    return Diagnosis(cause, summary, tuple(details), tuple(fix))


def _webhook_diagnosis(denial: Denial) -> Diagnosis:
    details = [f"webhook: {denial.name}", f"message: {denial.message}", f"seen in: {denial.source}"]
    fix = ["do what the message says, then submit again"]
    if "cannot be looked up right now" in denial.message:
        fix = [
            "retry in a minute: the identity store (DynamoDB) did not answer",
            "if it persists, tell the platform team (webhook posix-identity-webhook in namespace "
            f"{posix_identity.WEBHOOK_NAMESPACE})",
        ]
    if denial.name == posix_identity.WEBHOOK_NAME:
        details.insert(1, "it stamps every pod with your UID and your team's GID")
    return Diagnosis(
        Cause.ADMISSION_DENIED,
        f"The admission webhook {denial.name} refused the request, so the work was not created.",
        tuple(details),
        tuple(fix),
    )


def _unavailable_diagnosis(team: TeamFacts, denial: Denial) -> Diagnosis:
    policy = team.policy.platform.cluster.posix_identity.failure_policy if team.policy is not None else None
    why = (
        "it refused the connection" if "connection refused" in denial.message else "it did not answer in time"
    )
    if "no endpoints available" in denial.message:
        why = "none of its pods is ready"
    details = [
        f"webhook: {denial.name} ({why})",
        (
            f"cluster.posixIdentity.failurePolicy: {policy.value if policy is not None else 'unset'} (platform.yaml): "
            if team.policy is not None
            else "the webhook fails closed: "
        )
        + "while the webhook does not answer, nothing is admitted in team namespaces, so that nothing runs "
        "with a wrong identity",
        f"error: {denial.message}",
        f"seen in: {denial.source}",
    ]
    return Diagnosis(
        Cause.WEBHOOK_UNAVAILABLE,
        "The POSIX identity webhook is not answering, and the platform fails closed: no pod or job can be "
        "created in your namespace until it is back. Nothing is wrong with your job.",
        tuple(details),
        (
            "wait and retry: the Job controller retries creating the pods by itself",
            f"tell the platform team: kubectl get pods -n {posix_identity.WEBHOOK_NAMESPACE} (the "
            f"{posix_identity.DEPLOYMENT} Deployment) is theirs to check",
        ),
    )


def _quota_diagnosis(team: TeamFacts, denial: Denial) -> Diagnosis:
    what = {
        ACCELERATOR_QUOTA_NAME: "accelerators (GPUs, Neuron devices) requested by the namespace's pods",
        COMPUTE_QUOTA_NAME: "CPU, memory, EFA interfaces and huge pages requested by the namespace's pods",
        SYSTEM_PRIORITY_QUOTA_NAME: "pods at a system PriorityClass (none is allowed)",
    }.get(denial.name, "what the namespace's pods request")
    return Diagnosis(
        Cause.ADMISSION_DENIED,
        f"Kubernetes refused to create the pods: the namespace's ResourceQuota {denial.name} is full. It caps "
        f"{what} at your team's guarantee plus its borrowing ceiling, whatever Kueue admitted.",
        (
            f"quota: {denial.name} (kubectl describe resourcequota {denial.name} -n {names.namespace(team.name)})",
            f"{denial.message}",
            f"seen in: {denial.source}",
        ),
        (
            "pods outside Kueue's count hold the quota: look for pods that still run after their job ended "
            f"(kubectl get pods -n {names.namespace(team.name)})",
            f"the ceiling comes from {team.field('compute.quotas')}, borrowLimit and absoluteBorrowLimits"
            + (" in platform.yaml" if team.policy is not None else ""),
        ),
    )


def diagnose_denial(team: TeamFacts, denial: Denial) -> Diagnosis:
    """Explain one refusal for a member of ``team``: the policy or webhook, its rule (with the policy), the fix."""
    if denial.kind == "policy":
        return _policy_diagnosis(team, denial)
    if denial.kind == "unavailable":
        return _unavailable_diagnosis(team, denial)
    if denial.kind == "quota":
        return _quota_diagnosis(team, denial)
    return _webhook_diagnosis(denial)

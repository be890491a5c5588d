"""What ``hyperpod-tenancy probe`` creates and what it expects: a pure function of the policy (no cluster).

:func:`probe_plan` returns, for an owner team A and an intruder team B, the short-lived objects of one run (every
one labelled :data:`~hyperpod_tenancy.k8s.labels.PROBE_LABEL` ``=<run>``) and the :class:`Check` list with the
outcome each must have. :func:`verdict` turns an observation into pass / FAIL / inconclusive, and
:func:`exit_status` the verdicts into the command's exit status. The live runner (:mod:`._probe_live`) only
creates the objects, watches them and reports what it saw as :class:`Observed`.

The objects are ordinary tenant work, held to every admission rule a team member meets:

* team members cannot create bare Pods (the team Role of :mod:`hyperpod_tenancy.k8s.team_manifests`), so every
  probe pod is a batch/v1 Job on the team's own LocalQueue at a priority class the team is entitled to (the
  workload-label policy of :mod:`hyperpod_tenancy.k8s.admission`), with the checkpoint annotations under
  ``/fsx/<team>/`` in the container's environment (work of a team that borrows, or at a preemptible class, must
  declare one);
* no GPU: the containers request 10m CPU and 16Mi memory (ClusterQueues cover ``cpu`` and ``memory``,
  :mod:`hyperpod_tenancy.k8s.kueue`; the namespace's ``compute-ceiling`` quota needs requests on both);
* they run on a healthy HyperPod node (node affinity ``sagemaker.amazonaws.com/node-health-status In
  [Schedulable]``, the placement of the platform's own FSx directory Jobs) with the image those Jobs use,
  :data:`~hyperpod_tenancy.k8s.fsx_dirs.BUSYBOX_IMAGE` (``wget`` and ``httpd`` are busybox applets), as the
  submitter's UID (the POSIX identity webhook stamps it), with every capability dropped.

Checks, A = owner, B = intruder. The positive controls come first; a boundary check whose control did not pass
is inconclusive, never a pass (a probe that reaches nothing proves nothing):

* ``a-reaches-own-service``: A's client reaches the Service of A's probe server (``allow-same-namespace``);
* ``a-fsx-own-directory``: A's client writes, reads back and removes a file in ``/fsx/<A>``;
* ``a-admitted-own-queue``: A's honest Job is admitted (server-side dry-run);
* ``b-to-a-service``: B's client cannot reach A's Service (refused, or timed out after the control passed);
* ``imds-from-a``: A's client cannot reach 169.254.169.254 (``allow-internet-egress`` excepts it);
* ``b-reads-a-fsx``: B's pod, with its own claim mounted, cannot read the file A's server wrote in ``/fsx/<A>``;
* ``b-job-on-a-queue``, ``b-unentitled-class`` (when a class exists that B is not entitled to),
  ``b-gpu-visibility`` (``NVIDIA_VISIBLE_DEVICES=all`` on a container that requests no GPU): denied at
  admission as B (dry-run), with the message of the policy that holds the boundary;
* ``b-creates-in-a-namespace``: RBAC forbids B to create a Job in A's namespace (dry-run).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission import GPU_VISIBILITY_ENV
from hyperpod_tenancy.k8s.fsx_dirs import BUSYBOX_IMAGE
from hyperpod_tenancy.k8s.labels import NODE_HEALTH_LABEL
from hyperpod_tenancy.k8s.posix_identity import SSO_ROLE_PREFIX, team_record
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME, IMDS_CIDR
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, PriorityClass, Team

__all__ = [
    "EXIT_FAIL",
    "EXIT_INCONCLUSIVE",
    "EXIT_PASS",
    "PROBE_PORT",
    "PROBE_SESSION",
    "RESULT_MARK",
    "Check",
    "Expect",
    "Identity",
    "Observed",
    "Outcome",
    "ProbePlan",
    "Result",
    "Status",
    "exit_status",
    "identity",
    "probe_plan",
    "verdict",
]

#: Exit status: every check passed.
EXIT_PASS = 0
#: Exit status: at least one check failed (the boundary, or a positive control, does not hold).
EXIT_FAIL = 1
#: Exit status: no check failed, but at least one could not be decided.
EXIT_INCONCLUSIVE = 3
#: TCP port of A's probe server (busybox ``httpd``, unprivileged).
PROBE_PORT = 8080
#: Session name of the impersonated team member: the POSIX identity webhook's person ``sso:<session>``.
PROBE_SESSION = "hyperpod-tenancy-probe"
#: Prefix of the result lines the probe clients print to their log (``<mark> <check-id> <outcome> <detail>``).
RESULT_MARK = "PROBE-RESULT"
#: Seconds one connection attempt waits (busybox ``wget -T``).
CONNECT_TIMEOUT = 5
#: Connection attempts (2 s apart): the Service's endpoints can lag the server pod's start by a moment.
CONNECT_ATTEMPTS = 3
_IMDS = IMDS_CIDR.removesuffix("/32")
#: The ``Impersonate-Extra-<key>`` header of each extra the probe sets (Kubernetes "User impersonation").
_EXTRA_HEADERS = {"arn": "Impersonate-Extra-arn"}
_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}


class Expect(enum.Enum):
    """What a check must observe."""

    #: The honest action works (positive control).
    ALLOWED = "allowed"
    #: The connection or the read does not get through.
    BLOCKED = "blocked"
    #: The API server refuses the request (admission or RBAC), with :attr:`Check.message`.
    DENIED = "denied"


class Outcome(enum.Enum):
    """What the live runner saw for one check."""

    #: Reached / read / admitted.
    OK = "ok"
    #: The connection timed out.
    TIMEOUT = "timeout"
    #: The connection was refused (or reset).
    REFUSED = "refused"
    #: The file is not there or not readable.
    ABSENT = "absent"
    #: The API server refused the request; :attr:`Observed.detail` is its message.
    DENIED = "denied"
    #: The probe pod found no node (or Kueue did not admit it) before ``--timeout``.
    UNSCHEDULABLE = "unschedulable"
    #: Anything else (a DNS failure, a pod that failed, no result line): :attr:`Observed.detail` says what.
    ERROR = "error"


class Status(enum.Enum):
    """The verdict of one check."""

    PASS = "pass"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, kw_only=True)
class Identity:
    """A team member as the probe impersonates them (``Impersonate-User``, ``-Group``, ``-Extra-*`` headers)."""

    #: The team.
    team: str
    #: ``Impersonate-User``: the assumed-role ARN of the team's Identity Center role with session
    #: :data:`PROBE_SESSION` (what the team's access entry, which sets no username, maps such a session to).
    username: str
    #: ``Impersonate-Group``: the team's Kubernetes group.
    group: str
    #: ``Impersonate-Extra-<key>``: ``arn``, the extra the AWS IAM authenticator sets and the POSIX identity
    #: webhook reads first (``hyperpod_tenancy.webhook.identity``). The API server lower-cases extra keys taken
    #: from impersonation headers (``impersonation.go``: ``unescapeExtraKey(strings.ToLower(...))``), so
    #: ``sessionName`` cannot be impersonated; the webhook checks it only when present.
    extra: Mapping[str, str]

    def headers(self) -> dict[str, str]:
        """Return the impersonation headers of every request made as this member."""
        return {
            "Impersonate-User": self.username,
            "Impersonate-Group": self.group,
            **{_EXTRA_HEADERS[k]: v for k, v in self.extra.items()},
        }


@dataclass(frozen=True, kw_only=True)
class Check:
    """One question of the probe and the answer the policy promises."""

    #: Stable identifier (``b-to-a-service``...).
    id: str
    #: The team whose identity (and pod) acts.
    actor: str
    #: What is tried, in one line.
    description: str
    #: The promised outcome.
    expect: Expect
    #: For :attr:`Expect.DENIED`: a fragment the API server's message must contain (the rule that holds).
    message: str = ""
    #: The positive control that must pass before a timeout or an absence counts as blocked.
    control: Check | None = None


@dataclass(frozen=True, kw_only=True)
class Observed:
    """What the live runner saw for a check."""

    outcome: Outcome
    #: The API server's message, the client's output, or why nothing was seen.
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Result:
    """A check, what was seen and the verdict, with the reason in words."""

    check: Check
    observed: Observed
    status: Status
    why: str


@dataclass(frozen=True, kw_only=True)
class ProbePlan:
    """Everything one run creates, tries and expects."""

    #: The run's identifier (value of :data:`~hyperpod_tenancy.k8s.labels.PROBE_LABEL` on every object).
    run: str
    owner: Identity
    intruder: Identity
    #: A's probe server Job and its Service, created as A.
    server: list[dict[str, Any]]
    #: The client Jobs by team (A's first), created as their team once the server runs.
    clients: dict[str, dict[str, Any]]
    #: Dry-run requests: check id → (identity team, object).
    dry_runs: dict[str, tuple[str, dict[str, Any]]]
    #: Checks in the order they are reported.
    checks: list[Check]
    #: Checks that do not apply to this platform, and why.
    skipped: list[str] = field(default_factory=list)

    def check(self, check_id: str) -> Check:
        """Return the check called ``check_id``."""
        return next(c for c in self.checks if c.id == check_id)

    def objects(self) -> list[dict[str, Any]]:
        """Every object the run creates for real (server, Service, clients)."""
        return [*self.server, *self.clients.values()]


def _partition(region: str) -> str:
    """Return the ARN partition of ``region`` (AWS General Reference, "Amazon Resource Names": aws, aws-cn, aws-us-gov)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def identity(platform: Platform, team: Team, role_name: str) -> Identity:
    """Return the probe's member of ``team``: a session :data:`PROBE_SESSION` of the Identity Center role ``role_name``.

    ``role_name`` is the team permission set's role in the account (``AWSReservedSSO_<PermissionSet>_<16 hex>``):
    IAM Identity Center chooses the suffix, so it cannot be derived from the policy.

    Raises:
        ValueError: ``role_name`` is not the team permission set's role; the message says how to find it.

    """
    # the prefix the webhook matches (the team's record, hyperpod_tenancy.k8s.posix_identity.team_record)
    (principal,) = team_record(platform, team.name).to_document()["principals"]
    prefix = str(principal["roleNamePrefix"])
    permission_set = prefix.removeprefix(SSO_ROLE_PREFIX).removesuffix("_")
    suffix = role_name.removeprefix(prefix)
    if suffix == role_name or len(suffix) != 16 or any(c not in "0123456789abcdef" for c in suffix):
        raise ValueError(
            f"--member-role {team.name}={role_name}: not the role of team {team.name}'s permission set "
            f"{permission_set} (expected {prefix}<16 hex digits>). Find it with: aws iam list-roles "
            f'--path-prefix /aws-reserved/sso.amazonaws.com/ --query "Roles[?starts_with(RoleName, '
            f"'{prefix}')].RoleName\""
        )
    arn = (
        f"arn:{_partition(platform.region)}:sts::{platform.account}:assumed-role/{role_name}/{PROBE_SESSION}"
    )
    return Identity(
        team=team.name,
        username=arn,
        group=names.kubernetes_group(team.name),
        extra={"arn": arn},
    )


def _probe_class(platform: Platform, team: Team) -> PriorityClass:
    """Return the class the team's probe work runs at: its lowest non-preemptible class, else its lowest class."""
    entitled = [platform.priority_class(n) for n in team.allowed_priority_classes]
    steady = [c for c in entitled if not c.preemptible] or entitled
    return min(steady, key=lambda c: c.weight)


def _workload_meta(platform: Platform, team: Team, run: str, name: str, role: str) -> dict[str, Any]:
    """Job metadata: probe labels, the team's LocalQueue and class."""
    return {
        "name": name,
        "namespace": names.namespace(team.name),
        "labels": {
            **labels.object_labels(team.name),
            labels.PROBE_LABEL: run,
            labels.PROBE_ROLE_LABEL: role,
            labels.QUEUE_NAME_LABEL: names.local_queue(team.name),
            labels.PRIORITY_CLASS_LABEL: _probe_class(platform, team).workload_priority_class,
        },
    }


def _checkpoint_env(team: Team, run: str) -> list[tuple[str, str]]:
    """Return the checkpoint declaration of a probe's container, below its mount of the claim at ``/fsx/<team>``.

    Harmless where no checkpoint is required; required where the team borrows or the class is preemptible.
    """
    return [
        (labels.CHECKPOINT_DIR_ENV, f"{names.fsx_directory(team.name)}/{names.probe_object(run, 'ckpt')}"),
        (labels.CHECKPOINT_INTERVAL_ENV, "1m"),
    ]


def _job(
    platform: Platform,
    team: Team,
    *,
    run: str,
    name: str,
    role: str,
    script: str,
    deadline: int,
    env: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Return a batch/v1 Job running ``script`` in busybox on a healthy HyperPod node, the team claim on ``/fsx/<team>``."""
    meta = _workload_meta(platform, team, run, name, role)
    container: dict[str, Any] = {
        "name": "probe",
        "image": BUSYBOX_IMAGE,
        "command": ["sh", "-c", script],
        "resources": copy.deepcopy(_RESOURCES),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "fsx", "mountPath": names.fsx_directory(team.name)},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - an emptyDir of the pod's own
        ],
    }
    container["env"] = [{"name": k, "value": v} for k, v in (*env, *_checkpoint_env(team, run))]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 0,
            # a safety net if the probe itself is killed before its clean-up: the Job ends and then goes away
            "activeDeadlineSeconds": deadline,
            "ttlSecondsAfterFinished": 300,
            "template": {
                "metadata": {"labels": dict(meta["labels"])},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 5,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": NODE_HEALTH_LABEL,
                                                "operator": "In",
                                                "values": ["Schedulable"],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "fsx", "persistentVolumeClaim": {"claimName": FSX_CLAIM_NAME}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Mi"}},
                    ],
                },
            },
        },
    }


def _token_file(owner: str, run: str) -> str:
    return f"{names.fsx_directory(owner)}/.{names.probe_object(run, 'token')}"


def _server_script(owner: str, run: str) -> str:
    """Serve the run's token over HTTP and keep it in A's FSx directory while running (removed on TERM)."""
    token_file = _token_file(owner, run)
    return (
        "set -u; mkdir -p /tmp/www; "
        f"echo {run} > /tmp/www/token; echo {run} > {token_file}; "
        f"trap 'rm -f {token_file}; kill $pid 2>/dev/null; exit 0' TERM INT; "
        f"httpd -f -p {PROBE_PORT} -h /tmp/www & pid=$!; wait $pid"
    )


def _report(check: str) -> str:
    return f'echo "{RESULT_MARK} {check} $r $d"'


def _connect_script(check: str, url: str, run: str, *, any_answer: bool = False) -> str:
    """Try ``url`` a few times; report ok, timeout, refused or error (with wget's words).

    ``ok``: the run's token came back, or (``any_answer``) anything did; an HTTP error status (busybox wget:
    ``server returned error``) is an answer too, so a reachable IMDS that wants an IMDSv2 token still counts as
    reached.
    """
    success = (
        "r=ok; d=''; break" if any_answer else f'if [ "$o" = "{run}" ]; then r=ok; d=""; break; fi; r=error'
    )
    return (
        f"r=error; d=''; for i in $(seq {CONNECT_ATTEMPTS}); do "
        f"if o=$(wget -q -T {CONNECT_TIMEOUT} -O - {url} 2>&1); then {success}; else "
        'case "$o" in *"server returned error"*) r=ok; d=""; break;; *"timed out"*) r=timeout;; '
        "*refused*|*reset*|*unreachable*) r=refused;; *) r=error;; esac; fi; "
        "d=$(echo $o | tr -s ' \\n' ' ' | cut -c1-120); sleep 2; done; " + _report(check)
    )


def _read_script(check: str, path: str, run: str) -> str:
    """Read ``path``: ok when it holds the run's token, absent when it cannot be read."""
    return (
        f"if o=$(cat {path} 2>&1); then "
        f'if [ "$o" = "{run}" ]; then r=ok; d=""; else r=error; d="unexpected content"; fi; '
        "else r=absent; d=$(echo $o | cut -c1-120); fi; " + _report(check)
    )


def _owner_client_script(owner: str, run: str, service_url: str) -> str:
    own_file = f"{names.fsx_directory(owner)}/.{names.probe_object(run, 'a-client')}"
    return "; ".join(
        [
            _connect_script("a-reaches-own-service", service_url, run),
            f'if echo {run} > {own_file} && [ "$(cat {own_file})" = {run} ] && rm -f {own_file}; '
            'then r=ok; d=""; else r=error; d="cannot write, read back or remove a file"; fi; '
            + _report("a-fsx-own-directory"),
            _connect_script("imds-from-a", f"http://{_IMDS}/latest/meta-data/", run, any_answer=True),
            "exit 0",
        ]
    )


def _intruder_client_script(owner: str, run: str, service_url: str) -> str:
    return "; ".join(
        [
            _connect_script("b-to-a-service", service_url, run),
            _read_script("b-reads-a-fsx", _token_file(owner, run), run),
            "exit 0",
        ]
    )


def probe_plan(  # noqa: PLR0915 - one statement per check keeps the plan readable top to bottom
    platform: Platform,
    *,
    owner: str,
    intruder: str,
    run: str,
    roles: Mapping[str, str],
    timeout: int = 300,
) -> ProbePlan:
    """Return the objects and checks of one probe run: ``intruder`` (B) tries to cross into ``owner`` (A).

    Args:
        platform: the policy the cluster was deployed from.
        owner: team A (its Service and FSx directory are the target).
        intruder: team B.
        run: the run's identifier, 8 lowercase hex digits (names and labels).
        roles: team → its permission set's role name (see :func:`identity`), for both teams.
        timeout: seconds the runner waits for a probe pod; the Jobs' ``activeDeadlineSeconds`` allow three times it.

    Raises:
        ValueError: a team is unknown, not hosted on the shared cluster, both are the same, a role is missing or
            wrong, or ``run`` is not 8 hex digits; the message names the fix.

    """
    if owner == intruder:
        raise ValueError(
            f"--teams {owner} {intruder}: name two different teams (A, whose boundary is probed, then B)"
        )
    if len(run) != 8 or any(c not in "0123456789abcdef" for c in run):
        raise ValueError(f"run {run!r} must be 8 lowercase hex digits")
    hosted = {t.name: t for t in platform.hosted_teams}
    for name in (owner, intruder):
        if name not in hosted:
            known = ", ".join(sorted(hosted)) or "none"
            raise ValueError(f"--teams: {name!r} is not a team of the shared cluster (teams: {known})")
        if name not in roles:
            raise ValueError(
                f"--member-role {name}=AWSReservedSSO_<PermissionSet>_<16 hex>: the role of team {name}'s "
                "permission set is needed to act as one of its members"
            )
    a, b = hosted[owner], hosted[intruder]
    ids = {t.name: identity(platform, t, roles[t.name]) for t in (a, b)}
    deadline = timeout * 3
    service_name = names.probe_object(run, "server")
    url = f"http://{service_name}.{names.namespace(owner)}.svc:{PROBE_PORT}/token"
    server_job = _job(
        platform,
        a,
        run=run,
        name=service_name,
        role="server",
        script=_server_script(owner, run),
        deadline=deadline,
    )
    server_job["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "http", "containerPort": PROBE_PORT, "protocol": "TCP"}
    ]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name,
            "namespace": names.namespace(owner),
            "labels": {**labels.object_labels(owner), labels.PROBE_LABEL: run},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {labels.PROBE_LABEL: run, labels.PROBE_ROLE_LABEL: "server"},
            "ports": [{"name": "http", "port": PROBE_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    clients = {
        owner: _job(
            platform,
            a,
            run=run,
            name=names.probe_object(run, "a-client"),
            role="client",
            script=_owner_client_script(owner, run, url),
            deadline=deadline,
        ),
        intruder: _job(
            platform,
            b,
            run=run,
            name=names.probe_object(run, "b-client"),
            role="client",
            script=_intruder_client_script(owner, run, url),
            deadline=deadline,
        ),
    }
    reach = Check(
        id="a-reaches-own-service",
        actor=owner,
        description=f"A's pod reaches A's probe Service {service_name} (port {PROBE_PORT})",
        expect=Expect.ALLOWED,
    )
    fsx = Check(
        id="a-fsx-own-directory",
        actor=owner,
        description=f"A's pod writes, reads and removes a file in {names.fsx_directory(owner)}",
        expect=Expect.ALLOWED,
    )
    checks = [
        reach,
        fsx,
        Check(
            id="a-admitted-own-queue",
            actor=owner,
            description=f"A's honest Job on {names.local_queue(owner)} at "
            f"{_probe_class(platform, a).workload_priority_class} is admitted (dry-run)",
            expect=Expect.ALLOWED,
        ),
        Check(
            id="b-to-a-service",
            actor=intruder,
            description=f"B's pod cannot reach A's probe Service {service_name}",
            expect=Expect.BLOCKED,
            control=reach,
        ),
        Check(
            id="imds-from-a",
            actor=owner,
            description=f"A's pod cannot reach the instance metadata service {_IMDS}",
            expect=Expect.BLOCKED,
            control=reach,
        ),
        Check(
            id="b-reads-a-fsx",
            actor=intruder,
            description=f"B's pod cannot read the file A's server keeps in {names.fsx_directory(owner)}",
            expect=Expect.BLOCKED,
            control=fsx,
        ),
    ]
    honest = copy.deepcopy(clients[owner])
    honest["metadata"]["name"] = names.probe_object(run, "a-dry-run")
    dry_runs: dict[str, tuple[str, dict[str, Any]]] = {"a-admitted-own-queue": (owner, honest)}

    def intruder_job(role: str) -> dict[str, Any]:
        job = copy.deepcopy(clients[intruder])
        job["metadata"]["name"] = names.probe_object(run, role)
        return job

    on_a_queue = intruder_job("b-queue")
    for meta in (on_a_queue["metadata"], on_a_queue["spec"]["template"]["metadata"]):
        meta["labels"][labels.QUEUE_NAME_LABEL] = names.local_queue(owner)
    dry_runs["b-job-on-a-queue"] = (intruder, on_a_queue)
    checks.append(
        Check(
            id="b-job-on-a-queue",
            actor=intruder,
            description=f"B's Job on A's LocalQueue {names.local_queue(owner)} is denied (dry-run)",
            expect=Expect.DENIED,
            message=f"label {labels.QUEUE_NAME_LABEL} must be {names.local_queue(intruder)}",
        )
    )
    foreign = [c for c in platform.scheduling.priority_classes if c.name not in b.allowed_priority_classes]
    skipped: list[str] = []
    if foreign:
        klass = max(foreign, key=lambda c: c.weight).workload_priority_class
        unentitled = intruder_job("b-class")
        for meta in (unentitled["metadata"], unentitled["spec"]["template"]["metadata"]):
            meta["labels"][labels.PRIORITY_CLASS_LABEL] = klass
        dry_runs["b-unentitled-class"] = (intruder, unentitled)
        checks.append(
            Check(
                id="b-unentitled-class",
                actor=intruder,
                description=f"B's Job at {klass}, a class B is not entitled to, is denied (dry-run)",
                expect=Expect.DENIED,
                message=f"priority class {klass} is not allowed in namespace {names.namespace(intruder)}",
            )
        )
    else:
        skipped.append(f"b-unentitled-class: team {intruder} is entitled to every priority class")
    visible = intruder_job("b-gpu")
    visible["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": GPU_VISIBILITY_ENV[0], "value": "all"}
    )
    dry_runs["b-gpu-visibility"] = (intruder, visible)
    checks.append(
        Check(
            id="b-gpu-visibility",
            actor=intruder,
            description=f"B's Job with {GPU_VISIBILITY_ENV[0]}=all on a container without GPUs is denied (dry-run)",
            expect=Expect.DENIED,
            message=f"may set {', '.join(GPU_VISIBILITY_ENV)}",
        )
    )
    into_a = copy.deepcopy(honest)
    into_a["metadata"]["name"] = names.probe_object(run, "b-into-a")
    dry_runs["b-creates-in-a-namespace"] = (intruder, into_a)
    checks.append(
        Check(
            id="b-creates-in-a-namespace",
            actor=intruder,
            description=f"B cannot create a Job in A's namespace {names.namespace(owner)} (RBAC, dry-run)",
            expect=Expect.DENIED,
            message='cannot create resource "jobs"',
        )
    )
    return ProbePlan(
        run=run,
        owner=ids[owner],
        intruder=ids[intruder],
        server=[server_job, service],
        clients=clients,
        dry_runs=dry_runs,
        checks=checks,
        skipped=skipped,
    )


def _control(check: Check, observed: Mapping[str, Observed]) -> Result | None:
    return verdict(check.control, observed) if check.control is not None else None


def verdict(check: Check, observed: Mapping[str, Observed]) -> Result:  # noqa: PLR0911 - one return per rule
    """Return the verdict of ``check`` given every observation of the run (its control's included), by check id.

    * not observed, an unschedulable pod or an error: inconclusive, never a pass;
    * :attr:`Expect.ALLOWED`: ``ok`` passes; anything definite else (timeout, refused, absent, denied) fails;
    * :attr:`Expect.BLOCKED`: refused or absent passes only once the check's positive control passed, and a
      timeout likewise (before that a timeout or an absence could be a probe that reaches nothing at all);
      ``ok`` fails;
    * :attr:`Expect.DENIED`: a denial whose message contains :attr:`Check.message` passes; a denial by another
      rule is inconclusive (the boundary was not exercised); admission of the request fails.
    """
    seen = observed.get(check.id)
    if seen is None:
        return Result(
            check=check,
            observed=Observed(outcome=Outcome.ERROR),
            status=Status.INCONCLUSIVE,
            why="not observed",
        )

    def result(status: Status, why: str) -> Result:
        return Result(check=check, observed=seen, status=status, why=why)

    detail = f": {seen.detail}" if seen.detail else ""
    if seen.outcome is Outcome.UNSCHEDULABLE:
        return result(Status.INCONCLUSIVE, f"the probe pod found no capacity before the timeout{detail}")
    if seen.outcome is Outcome.ERROR:
        return result(Status.INCONCLUSIVE, f"could not be observed{detail}")
    if check.expect is Expect.ALLOWED:
        if seen.outcome is Outcome.OK:
            return result(Status.PASS, "works as it must for the team itself")
        return result(Status.FAIL, f"honest work of the team is {seen.outcome.value}{detail}")
    if check.expect is Expect.DENIED:
        if seen.outcome is Outcome.DENIED:
            if check.message in seen.detail:
                return result(Status.PASS, f"denied: {check.message}")
            return result(
                Status.INCONCLUSIVE, f"denied by another rule than the one probed ({check.message!r}){detail}"
            )
        if seen.outcome is Outcome.OK:
            return result(Status.FAIL, "the request was admitted")
        return result(Status.INCONCLUSIVE, f"unexpected {seen.outcome.value}{detail}")
    if seen.outcome is Outcome.OK:
        return result(Status.FAIL, "got through")
    if seen.outcome in (Outcome.TIMEOUT, Outcome.REFUSED, Outcome.ABSENT):
        control = _control(check, observed)
        if control is not None and control.status is not Status.PASS:
            return result(
                Status.INCONCLUSIVE,
                f"{seen.outcome.value}, but the positive control {control.check.id} did not pass "
                f"({control.status.value}: {control.why})",
            )
        return result(Status.PASS, f"blocked ({seen.outcome.value})")
    return result(Status.INCONCLUSIVE, f"unexpected {seen.outcome.value}{detail}")


def exit_status(results: Sequence[Result]) -> int:
    """0 when every check passed, 1 when one failed, 3 when none failed but one is inconclusive."""
    statuses = {r.status for r in results}
    if Status.FAIL in statuses:
        return EXIT_FAIL
    if Status.INCONCLUSIVE in statuses or not results:
        return EXIT_INCONCLUSIVE
    return EXIT_PASS

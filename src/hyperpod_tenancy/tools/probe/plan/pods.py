"""The probe's pods: who runs each, as what identity, with which scripts."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.fsx_dirs import BUSYBOX_IMAGE
from hyperpod_tenancy.k8s.labels import NODE_HEALTH_LABEL
from hyperpod_tenancy.k8s.posix_identity import SSO_ROLE_PREFIX, team_record
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, PriorityClass, Team
from hyperpod_tenancy.tools.probe.plan.checks import (
    _IMDS,
    _RESOURCES,
    CONNECT_ATTEMPTS,
    CONNECT_TIMEOUT,
    PROBE_PORT,
    PROBE_SESSION,
    RESULT_MARK,
    Identity,
)

__all__ = ["identity"]


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
    arn = f"arn:{names.partition(platform.region)}:sts::{platform.account}:assumed-role/{role_name}/{PROBE_SESSION}"
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

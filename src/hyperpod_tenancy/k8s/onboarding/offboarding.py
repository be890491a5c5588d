"""Offboarding: the steps that remove a person's access and work, and the Job that archives their home."""

from __future__ import annotations

import json
import shlex
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, labels, team_manifests, workloads
from hyperpod_tenancy.k8s.onboarding.facts import OnboardingFacts
from hyperpod_tenancy.k8s.team_manifests import SYSTEM_NAMESPACE
from hyperpod_tenancy.policy import names

__all__ = ["archive_job", "offboarding_steps"]

#: jq filters printing a selected item as ``Kind/name`` and as ``resource.group/name`` (what kubectl deletes).
_JQ_KIND_NAME = ' | "\\(.kind)/\\(.metadata.name)"'


_JQ_RESOURCE_NAME = ' | "\\(.kind | ascii_downcase).\\(.apiVersion | split("/")[0])/\\(.metadata.name)"'


#: JMESPath of the POSIX identity webhook's DynamoDB table among the cluster stack's resources.
_TABLE_QUERY = (
    "StackResources[?ResourceType=='AWS::DynamoDB::Table' && "
    "starts_with(LogicalResourceId, 'ClusterPosixIdentity')].PhysicalResourceId"
)


#: ``--expression-attribute-values`` of the offboarding mark: the time it is set (a shell word).
_OFFBOARDED_AT = '"{\\":t\\": {\\"S\\": \\"$(date -u +%FT%TZ)\\"}}"'


def _workload_resources(*, inference: bool) -> str:
    """Return the workload resources a team writes, as ``kubectl get`` names them (``jobs.batch,...``)."""
    kinds = workloads.kinds_for(inference=inference)
    return ",".join(f"{k.resource}.{k.group}" if k.group else k.resource for k in kinds)


def offboarding_steps(
    facts: OnboardingFacts,
    person: str,
    *,
    inference: bool,
    cluster_stack: str,
    instance_arn: str,
    group_id: str,
) -> list[tuple[str, list[str]]]:
    """Return the offboarding runbook of ``person`` in the team as (step, commands) pairs.

    ``person`` is the Identity Center user name (the webhook's person key is ``sso:<user name>``). The steps:
    revoke the person's access (their Identity Center group membership), stop their running work (every workload
    and pod whose ``hyperpod-tenancy.io/posix-user`` annotation names them), read and keep their UID record (never
    deleted: a UID is never reused), and archive then remove their home directory with a platform Job in
    ``hyperpod-tenancy-system`` (as root, on the file system root: only the platform sees the archive).
    """
    key = f"sso:{person}"
    select = f'.items[] | select(.metadata.annotations["{labels.POSIX_USER_ANNOTATION}"] == "{key}")'
    show = shlex.quote(select + _JQ_KIND_NAME)
    refs = shlex.quote(select + _JQ_RESOURCE_NAME)
    pods = shlex.quote(select + " | .metadata.name")
    uids = shlex.quote(f'.items[] | .metadata.annotations["{labels.POSIX_UID_ANNOTATION}"] // empty')
    kinds = _workload_resources(inference=inference)
    ns = facts.namespace
    region = facts.region
    sso = facts.sso_region
    user = shlex.quote(
        json.dumps({"UniqueAttribute": {"AttributePath": "userName", "AttributeValue": person}})
    )
    item = shlex.quote(json.dumps({"pk": {"S": f"person#{key}"}}))
    tables = f'"{_TABLE_QUERY}"'
    create = f'hyperpod-tenancy onboarding {facts.team} --offboard {shlex.quote(person)} --uid "$UID_N" --archive-job'
    return [
        (
            "1. Revoke access (an Identity Center administrator): remove the person from the team's group. Sessions "
            "already issued stay valid until they expire (the permission set's session duration, 8 hours).",
            [
                f"STORE=$(aws sso-admin describe-instance --region {sso} --instance-arn {instance_arn} "
                "--query IdentityStoreId --output text)",
                f'USER_ID=$(aws identitystore get-user-id --region {sso} --identity-store-id "$STORE" '
                f"--alternate-identifier {user} --query UserId --output text)",
                f"MEMBERSHIP=$(aws identitystore get-group-membership-id --region {sso} --identity-store-id "
                f'"$STORE" --group-id {group_id} --member-id UserId="$USER_ID" --query MembershipId --output text)',
                f'aws identitystore delete-group-membership --region {sso} --identity-store-id "$STORE" '
                '--membership-id "$MEMBERSHIP"',
            ],
        ),
        (
            f"2. Stop their running work (a teammate in team {facts.team}, or the platform on-call): delete every "
            f"workload and pod the POSIX identity webhook recorded as {key}. Repeat once the sessions of step 1 "
            "have expired.",
            [
                f"kubectl get {kinds} -n {ns} -o json | jq -r {show}",
                f"kubectl get {kinds} -n {ns} -o json | jq -r {refs} | xargs -r -n1 kubectl delete -n {ns}",
                f"kubectl get pods -n {ns} -o json | jq -r {pods} | xargs -r -n1 kubectl delete pod -n {ns}",
            ],
        ),
        (
            f"3. Keep the UID record (a platform administrator): read the UID; delete neither person#{key} nor "
            "uid#<UID> (the webhook never reuses a UID; a returning person gets theirs back); mark it offboarded.",
            [
                f"TABLE=$(aws cloudformation describe-stack-resources --region {region} --stack-name "
                f"{cluster_stack} --query {tables} --output text)",
                f'UID_N=$(aws dynamodb get-item --region {region} --table-name "$TABLE" --consistent-read '
                f"--key {item} --query Item.uid.N --output text)",
                f'aws dynamodb update-item --region {region} --table-name "$TABLE" --key {item} '
                f"--condition-expression 'attribute_exists(pk)' --update-expression 'SET offboardedAt = :t' "
                f"--expression-attribute-values {_OFFBOARDED_AT}",
                f"kubectl get {kinds},pods -n {ns} -o json | jq -r {uids} | sort -u   # UIDs still running here",
            ],
        ),
        (
            f"4. Archive, then remove, the home directory {facts.home_parent}/$UID_N (the platform on-call, with "
            f"cluster-admin): a Job in {SYSTEM_NAMESPACE} runs as root on the file system root (claim "
            f"{names.fsx_root_claim(facts.team)}), writes /fsx/.offboarded/{facts.team}/$UID_N.tar.gz (root's, "
            "mode 0700: no team sees it), checks the archive and only then removes the directory.",
            [
                f"JOB=$({create} | kubectl create -f - -o name)",
                f'kubectl wait -n {SYSTEM_NAMESPACE} --for=condition=complete "$JOB" --timeout=2h',
                f'kubectl logs -n {SYSTEM_NAMESPACE} "$JOB"',
            ],
        ),
    ]


def archive_job(facts: OnboardingFacts, uid: int) -> dict[str, Any]:
    """Return the platform Job that archives ``/fsx/<team>/home/<uid>`` and then removes it.

    In :data:`~hyperpod_tenancy.k8s.team_manifests.SYSTEM_NAMESPACE` (Pod Security ``baseline``), on the team's
    file-system-root claim, as root with the runtime's default capabilities (root must read a 0700 directory it
    does not own), pinned to healthy HyperPod nodes like the FSx directory Job (their AMI has the Lustre client).
    The script refuses a symbolic link, verifies the archive before removing anything, and never touches another
    path.
    """
    home = f"{names.FSX_MOUNT_PATH}/{facts.team}/{fsx_dirs.home_subpath(uid)}"
    archive_dir = f"{names.FSX_MOUNT_PATH}/.offboarded/{facts.team}"
    archive = f"{archive_dir}/{uid}.tar.gz"
    script = "\n".join(
        [
            "set -eu",
            f"home={shlex.quote(home)}; dir={shlex.quote(archive_dir)}; archive={shlex.quote(archive)}",
            'if [ -L "$home" ] || [ ! -d "$home" ]; then echo "$home is not a directory; nothing done" >&2; exit 2; fi',
            'if [ -e "$archive" ]; then echo "$archive exists already; nothing done" >&2; exit 3; fi',
            'umask 077; mkdir -p "$dir"; chmod 0700 "$(dirname "$dir")" "$dir"',
            'tar -C "$(dirname "$home")" -czf "$archive.partial" "$(basename "$home")"',
            'tar -tzf "$archive.partial" >/dev/null && mv "$archive.partial" "$archive"',
            'rm -rf -- "$home"',
            'echo "archived to $archive ($(wc -c < "$archive") bytes) and removed $home"',
        ]
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": "offboard-home-",
            "namespace": SYSTEM_NAMESPACE,
            "labels": labels.object_labels(facts.team),
            "annotations": {labels.POSIX_UID_ANNOTATION: str(uid)},
        },
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels.object_labels(facts.team)},
                # root with the default capabilities: it reads and removes files the person owns
                "spec": team_manifests.fsx_root_pod_spec(
                    facts.team,
                    container={
                        "name": "archive",
                        "image": fsx_dirs.BUSYBOX_IMAGE,
                        "command": ["sh", "-c", script],
                        "securityContext": {"allowPrivilegeEscalation": False},
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "1", "memory": "256Mi"},
                        },
                        "volumeMounts": [{"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH}],
                    },
                ),
            },
        },
    }

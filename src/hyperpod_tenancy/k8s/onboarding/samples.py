"""The sample job a new team member runs first, with kubectl or with ``hyp``."""

from __future__ import annotations

import json
import shlex
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.onboarding.facts import (
    _SAMPLE_SCRIPT,
    SAMPLE_IMAGE,
    SAMPLE_JOB_NAME,
    OnboardingFacts,
)

__all__ = ["hyp_command", "hyp_script", "kubectl_job"]


def _sample_command(facts: OnboardingFacts) -> list[str]:
    return ["sh", "-c", _SAMPLE_SCRIPT.format(team_dir=facts.fsx_directory)]


def kubectl_job(facts: OnboardingFacts) -> dict[str, Any]:
    """Return the sample ``batch/v1`` Job a member applies with ``kubectl apply -f``.

    It carries the team's LocalQueue and its highest priority class, the team's FSx claim mounted at
    ``/fsx/<team>`` (so paths in the container are the paths on FSx) and, when that class requires a checkpoint
    in this team, its declaration in the container's environment, as :func:`hyp_command` makes it. What the POSIX identity webhook adds (UID, GID, home directory) is not written here.
    """
    rule = facts.sample_class
    metadata: dict[str, Any] = {
        "name": SAMPLE_JOB_NAME,
        "namespace": facts.namespace,
        "labels": {
            labels.QUEUE_NAME_LABEL: facts.local_queue,
            labels.PRIORITY_CLASS_LABEL: rule.workload_priority_class,
        },
    }
    container: dict[str, Any] = {
        "name": "check",
        "image": SAMPLE_IMAGE,
        "command": _sample_command(facts),
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
    }
    if rule.checkpoint_required:
        container["env"] = [
            {"name": labels.CHECKPOINT_DIR_ENV, "value": facts.checkpoint_directory},
            {"name": labels.CHECKPOINT_INTERVAL_ENV, "value": rule.max_checkpoint_interval},
        ]
    container["volumeMounts"] = [{"name": facts.fsx_claim, "mountPath": facts.fsx_directory}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [
                        {"name": facts.fsx_claim, "persistentVolumeClaim": {"claimName": facts.fsx_claim}}
                    ],
                }
            },
        },
    }


def hyp_command(facts: OnboardingFacts) -> list[str]:
    """Return the sample ``hyp create hyp-pytorch-job`` command line (argv, ``hyp`` first).

    The checkpoint is declared in the container's environment
    (:data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_DIR_ENV`, ``…_INTERVAL``) under the claim's mount at
    ``/fsx/<team>``, the one place a checkpoint is declared. On the ``kueue`` backend admission refuses the kind (:attr:`OnboardingFacts.hyp_supported`).
    """
    rule = facts.sample_class
    argv = [
        "hyp",
        "create",
        "hyp-pytorch-job",
        "--job-name",
        SAMPLE_JOB_NAME,
        "--namespace",
        facts.namespace,
        "--image",
        SAMPLE_IMAGE,
        "--command",
        json.dumps(_sample_command(facts)),
        "--instance-type",
        facts.instance_type,
        "--node-count",
        "1",
        "--queue-name",
        facts.local_queue,
        "--priority",
        rule.workload_priority_class,
        "--volume",
        f"name={facts.fsx_claim},type=pvc,mount_path={facts.fsx_directory},claim_name={facts.fsx_claim}",
    ]
    if rule.checkpoint_required:
        environment = {
            labels.CHECKPOINT_DIR_ENV: facts.checkpoint_directory,
            labels.CHECKPOINT_INTERVAL_ENV: rule.max_checkpoint_interval,
        }
        argv += ["--environment", json.dumps(environment)]
    return argv


def hyp_script(facts: OnboardingFacts) -> str:
    """Return a shell script running :func:`hyp_command` (one option per line)."""
    argv = hyp_command(facts)
    words = [shlex.quote(w) for w in argv]
    lines = [" ".join(words[:3])]
    i = 3
    while i < len(words):
        lines.append("  " + " ".join(words[i : i + 2]))
        i += 2
    body = " \\\n".join(lines)
    return (
        "#!/usr/bin/env bash\n"
        f"# Submit a small job to team {facts.team}'s queue with the HyperPod CLI (sagemaker-hyperpod 3.12).\n"
        f"# First: aws sso login --profile {facts.profile}; the kubeconfig context {facts.kube_context}.\n"
        "set -euo pipefail\n"
        f"{body}\n"
    )

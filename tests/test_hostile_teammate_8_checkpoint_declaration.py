"""Two sources for one rule: the checkpoint interval admission bounds and the one the overdue alert reads.

Admission once bounded a checkpoint declared on the workload object (annotations ``hyperpod-tenancy.io/
checkpoint-*``) or in the containers' environment, while the eviction collector and the overdue-checkpoint alert
read the pod templates' annotations, which admission never checked: a team that declared ``30m`` on the object
and ``9999h`` on the pod template passed admission and was never overdue. The declaration is now one, in the
containers' environment (where ``hyp create hyp-pytorch-job --environment`` puts it), bounded by admission and
read by the collector and the scanner through one function; the annotations are refused wherever they are.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import tenant_admission as ta
from synth import Synth

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime import eviction_collector

NOW = dt.datetime(2026, 7, 1, 3, 0, tzinfo=dt.UTC)
SILENCER = {labels.CHECKPOINT_INTERVAL_ANNOTATION: "9999h"}


def test_an_unbounded_interval_on_the_pod_template_is_refused(synth: Synth) -> None:
    job = ta.pytorchjob(annotations=dict(ta.CHECKPOINT))
    assert ta.decide(synth, job).allowed, "the declaration in the environment is admitted"
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["metadata"] = {"annotations": dict(SILENCER)}
    (message,) = ta.decide(synth, job).denied
    assert "refused on a pod template" in message and labels.CHECKPOINT_INTERVAL_ENV in message


def _running_workload(template_annotations: dict[str, str]) -> dict[str, Any]:
    """The Workload Kueue makes of that job: admitted 3 hours ago to a borrowing queue, never checkpointed."""
    return {
        "metadata": {"name": "pt", "namespace": names.namespace("research"), "uid": "uid-pt"},
        "spec": {
            "podSets": [
                {
                    "name": "worker",
                    "count": 1,
                    "template": {
                        "metadata": {
                            "annotations": {
                                labels.CHECKPOINT_PATH_ANNOTATION: "/fsx/research/runs/exp-1/",
                                **template_annotations,
                            }
                        },
                        "spec": {"containers": [{"name": "train", "image": ta.IMAGE}]},
                    },
                }
            ]
        },
        "status": {
            "admission": {
                "clusterQueue": names.cluster_queue("research"),
                "podSetAssignments": [{"name": "worker", "resourceUsage": {"nvidia.com/gpu": "8"}}],
            },
            "conditions": [
                {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-07-01T00:00:00Z"}
            ],
        },
    }


def test_an_unchecked_interval_does_not_silence_the_overdue_alert() -> None:
    overdue = eviction_collector.checkpoints_overdue(
        [_running_workload(SILENCER)],
        {"research": {"GpusBorrowed": 8}},
        now=NOW,
        queue_prefix=names.NAMESPACE_PREFIX,
        queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
        last_checkpoint_annotation=labels.LAST_CHECKPOINT_ANNOTATION,
        interval_env=labels.CHECKPOINT_INTERVAL_ENV,
        dir_env=labels.CHECKPOINT_DIR_ENV,
    )
    assert overdue == {"research": 1}, "3 hours without a checkpoint is overdue whatever the template says"

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

from hyperpod_tenancy.tools.probe.plan.build import probe_plan
from hyperpod_tenancy.tools.probe.plan.checks import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    PROBE_PORT,
    PROBE_SESSION,
    RESULT_MARK,
    Check,
    Expect,
    Identity,
    Observed,
    Outcome,
    ProbePlan,
    Result,
    Status,
)
from hyperpod_tenancy.tools.probe.plan.pods import identity
from hyperpod_tenancy.tools.probe.plan.verdict import exit_status, verdict

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

"""The checkpoint policy: preemptible work declares a checkpoint directory on the team's claim and an interval within its class's bound."""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.admission._common import (
    _PARENT_SEGMENT,
    FSX_ROOT,
    WORKLOAD_RESOURCES,
    _cel_list,
    _for_every_pod_spec,
    _for_some_pod_spec,
    _is_resource,
    _label,
    _label_set,
    _namespace_label,
    _namespace_label_set,
    _q,
    _walk,
)
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy.model import Platform

__all__ = ["CHECKPOINT_ANNOTATIONS", "CHECKPOINT_INTERVAL_PATTERN", "interval_regex"]

#: Accepted checkpoint intervals: a positive number of minutes or hours, e.g. ``30m`` or ``2h``.
CHECKPOINT_INTERVAL_PATTERN = "^[1-9][0-9]*[mh]$"


def _up_to(n: int) -> str:
    """Return a regular expression matching the decimal numbers 1..``n`` (no leading zeros), e.g. 1..90."""
    if n < 1:  # pragma: no cover - callers pass validated intervals
        raise ValueError(f"no positive number is at most {n}")
    digits = str(n)
    alternatives = ["[1-9]" + "[0-9]" * (length - 1) for length in range(1, len(digits))]
    for i, char in enumerate(digits):
        low, digit = (1 if i == 0 else 0), int(char)
        if digit > low:
            top = f"[{low}-{digit - 1}]" if digit - 1 > low else str(low)
            alternatives.append(digits[:i] + top + "[0-9]" * (len(digits) - i - 1))
    alternatives.append(digits)
    return "(" + "|".join(alternatives) + ")"


def interval_regex(max_minutes: int) -> str:
    """Regular expression of the checkpoint intervals (``<n>m``/``<n>h``) of at most ``max_minutes``.

    Standard CEL has no substring or number parsing of ``30m``, so the bound is a generated pattern: minutes
    ``1..max_minutes`` and hours ``1..max_minutes // 60``, both without leading zeros.
    """
    parts = [_up_to(max_minutes) + "m"]
    if max_minutes >= 60:
        parts.append(_up_to(max_minutes // 60) + "h")
    return "^(" + "|".join(parts) + ")$"


def _borrows() -> str:
    """CEL: the namespace's work may run on capacity borrowed from other teams."""
    return f"({_namespace_label_set(labels.BORROWS_LABEL)} && {_namespace_label(labels.BORROWS_LABEL)} == 'true')"


def _preempted_by_own_team(platform: Platform) -> str:
    """CEL: the team's own work at a higher priority class it is entitled to may preempt this workload.

    ``preemptTeamTasks: LowerPriority`` (Task Governance ``PreemptTeamTasks``, Kueue ``withinClusterQueue``)
    lets a team's higher-priority work preempt its lower-priority work. Which classes are higher is the
    platform's (one literal map of class weights); which the team may use is the namespace's entitlement labels.
    """
    pc = labels.PRIORITY_CLASS_LABEL
    weights = (
        "{"
        + ", ".join(
            f"{_q(c.workload_priority_class)}: {c.weight}" for c in platform.scheduling.priority_classes
        )
        + "}"
    )
    entitled = (
        f"(({_q(labels.PRIORITY_LABEL_PREFIX)} + k) in namespaceObject.metadata.labels && "
        f"namespaceObject.metadata.labels[{_q(labels.PRIORITY_LABEL_PREFIX)} + k] == {_q(labels.ALLOWED)})"
    )
    own = labels.PREEMPTS_OWN_WORK_LABEL
    return (
        f"({_namespace_label_set(own)} && {_namespace_label(own)} == 'true' && {_label_set(pc)} && "
        f"{_label(pc)} in {weights} && {weights}.exists(k, {weights}[k] > {weights}[{_label(pc)}] && {entitled}))"
    )


def _needs_checkpoint(platform: Platform) -> str:
    """CEL: the workload can be preempted, so it must declare a checkpoint.

    Every way a team's work is preempted: at a ``preemptible`` class, on capacity borrowed from other teams
    (the lender reclaims it), or by the team's own higher-priority work (:func:`_preempted_by_own_team`).
    """
    pc = labels.PRIORITY_CLASS_LABEL
    preemptible = [c.workload_priority_class for c in platform.scheduling.priority_classes if c.preemptible]
    ways = [_borrows(), _preempted_by_own_team(platform)]
    if preemptible:
        ways.insert(0, f"({_label_set(pc)} && {_label(pc)} in {_cel_list(preemptible)})")
    return " || ".join(ways)


def _env_sets(container: str, name: str) -> str:
    return f"(has({container}.env) && {container}.env.exists(e, e.name == {_q(name)}))"


def _env_declares(spec: str) -> str:
    """CEL: a main container of PodSpec ``spec`` sets the checkpoint directory variable."""
    return f"(has({spec}.containers) && {spec}.containers.exists(c, {_env_sets('c', labels.CHECKPOINT_DIR_ENV)}))"


def _every_container(check: Callable[[str, str], str]) -> Callable[[str], str]:
    """Return a PodSpec check applying ``check(spec, container)`` to every main container with an environment."""

    def spec_check(spec: str) -> str:
        return f"(!has({spec}.containers) || {spec}.containers.all(c, !has(c.env) || {check(spec, 'c')}))"

    return spec_check


def _on_team_claim(spec: str, container: str, path: str) -> str:
    """CEL: ``path`` is at or below a writable mount, in ``container``, of the team's FSx claim.

    The claim (:data:`~hyperpod_tenancy.k8s.team_manifests.FSX_CLAIM_NAME` of the namespace) is bound to the
    pre-bound PersistentVolume of ``/fsx/<team>`` only, so wherever the container mounts it, a path below the
    mount is in the team directory; a read-only mount (of the volume or the claim) cannot hold checkpoints.
    """
    claim = (
        f"has({spec}.volumes) && {spec}.volumes.exists(v, v.name == m.name && has(v.persistentVolumeClaim) && "
        f"v.persistentVolumeClaim.claimName == {_q(FSX_CLAIM_NAME)} && "
        "!(has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly))"
    )
    below = f"({path} == m.mountPath || {path}.startsWith(m.mountPath.endsWith('/') ? m.mountPath : m.mountPath + '/'))"
    return (
        f"(has({container}.volumeMounts) && {container}.volumeMounts.exists(m, "
        f"!(has(m.readOnly) && m.readOnly) && {claim} && {below}))"
    )


def _checkpoint_validations(platform: Platform) -> list[dict[str, str]]:
    """Return the checkpoint policy's validations of work that can be preempted: one declaration, in containers.

    The declaration is where ``hyp create hyp-pytorch-job`` puts it, the only place that client can: its
    ``--environment`` becomes the env of the job's one container and ``--volume`` its volumes and mounts
    (HyperPod CLI 3.12 template ``hyperpod_pytorch_job_template/v1_1/model.py`` ``to_domain``, which sets no
    annotation but the Kueue topology ones), and every other client can set a container's environment too.
    :data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_DIR_ENV` and
    :data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_INTERVAL_ENV` are read only from main containers (init and
    ephemeral containers do not train) and must be about where the job writes: a literal value (``valueFrom``
    is invisible at admission), at or below a writable mount of the team's FSx claim *in the same container*
    (:func:`_on_team_claim`), without ``..``, with an interval in the same container no longer than the class's
    ``maxCheckpointInterval``. At least one main container of the workload declares (a sidecar need not), and
    every container that sets one variable sets both. The eviction collector, the overdue-checkpoint alert and
    the checkpoint scanner read exactly these variables of the pod templates Kueue copies into the Workload
    (``hyperpod_tenancy.runtime.checkpoint_scanner.declarations``), so what is bounded here is what they read.
    """
    pc = labels.PRIORITY_CLASS_LABEL
    dir_env = labels.CHECKPOINT_DIR_ENV
    interval_env = labels.CHECKPOINT_INTERVAL_ENV
    team = labels.TEAM_LABEL
    classes = platform.scheduling.priority_classes
    preemptible = [c.workload_priority_class for c in classes if c.preemptible]
    team_or_placeholder = f"({_namespace_label_set(team)} ? {_namespace_label(team)} : '<team>')"
    why = (
        f"(({_label_set(pc)} && {_label(pc)} in {_cel_list(preemptible)}) ? "
        f"'priority class ' + {_label(pc)} + ' is preemptible' : {_borrows()} ? "
        "'namespace ' + namespaceObject.metadata.name + ' borrows idle capacity of other teams' : "
        "'work of the same team at a higher priority class than ' + "
        f"({_label_set(pc)} ? {_label(pc)} : '<class>') + ' may preempt it')"
    )
    bounds = {c.workload_priority_class: c for c in classes if c.max_checkpoint_minutes is not None}
    regexes = (
        "{"
        + ", ".join(
            f"{_q(n)}: {_q(interval_regex(c.max_checkpoint_minutes or 0))}" for n, c in bounds.items()
        )
        + "}"
    )
    maxima = "{" + ", ".join(f"{_q(n)}: {_q(c.max_checkpoint_interval)}" for n, c in bounds.items()) + "}"
    env_declared = _for_some_pod_spec(_env_declares)
    class_bounded = f"({_label_set(pc)} && {_label(pc)} in {regexes})"
    return [
        {
            "expression": env_declared,
            "messageExpression": (
                f"{why} + ': the work can be preempted, so it must checkpoint. Declare where and how often in "
                f"the environment of the training container, below its mount of the team FSx claim "
                f"{FSX_CLAIM_NAME}: {dir_env}={FSX_ROOT}' + {team_or_placeholder} + '/<job> and {interval_env}=30m "
                f"(with hyp: --volume name={FSX_CLAIM_NAME},type=pvc,mount_path={FSX_ROOT}' + {team_or_placeholder} "
                f'+ \',claim_name={FSX_CLAIM_NAME} and --environment with {{"{dir_env}": "{FSX_ROOT}\' + '
                f'{team_or_placeholder} + \'/<job>", "{interval_env}": "30m"}}; docs/submitting-work.md).\''
            ),
            "message": (
                f"work that can be preempted must declare its checkpoint in a container's environment: "
                f"{dir_env} (a directory below the container's mount of the team FSx claim {FSX_CLAIM_NAME}) and "
                f"{interval_env} (e.g. 30m)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": _for_every_pod_spec(
                _every_container(
                    lambda spec, c: (
                        f"{c}.env.all(e, e.name != {_q(dir_env)} || (has(e.value) && "
                        f"!e.value.matches({_q(_PARENT_SEGMENT)}) && {_on_team_claim(spec, c, 'e.value')}))"
                    )
                )
            ),
            "messageExpression": (
                f"'environment variable {dir_env} must name a directory where this container writes to the team "
                f"directory: a literal value (not valueFrom), without .., at or below a writable volumeMount, "
                f"in the same container, of the team FSx claim {FSX_CLAIM_NAME} (e.g. --volume name=fsx,type=pvc,"
                f"mount_path={FSX_ROOT}' + {team_or_placeholder} + ',claim_name={FSX_CLAIM_NAME} and "
                f"{dir_env}={FSX_ROOT}' + {team_or_placeholder} + '/<job>): other teams cannot read or keep it, "
                "and a directory the job does not write to is no checkpoint.'"
            ),
            "message": (
                f"environment variable {dir_env} must be a literal directory at or below the container's writable "
                f"mount of the team FSx claim {FSX_CLAIM_NAME}, without '..'."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": _for_every_pod_spec(
                _every_container(
                    lambda spec, c: (
                        f"({_env_sets(c, dir_env)} == {_env_sets(c, interval_env)}) && "
                        f"{c}.env.all(e, e.name != {_q(interval_env)} || (has(e.value) && "
                        f"e.value.matches({_q(CHECKPOINT_INTERVAL_PATTERN)})))"
                    )
                )
            ),
            "message": (
                f"a container that sets {dir_env} must also set {interval_env} (and the other way round), to a "
                "literal number of minutes or hours such as 30m or 1h (not valueFrom)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"!{class_bounded} || "
                + _for_every_pod_spec(
                    _every_container(
                        lambda spec, c: (
                            f"{c}.env.all(e, e.name != {_q(interval_env)} || !has(e.value) || "
                            f"!e.value.matches({_q(CHECKPOINT_INTERVAL_PATTERN)}) || "
                            f"e.value.matches({regexes}[{_label(pc)}]))"
                        )
                    )
                )
            ),
            "messageExpression": (
                f"'environment variable {interval_env} is longer than ' + {maxima}[{_label(pc)}] + ', the longest "
                f"checkpoint interval of priority class ' + {_label(pc)} + ' (scheduling.priorityClasses[]."
                "maxCheckpointInterval): an eviction would throw away more GPU time than the platform allows. "
                "Checkpoint more often.'"
            ),
            "message": (
                f"environment variable {interval_env} is longer than the maxCheckpointInterval of the workload's "
                "priority class."
            ),
            "reason": "Forbidden",
        },
    ]


#: Annotations that once declared a checkpoint on the workload or its pod templates; nothing reads them.
CHECKPOINT_ANNOTATIONS = (labels.CHECKPOINT_PATH_ANNOTATION, labels.CHECKPOINT_INTERVAL_ANNOTATION)


def _no_checkpoint_annotation(metadata: str) -> str:
    """CEL: the metadata at ``metadata`` carries none of :data:`CHECKPOINT_ANNOTATIONS`."""
    keys = _cel_list(list(CHECKPOINT_ANNOTATIONS))
    return f"(!has({metadata}.annotations) || !{keys}.exists(k, k in {metadata}.annotations))"


def _for_every_pod_template(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for the metadata of every pod template of the workload under review."""
    return " && ".join(
        f"(!{_is_resource(kind)} || ("
        + " && ".join(_walk("object", [*p.split(".")[:-1], "metadata"], check) for p in kind.pod_specs)
        + "))"
        for kind in WORKLOAD_RESOURCES
        if kind.pod_specs and all(p.endswith(".spec") for p in kind.pod_specs)
    )


def _checkpoint_annotation_validations() -> list[dict[str, str]]:
    """Refuse the checkpoint annotations on the workload and its pod templates, whether or not it must checkpoint.

    A checkpoint is declared once, in the containers' environment (:func:`_checkpoint_validations`). An
    annotation beside it would be a second declaration that nothing checks and nothing reads (a pod template's
    ``checkpoint-interval: 9999h`` once silenced the overdue-checkpoint alert); refusing it tells the team
    where the declaration went instead of leaving them to believe they declared one.
    """
    listed = " and ".join(CHECKPOINT_ANNOTATIONS)
    fix = (
        f"Remove it, and declare the checkpoint in the training container's environment instead: "
        f"{labels.CHECKPOINT_DIR_ENV} (a directory below the container's mount of the team FSx claim "
        f"{FSX_CLAIM_NAME}) and {labels.CHECKPOINT_INTERVAL_ENV} (e.g. 30m), as hyp --environment does "
        "(docs/submitting-work.md)."
    )
    return [
        {
            "expression": _no_checkpoint_annotation("object.metadata"),
            "message": (
                f"the annotations {listed} no longer declare a checkpoint and are refused on a workload: "
                f"nothing reads them. {fix}"
            ),
            "reason": "Invalid",
        },
        {
            "expression": _for_every_pod_template(_no_checkpoint_annotation),
            "message": (
                f"the annotations {listed} are refused on a pod template: a checkpoint is declared once, in the "
                f"containers' environment, where admission bounds it and the overdue-checkpoint alert reads it. "
                f"{fix}"
            ),
            "reason": "Invalid",
        },
    ]

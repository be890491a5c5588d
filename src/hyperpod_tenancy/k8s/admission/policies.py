"""The four admission policies and their bindings, assembled from the modules of each."""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import vap
from hyperpod_tenancy.k8s.admission._common import (
    _OPERATIONS,
    CHECKPOINT_POLICY,
    DELETE_POLICY,
    POD_SPEC_POLICY,
    WORKLOAD_POLICY,
    _from_team_member,
    _not_being_deleted,
    _rules,
)
from hyperpod_tenancy.k8s.admission.checkpoints import (
    _checkpoint_annotation_validations,
    _checkpoint_validations,
    _needs_checkpoint,
)
from hyperpod_tenancy.k8s.admission.deletes import _delete_validations
from hyperpod_tenancy.k8s.admission.pod_specs import _pod_spec_validations
from hyperpod_tenancy.k8s.admission.topology import topology_validations
from hyperpod_tenancy.k8s.admission.workload_labels import _unqueued_kind_validations, _workload_validations
from hyperpod_tenancy.policy.model import CheckpointEnforcement, Platform

__all__ = ["admission_policies"]


def admission_policies(platform: Platform) -> list[dict[str, Any]]:
    """ValidatingAdmissionPolicies and their bindings for the tenant namespaces.

    Returns, in this order, the workload-label policy (``Deny``), the checkpoint policy (``Deny`` or ``Warn``
    per ``scheduling.checkpoint_enforcement``; always rendered, since whether a namespace borrows is read
    from its label at admission time), the pod-spec policy (``Deny``) and the delete policy (``Deny``), each
    followed by its binding.
    """
    checkpoint_action = (
        "Deny" if platform.scheduling.checkpoint_enforcement is CheckpointEnforcement.DENY else "Warn"
    )
    pods_ephemeral = {
        "apiGroups": [""],
        "apiVersions": ["*"],
        "operations": ["UPDATE"],
        "resources": ["pods/ephemeralcontainers"],
        "scope": "Namespaced",
    }
    return [
        vap.policy(
            WORKLOAD_POLICY,
            rules=_rules(_OPERATIONS),
            match_conditions=[_from_team_member(), _not_being_deleted()],
            validations=[*_workload_validations(), *_unqueued_kind_validations(platform)],
        ),
        vap.policy_binding(WORKLOAD_POLICY, ["Deny"]),
        vap.policy(
            CHECKPOINT_POLICY,
            rules=_rules(_OPERATIONS),
            match_conditions=[_from_team_member(), _not_being_deleted()],
            # whether the work can be preempted reads the namespace: the API server gives match conditions no
            # namespaceObject (an error there refuses the request), so each validation holds it instead
            validations=[
                *_checkpoint_annotation_validations(),
                *(
                    {**v, "expression": f"!({_needs_checkpoint(platform)}) || ({v['expression']})"}
                    for v in _checkpoint_validations(platform)
                ),
            ],
        ),
        vap.policy_binding(CHECKPOINT_POLICY, [checkpoint_action]),
        vap.policy(
            POD_SPEC_POLICY,
            rules=[*_rules(_OPERATIONS), pods_ephemeral],
            match_conditions=[_not_being_deleted()],
            validations=[*_pod_spec_validations(platform), *topology_validations(platform)],
        ),
        vap.policy_binding(POD_SPEC_POLICY, ["Deny"]),
        vap.policy(
            DELETE_POLICY,
            rules=_rules(("DELETE",)),
            match_conditions=[_from_team_member()],
            validations=_delete_validations(),
        ),
        vap.policy_binding(DELETE_POLICY, ["Deny"]),
    ]

"""The delete policy: what a team member may delete, and finalizers only removed."""

from __future__ import annotations

from hyperpod_tenancy.k8s.admission._common import WORKLOAD_RESOURCES, _is_resource


def _delete_validations() -> list[dict[str, str]]:
    options = "request.options"
    policy_set = f"(has({options}) && has({options}.propagationPolicy))"
    orphan_flag = f"(has({options}) && has({options}.orphanDependents))"
    job = next(k for k in WORKLOAD_RESOURCES if (k.group, k.resource) == ("batch", "jobs"))
    return [
        {
            "expression": f"!{policy_set} || {options}.propagationPolicy != 'Orphan'",
            "message": (
                "deleting a workload with propagationPolicy: Orphan (kubectl delete --cascade=orphan) is not "
                "allowed in tenant namespaces: Kueue would release the workload's quota while its pods keep "
                "running on the GPUs. Delete with --cascade=background (the default) or foreground."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": f"!{orphan_flag} || {options}.orphanDependents != true",
            "message": (
                "deleting a workload with orphanDependents: true is not allowed in tenant namespaces: Kueue "
                "would release the workload's quota while its pods keep running on the GPUs. Set "
                "propagationPolicy: Background (or Foreground) instead."
            ),
            "reason": "Forbidden",
        },
        {
            # pkg/registry/batch/job/strategy.go: DefaultGarbageCollectionPolicy is OrphanDependents for
            # batch/v1 "for backwards compatibility"; kubectl sends Background, API clients often send nothing.
            "expression": (
                f"!{_is_resource(job)} || ({policy_set} && {options}.propagationPolicy != 'Orphan') || "
                f"({orphan_flag} && {options}.orphanDependents == false)"
            ),
            "message": (
                "a Job must be deleted with propagationPolicy: Background or Foreground in tenant namespaces: "
                "without one the API server orphans a batch/v1 Job's pods (its default for backwards "
                "compatibility), and they keep their GPUs after Kueue released the quota. kubectl does this "
                "by default; API clients pass propagation_policy='Background'."
            ),
            "reason": "Forbidden",
        },
    ]

"""The POSIX identity ValidatingAdmissionPolicy, evaluated on the synthesized platform (both fairness backends).

Every Pod in a team namespace must run non-root, with ``runAsGroup``/``fsGroup`` the team GID, no other
supplemental group, no container-level group override and ``allowPrivilegeEscalation: false`` on every
container (``k8s/posix_identity.py``). The policy and the namespace labels are read out of the synthesized
templates (``tests/support/tenant_admission.py``) and evaluated with the standard CEL engine
(``tests/support/cel_admission.py``), as the API server would. Honest pods are the ones each controller creates
from a template the webhook stamped; the attacks are what a team member (or a controller acting on a team
member's template) could send instead. Field semantics: Kubernetes API reference, ``PodSecurityContext`` and
``SecurityContext`` (a container's ``runAsNonRoot``/``runAsUser``/``runAsGroup`` override the pod's).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import tenant_admission as ta
from cel_admission import evaluate_policies
from synth import Synth

from hyperpod_tenancy.k8s import fsx_dirs, labels, posix_identity, workloads
from hyperpod_tenancy.k8s.posix_identity import POSIX_IDENTITY_POLICY

RESEARCH_GID = ta.team_gid("research")
VISION_GID = ta.team_gid("vision")


def _pod(spec: dict[str, Any], *, parent: dict[str, Any] | None = None) -> dict[str, Any]:
    if parent is not None:
        return ta.child("Pod", parent, spec=spec, labels=ta.kueue_labels())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "hyperpod-ns-research",
            "labels": ta.kueue_labels(),
            "annotations": dict(ta.CHECKPOINT),  # research borrows: its work declares a checkpoint
        },
        "spec": spec,
    }
    return ta.place_checkpoint(pod, "research")


def _posix_denials(synth: Synth, pod: dict[str, Any], **kwargs: Any) -> list[str]:
    decision = ta.decide(synth, pod, **kwargs)
    assert POSIX_IDENTITY_POLICY in decision.policies(), "the policy matches every pod of a team namespace"
    return [m for o in decision.outcomes if o.policy == POSIX_IDENTITY_POLICY for m in o.failures]


def _stamped(**extra: Any) -> dict[str, Any]:
    spec = ta.pod_spec(resources=ta.GPU)
    spec.update(extra)
    return spec


def _with_home(spec: dict[str, Any]) -> dict[str, Any]:
    """What the webhook adds for the home directory: the claim volume, the init container, the mount."""
    spec = copy.deepcopy(spec)
    spec.setdefault("volumes", []).append({"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx"}})
    spec.setdefault("initContainers", []).insert(
        0, fsx_dirs.home_init_container(uid=ta.SUBMITTER_UID, gid=RESEARCH_GID, claim_volume="fsx")
    )
    for container in spec["containers"]:
        container.setdefault("volumeMounts", []).append(
            fsx_dirs.home_volume_mount(uid=ta.SUBMITTER_UID, volume="fsx")
        )
    return spec


# Every controller that creates Pods in a team namespace, with the parent its Pods come from.
_POD_CREATORS: list[tuple[str, Callable[[], dict[str, Any]]]] = [
    ("Job controller", ta.job),
    ("Kubeflow training operator", ta.pytorchjob),
    ("MPI operator", ta.mpijob),
    ("HyperPod training operator", ta.hyperpod_pytorch_job),
    ("KubeRay operator", ta.raycluster),
    ("ReplicaSet controller", ta.deployment),
    ("StatefulSet controller", ta.deployment),
]


def test_the_creators_are_controllers_of_the_one_table() -> None:
    known = {c.description for c in workloads.CONTROLLERS}
    assert {name for name, _ in _POD_CREATORS} <= known


@pytest.mark.parametrize(("creator", "parent"), _POD_CREATORS, ids=[c for c, _ in _POD_CREATORS])
def test_honest_stamped_pods_of_each_kind_pass(synth: Synth, creator: str, parent: Callable[[], Any]) -> None:
    owner = parent()
    team = owner["metadata"]["namespace"].removeprefix("hyperpod-ns-")
    spec = ta.pod_spec(resources=ta.GPU, team=team)
    pod = ta.child("Pod", owner, spec=spec, labels=ta.kueue_labels(team))
    assert _posix_denials(synth, pod, team=team, user=ta.CONTROLLER[creator]) == []


def test_an_honest_bare_pod_with_its_home_directory_passes(synth: Synth) -> None:
    pod = _pod(_with_home(_stamped()))
    assert _posix_denials(synth, pod) == []
    assert ta.decide(synth, pod).allowed, "and every other policy admits it too"


def test_container_level_non_root_and_matching_values_pass(synth: Synth) -> None:
    spec = _stamped()
    del spec["securityContext"]["runAsNonRoot"]
    spec["containers"][0]["securityContext"].update(
        {"runAsNonRoot": True, "runAsUser": 200_123, "runAsGroup": RESEARCH_GID}
    )
    assert _posix_denials(synth, _pod(spec)) == []


def _break(mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    spec = _with_home(_stamped())
    mutate(spec)
    return spec


def _sc(spec: dict[str, Any]) -> dict[str, Any]:
    sc: dict[str, Any] = spec["securityContext"]
    return sc


def _container_sc(spec: dict[str, Any], field: str = "containers", i: int = 0) -> dict[str, Any]:
    sc: dict[str, Any] = spec[field][i].setdefault("securityContext", {})
    return sc


ATTACKS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "root-pod-level": (lambda s: _sc(s).update(runAsUser=0), "runAsUser 0 (root)"),
    "root-container-level": (lambda s: _container_sc(s).update(runAsUser=0), "runAsUser 0 (root)"),
    "root-init-container": (
        lambda s: _container_sc(s, "initContainers").update(runAsUser=0),
        "runAsUser 0 (root)",
    ),
    "non-root-missing": (lambda s: _sc(s).pop("runAsNonRoot"), "runAsNonRoot must be true"),
    "non-root-false-pod-level": (lambda s: _sc(s).update(runAsNonRoot=False), "runAsNonRoot must be true"),
    "non-root-overridden-by-container": (
        lambda s: _container_sc(s).update(runAsNonRoot=False),
        "runAsNonRoot must be true",
    ),
    "another-team-gid": (
        lambda s: _sc(s).update(runAsGroup=VISION_GID, fsGroup=VISION_GID, supplementalGroups=[VISION_GID]),
        f"runAsGroup must be the team GID {RESEARCH_GID}",
    ),
    "root-group": (lambda s: _sc(s).update(runAsGroup=0), f"runAsGroup must be the team GID {RESEARCH_GID}"),
    "run-as-group-missing": (lambda s: _sc(s).pop("runAsGroup"), "runAsGroup must be the team GID"),
    "fs-group-missing": (lambda s: _sc(s).pop("fsGroup"), f"fsGroup must be the team GID {RESEARCH_GID}"),
    "fs-group-other": (lambda s: _sc(s).update(fsGroup=VISION_GID), "fsGroup must be the team GID"),
    "supplemental-other-team": (
        lambda s: _sc(s).update(supplementalGroups=[RESEARCH_GID, VISION_GID]),
        "supplementalGroups may hold only the team GID",
    ),
    "supplemental-root-group": (
        lambda s: _sc(s).update(supplementalGroups=[0]),
        "supplementalGroups may hold only the team GID",
    ),
    "container-group-override": (
        lambda s: _container_sc(s).update(runAsGroup=VISION_GID),
        "containers may not override the team group",
    ),
    "init-container-group-override": (
        lambda s: _container_sc(s, "initContainers").update(runAsGroup=0),
        "containers may not override the team group",
    ),
    "escalation-unset": (
        lambda s: _container_sc(s).pop("allowPrivilegeEscalation"),
        "allowPrivilegeEscalation: false",
    ),
    "init-container-escalation": (
        lambda s: _container_sc(s, "initContainers").update(allowPrivilegeEscalation=True),
        "allowPrivilegeEscalation: false",
    ),
    "extra-init-container-without-context": (
        lambda s: s["initContainers"].append({"name": "sneak", "image": ta.IMAGE}),
        "allowPrivilegeEscalation: false",
    ),
    "user-namespace": (lambda s: s.update(hostUsers=False), "hostUsers: false"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attacks_by_a_team_member_are_denied(synth: Synth, attack: str) -> None:
    mutate, fragment = ATTACKS[attack]
    denials = _posix_denials(synth, _pod(_break(mutate)))
    assert denials, attack
    assert any(fragment in m for m in denials), denials
    assert all(m.startswith("pod in namespace hyperpod-ns-research: ") for m in denials)


@pytest.mark.parametrize(
    "attack", ["root-pod-level", "another-team-gid", "escalation-unset", "fs-group-missing"]
)
@pytest.mark.parametrize("controller", sorted(ta.CONTROLLER))
def test_a_controller_creating_a_pod_from_a_bad_template_is_denied(
    synth: Synth, controller: str, attack: str
) -> None:
    # no exemption by requester: a Job whose template a team member wrote runs what the template says
    mutate, _ = ATTACKS[attack]
    pod = _pod(_break(mutate), parent=ta.job())
    assert _posix_denials(synth, pod, user=ta.CONTROLLER[controller])


def test_a_controller_owner_reference_exempts_nothing(synth: Synth) -> None:
    mutate, _ = ATTACKS["root-pod-level"]
    pod = _pod(_break(mutate), parent=ta.job())  # ownerReferences: controller: true, pointing at a Job
    pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "uid-train"
    pod["metadata"]["annotations"] = {posix_identity.POSIX_UID_ANNOTATION: "0"}  # requester-written
    for user in (ta.MEMBER, ta.JOB_CONTROLLER):
        assert _posix_denials(synth, pod, user=user)


def test_the_gid_is_the_namespace_s_not_the_requester_s(synth: Synth) -> None:
    # a research pod (stamped with research's GID) sent into vision's namespace is denied there
    pod = _pod(_stamped())
    pod["metadata"]["namespace"] = "hyperpod-ns-vision"
    denials = _posix_denials(synth, pod, team="vision", user=ta.member("vision"))
    assert any(f"the team GID {VISION_GID}" in m for m in denials), denials
    assert _posix_denials(synth, _pod(ta.pod_spec(team="vision")), team="vision") == []


def _ephemeral(container_sc: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    old = _pod(_stamped())
    new = copy.deepcopy(old)
    debug: dict[str, Any] = {"name": "debugger", "image": "busybox", "targetContainerName": "train"}
    if container_sc is not None:
        debug["securityContext"] = container_sc
    new["spec"]["ephemeralContainers"] = [debug]
    return old, new


@pytest.mark.parametrize(
    ("container_sc", "fragment"),
    [
        (None, "allowPrivilegeEscalation: false"),
        ({"allowPrivilegeEscalation": False, "runAsUser": 0}, "runAsUser 0 (root)"),
        ({"allowPrivilegeEscalation": False, "runAsNonRoot": False}, "runAsNonRoot must be true"),
        ({"allowPrivilegeEscalation": False, "runAsGroup": VISION_GID}, "may not override the team group"),
    ],
)
def test_ephemeral_containers_are_checked(
    synth: Synth, container_sc: dict[str, Any] | None, fragment: str
) -> None:
    old, new = _ephemeral(container_sc)
    denials = _posix_denials(
        synth, new, operation="UPDATE", old=old, resource="pods/ephemeralcontainers", user=ta.MEMBER
    )
    assert any(fragment in m for m in denials), denials


def test_an_honest_ephemeral_container_passes(synth: Synth) -> None:
    old, new = _ephemeral({"allowPrivilegeEscalation": False})
    assert _posix_denials(synth, new, operation="UPDATE", old=old, resource="pods/ephemeralcontainers") == []


def test_a_namespace_without_its_gid_label_admits_no_pod(synth: Synth) -> None:
    namespace = ta.namespace(synth, "research")
    assert namespace["metadata"]["labels"][labels.POSIX_GID_LABEL] == str(RESEARCH_GID), (
        "the team stack sets it"
    )
    for value in (None, "", "abc", "0", "-5"):
        broken = copy.deepcopy(namespace)
        if value is None:
            del broken["metadata"]["labels"][labels.POSIX_GID_LABEL]
        else:
            broken["metadata"]["labels"][labels.POSIX_GID_LABEL] = value
        decision = evaluate_policies(
            ta.policies(synth), obj=_pod(_stamped()), namespace=broken, group="", resource="pods"
        )
        denials = [m for o in decision.outcomes if o.policy == POSIX_IDENTITY_POLICY for m in o.failures]
        assert any("has no valid hyperpod-tenancy.io/posix-gid label" in m for m in denials), (value, denials)


def test_pods_outside_team_namespaces_are_not_matched(synth: Synth) -> None:
    # kube-system, the webhook's own namespace and the platform namespace carry no tenant label
    for name in ("kube-system", "hyperpod-tenancy-system", "hyperpod-tenancy-posix-identity"):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {}}}
        root = _pod({"containers": [{"name": "c", "image": "x"}], "securityContext": {"runAsUser": 0}})
        decision = evaluate_policies(
            ta.policies(synth), obj=root, namespace=namespace, group="", resource="pods"
        )
        assert POSIX_IDENTITY_POLICY not in decision.policies()


def test_a_pod_being_deleted_can_still_lose_its_finalizers(synth: Synth) -> None:
    # a pod admitted before the policy existed must still be deletable (controllers strip finalizers)
    old = _pod({"containers": [{"name": "c", "image": "x"}], "securityContext": {"runAsUser": 0}})
    old["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    decision = ta.decide(synth, new, operation="UPDATE", old=old, user=ta.JOB_CONTROLLER)
    assert POSIX_IDENTITY_POLICY not in decision.policies()


def test_the_policy_is_the_same_for_every_platform(synth: Synth) -> None:
    rendered = [o for o in ta.policies(synth) if o["metadata"]["name"] == POSIX_IDENTITY_POLICY]
    expected = posix_identity.posix_identity_policies()
    assert [o["spec"] for o in rendered] == [o["spec"] for o in expected], "no team-specific content"
    policy, binding = rendered
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert "matchConditions" in policy["spec"]
    expressions = " ".join(c["expression"] for c in policy["spec"]["matchConditions"])
    assert "userInfo" not in expressions and "ownerReferences" not in expressions, "no exemption"


def _unstamped(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the team member sends it: the stamp of :func:`tenant_admission.posix_stamp` removed."""
    raw = copy.deepcopy(obj)

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            if "containers" in node:
                node.pop("securityContext", None)
                for c in node.get("containers", []) + node.get("initContainers", []):
                    c.pop("securityContext", None)
            for value in node.values():
                strip(value)
        elif isinstance(node, list):
            for value in node:
                strip(value)

    strip(raw)
    return raw


#: The pod creators whose parent the webhook stamps (a StatefulSet's pods are the Deployment case again).
_WORKLOADS = [(creator, build) for creator, build in _POD_CREATORS if creator != "StatefulSet controller"]


@pytest.mark.parametrize(("creator", "build"), _WORKLOADS, ids=[c for c, _ in _WORKLOADS])
def test_pods_from_templates_the_real_webhook_stamped_pass(
    synth: Synth, creator: str, build: Callable[[], dict[str, Any]]
) -> None:
    """End to end across the two halves: the server's own patch, then this policy on the controller's Pods."""
    from hyperpod_tenancy.webhook import patch as webhook_patch

    obj = _unstamped(build())
    team = obj["metadata"]["namespace"].removeprefix("hyperpod-ns-")
    group, resource = ta.group_resource(obj)
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if (k.group, k.resource) == (group, resource)]
    ident = webhook_patch.Identity(person="sso:alice", uid=ta.SUBMITTER_UID, gid=ta.team_gid(team))
    webhook_patch.stamp(obj, kind=kind, ident=ident, home_claim="fsx", keep=False, default_queue=None)
    paths = webhook_patch.pod_spec_paths(obj, kind)
    assert paths
    for path, spec in paths:
        pod = ta.child("Pod", obj, spec=spec, labels=ta.kueue_labels(team))
        assert _posix_denials(synth, pod, team=team, user=ta.CONTROLLER[creator]) == [], path


@pytest.mark.parametrize(("creator", "build"), _WORKLOADS, ids=[c for c, _ in _WORKLOADS])
def test_a_container_the_operator_injects_passes_once_the_webhook_hardened_the_pod(
    synth: Synth, creator: str, build: Callable[[], dict[str, Any]]
) -> None:
    """Operators add containers the submitter never wrote (Kubeflow's ``init-pytorch`` on workers): the webhook
    fills their unset fields on the controller's Pod CREATE (``patch.harden``), and the policy then passes it;
    without that step the injected container's missing ``allowPrivilegeEscalation`` is refused."""
    from hyperpod_tenancy.webhook import patch as webhook_patch

    obj = _unstamped(build())
    team = obj["metadata"]["namespace"].removeprefix("hyperpod-ns-")
    group, resource = ta.group_resource(obj)
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if (k.group, k.resource) == (group, resource)]
    ident = webhook_patch.Identity(person="sso:alice", uid=ta.SUBMITTER_UID, gid=ta.team_gid(team))
    webhook_patch.stamp(obj, kind=kind, ident=ident, home_claim="fsx", keep=False, default_queue=None)
    (pod_kind,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == "Pod"]
    for _path, spec in webhook_patch.pod_spec_paths(obj, kind):
        injected = copy.deepcopy(spec)
        injected.setdefault("initContainers", []).append({"name": "init-pytorch", "image": "alpine:3.10"})
        pod = ta.child("Pod", obj, spec=injected, labels=ta.kueue_labels(team))
        user = ta.CONTROLLER[creator]
        assert any("allowPrivilegeEscalation" in d for d in _posix_denials(synth, pod, team=team, user=user))
        webhook_patch.harden(pod, kind=pod_kind, gid=ta.team_gid(team))
        assert _posix_denials(synth, pod, team=team, user=user) == []

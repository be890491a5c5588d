"""Issue 8, class 3: Services must not reach across teams.

A team member may create only ClusterIP Services without ``externalIPs`` in a tenant namespace. NodePort and
LoadBalancer Services open ports on every node (the VPC CNI network-policy agent admits traffic from a
pod's own node, so node ports get around default-deny), ``externalIPs`` lets kube-proxy capture traffic to
any address (CVE-2020-8554, https://github.com/kubernetes/kubernetes/issues/97076), ExternalName aliases
any host. The HyperPod inference operator's Services pass, exempted by its identity
(``request.userInfo.username``; service accounts from the HyperPod CLI chart's
``charts/inference-operator/migration/helm_to_addon.sh``), never by labels or owner references.

The policies are taken from the synthesized platform on both fairness backends and evaluated with a
standard CEL engine (tests/support/cel_admission.py); RBAC with tests/support/rbac_eval.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cel_admission import TEAM_MEMBER, AdmissionDecision, evaluate_policies
from rbac_eval import Authorizer, Request, Subject
from synth import Synth
from tenant_admission import member, namespace, policies

from hyperpod_tenancy.k8s.workloads import INFERENCE_OPERATORS, KUBERAY_NAMESPACE
from hyperpod_tenancy.policy import Team, names

INFERENCE_OPERATOR_USERNAMES = (
    "system:serviceaccount:hyperpod-inference-system:hyperpod-inference-controller-manager",
    "system:serviceaccount:hyperpod-inference-system:hyperpod-inference-operator-controller-manager",
)


def service(name: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"app": "server"}, "ports": [{"port": 8080, "targetPort": 8080}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def admit(
    synth: Synth,
    team: Team,
    obj: dict[str, Any],
    *,
    operation: str = "CREATE",
    user: dict[str, Any] | None = None,
) -> AdmissionDecision:
    return evaluate_policies(
        policies(synth),
        obj=obj,
        namespace=namespace(synth, team.name),
        group="",
        resource="services",
        operation=operation,
        user_info=user or dict(TEAM_MEMBER),
    )


ATTACKS = {
    "node-port": service("np", type="NodePort"),
    "node-port-fixed": service("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]),
    "load-balancer": service("lb", type="LoadBalancer"),
    "load-balancer-source-ranges": service(
        "lb2", type="LoadBalancer", loadBalancerSourceRanges=["0.0.0.0/0"]
    ),
    "external-ips": service("ext", externalIPs=["10.192.0.10"]),
    "external-ips-explicit-cluster-ip": service("ext2", type="ClusterIP", externalIPs=["8.8.8.8"]),
    "external-name": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "alias"},
        "spec": {"type": "ExternalName", "externalName": "kubernetes.default.svc.cluster.local"},
    },
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_team_member_cannot_create_a_service_that_reaches_beyond_cluster_ip(
    synth: Synth, attack: str
) -> None:
    for team in synth.platform.teams:
        decision = admit(synth, team, ATTACKS[attack], user=member(team.name))
        assert not decision.allowed, f"{team.name}: {attack} admitted"
        assert any("Service" in m for m in decision.denied)


def test_turning_an_existing_cluster_ip_service_into_a_node_port_is_refused(synth: Synth) -> None:
    # attack: create the honest Service, then update its type (UPDATE is matched as well)
    for team in synth.platform.teams:
        honest = service("web")
        assert admit(synth, team, honest, user=member(team.name)).allowed
        changed = copy.deepcopy(honest)
        changed["spec"]["type"] = "NodePort"
        assert not admit(synth, team, changed, operation="UPDATE", user=member(team.name)).allowed


def test_claiming_the_inference_operator_in_the_object_does_not_exempt(synth: Synth) -> None:
    # attack: labels, annotations and an owner reference that say "the inference operator made this"
    for team in synth.platform.teams:
        lb = service("endpoint", type="LoadBalancer")
        lb["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "hyperpod-inference-operator"}
        lb["metadata"]["annotations"] = {"kubernetes.io/created-by": INFERENCE_OPERATOR_USERNAMES[0]}
        lb["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
                "kind": "InferenceEndpointConfig",
                "name": "x",
                "uid": "00000000-0000-0000-0000-000000000000",
                "controller": True,
            }
        ]
        assert not admit(synth, team, lb, user=member(team.name)).allowed, team.name


def test_other_controllers_get_no_service_exemption(synth: Synth) -> None:
    # attack: a RayCluster with headGroupSpec.serviceType NodePort makes the KubeRay operator create it
    kuberay = {"username": f"system:serviceaccount:{KUBERAY_NAMESPACE}:kuberay-operator", "groups": []}
    for team in synth.platform.teams:
        assert not admit(synth, team, service("ray-head", type="NodePort"), user=kuberay).allowed
        # honest: the operators' own (headless) ClusterIP Services pass without any exemption
        assert admit(synth, team, service("ray-head", clusterIP="None"), user=kuberay).allowed


def test_the_inference_operator_may_create_an_endpoint_load_balancer(synth: Synth) -> None:
    assert tuple(c.username for c in INFERENCE_OPERATORS) == INFERENCE_OPERATOR_USERNAMES
    for team in synth.platform.teams:
        for username in INFERENCE_OPERATOR_USERNAMES:
            user = {"username": username, "groups": ["system:serviceaccounts"]}
            assert admit(synth, team, service("endpoint", type="LoadBalancer"), user=user).allowed
        # and a team member still may not, so the exemption is not a blanket pass
        assert not admit(
            synth, team, service("endpoint", type="LoadBalancer"), user=member(team.name)
        ).allowed


def test_honest_cluster_ip_services_pass_and_rbac_closes_the_other_paths(synth: Synth) -> None:
    authz = Authorizer(synth.manifests())
    for team in synth.platform.teams:
        for honest in (
            service("web"),
            service("web2", type="ClusterIP"),
            service("workers", clusterIP="None"),
        ):
            assert admit(synth, team, honest, user=member(team.name)).allowed
        ns = names.namespace(team.name)
        who = Subject("mallory@example.com", (names.kubernetes_group(team.name),))
        # selector-less Service + hand-written endpoints would reach any address; status.loadBalancer is
        # the other half of CVE-2020-8554
        for req in (
            Request("create", "endpoints", "", ns),
            Request("create", "endpointslices", "discovery.k8s.io", ns),
            Request("patch", "services/status", "", ns),
            Request("update", "services/status", "", ns),
        ):
            assert not authz.check(who, req).allowed, f"{team.name}: {req}"
        assert authz.check(who, Request("create", "services", "", ns)).allowed
        # the policy itself is present: the checks above were not vacuous
        assert any(
            m["kind"] == "ValidatingAdmissionPolicy"
            and m["metadata"]["name"] == "hyperpod-tenancy-tenant-services"
            for m in synth.manifests()
        )

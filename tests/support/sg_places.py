"""The network interfaces of a synthesized platform, as places of the security-group model (:mod:`sg_model`).

HyperPod nodes, system nodes, the API endpoint, FSx, and each team's Studio apps: beside the cluster (the team
stack's domain), or in the team's own account (its Studio stack's domain, at an address of its Studio network).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sg_model import Endpoint, SecurityGroupModel
from synth import Synth, one, resources_of


def platform_places(synth: Synth) -> tuple[SecurityGroupModel, dict[str, Endpoint]]:
    """Return the model of the stage's groups and its places by name (``studio:<team>`` for each domain)."""
    model = SecurityGroupModel().add_templates(synth.templates)
    cluster_stack = synth.stage.cluster_stack.stack_name
    eks_id, eks_cluster = one(synth.cluster, "AWS::EKS::Cluster")
    cluster_sg = model.name(cluster_stack, eks_id, "ClusterSecurityGroupId")
    model.add_eks_cluster_security_group(cluster_sg)

    def groups(values: list[Any], stack: str = cluster_stack) -> list[str]:
        return [model.group_name(stack, v) for v in values]

    _, hyperpod = one(synth.cluster, "AWS::SageMaker::Cluster")
    hyperpod_groups = set()
    for group in hyperpod["Properties"]["InstanceGroups"]:
        vpc = group.get("OverrideVpcConfig") or hyperpod["Properties"]["VpcConfig"]
        hyperpod_groups.add(frozenset(groups(vpc["SecurityGroupIds"])))
    assert len(hyperpod_groups) == 1, hyperpod_groups
    for logical_id, nodegroup in resources_of(synth.cluster, "AWS::EKS::Nodegroup").items():
        assert "LaunchTemplate" not in nodegroup["Properties"], logical_id
        assert "RemoteAccess" not in nodegroup["Properties"], logical_id
    _, file_system = one(synth.cluster, "AWS::FSx::FileSystem")
    places = {
        "hyperpod": Endpoint(hyperpod_groups.pop()),
        "system": Endpoint.of(cluster_sg),
        "api": Endpoint.of(
            cluster_sg, *groups(eks_cluster["Properties"]["ResourcesVpcConfig"].get("SecurityGroupIds", []))
        ),
        "fsx": Endpoint.of(*groups(file_system["Properties"]["SecurityGroupIds"])),
    }
    platform = synth.stage.platform
    for team, stack in synth.stage.team_stacks.items():
        spec = platform.team(team)
        if not spec.studio:
            continue
        studio_stack = synth.stage.studio_stacks.get(team, stack)
        (domain,) = resources_of(synth.templates[studio_stack.stack_name], "AWS::SageMaker::Domain").values()
        studio = domain["Properties"]["DefaultUserSettings"]["SecurityGroups"]
        network = spec.studio_network
        # an app in the team's own VPC has an address there, which the endpoint admits by its CIDR
        ip = str(next(ipaddress.ip_network(network.cidr).hosts())) if network is not None else None
        places[f"studio:{team}"] = Endpoint.of(*groups(studio, studio_stack.stack_name), ip=ip)
    return model, places

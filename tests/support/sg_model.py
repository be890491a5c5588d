"""A small security-group reachability model over synthesized CloudFormation templates.

It answers "can a network interface carrying groups A reach one carrying groups B on protocol/port", the way
EC2 decides it for VPC security groups
(https://docs.aws.amazon.com/vpc/latest/userguide/vpc-security-group-rules.html):

* a flow is allowed when some group of the source permits it outbound (to a destination group or CIDR) **and**
  some group of the destination permits it inbound (from a source group or CIDR); groups are allow-only and a
  network interface's groups are unioned;
* groups are stateful: replies need no rule, so only the initiating direction is checked;
* an ``AWS::EC2::SecurityGroup`` without ``SecurityGroupEgress`` keeps EC2's default allow-all egress rule
  (AWS::EC2::SecurityGroup, "SecurityGroupEgress" in the CloudFormation template reference);
* protocol ``-1`` means every protocol and port.

Groups are read from ``AWS::EC2::SecurityGroup`` (inline rules), ``AWS::EC2::SecurityGroupIngress`` and
``AWS::EC2::SecurityGroupEgress``. A group is named by the intrinsic that yields its ID:
``Fn::GetAtt [Sg, GroupId]`` and ``Ref Sg`` name ``Sg``; ``Fn::GetAtt [Eks, ClusterSecurityGroupId]`` names
``Eks.ClusterSecurityGroupId`` (the group EKS creates, which is not in the template: declare it with
:meth:`SecurityGroupModel.add_eks_cluster_security_group`); ``Fn::ImportValue`` is resolved through the exports
of the templates added. Names are qualified by the stack: ``<stack>/<name>`` (see :meth:`SecurityGroupModel.name`).
Anything the model does not understand raises, so a test cannot pass by ignoring a rule.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_PROTOCOLS = {"-1": "-1", "tcp": "tcp", "6": "tcp", "udp": "udp", "17": "udp", "icmp": "icmp", "1": "icmp"}


@dataclass(frozen=True)
class Rule:
    """One security-group rule: the peer is a group name or a CIDR."""

    protocol: str
    from_port: int | None
    to_port: int | None
    peer_group: str | None = None
    peer_cidr: str | None = None

    def covers(self, protocol: str, port: int) -> bool:
        """Whether the rule's protocol and port range include ``protocol``/``port``."""
        if self.protocol == "-1":
            return True
        if self.protocol != protocol:
            return False
        low = -1 if self.from_port is None else self.from_port
        high = -1 if self.to_port is None else self.to_port
        if low == -1 and high == -1:  # EC2: -1 as the port range means all ports
            return True
        return low <= port <= high


@dataclass
class Group:
    """A security group's inbound and outbound rules."""

    ingress: list[Rule] = field(default_factory=list)
    egress: list[Rule] = field(default_factory=list)


@dataclass(frozen=True)
class Endpoint:
    """A network interface: the groups it carries and (optionally) its private IP address."""

    groups: frozenset[str]
    ip: str | None = None

    @classmethod
    def of(cls, *groups: str, ip: str | None = None) -> Endpoint:
        """An endpoint carrying ``groups``."""
        return cls(frozenset(groups), ip)


def _cidr_holds(cidr: str, ip: str | None) -> bool:
    if ip is None:  # unknown address: only a rule for every address matches
        return ipaddress.ip_network(cidr).prefixlen == 0
    return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr)


class SecurityGroupModel:
    """Security groups of one or more templates, and the reachability question over them."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self._exports: dict[str, tuple[str, Any]] = {}

    # ----------------------------------------------------------------- loading
    def add_templates(self, templates: Mapping[str, Mapping[str, Any]]) -> SecurityGroupModel:
        """Load every security group and rule of ``templates`` (by stack name; exports are shared)."""
        for stack, template in templates.items():
            for output in template.get("Outputs", {}).values():
                export = output.get("Export", {}).get("Name")
                if isinstance(export, str):
                    self._exports[export] = (stack, output["Value"])
        for stack, template in templates.items():
            self._add_template(stack, template)
        return self

    @staticmethod
    def name(stack: str, logical_id: str, attribute: str = "GroupId") -> str:
        """The model's name for the group ``Fn::GetAtt [logical_id, attribute]`` of ``stack``."""
        return f"{stack}/{logical_id}" if attribute == "GroupId" else f"{stack}/{logical_id}.{attribute}"

    def add_eks_cluster_security_group(self, name: str) -> None:
        """Declare the security group EKS creates for a cluster.

        EKS creates it with "Inbound: All, from itself" and "Outbound: All, 0.0.0.0/0"
        (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html, "Default cluster security group").
        Rules the templates add to it are kept.
        """
        group = self.groups.setdefault(name, Group())
        group.ingress.append(Rule("-1", None, None, peer_group=name))
        group.egress.append(Rule("-1", None, None, peer_cidr="0.0.0.0/0"))

    def group_name(self, stack: str, value: Any) -> str:
        """The group name an intrinsic of ``stack`` (or a literal ``sg-...``) designates."""
        if isinstance(value, str):
            return value
        if isinstance(value, Mapping) and len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" and isinstance(arg, str):
                return self.name(stack, arg)
            if key == "Fn::GetAtt":
                resource, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
                if attribute in {"GroupId", "ClusterSecurityGroupId"}:
                    return self.name(stack, str(resource), attribute)
            if key == "Fn::ImportValue":
                export = arg if isinstance(arg, str) else None
                if export is None or export not in self._exports:
                    raise ValueError(f"cannot resolve import {arg!r}: add the exporting template too")
                return self.group_name(*self._exports[export])
        raise NotImplementedError(f"security group reference not understood: {value!r}")

    def _rule(self, stack: str, props: Mapping[str, Any], *, peer_key: str, cidr_key: str) -> Rule:
        protocol = _PROTOCOLS.get(str(props["IpProtocol"]).lower())
        if protocol is None:
            raise NotImplementedError(f"IP protocol not understood: {props['IpProtocol']!r}")
        if "CidrIpv6" in props or "SourcePrefixListId" in props or "DestinationPrefixListId" in props:
            raise NotImplementedError(f"rule kind not understood: {props!r}")
        from_port = props.get("FromPort")
        to_port = props.get("ToPort")
        if peer_key in props:
            return Rule(protocol, from_port, to_port, peer_group=self.group_name(stack, props[peer_key]))
        if cidr_key in props:
            return Rule(protocol, from_port, to_port, peer_cidr=str(props[cidr_key]))
        raise NotImplementedError(f"rule without a peer: {props!r}")

    def _add_template(self, stack: str, template: Mapping[str, Any]) -> None:
        for logical_id, resource in template.get("Resources", {}).items():
            kind = resource["Type"]
            props = resource.get("Properties", {})
            if kind == "AWS::EC2::SecurityGroup":
                group = self.groups.setdefault(self.name(stack, logical_id), Group())
                for rule in props.get("SecurityGroupIngress", []):
                    group.ingress.append(
                        self._rule(stack, rule, peer_key="SourceSecurityGroupId", cidr_key="CidrIp")
                    )
                egress = props.get("SecurityGroupEgress")
                if egress is None:
                    group.egress.append(Rule("-1", None, None, peer_cidr="0.0.0.0/0"))
                for rule in egress or []:
                    group.egress.append(
                        self._rule(stack, rule, peer_key="DestinationSecurityGroupId", cidr_key="CidrIp")
                    )
            elif kind == "AWS::EC2::SecurityGroupIngress":
                name = self.group_name(stack, props["GroupId"])
                self.groups.setdefault(name, Group()).ingress.append(
                    self._rule(stack, props, peer_key="SourceSecurityGroupId", cidr_key="CidrIp")
                )
            elif kind == "AWS::EC2::SecurityGroupEgress":
                name = self.group_name(stack, props["GroupId"])
                self.groups.setdefault(name, Group()).egress.append(
                    self._rule(stack, props, peer_key="DestinationSecurityGroupId", cidr_key="CidrIp")
                )

    # ----------------------------------------------------------------- questions
    def _group(self, name: str) -> Group:
        if name not in self.groups:
            raise KeyError(f"unknown security group {name!r}; known: {sorted(self.groups)}")
        return self.groups[name]

    def egress_allows(self, source: Endpoint, destination: Endpoint, protocol: str, port: int) -> bool:
        """Whether some group of ``source`` lets the flow out."""
        return any(
            rule.covers(protocol, port)
            and (
                (rule.peer_group is not None and rule.peer_group in destination.groups)
                or (rule.peer_cidr is not None and _cidr_holds(rule.peer_cidr, destination.ip))
            )
            for name in source.groups
            for rule in self._group(name).egress
        )

    def ingress_allows(self, source: Endpoint, destination: Endpoint, protocol: str, port: int) -> bool:
        """Whether some group of ``destination`` lets the flow in."""
        return any(
            rule.covers(protocol, port)
            and (
                (rule.peer_group is not None and rule.peer_group in source.groups)
                or (rule.peer_cidr is not None and _cidr_holds(rule.peer_cidr, source.ip))
            )
            for name in destination.groups
            for rule in self._group(name).ingress
        )

    def can_reach(self, source: Endpoint, destination: Endpoint, protocol: str, port: int) -> bool:
        """Whether ``source`` can open a ``protocol``/``port`` flow to ``destination``."""
        if protocol not in {"tcp", "udp"}:
            raise NotImplementedError(f"only tcp/udp questions are modelled, not {protocol!r}")
        return self.egress_allows(source, destination, protocol, port) and self.ingress_allows(
            source, destination, protocol, port
        )

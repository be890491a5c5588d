"""Names and template readers shared by the tests of ``examples/team-accounts`` (a team in its own account)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
from synth import Synth

from hyperpod_tenancy.policy import names

#: The example's accounts: Identity Center (management), the cluster's (workload), and research's own.
IDENTITY_CENTER, WORKLOADS, RESEARCH = "999988887777", "111122223333", "444455556666"
#: The example's platform name.
PLATFORM = "ml-platform-org"


def stack_name(team: str, suffix: str = "") -> str:
    """The CloudFormation name of a team's stack (``suffix``: ``-Account``, ``-Identity``, ``-Access``)."""
    return names.stage_stack_name(PLATFORM, names.team_stack_id(team)) + suffix


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The properties of the template's resources of type ``kind``, by logical ID."""
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == kind}


def stacks(synth: Synth) -> Iterator[cdk.Stack]:
    """The stacks of the synthesized stage."""
    yield from (c for c in synth.stage.node.children if isinstance(c, cdk.Stack))


def walk(value: Any) -> Iterator[Any]:
    """Every value of a JSON document, depth first."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from walk(child)


def imports_by_account(synth: Synth) -> list[tuple[str, str, str]]:
    """Every ``Fn::ImportValue`` of the stage: (importing stack, its account, the exporting stack's account)."""
    account_of = {s.stack_name: s.account for s in stacks(synth)}
    exporter = {
        output["Export"]["Name"]: name
        for name, template in synth.templates.items()
        for output in template.get("Outputs", {}).values()
        if "Export" in output
    }
    return [
        (name, account_of[name], account_of[exporter[value["Fn::ImportValue"]]])
        for name, template in synth.templates.items()
        for value in walk(template)
        if isinstance(value, dict) and "Fn::ImportValue" in value
    ]


def without_team_account_studio(data: dict[str, Any]) -> None:
    """Turn off, in policy ``data``, the Studio domain of every team that has one in its own account."""
    for team in data["teams"]:
        if "studioNetwork" in team:
            del team["studioNetwork"]
            team["studio"] = False

"""Studio with Identity Center administered from another account than the cluster's.

An Identity Center Studio domain is reached through its Identity Center application, to which the team's group
is assigned ("IAM Identity Center groups in a domain", SageMaker developer guide). The application is created with
the domain, in the cluster's account; the assignment is made from the Identity Center account, which administers
the instance. The application's ARN exists only once the domain does, so it cannot cross the account line at
synthesis: the team stack publishes it in an SSM parameter that one reader role may read, and the team's Identity
Center stack, deployed after it, reads it through that role (aws-cdk-lib's ``AwsCustomResource`` with an assumed
role) and assigns the group. These tests check the names that cross agree on both sides, and, through the IAM
evaluator with the policies as synthesized, that only the team's assigner reaches the ARN and only that ARN.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import cfnlint
import platforms
import pytest
from iam_eval import is_allowed, is_allowed_across
from synth import Synth, synthesize
from team_accounts import resources

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.changes import studio_domain_create_only

IDENTITY_CENTER, WORKLOADS = "999988887777", "111122223333"
TEAM_STACK, IDENTITY_STACK = "ml-platform-org-Team-Research", "ml-platform-org-Team-Research-Identity"
RECORD = names.studio_application_record("shared-gpu", "research")
PARAMETER_ARN = f"arn:aws:ssm:us-east-1:{WORKLOADS}:parameter{RECORD}"
READER = f"arn:aws:iam::{WORKLOADS}:role/{names.team_studio_reader_role('shared-gpu', 'research')}"
ASSIGNER = f"arn:aws:iam::{IDENTITY_CENTER}:role/{names.team_studio_assigner_role('shared-gpu', 'research')}"


def _resolve(value: Any, template: dict[str, Any]) -> Any:
    """``value`` with the partition as ``aws``, ``Fn::Join`` joined and a ``Ref`` to an SSM parameter as its name."""
    if isinstance(value, list):
        return [_resolve(v, template) for v in value]
    if not isinstance(value, dict):
        return value
    if value == {"Ref": "AWS::Partition"}:
        return "aws"
    if "Ref" in value:
        resource = template["Resources"][value["Ref"]]
        assert resource["Type"] == "AWS::SSM::Parameter", value
        return resource["Properties"]["Name"]
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_resolve(p, template) for p in parts)
    return {k: _resolve(v, template) for k, v in value.items()}


def _role(template: dict[str, Any], name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The role of ``name`` in ``template``: its trust, and its policies (inline and ``AWS::IAM::Policy``)."""
    (logical, role) = next(
        (k, r) for k, r in template["Resources"].items() if r["Properties"].get("RoleName") == name
    )
    policies = [
        _resolve(r["Properties"]["PolicyDocument"], template)
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": logical} in r["Properties"]["Roles"]
    ]
    return _resolve(role["Properties"]["AssumeRolePolicyDocument"], template), policies


@pytest.fixture(scope="module")
def documents(identity_center_example: Synth) -> dict[str, Any]:
    """The reader's trust and policies (cluster account), the assigner's policies (Identity Center account)."""
    team, identity = (
        identity_center_example.templates[TEAM_STACK],
        identity_center_example.templates[IDENTITY_STACK],
    )
    reader_trust, reader = _role(team, names.team_studio_reader_role("shared-gpu", "research"))
    _, assigner = _role(identity, names.team_studio_assigner_role("shared-gpu", "research"))
    return {"reader_trust": reader_trust, "reader": reader, "assigner": assigner}


def test_the_domain_publishes_its_application_and_the_identity_center_stack_assigns_it(
    identity_center_example: Synth,
) -> None:
    team, identity = (
        identity_center_example.templates[TEAM_STACK],
        identity_center_example.templates[IDENTITY_STACK],
    )
    (domain_id,) = resources(team, "AWS::SageMaker::Domain")
    # no assignment in the cluster's account: the instance is administered from the other one
    assert resources(team, "AWS::SSO::ApplicationAssignment") == {}
    tenant = identity_center_example.stage.team_stacks["research"].tenant
    assert tenant.studio_assignment is None and tenant.studio_application is not None
    assert tenant.studio_application.reader_role.node.default_child is not None
    (parameter,) = (p for p in resources(team, "AWS::SSM::Parameter").values() if p["Name"] == RECORD)
    assert parameter["Value"] == {"Fn::GetAtt": [domain_id, "SingleSignOnApplicationArn"]}
    (lookup_id, lookup) = next(iter(resources(identity, "Custom::AWS").items()))
    for phase in ("Create", "Update"):
        call = json.loads(_resolve(lookup[phase], identity))
        assert call["service"] == "SSM" and call["action"] == "getParameter"
        assert call["parameters"] == {"Name": RECORD}
        assert call["assumedRoleArn"] == READER
        assert call["region"] == identity_center_example.platform.region
    (assignment,) = resources(identity, "AWS::SSO::ApplicationAssignment").values()
    assert assignment == {
        "ApplicationArn": {"Fn::GetAtt": [lookup_id, "Parameter.Value"]},
        "PrincipalType": "GROUP",
        "PrincipalId": identity_center_example.platform.team("research").identity.group_id,
    }
    # the lookup runs as the assigner role, whose name the reader's trust names
    (function,) = resources(identity, "AWS::Lambda::Function").values()
    role_logical = function["Role"]["Fn::GetAtt"][0]
    assert identity["Resources"][role_logical]["Properties"]["RoleName"] == ASSIGNER.rsplit("/", 1)[1]


def test_teams_without_studio_have_neither_side(identity_center_example: Synth) -> None:
    for team in identity_center_example.platform.hosted_teams:
        if team.studio:
            continue
        stack = names.stage_stack_name("ml-platform-org", names.team_stack_id(team.name))
        identity = names.stage_stack_name("ml-platform-org", names.team_identity_stack_id(team.name))
        assert resources(identity_center_example.templates[identity], "Custom::AWS") == {}
        assert not [
            p
            for p in resources(identity_center_example.templates[stack], "AWS::SSM::Parameter").values()
            if "studio-application" in p["Name"]
        ]


def test_the_assigner_reads_the_application_through_the_reader(documents: dict[str, Any]) -> None:
    d = documents
    # the assigner (Identity Center account) may assume the reader (cluster account): both sides allow
    assert is_allowed_across(
        d["assigner"], d["reader_trust"], principal=ASSIGNER, action="sts:AssumeRole", resource=READER
    )
    # and the reader may read the one parameter
    assert is_allowed(d["reader"], "ssm:GetParameter", PARAMETER_ARN)


@pytest.mark.parametrize(
    ("case", "principal"),
    [
        ("an administrator of the Identity Center account", f"arn:aws:iam::{IDENTITY_CENTER}:role/Admin"),
        (
            "another team's assigner",
            f"arn:aws:iam::{IDENTITY_CENTER}:role/{names.team_studio_assigner_role('shared-gpu', 'vision')}",
        ),
        (
            "the assigner's name in another account",
            f"arn:aws:iam::444455556666:role/{ASSIGNER.rsplit('/', 1)[1]}",
        ),
    ],
)
def test_no_one_else_may_assume_the_reader(documents: dict[str, Any], case: str, principal: str) -> None:
    everything = [
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    ]
    # even with every permission on its own side, the reader's trust does not let it in
    assert not is_allowed_across(
        everything, documents["reader_trust"], principal=principal, action="sts:AssumeRole", resource=READER
    ), case


def test_an_allow_on_one_side_only_is_refused(documents: dict[str, Any]) -> None:
    # the trust names the assigner, but without its identity policy's allow the assumption is refused
    assert not is_allowed_across(
        [], documents["reader_trust"], principal=ASSIGNER, action="sts:AssumeRole", resource=READER
    )
    # the assigner may assume the reader and no other role of the cluster's account
    other = f"arn:aws:iam::{WORKLOADS}:role/{names.team_pods_source_role('shared-gpu', 'research')}"
    assert not is_allowed(documents["assigner"], "sts:AssumeRole", other)


@pytest.mark.parametrize(
    "record",
    [
        names.studio_application_record("shared-gpu", "vision"),
        names.posix_identity_record("shared-gpu", "research"),
        names.drift_audit_record("shared-gpu", "research"),
    ],
)
def test_the_reader_reads_that_one_parameter(documents: dict[str, Any], record: str) -> None:
    arn = f"arn:aws:ssm:us-east-1:{WORKLOADS}:parameter{record}"
    assert not is_allowed(documents["reader"], "ssm:GetParameter", arn)
    assert not is_allowed(documents["reader"], "ssm:PutParameter", PARAMETER_ARN)


def _lookup_call(synth: Synth) -> dict[str, Any]:
    identity = synth.templates[IDENTITY_STACK]
    (lookup,) = resources(identity, "Custom::AWS").values()
    return json.loads(_resolve(lookup["Update"], identity))


def test_the_lookup_is_read_again_when_the_domain_is_replaced(
    identity_center_example: Synth, tmp_path: Path
) -> None:
    """``AWS::SageMaker::Domain``'s create-only properties decide its replacement (a new application); a change of
    what decides them in the policy changes the lookup's physical ID, so CloudFormation updates it and the ARN is
    read again. A change that does not replace the domain leaves the lookup as it is."""
    before = _lookup_call(identity_center_example)["physicalResourceId"]["id"]
    data = platforms.example_data("identity-center-account")
    keyed = synthesize(
        platforms.platform_from_dict({**data, "encryption": {"kmsKey": "create"}}), tmp_path / "k"
    )
    assert _lookup_call(keyed)["physicalResourceId"]["id"] != before
    data["teams"][0]["compute"]["fairShareWeight"] = 61
    weighted = synthesize(platforms.platform_from_dict(data), tmp_path / "w")
    assert _lookup_call(weighted)["physicalResourceId"]["id"] == before


def test_the_replacement_inputs_are_the_domain_create_only_properties() -> None:
    """What ``studio_domain_create_only`` covers is the schema's ``createOnlyProperties`` (cfn-lint's copy of the
    CloudFormation resource schema), less the RStudio setting the platform never sets: a property AWS makes
    create-only later fails here until it is covered."""
    providers = Path(cfnlint.__file__).parent / "data" / "schemas"
    digest = json.loads((providers / "providers" / "us-east-1.json").read_text())["AWS::SageMaker::Domain"]
    schema = json.loads((providers / "resources" / f"{digest}.json").read_text())
    create_only = {p.removeprefix("/properties/") for p in schema["createOnlyProperties"]}
    rstudio = "DomainSettings/RStudioServerProDomainSettings/DefaultResourceSpec"
    platform = platforms.example("identity-center-account")
    covered = set(studio_domain_create_only(platform, platform.team("research")))
    assert create_only - {rstudio} == covered


@pytest.mark.parametrize(
    ("cluster", "team"), [("shared-gpu", "research"), ("c" * 63, "t" * 63), ("a" * 40, "b")]
)
def test_the_studio_role_names_fit_iam_and_stay_apart(cluster: str, team: str) -> None:
    """IAM role names: at most 64 characters of ``[\\w+=,.@-]``; another team of the cluster gets other names."""
    made = [names.team_studio_reader_role(cluster, team), names.team_studio_assigner_role(cluster, team)]
    assert all(len(n) <= 64 and re.fullmatch(r"[\w+=,.@-]+", n) for n in made), made
    assert made[0].endswith("-studio-reader") and made[1].endswith("-studio-assigner")
    other = team[:-1] + "z"
    assert names.team_studio_reader_role(cluster, team) != names.team_studio_reader_role(cluster, other)


def test_the_reader_trusts_the_assigner_by_condition_not_as_a_principal(documents: dict[str, Any]) -> None:
    """IAM refuses a trust policy whose principal is a role that does not exist yet ("Invalid principal in
    policy", IAM user guide); the assigner is created after the reader, so the trust names its account and matches
    the role by ``aws:PrincipalArn``."""
    (statement,) = documents["reader_trust"]["Statement"]
    assert statement["Principal"] == {"AWS": f"arn:aws:iam::{IDENTITY_CENTER}:root"}
    assert statement["Condition"] == {"ArnEquals": {"aws:PrincipalArn": ASSIGNER}}

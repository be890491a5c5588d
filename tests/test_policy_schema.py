"""The policy loader is driven by the model, and platform.yaml has a JSON Schema generated from that model.

The loader keeps no list of keys, types or defaults: pydantic reads them from the dataclasses. These tests pin
what that design promises beyond the message tests in test_policy_errors.py: YAML keys come from the fields
(explicit aliases where camelCase is not the spelling), only YAML keys are accepted, YAML's habits (empty values,
unquoted numbers for text) keep today's meaning, and the committed schema is current and agrees with the loader.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import jsonschema
import pytest
from platforms import PLATFORM_YAML as REFERENCE
from platforms import REPO, reference_data

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import InstanceGroup, Platform, ResourceShape, load_platform, platform_from_dict
from hyperpod_tenancy.policy import model as policy_model
from hyperpod_tenancy.policy._adapter import adapter, yaml_key
from hyperpod_tenancy.policy.json_schema import SCHEMA_PATH, render_schema

SCHEMA_FILE = REPO / SCHEMA_PATH


def schema_errors(data: object) -> list[str]:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]


def test_committed_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), "run `make schema`"


def test_schema_is_valid_and_accepts_the_reference_platform() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    assert schema_errors(reference_data()) == []


def test_reference_platform_points_editors_at_the_schema() -> None:
    first = REFERENCE.read_text(encoding="utf-8").splitlines()[0]
    assert first == f"# yaml-language-server: $schema=./{SCHEMA_PATH.as_posix()}"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("teams", 0, "compute", "borowLimit"), 60),
        (("cluster", "instanceGroups", 0, "count"), "16"),
        (("scheduling", "fairShare"), "yes"),
        (("teams", 0, "compute", "sharing"), "borrow"),
        (("cluster", "fsx", "storageCapacityGib"), 4800),
    ],
)
def test_schema_and_loader_refuse_the_same_structural_mistakes(
    path: tuple[str | int, ...], value: object
) -> None:
    data = reference_data()
    node: Any = data
    for token in path[:-1]:
        node = node[token]
    node[path[-1]] = value
    assert schema_errors(data), "the editor would not flag it"
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data)
    assert [i.code for i in info.value.issues] == ["HPT-SCHEMA"]


def test_schema_carries_the_model_documentation() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    group = schema["$defs"]["InstanceGroup"]
    assert group["properties"]["ebsVolumeGiB"]["default"] == 500
    assert "mounted at `/opt/sagemaker`" in group["properties"]["ebsVolumeGiB"]["description"]
    assert group["additionalProperties"] is False
    assert set(group["required"]) == {"name", "instanceType", "count"}


def test_yaml_keys_come_from_the_model_with_explicit_aliases() -> None:
    keys = {f.name: yaml_key(f) for f in dataclasses.fields(InstanceGroup)}
    assert keys["instance_type"] == "instanceType"  # camelCase of the field name
    assert keys["ebs_volume_gib"] == "ebsVolumeGiB"  # alias in the field's metadata
    assert (
        yaml_key(next(f for f in dataclasses.fields(ResourceShape) if f.name == "memory_gib")) == "memoryGiB"
    )
    # every key of the reference document is a field of the model
    for cls in (policy_model.Platform, policy_model.ClusterSpec, policy_model.Team):
        assert all(yaml_key(f) for f in dataclasses.fields(cls))


def test_python_field_names_are_not_yaml_keys() -> None:
    data = reference_data()
    data["teams"][0]["compute"]["borrow_limit"] = data["teams"][0]["compute"].pop("borrowLimit")
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data)
    [issue] = info.value.issues
    assert (issue.path, issue.fix) == (
        "teams[0].compute.borrow_limit",
        "remove or rename it; did you mean `borrowLimit`?",
    )


def test_empty_values_mean_not_set_and_unquoted_numbers_are_text() -> None:
    data = reference_data()
    data["account"] = 111122223333  # `account: 111122223333` without quotes
    data["cluster"]["instanceGroups"][0]["availabilityZone"] = None  # `availabilityZone:` with no value
    platform = platform_from_dict(data)
    assert platform.account == "111122223333"
    assert platform.cluster.instance_groups[0].availability_zone is None
    data["teams"][0]["name"] = None
    with pytest.raises(PolicyError) as info:
        platform_from_dict(data)
    assert [(i.path, i.message) for i in info.value.issues] == [
        ("teams[0].name", "required key is missing (or empty).")
    ]


def _dumped(platform: Platform) -> dict[str, Any]:
    dumped = adapter().dump_python(platform, by_alias=True, mode="json")
    assert isinstance(dumped, dict)
    return dumped


def test_every_field_round_trips_through_its_yaml_key() -> None:
    reference = load_platform(REFERENCE)
    group = dataclasses.replace(
        reference.cluster.instance_groups[0],
        resources=ResourceShape(accelerators=8, vcpus=192, memory_gib=2048),
        training_plan_arn="arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan",
        ebs_volume_gib=750,
    )
    changed = dataclasses.replace(
        reference,
        cluster=dataclasses.replace(
            reference.cluster,
            instance_groups=(group, *reference.cluster.instance_groups[1:]),
            fsx=dataclasses.replace(reference.cluster.fsx, storage_capacity_gib=2400),
        ),
    )
    data = _dumped(changed)
    assert data["cluster"]["instanceGroups"][0]["resources"]["memoryGiB"] == 2048
    assert data["cluster"]["fsx"]["storageCapacityGiB"] == 2400
    assert platform_from_dict(copy.deepcopy(data)) == changed

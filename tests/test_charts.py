"""The charts carry the renderers' objects unchanged, in the order cdk8s used to render them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import cdk8s
import pytest

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.kueue import cluster_objects, team_objects
from hyperpod_tenancy.k8s.operator_guards import operator_guard_policies
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.k8s.posix_identity import posix_identity_policies
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import (
    FsxVolume,
    checkpoint_scanner,
    fsx_directory_job,
    system_namespace,
    team_manifests,
)
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.policy import Platform

FSX = FsxVolume(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
)


@pytest.mark.parametrize("backend", ["reference_platform", "kueue_platform"])
def test_team_chart_round_trips_the_rendered_objects(backend: str, request: pytest.FixtureRequest) -> None:
    platform: Platform = request.getfixturevalue(backend)
    for team in platform.teams:
        chart = TeamChart(platform, team, fsx=FSX, service_account="team-workloads")
        expected = team_manifests(platform, team, fsx=FSX, service_account="team-workloads")
        if backend == "kueue_platform":
            expected = expected[:1] + team_objects(platform, team) + expected[1:]
        expected += fsx_directory_job(platform, team, fsx=FSX)
        expected += checkpoint_scanner(team)
        assert chart.to_json() == expected
        assert {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]} in [
            o["spec"] for o in chart.to_json() if o["kind"] == "NetworkPolicy"
        ]


@pytest.mark.parametrize("backend", ["reference_platform", "kueue_platform"])
def test_platform_chart_round_trips_the_rendered_objects(
    backend: str, request: pytest.FixtureRequest
) -> None:
    platform: Platform = request.getfixturevalue(backend)
    expected = [
        system_namespace(),
        *admission_policies(platform),
        *tenant_guard_policies(),
        *operator_guard_policies(),
        *posix_identity_policies(),
    ]
    if backend == "kueue_platform":
        expected += cluster_objects(platform)
    assert PlatformChart(platform).to_json() == expected


def _cdk8s_rendering(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How the charts rendered before the cdk8s round trip was dropped: one ``cdk8s.ApiObject`` per manifest
    (metadata as ``ApiObjectMetadata``, the rest as JSON patches) and ``Chart.to_json()``."""
    chart = cdk8s.Chart(cdk8s.App(), "oracle", disable_resource_name_hashes=True)
    for i, manifest in enumerate(manifests):
        meta: Mapping[str, Any] = manifest["metadata"]
        obj = cdk8s.ApiObject(
            chart,
            str(i),
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=cdk8s.ApiObjectMetadata(
                name=meta["name"],
                namespace=meta.get("namespace"),
                labels=meta.get("labels"),
                annotations=meta.get("annotations"),
            ),
        )
        for key, value in manifest.items():
            if key not in ("apiVersion", "kind", "metadata"):
                obj.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    return list(chart.to_json())


@pytest.mark.parametrize("backend", ["reference_platform", "kueue_platform"])
def test_charts_render_byte_for_byte_as_cdk8s_did(backend: str, request: pytest.FixtureRequest) -> None:
    """Key order included: the applied manifests (and deployed templates) did not change with the round trip."""
    platform: Platform = request.getfixturevalue(backend)
    charts: list[ManifestChart] = [PlatformChart(platform)]
    charts += [TeamChart(platform, t, fsx=FSX, service_account="team-workloads") for t in platform.teams]
    for chart in charts:
        ours = chart.to_json()
        assert json.dumps(ours) == json.dumps(_cdk8s_rendering(ours)), chart.id


def test_a_chart_hands_out_copies() -> None:
    chart = ManifestChart(
        "c", manifests=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}]
    )
    chart.to_json()[0]["metadata"]["name"] = "changed"
    assert chart.to_json()[0]["metadata"]["name"] == "a"
    assert chart.object_ids == {"Namespace-a"}


def test_manifest_chart_refuses_unnamed_and_duplicate_objects() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    with pytest.raises(TenancyError, match=r"a Namespace manifest has no metadata\.name"):
        ManifestChart("c", manifests=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {}}])
    with pytest.raises(TenancyError, match="two manifests are both Namespace-a"):
        ManifestChart("c", manifests=[ns, ns])


#: Kinds a tenant may write that run no work, so admission has nothing to queue.
NON_WORKLOAD_KINDS = {("", "configmaps"), ("", "secrets"), ("", "services")}


@pytest.mark.parametrize("backend", ["reference_platform", "kueue_platform"])
def test_every_workload_kind_a_tenant_can_write_is_checked_at_admission(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """RBAC and the admission policies list workload kinds separately: they must never drift apart, or a
    kind a tenant can create would bypass the queue, priority and checkpoint rules."""
    from hyperpod_tenancy.k8s.admission import WORKLOAD_RESOURCES

    platform: Platform = request.getfixturevalue(backend)
    checked = {(wr.group, wr.resource) for wr in WORKLOAD_RESOURCES}
    for team in platform.teams:
        for obj in team_manifests(platform, team, fsx=FSX):
            if obj["kind"] not in ("Role", "ClusterRole"):
                continue
            for rule in obj["rules"]:
                if not {"create", "update", "patch"} & set(rule["verbs"]):
                    continue
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        if "/" in resource:  # subresources: pods/exec, pods/portforward
                            continue
                        kind = (group, resource)
                        assert kind in checked or kind in NON_WORKLOAD_KINDS, f"{team.name}: {kind} unchecked"

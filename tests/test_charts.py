"""The cdk8s charts carry the renderers' objects unchanged (cdk8s must not drop `podSelector: {}` etc.)."""

from __future__ import annotations

import cdk8s
import pytest

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.kueue import cluster_objects, team_objects
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import FsxVolume, fsx_directory_job, system_namespace, team_manifests
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
        chart = TeamChart.build(platform, team, fsx=FSX, service_account="team-workloads")
        expected = team_manifests(platform, team, fsx=FSX, service_account="team-workloads")
        if backend == "kueue_platform":
            expected = expected[:1] + team_objects(platform, team) + expected[1:]
        expected += fsx_directory_job(platform, team, fsx=FSX)
        assert chart.to_json() == expected
        assert {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]} in [
            o["spec"] for o in chart.to_json() if o["kind"] == "NetworkPolicy"
        ]


@pytest.mark.parametrize("backend", ["reference_platform", "kueue_platform"])
def test_platform_chart_round_trips_the_rendered_objects(
    backend: str, request: pytest.FixtureRequest
) -> None:
    platform: Platform = request.getfixturevalue(backend)
    expected = [system_namespace(), *admission_policies(platform)]
    if backend == "kueue_platform":
        expected += cluster_objects(platform)
    assert PlatformChart.build(platform).to_json() == expected


def test_manifest_chart_refuses_unnamed_and_duplicate_objects() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    with pytest.raises(TenancyError, match=r"a Namespace manifest has no metadata\.name"):
        ManifestChart(cdk8s.App(), "c", manifests=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {}}])
    with pytest.raises(TenancyError, match="two manifests are both Namespace-a"):
        ManifestChart(cdk8s.App(), "c", manifests=[ns, ns])

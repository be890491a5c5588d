"""Shared fixtures: the platforms of ``tests/support/platforms.py``, synthesized once per session (with CDK's
built-in template validation, as ``cdk synth`` runs it); a moto server and TLS certificates per module for the
webhook tests; the real control plane, once per test process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import platforms
import pytest
from aws_custom_resource import response_server
from cluster_platform import ClusterPlatforms, OnCluster
from control_plane import DEPLOYED_KUBECONFIG, Components, ControlPlane, kueue_configuration
from kube_client import KubeClient, from_kubeconfig
from synth import Synth, synthesize
from webhook_server import Certificates, certificates, serial_moto_server

from hyperpod_tenancy.policy import Platform


@pytest.fixture(scope="module")
def cfn_response_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """The loopback HTTPS server standing for CloudFormation's response URL (``aws_custom_resource.run_handler``)."""
    with response_server(tmp_path_factory.mktemp("response-pki")) as answered:
        yield answered


@pytest.fixture(scope="session")
def reference_platform() -> Platform:
    """The reference platform.yaml (Task Governance backend)."""
    return platforms.reference_platform()


@pytest.fixture(scope="session")
def reference(reference_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform, synthesized with the Task Governance backend."""
    return synthesize(reference_platform, tmp_path_factory.mktemp("reference"), validate=True)


@pytest.fixture(scope="session")
def kueue_platform() -> Platform:
    """The reference platform switched to the self-managed Kueue backend (one line of platform.yaml)."""
    return platforms.kueue_platform()


@pytest.fixture(scope="session")
def kueue_reference(kueue_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform, synthesized with the Kueue backend."""
    return synthesize(kueue_platform, tmp_path_factory.mktemp("kueue"), validate=True)


@pytest.fixture(scope="session")
def partitions_example(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``examples/partitions-and-topology`` (a partitioned p4de group, a topology-aware p5 group), synthesized."""
    return synthesize(
        platforms.example("partitions-and-topology"), tmp_path_factory.mktemp("partitions"), validate=True
    )


@pytest.fixture(scope="session")
def borrowing_example(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``examples/borrowing-range`` (a 1,000 % borrower, absolute borrow limits), synthesized."""
    return synthesize(
        platforms.example("borrowing-range"), tmp_path_factory.mktemp("borrowing"), validate=True
    )


@pytest.fixture(scope="session")
def identity_center_example(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``examples/identity-center-account`` (Identity Center in its own account), synthesized."""
    return synthesize(
        platforms.example("identity-center-account"),
        tmp_path_factory.mktemp("identity-center"),
        validate=True,
    )


@pytest.fixture(scope="session")
def team_accounts_example(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``examples/team-accounts`` (a team in an account of its own), synthesized."""
    return synthesize(
        platforms.example("team-accounts"), tmp_path_factory.mktemp("team-accounts"), validate=True
    )


@pytest.fixture(scope="session")
def four_teams(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform with a fourth team (``platforms.four_team_platform``), synthesized."""
    return synthesize(platforms.four_team_platform(), tmp_path_factory.mktemp("four"), validate=True)


@pytest.fixture(scope="session")
def kms_reference(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform with a created platform key (``platforms.kms_platform``), synthesized."""
    return synthesize(platforms.kms_platform(), tmp_path_factory.mktemp("kms"), validate=True)


@pytest.fixture(scope="session")
def kms_arn_reference(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform on Kueue with an imported key (``platforms.kms_arn_platform``), synthesized."""
    return synthesize(platforms.kms_arn_platform(), tmp_path_factory.mktemp("kms-arn"), validate=True)


@pytest.fixture(scope="module", params=["reference", "kueue_reference"])
def synth(request: pytest.FixtureRequest) -> Synth:
    """The synthesized reference platform, once on each fairness backend (Task Governance, Kueue)."""
    value: Synth = request.getfixturevalue(request.param)
    return value


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """A moto server (DynamoDB, SSM, ...) of the module's own, its endpoint URL."""
    with serial_moto_server() as url:
        yield url


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA and a server certificate for 127.0.0.1 of the module's own (the webhook's TLS)."""
    return certificates(tmp_path_factory.mktemp("tls"))


# ------------------------------------------------------------------------------------ the real control plane


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue v0.19.2 and KWOK on loopback, started
    once per test process (``tests/support/control_plane.py``) and stopped at its end.

    Kueue runs with the manager configuration the ``kueue`` backend renders for the reference platform. A test
    that cannot get its control plane fails: it never skips.
    """
    platform = platforms.kueue_platform()
    with ControlPlane(
        tmp_path_factory.mktemp("control-plane"),
        Components.from_environment(),
        kueue_configuration=kueue_configuration(platform),
        service_cidr=platform.cluster.service_cidr,
    ) as plane:
        yield plane


@pytest.fixture(scope="session")
def cluster_platforms(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterPlatforms]:
    """Platforms applied to the session's control plane, one at a time and kept for every module that asks for
    the same one (``tests/support/cluster_platform.py``)."""
    platforms_on = ClusterPlatforms(control_plane, tmp_path_factory.mktemp("platforms"))
    try:
        yield platforms_on
    finally:
        platforms_on.close()


@pytest.fixture(scope="module")
def kueue_on_cluster(cluster_platforms: ClusterPlatforms, kueue_reference: Synth) -> OnCluster:
    """The Kueue-backend reference platform on the control plane, its webhook serving, its nodes Ready."""
    return cluster_platforms.on("reference-kueue", kueue_reference)


@pytest.fixture(scope="session")
def cluster_api(request: pytest.FixtureRequest) -> KubeClient:
    """An administrator's client for the non-destructive checks (server-side dry run, SubjectAccessReview).

    The local control plane, or a deployed cluster where ``HYPERPOD_TENANCY_KUBECONFIG`` names a kubeconfig
    (docs/testing.md, "Against a deployed cluster").
    """
    kubeconfig = os.environ.get(DEPLOYED_KUBECONFIG)
    if kubeconfig:
        return from_kubeconfig(Path(kubeconfig))
    plane: ControlPlane = request.getfixturevalue("control_plane")
    return plane.admin


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test that used the control plane gets the tail of every component's log in its report."""
    report = yield
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if report.failed and isinstance(plane, ControlPlane):
        report.sections.append(("control plane logs", plane.log_tail()))
    return report

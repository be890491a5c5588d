"""Shared fixtures: the platforms of ``tests/support/platforms.py``, synthesized once per session (with CDK's
built-in template validation, as ``cdk synth`` runs it); a moto server and TLS certificates per module for the
webhook tests."""

from __future__ import annotations

from collections.abc import Iterator

import platforms
import pytest
from synth import Synth, synthesize
from webhook_server import Certificates, certificates, serial_moto_server

from hyperpod_tenancy.policy import Platform


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

"""What the platform creates stays readable through ``kueue.x-k8s.io/v1beta1``, the version the HyperPod CLI reads.

The CLI (sagemaker-hyperpod 3.12.0) reads Kueue objects at ``v1beta1`` only
(``sagemaker/hyperpod/cli/constants/kueue_constants.py`` ``KUEUE_CUSTOM_OBJECT_VERSION``;
``cli/clients/kubernetes_client.py``: WorkloadPriorityClasses for ``hyp create``'s priority check
(``cli/validators/job_validator.py``), ClusterQueues for ``hyp list-cluster`` (``cli/commands/cluster.py``
``_get_cluster_queue_nominal_quota``/``_get_cluster_queue_quota_usage``), Workloads by label). The ``kueue``
backend renders ``v1beta2`` (:data:`hyperpod_tenancy.k8s.kueue.KUEUE_API_VERSION`). Kueue 0.19.2, what Task
Governance ships and the chart the backend installs, serves both (CRDs in ``KUEUE_CRDS_DIR``, copied from
KQ@v0.19.2 ``config/components/crd/bases/``) and converts between them with its conversion webhook
(``apis/kueue/v1beta1/clusterqueue_conversion.go``: ``cohortName`` is ``cohort`` in v1beta1; research/kueue.md
section 1.2). Task Governance's own objects are the add-on's; this checks the ones the platform writes.
"""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import pytest
from hyperpod_sdk import sdk_python
from kueue_crd_validator import crds_dir, validator_module
from synth import Synth

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy.fairness import HYP_CLI_KUEUE_API_VERSION

V1BETA1 = HYP_CLI_KUEUE_API_VERSION
#: v1beta2 field -> v1beta1 field, per kind, as the conversion webhook maps them (KQ@v0.19.2
#: apis/kueue/v1beta1/*_conversion.go); only renames of fields the platform renders.
RENAMES: dict[str, dict[str, str]] = {"ClusterQueue": {"cohortName": "cohort"}}
#: Fields the CLI reads, as paths in the v1beta1 schema ("[]" = list items).
CLI_READS: dict[str, tuple[str, ...]] = {
    "ClusterQueue": (
        "spec.resourceGroups[].flavors[].name",
        "spec.resourceGroups[].flavors[].resources[].name",
        "spec.resourceGroups[].flavors[].resources[].nominalQuota",
        "status.flavorsUsage[].name",
        "status.flavorsUsage[].resources[].name",
        "status.flavorsUsage[].resources[].total",
    ),
    "WorkloadPriorityClass": ("value",),
}


def _as_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1BETA1
    for new, old in RENAMES.get(out["kind"], {}).items():
        if new in out.get("spec", {}):
            out["spec"][old] = out["spec"].pop(new)
    return out


@pytest.fixture(scope="module")
def crds() -> dict[tuple[str, str, str], Any]:
    """Every served version of the Kueue 0.19.2 CRDs."""
    return validator_module().load_crds(str(crds_dir()))


def _rendered(synth: Synth) -> list[dict[str, Any]]:
    return [o for o in synth.manifests() if o["apiVersion"] == kueue.KUEUE_API_VERSION]


def test_kueue_0_19_serves_both_versions_of_every_kind_the_platform_renders(
    kueue_reference: Synth, crds: dict
) -> None:
    kinds = {o["kind"] for o in _rendered(kueue_reference)}
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort"} <= kinds
    for kind in kinds:
        assert ("kueue.x-k8s.io", "v1beta2", kind) in crds
        assert crds[("kueue.x-k8s.io", "v1beta1", kind)].deprecated  # served, deprecated


def test_every_object_the_kueue_backend_renders_is_valid_v1beta1_after_conversion(
    kueue_reference: Synth, crds: dict
) -> None:
    objects = [_as_v1beta1(o) for o in _rendered(kueue_reference)]
    issues = validator_module().validate_manifests(objects, crds, V1BETA1)
    errors = [str(i) for i in issues if i.level == "ERROR"]
    assert errors == []
    # the only warnings are v1beta1's deprecation, one per object
    assert {i.message for i in issues if i.level == "WARNING"} <= {
        crds[("kueue.x-k8s.io", "v1beta1", o["kind"])].deprecation_warning for o in objects
    }


def test_a_v1beta2_field_without_its_v1beta1_name_is_caught(kueue_reference: Synth, crds: dict) -> None:
    # the check above is not vacuous: without the rename the v1beta1 schema rejects cohortName
    (cq, *_) = [o for o in _rendered(kueue_reference) if o["kind"] == "ClusterQueue"]
    raw = {**copy.deepcopy(cq), "apiVersion": V1BETA1}
    issues = validator_module().validate_manifests([raw], crds, V1BETA1)
    assert any(i.level == "ERROR" and "cohortName" in i.message for i in issues), issues


def _schema_has(schema: dict[str, Any], path: str) -> bool:
    node = schema
    for part in path.split("."):
        items = part.endswith("[]")
        node = node.get("properties", {}).get(part.removesuffix("[]"))
        if node is None:
            return False
        if items:
            node = node.get("items", {})
    return True


@pytest.mark.parametrize("kind", sorted(CLI_READS))
def test_the_fields_the_cli_reads_exist_in_v1beta1(crds: dict, kind: str) -> None:
    schema = crds[("kueue.x-k8s.io", "v1beta1", kind)].schema
    missing = [p for p in CLI_READS[kind] if not _schema_has(schema, p)]
    assert missing == []
    assert not _schema_has(schema, "spec.resourceGroups[].flavors[].resources[].noSuchField")


def test_the_upgrade_warning_names_the_version_the_installed_cli_reads(crds: dict) -> None:
    """``validate --baseline`` tells an operator upgrading Kueue which version ``hyp`` needs: the real CLI's."""
    code = (
        "from sagemaker.hyperpod.cli.constants import kueue_constants as k; "
        "print(k.KUEUE_CUSTOM_OBJECT_GROUP + '/' + k.KUEUE_CUSTOM_OBJECT_VERSION)"
    )
    read = subprocess.run([str(sdk_python()), "-c", code], capture_output=True, text=True, check=True)
    assert read.stdout.strip() == HYP_CLI_KUEUE_API_VERSION
    group, version = HYP_CLI_KUEUE_API_VERSION.split("/")
    for kind in ("Workload", "ClusterQueue", "WorkloadPriorityClass"):
        assert (group, version, kind) in crds, f"Kueue 0.19.2 no longer serves {kind} at {version}"

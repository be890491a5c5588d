"""The per-team Kubernetes objects: schema validity (kubernetes-validate, strict), shape and the FSx Job."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import platforms
import pytest
from platforms import FSX

from hyperpod_tenancy.k8s.labels import TEAM_LABEL, namespace_labels
from hyperpod_tenancy.k8s.team_manifests import (
    BUSYBOX_IMAGE,
    DEFAULT_SERVICE_ACCOUNT,
    FSX_CLAIM_NAME,
    IMDS_CIDR,
    OBSERVABILITY_NAMESPACE,
    SYSTEM_NAMESPACE,
    FsxVolume,
    fsx_directory_job,
    namespace_label_patch,
    system_namespace,
    team_manifests,
)
from hyperpod_tenancy.policy import FairnessBackend, Platform, Team, names

PLATFORMS = platforms.TENANT_PLATFORMS
TOKENS = FsxVolume(
    file_system_id="${Token[TOKEN.101]}", dns_name="${Token[TOKEN.102]}", mount_name="${Token[TOKEN.103]}"
)
# capabilities Pod Security "baseline" lets a container add
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(PLATFORMS))
def platform(request: pytest.FixtureRequest) -> Platform:
    return PLATFORMS[request.param]()


def _k8s_version(platform: Platform) -> str:
    return f"{platform.cluster.kubernetes_version}.0"


def _by(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = _by(objects, kind, name)
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


# --- schema ---------------------------------------------------------------------------------------------


def test_every_object_is_valid_kubernetes_strict(platform: Platform) -> None:
    version = _k8s_version(platform)
    assert version == "1.33.0"
    objects = [*platforms.all_objects(platform), system_namespace()]
    team = platform.teams[0]
    objects += team_manifests(
        platform, team, fsx=TOKENS, service_account="trainer", service_cidr="172.20.0.0/16"
    )
    objects += fsx_directory_job(platform, team, fsx=TOKENS)
    kinds = set()
    for obj in objects:
        # raises ValidationError on any schema problem and SchemaNotFoundError on an unknown kind/apiVersion
        kubernetes_validate.validate(obj, version, strict=True)
        kinds.add(obj["kind"])
    expected = {
        "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy",
        "LimitRange", "ResourceQuota", "PersistentVolume", "PersistentVolumeClaim", "Job", "Namespace",
    }  # fmt: skip
    assert kinds == expected


def test_strict_validation_catches_a_typo() -> None:
    # the check above is not vacuous: a misspelt field fails strict validation
    platform = platforms.reference_platform()
    policy = _one(team_manifests(platform, platform.teams[0], fsx=FSX), "NetworkPolicy", "default-deny")
    policy["spec"]["policyType"] = policy["spec"].pop("policyTypes")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(policy, "1.33.0", strict=True)


# --- namespace ------------------------------------------------------------------------------------------


def test_namespace_only_with_the_kueue_backend(platform: Platform) -> None:
    for team in platform.teams:
        objects = team_manifests(platform, team, fsx=FSX)
        namespaces = _by(objects, "Namespace")
        if platform.fairness_backend is FairnessBackend.KUEUE:
            assert objects[0] is namespaces[0], "the namespace is applied first"
            ns = namespaces[0]
            assert ns["metadata"]["name"] == f"hyperpod-ns-{team.name}"
            assert expected_labels(team.name).items() <= ns["metadata"]["labels"].items()
        else:
            assert namespaces == [], "Task Governance creates the namespace"


#: The label contract of the reference teams, written out by hand from platform.yaml and docs/constructs.md (namespaces):
#: every platform class is listed (allowed or denied), borrowing follows ``sharing``, Pod Security enforces
#: the team's level and warns/audits at ``restricted``.
PSA = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}
REFERENCE_LABELS = {
    team: {
        "hyperpod-tenancy.io/tenant": "true",
        "hyperpod-tenancy.io/team": team,
        "hyperpod-tenancy.io/posix-gid": gid,
        **PSA,
        "priority.hyperpod-tenancy.io/inference-priority": inference,
        "priority.hyperpod-tenancy.io/training-priority": other,
        "priority.hyperpod-tenancy.io/experimentation-priority": other,
        "hyperpod-tenancy.io/borrows": borrows,
        "hyperpod-tenancy.io/preempts-own-work": "true",  # preemptTeamTasks: LowerPriority, the default
        "accelerator.hyperpod-tenancy.io/gpu": "allowed",  # every team holds or may borrow nvidia.com/gpu
    }
    for team, inference, other, borrows, gid in (
        ("research", "denied", "allowed", "true", "20001"),  # lend-and-borrow, training + experimentation
        ("vision", "denied", "allowed", "true", "20002"),  # lend-and-borrow, training + experimentation
        ("inference", "allowed", "denied", "false", "20003"),  # lend, inference only
    )
}


def expected_labels(team: str) -> dict[str, str]:
    return REFERENCE_LABELS[team]


def test_label_patch_adds_the_label_contract() -> None:
    platform = platforms.reference_platform()
    assert [t.name for t in platform.teams] == list(REFERENCE_LABELS)
    for team in platform.teams:
        patch = namespace_label_patch(platform, team)
        assert patch == {"metadata": {"labels": expected_labels(team.name)}}, team.name
        assert patch["metadata"]["labels"][TEAM_LABEL] == team.name
        # the product's one home of the contract says the same
        assert namespace_labels(platform, team) == expected_labels(team.name)


def test_adding_a_team_changes_no_other_teams_objects() -> None:
    before, after = platforms.reference_platform(), platforms.four_team_platform()
    assert [t.name for t in after.teams] == [*(t.name for t in before.teams), "speech"]
    for team in before.teams:
        assert team_manifests(after, after.team(team.name), fsx=FSX) == team_manifests(before, team, fsx=FSX)
        assert fsx_directory_job(after, after.team(team.name), fsx=FSX) == fsx_directory_job(
            before, team, fsx=FSX
        )


# --- shape ----------------------------------------------------------------------------------------------

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume"}


def test_objects_stay_in_their_namespace_and_are_labelled(platform: Platform) -> None:
    for team in platform.teams:
        for obj in team_manifests(platform, team, fsx=FSX):
            meta = obj["metadata"]
            if obj["kind"] in CLUSTER_SCOPED:
                assert "namespace" not in meta
            else:
                assert meta["namespace"] == names.namespace(team.name), (obj["kind"], meta["name"])
            assert meta["labels"][TEAM_LABEL] == team.name
            assert meta["labels"]["app.kubernetes.io/managed-by"] == "hyperpod-tenancy"
        for obj in fsx_directory_job(platform, team, fsx=FSX):
            assert obj["metadata"].get("namespace", SYSTEM_NAMESPACE) == SYSTEM_NAMESPACE


def test_no_two_objects_collide_across_teams(platform: Platform) -> None:
    objects = [*platforms.all_objects(platform), system_namespace()]
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
    assert len(keys) == len(set(keys))
    handles = [pv["spec"]["csi"]["volumeHandle"] for pv in _by(objects, "PersistentVolume")]
    assert len(handles) == 2 * len(platform.teams)
    assert len(handles) == len(set(handles)), "kubelet tells CSI volumes apart by driver and volumeHandle"


def test_service_account(platform: Platform) -> None:
    team = platform.teams[0]
    ns = names.namespace(team.name)
    default = _one(team_manifests(platform, team, fsx=FSX), "ServiceAccount")
    assert default["metadata"] == {**default["metadata"], "name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns}
    assert default["automountServiceAccountToken"] is False
    custom = _one(team_manifests(platform, team, fsx=FSX, service_account="trainer"), "ServiceAccount")
    assert custom["metadata"]["name"] == "trainer"


def test_network_policies(platform: Platform) -> None:
    team = platform.teams[0]
    policies = _by(team_manifests(platform, team, fsx=FSX), "NetworkPolicy")
    by_name = {p["metadata"]["name"]: p["spec"] for p in policies}
    assert set(by_name) == {
        "default-deny",
        "allow-dns",
        "allow-same-namespace",
        "allow-internet-egress",
        "allow-observability-scrape",  # the reference platforms run the observability add-on
    }
    assert by_name["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert all(spec["podSelector"] == {} for spec in by_name.values()), "every policy covers every pod"
    collector = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": OBSERVABILITY_NAMESPACE}}
    }
    assert by_name["allow-observability-scrape"]["ingress"] == [{"from": [collector]}]
    ingress_from = {n for n, s in by_name.items() if "ingress" in s}
    assert ingress_from == {"allow-same-namespace", "allow-observability-scrape"}
    block = by_name["allow-internet-egress"]["egress"][0]["to"][0]["ipBlock"]
    # the policy's Service CIDR is excluded by default (issue 8, class 4), an explicit one replaces it
    cluster = platform.cluster
    assert block == {"cidr": "0.0.0.0/0", "except": [cluster.vpc_cidr, IMDS_CIDR, cluster.service_cidr]}
    with_svc = _by(team_manifests(platform, team, fsx=FSX, service_cidr="10.100.0.0/16"), "NetworkPolicy")
    block = next(p for p in with_svc if p["metadata"]["name"] == "allow-internet-egress")["spec"]["egress"][0]
    assert block["to"][0]["ipBlock"]["except"] == [cluster.vpc_cidr, IMDS_CIDR, "10.100.0.0/16"]


def _quantity(value: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def test_limit_range_defaults(platform: Platform) -> None:
    lr = _one(team_manifests(platform, platform.teams[0], fsx=FSX), "LimitRange")
    (limit,) = lr["spec"]["limits"]
    assert limit["type"] == "Container"
    assert set(limit["defaultRequest"]) == {"cpu", "memory"}, "no GPU or other accelerator defaults"
    for resource in ("cpu", "memory"):
        assert 0 < _quantity(limit["defaultRequest"][resource]) <= _quantity("1Gi")
    # no default limit: GPU containers set only nvidia.com/gpu, and a default memory limit would apply to
    # them (https://kubernetes.io/docs/concepts/policy/limit-range/ "default" applies to containers
    # without a limit) and OOM-kill them; tests/test_hostile_2_quota_backstop.py shows the effect
    assert "default" not in limit


# --- FSx ------------------------------------------------------------------------------------------------


def test_team_volume_mounts_the_team_subdirectory_only_for_the_team(platform: Platform) -> None:
    for team in platform.teams:
        objects = team_manifests(platform, team, fsx=FSX)
        pv = _one(objects, "PersistentVolume")
        pvc = _one(objects, "PersistentVolumeClaim")
        ns = names.namespace(team.name)
        assert pv["metadata"]["name"] == f"hyperpod-tenancy-fsx-{team.name}"
        spec = pv["spec"]
        assert spec["csi"] == {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": f"{FSX.file_system_id}::{team.name}",
            "volumeAttributes": {"dnsname": FSX.dns_name, "mountname": f"{FSX.mount_name}/{team.name}"},
        }
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["accessModes"] == ["ReadWriteMany"]
        assert spec["storageClassName"] == ""
        assert spec["claimRef"]["namespace"] == ns, "pre-bound: no other namespace can claim it"
        assert spec["claimRef"]["name"] == FSX_CLAIM_NAME == pvc["metadata"]["name"]
        assert pvc["metadata"]["namespace"] == ns
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        assert pvc["spec"]["storageClassName"] == ""
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
        assert _quantity(pvc["spec"]["resources"]["requests"]["storage"]) <= _quantity(
            spec["capacity"]["storage"]
        )


def test_tokens_are_concatenated_never_parsed() -> None:
    platform = platforms.reference_platform()
    team = platform.teams[0]
    pv = _one(team_manifests(platform, team, fsx=TOKENS), "PersistentVolume")
    assert pv["spec"]["csi"]["volumeHandle"] == f"{TOKENS.file_system_id}::{team.name}"
    assert pv["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": TOKENS.dns_name,
        "mountname": f"{TOKENS.mount_name}/{team.name}",
    }
    root_pv = _one(fsx_directory_job(platform, team, fsx=TOKENS), "PersistentVolume")
    assert root_pv["spec"]["csi"]["volumeAttributes"]["mountname"] == TOKENS.mount_name


def _job_parts(platform: Platform, team: Team) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    objects = fsx_directory_job(platform, team, fsx=FSX)
    assert [o["kind"] for o in objects] == ["PersistentVolume", "PersistentVolumeClaim", "Job"]
    pv, pvc, job = objects
    return pv, pvc, job


def test_directory_job_shape(platform: Platform) -> None:
    for team in platform.teams:
        pv, pvc, job = _job_parts(platform, team)
        assert pv["spec"]["csi"]["volumeAttributes"]["mountname"] == FSX.mount_name, "the file-system root"
        assert pv["spec"]["claimRef"]["namespace"] == SYSTEM_NAMESPACE
        assert pv["spec"]["claimRef"]["name"] == pvc["metadata"]["name"] == f"fsx-root-{team.name}"
        assert pv["metadata"]["name"] == f"hyperpod-tenancy-fsx-root-{team.name}"
        assert job["metadata"]["name"] == f"fsx-dir-{team.name}"
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        spec = job["spec"]
        assert spec["backoffLimit"] > 0
        assert spec["ttlSecondsAfterFinished"] > 0
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        assert pod["automountServiceAccountToken"] is False
        (container,) = pod["containers"]
        image, tag = container["image"].rsplit(":", 1)
        assert container["image"] == BUSYBOX_IMAGE
        assert image == "public.ecr.aws/docker/library/busybox"
        assert tag not in {"", "latest"}, "pinned by tag"
        ctx = container["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"]["drop"] == ["ALL"]
        assert set(ctx["capabilities"]["add"]) <= BASELINE_CAPABILITIES, "admitted by Pod Security baseline"
        assert "privileged" not in ctx
        (volume,) = pod["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
        assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/fsx"}]
        script = container["command"][-1]
        gid = team.identity.posix_gid
        assert f"ensure_dir /fsx 0 0 755 set\nensure_dir /fsx/{team.name} 0 {gid} 3770 set" in script
        assert f"ensure_dir /fsx/{team.name}/home 0 {gid} 3770 set" in script


def test_system_namespace_enforces_baseline() -> None:
    ns = system_namespace()
    assert ns["metadata"]["name"] == SYSTEM_NAMESPACE
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def _sh(script: str) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["sh", "-c", script]
    elif fakeroot := shutil.which("fakeroot"):
        argv = [fakeroot, "sh", "-c", script]
    else:
        pytest.fail("running the FSx directory script needs root or `fakeroot` (apt-get install fakeroot)")
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_directory_script_creates_the_directory_idempotently(tmp_path: Path) -> None:
    platform = platforms.reference_platform()
    team = platform.teams[0]
    _, _, job = _job_parts(platform, team)
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    local = script.replace("ensure_dir /fsx/", f"ensure_dir {tmp_path}/").replace(
        "ensure_dir /fsx ", f"ensure_dir {tmp_path} "
    )
    assert local != script
    tmp_path.chmod(0o755)
    target = tmp_path / team.name
    gid = team.identity.posix_gid
    for attempt in (1, 2):  # a second run (a retried or re-applied Job) must succeed and change nothing
        proc = _sh(local)
        assert proc.returncode == 0, (attempt, proc.stderr)
        assert proc.stdout.splitlines() == [
            f"{tmp_path} 0:0 755",
            f"{target} 0:{gid} 3770",
            f"{target}/home 0:{gid} 3770",
            f"{target}/models 0:{gid} 3770",
        ]
        if os.geteuid() == 0:
            st = target.stat()
            assert (st.st_uid, st.st_gid) == (0, gid)
            assert stat.S_IMODE(st.st_mode) == 0o3770
            home = (target / "home").stat()
            assert (home.st_uid, home.st_gid, stat.S_IMODE(home.st_mode)) == (0, gid, 0o3770)
            models = (target / "models").stat()
            assert (models.st_uid, models.st_gid, stat.S_IMODE(models.st_mode)) == (0, gid, 0o3770)

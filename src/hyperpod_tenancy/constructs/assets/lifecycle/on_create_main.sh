#!/bin/bash
# Runs once on every new HyperPod node (called by on_create.sh). Idempotent: safe to run twice.
#
# 1. Moves containerd and kubelet state onto the secondary EBS volume HyperPod mounts at /opt/sagemaker,
#    so large training images do not fill the root volume. Where containerd reads its configuration
#    depends on the AMI family, as in the reference lifecycle script
#    (awslabs/awsome-distributed-ai 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/
#    on_create_main.sh, last changed in commit 5fcd3ced18c92577d26e221ffd683ceee480e4c0):
#    - Amazon Linux 2 (VERSION_ID 2): the EKS bootstrap renders /etc/containerd/config.toml from
#      /etc/eks/containerd/containerd-config.toml, so the template is what must carry the new `root`.
#    - Amazon Linux 2023 (VERSION_ID 2023): /etc/containerd/config.toml is (re)written by the node
#      bootstrap, so containerd is pointed at a config of its own on the data volume by a systemd drop-in.
#      Unlike the reference, that config is the node's current one with `root` changed, not a fixed copy,
#      so it keeps whatever runtimes and sandbox image the AMI configured.
# 2. Stops NVIDIA_VISIBLE_DEVICES from exposing GPUs to unprivileged containers: the NVIDIA container
#    runtime then only injects the GPUs the device plugin allocated, passed as volume mounts (the HyperPod
#    chart's device plugin runs with deviceListStrategy=volume-mounts). Keys from the NVIDIA Container
#    Toolkit config (NVIDIA/nvidia-container-toolkit api/config/v1/config.go; runtime behaviour in
#    internal/config/image/cuda_image.go VisibleDevices) and the device plugin README (NVIDIA/k8s-device-plugin
#    v0.16.1, DEVICE_LIST_STRATEGY).
#
# HPT_NODE_ROOT (default /) prefixes every path the script reads or writes; tests run it against a fake root.
# HPT_MOUNT_WAIT_SECONDS (default 60) bounds the wait for the data volume, as the reference does.
set -euo pipefail

ROOT="${HPT_NODE_ROOT:-/}"
ROOT="${ROOT%/}"
DATA=/opt/sagemaker
CONTAINERD_ROOT="$DATA/containerd/data-root"
CONTAINERD_CONFIG="$DATA/containerd/config.toml"
NVIDIA_RUNTIME_CONFIG=/etc/nvidia-container-runtime/config.toml

log() {
  echo "[on_create_main] $*"
}

# The path on this machine of a path on the node.
at() {
  printf '%s%s' "$ROOT" "$1"
}

# Set a top-level TOML key (before the first [table]): drop any earlier, possibly commented-out, top-level
# definition of it and write `key = value` just before the first table. Rewrites the file in place (same
# inode, owner and mode); running it again gives the same file.
set_toplevel_key() {
  local file="$1" key="$2" value="$3" tmp
  tmp="$(mktemp)"
  awk -v key="$key" -v line="$key = $value" '
    !in_table && /^[[:space:]]*\[/ { in_table = 1; print line; done = 1 }
    !in_table && $0 ~ ("^[#[:space:]]*" key "[[:space:]]*=") { next }
    { print }
    END { if (!done) print line }
  ' "$file" >"$tmp"
  cat "$tmp" >"$file"
  rm -f "$tmp"
}

os_version() {
  local release
  release="$(at /etc/os-release)"
  if [ -f "$release" ]; then
    # shellcheck disable=SC1090  # the node's os-release, read in a subshell
    (. "$release" && echo "${VERSION_ID:-}")
  fi
}

data_volume_mounted() {
  local waited=0 limit="${HPT_MOUNT_WAIT_SECONDS:-60}"
  until mountpoint -q "$(at "$DATA")"; do
    if [ "$waited" -ge "$limit" ]; then
      return 1
    fi
    log "waiting for $DATA to be mounted"
    sleep 5
    waited=$((waited + 5))
  done
}

containerd_active=false
stop_containerd() {
  if systemctl is-active --quiet containerd; then
    containerd_active=true
    systemctl stop containerd
  fi
}

start_containerd() {
  systemctl daemon-reload
  if [ "$containerd_active" = true ]; then
    systemctl start containerd
  fi
}

copy_containerd_state() {
  if [ ! -d "$(at "$CONTAINERD_ROOT")" ]; then
    mkdir -p "$(at "$CONTAINERD_ROOT")"
    if [ -d "$(at /var/lib/containerd)" ]; then
      # the AMI pre-loads images (pause) there; keep them
      cp -a "$(at /var/lib/containerd)/." "$(at "$CONTAINERD_ROOT")/"
    fi
  fi
}

relocate_containerd_al2() {
  local template
  template="$(at /etc/eks/containerd/containerd-config.toml)"
  if [ ! -f "$template" ]; then
    log "Amazon Linux 2 without /etc/eks/containerd/containerd-config.toml; keeping the default containerd root"
    return 0
  fi
  stop_containerd
  copy_containerd_state
  set_toplevel_key "$template" root "\"$CONTAINERD_ROOT\""
  start_containerd
  log "containerd root is $CONTAINERD_ROOT (via /etc/eks/containerd/containerd-config.toml)"
}

relocate_containerd_al2023() {
  local current dropin
  current="$(at /etc/containerd/config.toml)"
  if [ ! -f "$current" ]; then
    log "Amazon Linux 2023 without /etc/containerd/config.toml; keeping the default containerd root"
    return 0
  fi
  stop_containerd
  copy_containerd_state
  if [ ! -f "$(at "$CONTAINERD_CONFIG")" ]; then
    cp "$current" "$(at "$CONTAINERD_CONFIG")"
  fi
  set_toplevel_key "$(at "$CONTAINERD_CONFIG")" root "\"$CONTAINERD_ROOT\""
  dropin="$(at /etc/systemd/system/containerd.service.d)"
  mkdir -p "$dropin"
  cat >"$dropin/10-hyperpod-data-root.conf" <<EOF
[Service]
ExecStart=
ExecStart=/usr/bin/containerd --config $CONTAINERD_CONFIG
EOF
  start_containerd
  log "containerd root is $CONTAINERD_ROOT (config $CONTAINERD_CONFIG)"
}

relocate_kubelet() {
  local kubelet
  kubelet="$(at /var/lib/kubelet)"
  mkdir -p "$(at "$DATA/kubelet")"
  if [ -d "$kubelet" ] && [ ! -L "$kubelet" ]; then
    cp -a "$kubelet/." "$(at "$DATA/kubelet")/"
    rm -rf "$kubelet"
  fi
  if [ ! -e "$kubelet" ] && [ ! -L "$kubelet" ]; then
    mkdir -p "$(dirname "$kubelet")"
    ln -s "$DATA/kubelet" "$kubelet"
  fi
}

relocate_data_roots() {
  if ! data_volume_mounted; then
    log "$DATA is not a mount point; keeping the default data roots"
    return 0
  fi
  mkdir -p "$(at "$DATA/containerd")"
  local version
  version="$(os_version)"
  case "$version" in
    2) relocate_containerd_al2 ;;
    2023) relocate_containerd_al2023 ;;
    *) log "OS VERSION_ID '$version' is neither Amazon Linux 2 nor 2023; keeping the default containerd root" ;;
  esac
  relocate_kubelet
  log "kubelet state on $DATA/kubelet"
}

harden_nvidia_runtime() {
  local config
  config="$(at "$NVIDIA_RUNTIME_CONFIG")"
  if [ ! -f "$config" ]; then
    log "no $NVIDIA_RUNTIME_CONFIG (not a GPU node); nothing to harden"
    return 0
  fi
  set_toplevel_key "$config" accept-nvidia-visible-devices-envvar-when-unprivileged false
  set_toplevel_key "$config" accept-nvidia-visible-devices-as-volume-mounts true
  log "NVIDIA runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers"
}

# The NVIDIA runtime is executed per container and reads its config each time; the containerd restart in
# relocate_data_roots (when containerd was running) comes after both changes.
harden_nvidia_runtime
relocate_data_roots

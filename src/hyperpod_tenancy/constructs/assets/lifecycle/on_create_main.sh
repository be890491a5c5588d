#!/bin/bash
# Move containerd and kubelet state onto the secondary EBS volume HyperPod mounts at /opt/sagemaker,
# so large training images do not fill the root volume. Idempotent: safe to run twice.
set -euo pipefail
DATA=/opt/sagemaker
if ! mountpoint -q "$DATA"; then
  echo "[on_create_main] $DATA is not a mount point; keeping the default data roots"
  exit 0
fi
mkdir -p "$DATA/containerd" "$DATA/kubelet"
if [ -f /etc/containerd/config.toml ] && ! grep -q "^root = \"$DATA/containerd\"" /etc/containerd/config.toml; then
  sed -i "s|^root = .*|root = \"$DATA/containerd\"|" /etc/containerd/config.toml
  grep -q '^root = ' /etc/containerd/config.toml || sed -i "1i root = \"$DATA/containerd\"" /etc/containerd/config.toml
fi
if [ -d /var/lib/kubelet ] && [ ! -L /var/lib/kubelet ]; then
  cp -a /var/lib/kubelet/. "$DATA/kubelet/" 2>/dev/null || true
  rm -rf /var/lib/kubelet
  ln -s "$DATA/kubelet" /var/lib/kubelet
fi
systemctl restart containerd 2>/dev/null || true
echo "[on_create_main] data roots on $DATA"

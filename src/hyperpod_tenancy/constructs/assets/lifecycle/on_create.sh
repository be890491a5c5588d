#!/bin/bash
# HyperPod runs this on every new node. It logs to /var/log/provision and runs on_create_main.sh.
# On failure it waits 60 s so the log reaches CloudWatch, then fails the node (HyperPod replaces it).
set -euo pipefail
LOG_DIR=/var/log/provision
mkdir -p "$LOG_DIR"
exec > >(tee -a "$LOG_DIR/provisioning.log") 2>&1
echo "[on_create] $(date -Is) starting"
if ! bash "$(dirname "$0")/on_create_main.sh"; then
  echo "[on_create] on_create_main.sh failed; see $LOG_DIR/provisioning.log"
  sleep 60
  exit 1
fi
echo "[on_create] $(date -Is) done"

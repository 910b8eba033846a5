#!/usr/bin/env bash
# Installs the Debian 12 packages shardscope needs (docs: /README.md, the list is STACK.md's plus
# git, python3 and python3-jsonschema, which the CLI tests use). Idempotent: when every package is already installed
# it does not touch apt at all. Needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libglfw3-dev nlohmann-json3-dev catch2
  libimgui-dev libstb-dev libcli11-dev libsimdjson-dev zlib1g-dev xvfb xauth git python3 python3-jsonschema)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present, skipping apt"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "deps: missing packages (${missing[*]}) and not root; run as root or install them" >&2
    exit 1
  fi
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "${PACKAGES[@]}"

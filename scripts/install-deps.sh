#!/usr/bin/env bash
# Installs the Debian 12 packages Weft builds, tests and runs with. Safe to run again: it only
# asks apt for what is missing, and does nothing when everything is already there.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config clang libclang-rt-14-dev
  libglib2.0-dev libjson-glib-dev
  libgrpc-dev protobuf-c-compiler libprotobuf-c-dev protobuf-compiler
  libopenblas-dev
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
  libsnappy-dev zlib1g-dev
  # ImageSummary encodes PNG (plugins/cpu/cpu_summary.c); the codec ops (plugins/cpu/cpu_codec.c)
  # decode and encode PNG, JPEG (libjpeg-turbo, as TensorFlow) and GIF.
  libpng-dev libjpeg62-turbo-dev libgif-dev
  openssl
  help2man
  python3
  # The Python package (python/, docs/python.md): headers, numpy and pytest for its tests.
  python3-dev python3-numpy python3-pytest
  # tests/test_netns.c makes network namespaces, veth pairs and a bridge (ip) and netem (tc).
  iproute2
  # scripts/test-packages.sh (run by scripts/test.sh) builds the Debian packages in debian/.
  debhelper dpkg-dev fakeroot binutils
  # python3-weft: dh_python3 and dh_numpy3 (python3-numpy) fill its ${python3:Depends}.
  dh-python
  # For a test only: tests/slurm_cluster.sh starts a single-node Slurm of its own (slurmctld,
  # slurmd and munged with its own config, key and ports in a scratch folder; the packages'
  # services are not used, and slurmctld's and slurmd's do not start without /etc/slurm).
  slurm-wlm munge
  # tests/check_kubernetes.py reads deploy/kubernetes/ with PyYAML against the Kubernetes API
  # schema of the official client's generated models (not kubernetes-client: kubectl needs a
  # server for that). scripts/check-deploy.sh, run by hand only, needs more that is not installed
  # here: debootstrap systemd-container podman runc (docs/operations.md).
  python3-yaml python3-kubernetes
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

#!/usr/bin/env bash
# Installs ONNX Runtime's CPU library for `weft bench --peer ort` (docs/performance.md): the npm
# package onnxruntime-node, whose bin/napi-v*/linux/<arch>/libonnxruntime.so.1 is the runtime.
# Only the benchmark's peer uses it; Weft itself never depends on it. --ignore-scripts: the
# package's install script would download more from elsewhere, and the bench needs none of it.
#
#   scripts/install-ort-peer.sh                 # into build/ort-peer (where weft bench looks)
#   scripts/install-ort-peer.sh DIR             # into DIR; then weft bench --peer-lib PATH
#   ORT_PEER_VERSION=1.30.0 scripts/install-ort-peer.sh   # a given version (default: latest)
#
# Prints the library's path last. Safe to run again: npm keeps what is already there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$here/build/ort-peer}"
version="${ORT_PEER_VERSION:-latest}"

if ! command -v npm >/dev/null 2>&1; then
  echo "install-ort-peer: npm not found (Debian: apt-get install npm)" >&2
  exit 1
fi
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "install-ort-peer: onnxruntime-node ships no Linux library for $(uname -m)" >&2; exit 1 ;;
esac

mkdir -p "$dest"
cd "$dest"
# A package.json of its own, so that npm installs here and not into a parent folder's project.
[ -f package.json ] || echo '{"name": "weft-ort-peer", "private": true}' > package.json
npm install --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$version" >&2

bin="$dest/node_modules/onnxruntime-node/bin"
lib="$(ls -d "$bin"/napi-v*/linux/"$arch"/libonnxruntime.so.* 2>/dev/null | head -n 1 || true)"
if [ -z "$lib" ]; then
  echo "install-ort-peer: onnxruntime-node has no linux/$arch libonnxruntime.so" >&2
  exit 1
fi
installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
  node_modules/onnxruntime-node/package.json | head -n 1)"
echo "install-ort-peer: onnxruntime-node $installed" >&2
echo "$lib"

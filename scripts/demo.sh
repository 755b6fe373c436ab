#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs the demo: the device-placement example, a real
# graph in a local session that prints where each node was placed and what it computed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build >/dev/null
fi
ninja -C build
./build/core/tools/weft devices
exec ./build/examples/placement

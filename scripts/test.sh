#!/usr/bin/env bash
# Installs what is missing, builds Weft twice (a -Werror build, and an AddressSanitizer +
# UndefinedBehaviorSanitizer build) and runs every test in both. Ends with one line
# "N passed, N failed, N skipped" counting every test case of both runs.
#   WEFT_TEST_SANITIZE=0  skips the sanitizer run (quicker local iterations)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

logs=()
run_suite() {
  local dir=$1
  shift
  if [ -d "$dir" ] && [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    rm -rf "$dir"
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir"
  meson test -C "$dir" --print-errorlogs --num-processes "$(nproc)" || true
  logs+=("$dir/meson-logs/testlog.json")
}

run_suite build-test -Dwerror=true
if [ "${WEFT_TEST_SANITIZE:-1}" != "0" ]; then
  run_suite build-asan -Dwerror=true -Dsanitize=true -Db_lundef=false -Dbuildtype=debug
fi

python3 scripts/count-tests.py "${logs[@]}"

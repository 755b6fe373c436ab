#!/usr/bin/env bash
# Installs what is missing, builds Weft twice (a -Werror build, and an AddressSanitizer +
# UndefinedBehaviorSanitizer build) and runs every test in both, then (with clang) each fuzz target
# for a few seconds. Ends with one line "N passed, N failed, N skipped" counting every test case
# of every run.
#   WEFT_TEST_SANITIZE=0  skips the sanitizer run (quicker local iterations)
#   WEFT_TEST_FUZZ=0      skips the fuzz targets
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

# Each libFuzzer target for a few seconds over its seeds (docs/fuzzing.md), when clang is there;
# every target counts as one test case. WEFT_TEST_FUZZ=0 skips it.
if [ "${WEFT_TEST_FUZZ:-1}" != "0" ] && command -v clang >/dev/null; then
  fuzz_log=build-fuzz/fuzz-testlog.json
  rm -f "$fuzz_log"
  bash scripts/fuzz.sh --quick --json "$fuzz_log" || true
  mkdir -p build-fuzz
  [ -f "$fuzz_log" ] ||
    echo '{"name": "fuzz", "result": "FAIL", "stdout": "not ok 1 - fuzz build failed"}' > "$fuzz_log"
  logs+=("$fuzz_log")
fi

python3 scripts/count-tests.py "${logs[@]}"

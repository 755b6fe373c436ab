#!/usr/bin/env bash
# Installs what is missing, builds Weft twice (a -Werror build, and an AddressSanitizer +
# UndefinedBehaviorSanitizer build) and runs every test in both, builds the Debian packages and
# tests what they install, then (with clang) each fuzz target for a few seconds. Ends with one
# line "N passed, N failed, N skipped" counting every test case of every run.
#   WEFT_TEST_SANITIZE=0  skips the sanitizer run (quicker local iterations)
#   WEFT_TEST_FUZZ=0      skips the fuzz targets
#   WEFT_TEST_PACKAGES=0  skips building and testing the Debian packages (scripts/test-packages.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

logs=()
run_suite() {
  local dir=$1
  shift
  if [ -d "$dir" ] && [ -f "$dir/build.ninja" ]; then
    # Forget outputs the build no longer has: ninja's cleandead (run by meson's regeneration)
    # would otherwise delete files meson now makes another way (libweft.so, once a library and
    # now the link to libweft.so.0 that meson writes at configure time).
    ninja -C "$dir" -t recompact >/dev/null 2>&1 || true
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

# The Debian packages, built from a scratch copy of the tree and run unpacked, with no
# LD_LIBRARY_PATH (scripts/test-packages.sh, docs/install.md): a few minutes on 2 cores, so once
# per run rather than in each build's meson test. Its TAP cases are counted with the rest.
# WEFT_TEST_PACKAGES=0 skips it.
if [ "${WEFT_TEST_PACKAGES:-1}" != "0" ]; then
  pkg_log=build-test/packages-testlog.json
  rm -f "$pkg_log"
  bash scripts/test-packages.sh --json "$pkg_log" || true
  [ -f "$pkg_log" ] ||
    echo '{"name": "packages", "result": "FAIL", "stdout": "not ok 1 - test-packages.sh wrote no result"}' > "$pkg_log"
  logs+=("$pkg_log")
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

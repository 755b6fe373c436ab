#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/fuzzing.md) in build-fuzz with clang, ASan and UBSan,
# and runs each over its seed corpus for a short time. Prints one TAP line per target and exits 1
# when any target crashed, leaked, hit a sanitizer report or timed out.
#   scripts/fuzz.sh [--quick] [--time SECONDS] [--json FILE] [TARGET...]
#     --quick        5 s per target (what scripts/test.sh runs)
#     --time S       S seconds per target (default 10)
#     --json FILE    also write the results as a meson testlog.json line for count-tests.py
#     TARGET         graphdef tensor_proto checkpoint cluster_spec rpc_request onnx npy (default: all)
# Environment: WEFT_CORPUS (default ../shared/corpus), FUZZ_BUILD_DIR (default build-fuzz),
# FUZZ_JOBS (parallel fuzzing processes per target, default 1).
# New interesting inputs accumulate in $FUZZ_BUILD_DIR/fuzz-corpus/TARGET; a crashing input is
# written to $FUZZ_BUILD_DIR/fuzz-crashes/TARGET/ (see docs/fuzzing.md for turning it into a
# regression test).
set -uo pipefail
cd "$(dirname "$0")/.."

all_targets=(graphdef tensor_proto checkpoint cluster_spec rpc_request onnx npy)
seconds=10
json=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) seconds=5 ;;
    --time) seconds=$2; shift ;;
    --json) json=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

dir=${FUZZ_BUILD_DIR:-build-fuzz}
corpus=${WEFT_CORPUS:-$(pwd)/../shared/corpus}

if ! command -v clang >/dev/null; then
  echo "fuzz.sh: clang is not installed; libFuzzer needs it" >&2
  exit 2
fi

if [ -f "$dir/build.ninja" ]; then
  meson setup --reconfigure "$dir" -Dfuzz=true -Dsanitize=true -Db_lundef=false >/dev/null || exit 2
else
  rm -rf "$dir"
  CC=clang meson setup "$dir" -Dfuzz=true -Dsanitize=true -Db_lundef=false >/dev/null || exit 2
fi
# Only libweft and the targets: the rest of the project is not needed to fuzz.
ninja -C "$dir" "${targets[@]/#/fuzz/fuzz_}" || exit 2

python3 fuzz/make_seeds.py "$corpus" "$dir/fuzz-seeds" || exit 2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

tap="TAP version 13"$'\n'"1..${#targets[@]}"$'\n'
failed=0
i=0
for t in "${targets[@]}"; do
  i=$((i + 1))
  work="$dir/fuzz-corpus/$t"
  crashes="$dir/fuzz-crashes/$t"
  log="$dir/fuzz-logs/$t.log"
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  # New inputs go to the first folder (the working corpus); the seeds and the regression inputs
  # are only read. Replaying fuzz/regressions here matters: clang's UBSan catches more than
  # gcc's (NULL + 0, say), which is all the regression test of the normal build has.
  # -jobs (more than one) also makes libFuzzer write fuzz-N.log files into the current folder.
  parallel=()
  if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
  # git keeps no empty folder, and libFuzzer refuses a missing one.
  regressions=()
  if [ -d "fuzz/regressions/$t" ]; then regressions=("fuzz/regressions/$t"); fi
  "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
      -max_len=1048576 -print_final_stats=1 "${parallel[@]}" -artifact_prefix="$crashes/" \
      "$work" "$dir/fuzz-seeds/$t" "${regressions[@]}" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  if [ $rc -eq 0 ]; then
    line="ok $i - fuzz_$t (${seconds}s, ${execs:-?} runs)"
  else
    failed=$((failed + 1))
    line="not ok $i - fuzz_$t exited $rc; log $log; inputs in $crashes/"
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -5 | sed 's/^/# /'
  fi
  echo "$line"
  tap+="$line"$'\n'
done

if [ -n "$json" ]; then
  TAP_TEXT="$tap" FAILED=$failed python3 - "$json" <<'PY'
import json, os, sys
result = "FAIL" if int(os.environ["FAILED"]) else "OK"
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"name": "fuzz", "result": result, "stdout": os.environ["TAP_TEXT"]}) + "\n")
PY
fi
[ $failed -eq 0 ]

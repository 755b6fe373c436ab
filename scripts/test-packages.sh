#!/usr/bin/env bash
# Builds Weft's Debian packages from a scratch copy of this tree (debian/, dpkg-buildpackage),
# unpacks every .deb into a scratch root with dpkg -x (nothing is installed on this machine), and
# runs the unpacked programs the way a user would, with no LD_LIBRARY_PATH or WEFT_PLUGIN_PATH:
# `weft devices` lists the CPU without a "skipping plugin" warning, `weftd --help` finds
# libweft.so.0, `weft-conformance --op Add --device CPU` passes with the packaged expected-failure
# lists, libweft.so.0 exports only weft_* functions, and each file is in the package it belongs
# to. Prints TAP; with --json FILE also writes one meson-testlog-style record that
# scripts/count-tests.py counts (scripts/test.sh runs it once per CI run: it takes minutes).
#   --keep     keep the scratch folder (its path is printed)
#   WEFT_TEST_PACKAGES_DIR=DIR  build in DIR instead of a new temporary folder
set -uo pipefail
cd "$(dirname "$0")/.."

json=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "test-packages: unknown argument $1" >&2; exit 2 ;;
  esac
done

tap=()
failed=0
n=0
ok() { n=$((n + 1)); tap+=("ok $n - $1"); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=1; tap+=("not ok $n - $1"); echo "not ok $n - $1"
  shift
  for line in "$@"; do tap+=("# $line"); echo "# $line"; done
}
skip() { n=$((n + 1)); tap+=("ok $n - $1 # SKIP $2"); echo "ok $n - $1 # SKIP $2"; }
check() { # check NAME COMMAND...: ok when the command succeeds, its output shown otherwise
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$name"; else mapfile -t lines <<<"$out"; not_ok "$name" "${lines[@]: -15}"; fi
}
finish() {
  if [ -n "$json" ]; then
    mkdir -p "$(dirname "$json")"
    local result=OK
    [ "$failed" = 0 ] || result=FAIL
    printf '%s\n' "${tap[@]}" | python3 -c 'import json, sys
print(json.dumps({"name": "packages", "result": sys.argv[1], "stdout": sys.stdin.read()}))' \
      "$result" > "$json"
  fi
  if [ "$keep" = 1 ] || [ -n "${WEFT_TEST_PACKAGES_DIR:-}" ]; then
    echo "test-packages: kept $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$failed"
}

work=${WEFT_TEST_PACKAGES_DIR:-$(mktemp -d /tmp/weft-packages.XXXXXX)}
mkdir -p "$work"
for tool in dpkg-buildpackage dh dpkg-deb nm; do
  if ! command -v "$tool" >/dev/null; then
    skip "build the Debian packages" "$tool is not installed (scripts/install-deps.sh installs it)"
    finish
  fi
done

# The scratch copy: the files git knows of or would add (tracked, and untracked but not
# ignored), so no build folder or local state travels and the shared tree is never cleaned.
src="$work/weft"
rm -rf "$src"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar -c --null -T - -f - | tar -x -C "$src"

log="$work/dpkg-buildpackage.log"
echo "test-packages: building the packages in $src (log: $log)" >&2
if (cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" \
    dpkg-buildpackage -b --no-sign) >"$log" 2>&1; then
  ok "dpkg-buildpackage -b builds the packages"
else
  mapfile -t lines < <(tail -n 25 "$log")
  not_ok "dpkg-buildpackage -b builds the packages" "${lines[@]}"
  finish
fi

# Every package of debian/control (weft-plugin-cuda only under the pkg.weft.cuda profile), each
# with what it must hold.
root="$work/root"
rm -rf "$root"
mkdir -p "$root"
declare -A must_hold=(
  [libweft0]='usr/lib/*/libweft.so.0 usr/lib/*/libweft.so.0.*'
  [libweft-dev]='usr/lib/*/libweft.so usr/include/weft/weft.h usr/include/weft/plugin.h usr/lib/*/pkgconfig/weft.pc usr/lib/*/pkgconfig/weft-sdk.pc'
  [weft-tools]='usr/bin/weft usr/bin/weftd usr/bin/weft-train usr/bin/weft-conformance usr/share/weft/expected_failures/CPU.txt *lib/systemd/system/weftd@.service'
  [weft-plugin-cpu]='usr/lib/*/weft/plugins/libweft-cpu.so'
  [weft-plugin-vulkan]='usr/lib/*/weft/plugins/libweft-vulkan.so'
)
for pkg in libweft0 libweft-dev weft-tools weft-plugin-cpu weft-plugin-vulkan; do
  deb=$(ls "$work"/"${pkg}"_*.deb 2>/dev/null | head -n 1)
  if [ -z "$deb" ]; then
    not_ok "package $pkg was built" "no ${pkg}_*.deb in $work"
    continue
  fi
  files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||')
  missing=()
  for pattern in ${must_hold[$pkg]}; do
    # shellcheck disable=SC2053
    found=0
    while IFS= read -r f; do [[ $f == $pattern ]] && found=1 && break; done <<<"$files"
    [ "$found" = 1 ] || missing+=("$pattern")
  done
  if [ "${#missing[@]}" -eq 0 ]; then ok "package $pkg holds its files"
  else not_ok "package $pkg holds its files" "missing: ${missing[*]}"; fi
  dpkg-deb -x "$deb" "$root"
done
man=$(dpkg-deb -c "$work"/weft-tools_*.deb 2>/dev/null | grep -c 'usr/share/man/man1/.*\.1' || true)
ok "weft-tools carries $man man pages"

# The unpacked programs with a user's environment: nothing pointing at libweft or plugins.
clean_env=(env -i "PATH=/usr/bin:/bin" "HOME=${HOME:-/tmp}")
devices_ok() {
  local out err
  out=$("${clean_env[@]}" "$root/usr/bin/weft" devices 2>"$work/devices.err") || {
    cat "$work/devices.err"; return 1; }
  err=$(cat "$work/devices.err")
  echo "$out"
  grep -q '/device:CPU:0' <<<"$out" || { echo "no CPU device listed"; return 1; }
  if grep -q 'skipping plugin' <<<"$err"; then echo "$err"; return 1; fi
}
check "unpacked weft devices lists CPU:0, no skipping-plugin warning" devices_ok
check "unpacked weftd finds libweft.so.0 (RUNPATH)" "${clean_env[@]}" "$root/usr/bin/weftd" --help
# The template unit as installed, pointed at the unpacked weftd (docs/operations.md, "systemd").
unit_ok() {
  local unit out
  unit=$(ls "$root"/lib/systemd/system/weftd@.service "$root"/usr/lib/systemd/system/weftd@.service \
    2>/dev/null | head -n 1)
  [ -n "$unit" ] || { echo "no weftd@.service unpacked"; return 1; }
  command -v systemd-analyze >/dev/null || return 0
  sed "s#/usr/bin/weftd#$root/usr/bin/weftd#" "$unit" >"$work/weftd@ps0.service"
  out=$(systemd-analyze verify --man=no "$work/weftd@ps0.service" 2>&1)
  [ -z "$out" ] || { echo "$out"; return 1; }
}
check "unpacked weftd@.service passes systemd-analyze verify" unit_ok
conformance_ok() {
  local out
  out=$("${clean_env[@]}" "$root/usr/bin/weft-conformance" --op Add --device CPU 2>&1) || {
    echo "$out"; return 1; }
  grep -q 'conformance cases: .* 0 failed' <<<"$out" || { echo "$out"; return 1; }
}
check "unpacked weft-conformance --op Add --device CPU passes" conformance_ok
exports_ok() {
  local lib bad
  lib=$(ls "$root"/usr/lib/*/libweft.so.0 | head -n 1)
  bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^weft_' ; \
        nm -D --defined-only "$lib" | awk '{print $NF}' | grep '^weft__')
  [ -z "$bad" ] || { echo "exported beyond the API: $(echo $bad | head -c 600)"; return 1; }
  echo "$(nm -D --defined-only "$lib" | wc -l) symbols, all weft_*"
}
check "packaged libweft.so.0 exports only weft_* functions" exports_ok
finish

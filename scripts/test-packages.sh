#!/usr/bin/env bash
# Builds Weft's Debian packages from a scratch copy of this tree (debian/, dpkg-buildpackage),
# unpacks every .deb into a scratch root with dpkg -x (nothing is installed on this machine), and
# runs the unpacked programs the way a user would, with no LD_LIBRARY_PATH or WEFT_PLUGIN_PATH:
# `weft devices` lists the CPU without a "skipping plugin" warning, `weftd --help` finds
# libweft.so.0, `weft-conformance --op Add --device CPU` passes with the packaged expected-failure
# lists, libweft.so.0 exports only weft_* functions, each file is in the package it belongs to,
# and python3-weft imports from the unpacked tree and runs a session on the unpacked libweft.
# Prints TAP; with --json FILE also writes one meson-testlog-style record that
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
for tool in dpkg-buildpackage dh dh_python3 dpkg-deb nm readelf; do
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
  [python3-weft]='usr/lib/python3/dist-packages/weft/_weft.cpython-*.so
                 usr/lib/python3/dist-packages/weft/_weft_checkpoints.cpython-*.so'
)
# python3-weft also holds every Python file of the source's python/weft (weft/compat/v1/*.py ...).
while IFS= read -r f; do
  must_hold[python3-weft]+=" usr/lib/python3/dist-packages/${f#python/}"
done < <(git ls-files 'python/weft/*.py')
for pkg in libweft0 libweft-dev weft-tools weft-plugin-cpu weft-plugin-vulkan python3-weft; do
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

# Debian policy checks lintian would make on python3-weft, cheaply and without lintian.
py_control_ok() {
  local deb field
  deb=$(ls "$work"/python3-weft_*.deb | head -n 1)
  field=$(dpkg-deb -f "$deb" Section)
  [ "$field" = python ] || { echo "Section: $field, not python"; return 1; }
  field=$(dpkg-deb -f "$deb" Depends)
  echo "Depends: $field"
  for dep in 'python3 (>= 3' 'python3-numpy' "libweft0 (= $(dpkg-deb -f "$deb" Version))" \
             'weft-plugin-cpu'; do
    [[ $field == *"$dep"* ]] || { echo "Depends lacks $dep"; return 1; }
  done
}
check "python3-weft's control: Section python, Depends on python3, numpy, libweft0" py_control_ok
py_layout_ok() {
  local bad
  # Debian's layout: dist-packages under /usr/lib/python3, no byte code (made on install).
  bad=$(for deb in "$work"/*.deb; do dpkg-deb -c "$deb" | awk '{print $6}'; done |
        grep -E 'site-packages|/usr/local/|__pycache__|\.pyc$|/lib/python3\.[0-9]+/')
  [ -z "$bad" ] || { echo "misplaced: $bad"; return 1; }
}
check "no package ships site-packages, usr/local, python3.X or byte-code paths" py_layout_ok
py_rpath_ok() {
  local so rpath
  for so in "$root"/usr/lib/python3/dist-packages/weft/_weft*.so; do
    rpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    echo "$(basename "$so"): RUNPATH $rpath"
    # relative to the extension (lintian's binary-or-shlib-defines-rpath forbids /usr/lib/...),
    # and leading to the packaged libweft.so.0
    [[ $rpath == '$ORIGIN/'* ]] || { echo "not \$ORIGIN-relative"; return 1; }
    [ -e "$(dirname "$so")/${rpath#\$ORIGIN/}/libweft.so.0" ] || {
      echo "no libweft.so.0 at $rpath"; return 1; }
  done
}
check "python3-weft's extensions find the packaged libweft.so.0 by an \$ORIGIN RUNPATH" py_rpath_ok
# A real import and Session.run from the unpacked tree: Debian's interpreter (the one
# ${python3:Depends} names), PYTHONPATH at the unpacked dist-packages as /usr/lib/python3 is on an
# installed system's path, no LD_LIBRARY_PATH: libweft.so.0 and the CPU plugin must be the
# unpacked ones.
py_session_ok() {
  local site=$root/usr/lib/python3/dist-packages
  "${clean_env[@]}" "PYTHONPATH=$site" /usr/bin/python3 - "$root" <<'PY'
import sys
import numpy as np
import weft.compat.v1 as tf

root = sys.argv[1]
assert tf.__file__.startswith(root), "weft imported from %s, not the unpacked tree" % tf.__file__
x = tf.placeholder(tf.float32, [None, 2], name="x")
w = tf.Variable([[1.0], [2.0]], name="w")
y = tf.matmul(x, w) + tf.constant(1.0)
feed = np.array([[1.0, 1.0], [3.0, -2.0]])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    got = sess.run(y, feed_dict={x: feed})
    devices = [d.name for d in sess.list_devices()]
want = feed @ np.array([[1.0], [2.0]]) + 1.0
assert got.dtype == np.float32 and np.array_equal(got, want.astype(np.float32)), (got, want)
maps = open("/proc/self/maps").read().split()
libs = sorted({p for p in maps if "libweft" in p})
for lib in libs:
    assert lib.startswith(root), "%s is not the unpacked one" % lib
assert any("/libweft.so.0" in lib for lib in libs), libs
assert any("libweft-cpu.so" in lib for lib in libs), libs
print("y =", got.ravel().tolist(), "devices:", devices, "libraries:", libs)
PY
}
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  check "unpacked python3-weft: import weft.compat.v1, Session.run on the unpacked libweft" \
    py_session_ok
else
  skip "unpacked python3-weft: import weft.compat.v1, Session.run" \
    "no /usr/bin/python3 with numpy (python3-numpy)"
fi
finish

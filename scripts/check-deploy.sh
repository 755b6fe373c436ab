#!/usr/bin/env bash
# Checks the deployment recipes for real, by hand (not part of scripts/test.sh: it downloads a
# Debian root and takes minutes; run as root): builds the Debian packages, debootstraps a minimal
# Debian 12 root, installs the packages into it and boots it with `systemd-nspawn -b`, where
# `systemctl start weftd@ps0` must serve (`weft health` answers SERVING), run as a dynamic user
# under the unit's hardening (checked on the running process, not only in `systemctl show`) and
# stop with status 0; then builds deploy/Containerfile with podman from a base image imported
# from the same root, runs weftd in the image as its non-root user and probes it with
# `weft health`. docs/operations.md, "Checking the deployment for real", says what this
# verifies and what a VM without systemd as PID 1 and with cgroup v1 needed.
#   --work DIR   scratch folder (default /var/tmp/weft-check-deploy); a root debootstrapped
#                there before is reused
#   --debs DIR   use the .debs in DIR instead of building them
#   --mirror URL Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   --keep       keep the image localhost/weft:check (the scratch folder always stays: a later
#                run reuses its root and the base image)
# Prints TAP; exit status 1 when a check fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

work=/var/tmp/weft-check-deploy
debs=""
mirror=http://deb.debian.org/debian
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "check-deploy: unknown argument $1" >&2; exit 2 ;;
  esac
done

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=1; echo "not ok $n - $1"
  shift
  printf '%s\n' "$@" | sed 's/^/# /'
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
note() { echo "# $*"; }

if [ "$(id -u)" != 0 ]; then
  skip "check the deployment" "needs root (debootstrap, systemd-nspawn, podman)"
  exit 0
fi
for tool in debootstrap systemd-nspawn nsenter podman; do
  if ! command -v "$tool" >/dev/null; then
    skip "check the deployment" "$tool is not installed (apt-get install debootstrap \
systemd-container podman runc)"
    exit 0
  fi
done
mkdir -p "$work"
root=$work/root

# --- The packages: scripts/test-packages.sh builds them from a scratch copy of this tree.
if [ -z "$debs" ]; then
  debs=$work/pkgs
  if WEFT_TEST_PACKAGES_DIR=$debs scripts/test-packages.sh >"$work/test-packages.log" 2>&1; then
    ok "the Debian packages build (scripts/test-packages.sh)"
  else
    not_ok "the Debian packages build (scripts/test-packages.sh)" \
      "$(tail -n 20 "$work/test-packages.log")"
    exit 1
  fi
fi
for pkg in libweft0 weft-tools weft-plugin-cpu; do
  if ! ls "$debs"/"${pkg}"_*.deb >/dev/null 2>&1; then
    not_ok "the .debs are in $debs" "no ${pkg}_*.deb"
    exit 1
  fi
done

# --- A minimal Debian 12 root with systemd, and the base image made from it before Weft is in it.
if [ ! -x "$root/bin/systemctl" ]; then
  rm -rf "$root"
  if debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$root" \
       "$mirror" >"$work/debootstrap.log" 2>&1; then
    ok "debootstrap a minimal Debian 12 root with systemd"
  else
    not_ok "debootstrap a minimal Debian 12 root" "$(tail -n 10 "$work/debootstrap.log")"
    exit 1
  fi
  rm -f "$root/etc/machine-id" && touch "$root/etc/machine-id"
else
  note "reusing the root in $root"
fi
# The base image stands in for debian:bookworm-slim, which needs a registry.
if ! podman image exists localhost/weft-base:bookworm; then
  if tar -C "$root" --exclude=./proc --exclude=./sys --exclude=./dev --exclude=./run -c . |
      podman import - localhost/weft-base:bookworm >"$work/import.log" 2>&1; then
    ok "podman import the root as localhost/weft-base:bookworm"
  else
    not_ok "podman import the root as localhost/weft-base:bookworm" \
      "$(tail -n 5 "$work/import.log")"
    exit 1
  fi
fi

# --- The packages installed into the root as a user would: apt resolves their dependencies.
mkdir -p "$root/tmp/debs"
cp "$debs"/libweft0_*.deb "$debs"/weft-tools_*.deb "$debs"/weft-plugin-cpu_*.deb "$root/tmp/debs/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
if chroot "$root" sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
     --no-install-recommends /tmp/debs/*.deb' >"$work/apt.log" 2>&1; then
  ok "apt-get install libweft0 weft-tools weft-plugin-cpu into the root"
else
  not_ok "apt-get install the .debs into the root" "$(tail -n 15 "$work/apt.log")"
  exit 1
fi
unit=$(ls "$root"/lib/systemd/system/weftd@.service "$root"/usr/lib/systemd/system/weftd@.service \
  2>/dev/null | head -n 1)
if [ -n "$unit" ]; then ok "the package installed ${unit#"$root"}"
else not_ok "the package installed weftd@.service" "not under /lib or /usr/lib/systemd/system"; fi

# A one-ps, one-worker cluster's ps task (a ps serves before its workers exist); its worker,
# weftd@worker0, is started below with TLS.
mkdir -p "$root/etc/weft"
echo 'WEFTD_FLAGS=--ps_hosts localhost:52222 --worker_hosts localhost:52223 --job_name ps'\
' --task_index 0' \
  >"$root/etc/weft/ps0.conf"
# debootstrap writes no /etc/hosts (an installer or a container runtime does), and without one
# "localhost" resolves to nothing: the hosts file every Debian install has.
[ -s "$root/etc/hosts" ] ||
  printf '%s\n' '127.0.0.1 localhost' '::1 localhost ip6-localhost ip6-loopback' \
  >"$root/etc/hosts"

# --- Boot it. nspawn shares this machine's network, so the ports above are this machine's.
nspawn_log=$work/nspawn.log
setsid systemd-nspawn -D "$root" -b --register=no --keep-unit --console=passive \
  --machine=weft-check >"$nspawn_log" 2>&1 &
nspawn=$!
cleanup() {
  kill "$nspawn" 2>/dev/null && wait "$nspawn" 2>/dev/null
  podman rm -f weft-check >/dev/null 2>&1
  [ "$keep" = 1 ] || podman rmi -f localhost/weft:check >/dev/null 2>&1
}
trap cleanup EXIT
leader=""
for _ in $(seq 60); do
  leader=$(pgrep -P "$nspawn" -x systemd | head -n 1)
  [ -n "$leader" ] && break
  sleep 1
done
in_root() { nsenter -t "$leader" -a "$@"; }
state=$( [ -n "$leader" ] &&
  timeout 120 nsenter -t "$leader" -a systemctl is-system-running --wait 2>&1)
if [ "$state" = running ] || [ "$state" = degraded ]; then
  ok "systemd-nspawn -b boots the root (systemd: $state)"
else
  not_ok "systemd-nspawn -b boots the root" "state: ${state:-no systemd}" \
    "$(tail -n 10 "$nspawn_log")"
  exit 1
fi

if in_root systemctl start weftd@ps0 2>&1; then ok "systemctl start weftd@ps0"
else
  not_ok "systemctl start weftd@ps0" "$(in_root journalctl -u weftd@ps0 --no-pager | tail -n 15)"
fi
health=""
for _ in $(seq 30); do
  health=$(in_root weft health --timeout_ms 2000 localhost:52222 2>&1) && break
  sleep 1
done
if [ "$health" = SERVING ]; then ok "weft health localhost:52222 answers SERVING (weftd@ps0)"
else not_ok "weft health answers SERVING (weftd@ps0)" "$health" \
  "$(in_root journalctl -u weftd@ps0 --no-pager | tail -n 15)"; fi

props=$(in_root systemctl show weftd@ps0 -p DynamicUser,ProtectSystem,ProtectHome,PrivateTmp,\
NoNewPrivileges,CapabilityBoundingSet,StateDirectory,RestrictNamespaces,MainPID,ActiveState)
note "$(echo "$props" | tr '\n' ' ')"
want_props=(DynamicUser=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes
            CapabilityBoundingSet= StateDirectory=weft/ps0 ActiveState=active)
missing=()
for p in "${want_props[@]}"; do grep -qx "$p" <<<"$props" || missing+=("$p"); done
if [ "${#missing[@]}" = 0 ]; then ok "systemctl show weftd@ps0: the hardening options are in force"
else not_ok "systemctl show weftd@ps0: the hardening options" "missing: ${missing[*]}"; fi

# The running process itself: a dynamic user, no capabilities, no new privileges, / read-only,
# /home hidden, only its state folder writable.
pid=$(sed -n 's/^MainPID=//p' <<<"$props")
process_ok() {
  local status uid
  status=$(in_root cat "/proc/$pid/status") || return 1
  uid=$(awk '/^Uid:/ {print $2}' <<<"$status")
  echo "uid $uid, $(grep -E '^(CapEff|CapBnd|NoNewPrivs)' <<<"$status" | tr -s '\t\n' '  ')"
  [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] ||
    { echo "uid $uid is not a dynamic user's"; return 1; }
  grep -q '^CapEff:[[:space:]]*0*$' <<<"$status" || { echo "has capabilities"; return 1; }
  grep -q '^CapBnd:[[:space:]]*0*$' <<<"$status" || { echo "bounding set not empty"; return 1; }
  grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$status" || { echo "NoNewPrivs is not 1"; return 1; }
  in_root nsenter -t "$pid" -m -S "$uid" -G "$uid" sh -c '
    touch /usr/weft-probe 2>/dev/null && { echo "/usr is writable"; exit 1; }
    touch /etc/weft-probe 2>/dev/null && { echo "/etc is writable"; exit 1; }
    ls /root >/dev/null 2>&1 && { echo "/root is readable (ProtectHome)"; exit 1; }
    touch /var/lib/weft/ps0/probe && rm /var/lib/weft/ps0/probe ||
      { echo "state dir not writable"; exit 1; }'
}
if out=$(process_ok 2>&1); then
  ok "weftd@ps0 runs as a dynamic user without capabilities; /usr and /etc read-only, its state \
folder writable"
  note "$out"
else not_ok "weftd@ps0's process under the hardening" "$out"; fi

# The TLS setup of docs/operations.md ("systemd"), as written there: the files in a root-only
# /etc/weft/tls, read by the dynamic user only through LoadCredential= in a drop-in.
tls_ok() {
  local certs=$work/certs cred=/run/credentials/weftd@worker0.service out
  rm -rf "$certs" && mkdir -p "$certs" || return 1
  (cd "$certs" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
      -out ca.crt -days 2 -subj /CN=weft-ca -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign,cRLSign &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout node.key \
      -out node.csr -subj /CN=localhost &&
    printf '%s\n' 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
      'extendedKeyUsage=serverAuth,clientAuth' >node.ext &&
    openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out node.crt \
      -days 2 -extfile node.ext && printf 'check-deploy-token-0123\n' >token) >/dev/null 2>&1 ||
    { echo "openssl could not make the certificates"; return 1; }
  in_root install -d -m 0700 /etc/weft/tls
  for f in ca.crt node.crt node.key token; do
    in_root sh -c "cat > /etc/weft/tls/$f && chmod 0600 /etc/weft/tls/$f" <"$certs/$f"
  done
  in_root sh -c "echo 'WEFTD_FLAGS=--ps_hosts localhost:52222 --worker_hosts localhost:52223 \
--job_name worker --task_index 0 --tls-cert $cred/tls.crt --tls-key $cred/tls.key \
--tls-ca $cred/ca.crt --auth-token-file $cred/token' > /etc/weft/worker0.conf
    mkdir -p /etc/systemd/system/weftd@worker0.service.d
    printf '%s\n' '[Service]' 'LoadCredential=tls.crt:/etc/weft/tls/node.crt' \
      'LoadCredential=tls.key:/etc/weft/tls/node.key' 'LoadCredential=ca.crt:/etc/weft/tls/ca.crt' \
      'LoadCredential=token:/etc/weft/tls/token' \
      > /etc/systemd/system/weftd@worker0.service.d/credentials.conf
    systemctl daemon-reload && systemctl start weftd@worker0" || return 1
  for _ in $(seq 30); do
    out=$(in_root weft health --timeout_ms 2000 --tls-ca /etc/weft/tls/ca.crt \
      --tls-cert /etc/weft/tls/node.crt --tls-key /etc/weft/tls/node.key localhost:52223 2>&1) &&
      break
    sleep 1
  done
  echo "$out"
  [ "$out" = SERVING ] || { in_root journalctl -u weftd@worker0 --no-pager | tail -n 10; return 1; }
  # Plaintext is refused: the task really serves TLS.
  if in_root weft health --timeout_ms 2000 localhost:52223 >/dev/null 2>&1; then
    echo "a plaintext health check was answered"; return 1
  fi
  in_root systemctl stop weftd@worker0
}
if ! command -v openssl >/dev/null; then
  skip "weftd@worker0 with TLS and the token through LoadCredential=" "openssl is not installed"
elif out=$(tls_ok 2>&1); then
  ok "weftd@worker0 with mutual TLS and the token through LoadCredential=: SERVING over TLS only"
else
  not_ok "weftd@worker0 with TLS and the token through LoadCredential=" "$out"
fi

in_root systemctl stop weftd@ps0
result=$(in_root systemctl show weftd@ps0 -p Result,ExecMainStatus | tr '\n' ' ')
if [ "$result" = "Result=success ExecMainStatus=0 " ]; then
  ok "systemctl stop: weftd exits 0 on SIGTERM"
else not_ok "systemctl stop weftd@ps0 exits 0" "$result"; fi
kill "$nspawn" 2>/dev/null; wait "$nspawn" 2>/dev/null

# --- The container image from deploy/Containerfile on the imported base (no registry needed).
# Where crun refuses this machine's cgroups (v1 with a v2 hierarchy beside it) runc is used, and
# rlimits are given explicitly where podman's defaults exceed what root may set here.
runtime=()
if podman info --format '{{.Host.CgroupsVersion}}' 2>/dev/null | grep -q v1 &&
    command -v runc >/dev/null; then
  runtime=(--runtime runc)
fi
limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
ctx=$work/context
rm -rf "$ctx" && mkdir -p "$ctx/debs"
cp "$root"/tmp/debs/*.deb "$ctx/debs/"
if podman "${runtime[@]}" build "${limits[@]}" -f deploy/Containerfile \
     --build-arg BASE=localhost/weft-base:bookworm -t localhost/weft:check "$ctx" \
     >"$work/podman-build.log" 2>&1; then
  ok "podman build -f deploy/Containerfile (base: localhost/weft-base:bookworm)"
else
  not_ok "podman build -f deploy/Containerfile" "$(tail -n 15 "$work/podman-build.log")"
  exit 1
fi
podman rm -f weft-check >/dev/null 2>&1
if podman "${runtime[@]}" run -d --name weft-check --network host "${limits[@]}" \
     localhost/weft:check weftd --local --port 52322 >"$work/podman-run.log" 2>&1; then
  health=""
  for _ in $(seq 30); do
    health=$(podman "${runtime[@]}" exec weft-check \
      weft health --timeout_ms 2000 localhost:52322 2>&1) && break
    sleep 1
  done
  user=$(podman "${runtime[@]}" exec weft-check id -u 2>&1)
  if [ "$health" = SERVING ] && [ "$user" = 65534 ]; then
    ok "weftd in the image serves as uid 65534: weft health answers SERVING"
  else
    not_ok "weftd in the image answers weft health" "health: $health, uid: $user" \
      "$(podman logs weft-check 2>&1 | tail -n 10)"
  fi
else
  not_ok "podman run the image" "$(tail -n 10 "$work/podman-run.log")"
fi
echo "1..$n"
exit "$failed"

#!/bin/bash
# Checks the weftd@.service template unit the weft-tools package installs
# (debian/weft-tools@.weftd.service): `systemd-analyze verify` of an instance, with ExecStart
# pointed at this build's weftd (skipped with the reason where systemd-analyze is missing); its
# hardening and restart options; and that the example task flags (deploy/systemd) are flags
# this weftd accepts: it serves with them (TLS and hosts swapped for loopback) and stops on
# SIGTERM with status 0, as systemd stops it. TAP on stdout. Usage: check_systemd.sh SRC BUILD
set -u
src=$1
build=$2
unit=$src/debian/weft-tools@.weftd.service
echo "1..3"
dir=$(mktemp -d /tmp/weft-systemd-XXXXXX)
trap 'rm -rf "$dir"' EXIT

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "ok 1 # SKIP systemd-analyze is not installed"
else
  sed "s#/usr/bin/weftd#$build/core/tools/weftd#" "$unit" >"$dir/weftd@ps0.service"
  # With the credentials drop-in docs/operations.md ("systemd") has the operator write.
  mkdir "$dir/weftd@ps0.service.d"
  printf '%s\n' '[Service]' 'LoadCredential=tls.crt:/etc/weft/tls/node.crt' \
    'LoadCredential=tls.key:/etc/weft/tls/node.key' 'LoadCredential=ca.crt:/etc/weft/tls/ca.crt' \
    'LoadCredential=token:/etc/weft/tls/token' >"$dir/weftd@ps0.service.d/credentials.conf"
  if out=$(systemd-analyze verify --man=no "$dir/weftd@ps0.service" 2>&1) && [ -z "$out" ]; then
    echo "ok 1 - systemd-analyze verify weftd@ps0.service (and its credentials drop-in): no warnings"
  else
    echo "not ok 1 - systemd-analyze verify weftd@ps0.service"
    echo "$out" | sed 's/^/# /'
  fi
fi

missing=""
for want in "EnvironmentFile=/etc/weft/%i.conf" 'ExecStart=/usr/bin/weftd $WEFTD_FLAGS' \
    "DynamicUser=yes" "ProtectSystem=strict" "ProtectHome=yes" "NoNewPrivileges=yes" \
    "PrivateTmp=yes" "StateDirectory=weft/%i" "Restart=on-failure" "KillSignal=SIGTERM" \
    "WantedBy=multi-user.target"; do
  grep -qxF "$want" "$unit" || missing="$missing [$want]"
done
if [ -z "$missing" ]; then
  echo "ok 2 - the unit reads /etc/weft/%i.conf, is hardened and restarts on failure"
else
  echo "not ok 2 - the unit lacks:$missing"
fi

# The example's flags, with its hosts on loopback ports and without the credentials it names.
flags=$(sed -n 's/^WEFTD_FLAGS=//p' "$src/deploy/systemd/task.conf.example")
read -r p1 p2 p3 < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
flags=$(echo "$flags" | sed "s/node1:2222/localhost:$p1/; s/node2:2222/localhost:$p2/; \
  s/node3:2222/localhost:$p3/; s/ --tls-cert.*//; s/--bind 0.0.0.0/--bind 127.0.0.1/")
: >"$dir/out"
# shellcheck disable=SC2086  # split as systemd splits $WEFTD_FLAGS
"$build/core/tools/weftd" $flags >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 1 600); do grep -q "Started server" "$dir/out" && break; sleep 0.1; done
kill -TERM "$pid" 2>/dev/null
rc=0
wait "$pid" || rc=$?
if grep -q "Started server with target: grpc://localhost:$p2" "$dir/out" && [ "$rc" = 0 ]; then
  echo "ok 3 - weftd serves with the example's flags (worker 0) and exits 0 on SIGTERM"
else
  echo "not ok 3 - weftd with the example's flags: exit $rc"
  sed 's/^/# /' "$dir/out" "$dir/err"
fi

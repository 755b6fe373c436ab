#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs the demo: a real training cluster on loopback.
# One ps task and two workers (separate weft-train processes on free ports) train the MLP
# classifier asynchronously with checkpoints; halfway through, the ps is killed with SIGKILL and
# started again, the workers recover from the last checkpoint and finish; the final metrics and
# the checkpoint's place are printed. Every node runs on the CPU (the default placement would pick
# Vulkan, which is the lavapipe software renderer on a machine without a GPU, and slow).
# WEFT_DEMO_STEPS (default 2000) sets the length and
# WEFT_DEMO_DIR (default: a new folder under /tmp) where the logs and checkpoints go.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build >/dev/null
fi
ninja -C build

TRAIN=./build/core/tools/weft-train
STEPS=${WEFT_DEMO_STEPS:-2000}
DIR=${WEFT_DEMO_DIR:-$(mktemp -d /tmp/weft-demo.XXXXXX)}
mkdir -p "$DIR"
CKPT="$DIR/checkpoints"

# Three free loopback ports.
read -r PS_PORT W0_PORT W1_PORT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)
HOSTS=(--ps_hosts "localhost:$PS_PORT" --worker_hosts "localhost:$W0_PORT,localhost:$W1_PORT")
COMMON=(--model mlp --train_steps "$STEPS" --save_steps 200 --log_every 20 --progress lines --device CPU)

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start_ps() {
  "$TRAIN" "${HOSTS[@]}" --job_name ps >>"$DIR/ps.log" 2>&1 &
  PS_PID=$!
  PIDS+=("$PS_PID")
}

echo "== Weft demo: 1 ps + 2 workers on loopback (ports $PS_PORT, $W0_PORT, $W1_PORT), logs in $DIR"
echo "   $TRAIN ${HOSTS[*]} --job_name ps"
echo "   $TRAIN ${HOSTS[*]} --job_name worker --task_index 0|1 ${COMMON[*]} --checkpoint_dir $CKPT"
start_ps
timeout 300 "$TRAIN" "${HOSTS[@]}" --job_name worker --task_index 0 "${COMMON[@]}" \
  --checkpoint_dir "$CKPT" >"$DIR/worker0.log" 2>&1 &
W0_PID=$!
timeout 300 "$TRAIN" "${HOSTS[@]}" --job_name worker --task_index 1 "${COMMON[@]}" \
  >"$DIR/worker1.log" 2>&1 &
W1_PID=$!
PIDS+=("$W0_PID" "$W1_PID")

# The latest "progress" figure of a worker's log: "STEP LOSS".
progress_of() {
  local line
  line=$(grep '^progress ' "$1" 2>/dev/null | tail -n 1 || true)
  if [ -z "$line" ]; then echo "0 -"; return; fi
  sed -E 's/.*step=([0-9]+).*loss=([-0-9.naif]+).*/\1 \2/' <<<"$line"
}

bar() { # STEP TOTAL
  local width=30 filled=$(( $1 * 30 / $2 ))
  (( filled > width )) && filled=$width
  printf '[%s%s] %3d%%' "$(printf '%*s' "$filled" '' | tr ' ' '#')" \
    "$(printf '%*s' $((width - filled)) '' | tr ' ' '.')" $(( ($1 > $2 ? $2 : $1) * 100 / $2 ))
}

TTY=0
[ -t 1 ] && TTY=1
killed=0
last_print=0
while kill -0 "$W0_PID" 2>/dev/null || kill -0 "$W1_PID" 2>/dev/null; do
  read -r s0 l0 < <(progress_of "$DIR/worker0.log")
  read -r s1 l1 < <(progress_of "$DIR/worker1.log")
  line="worker 0 $(bar "$s0" "$STEPS") loss $l0 | worker 1 $(bar "$s1" "$STEPS") loss $l1"
  now=$(date +%s)
  if [ "$TTY" = 1 ]; then
    printf '\r%s' "$line"
  elif (( now - last_print >= 2 )); then
    echo "$line"
    last_print=$now
  fi
  if [ "$killed" = 0 ] && (( s0 >= STEPS / 2 )); then
    killed=1
    [ "$TTY" = 1 ] && echo
    echo "== halfway (global step $s0): killing the ps with SIGKILL; its variables are gone"
    kill -9 "$PS_PID"
    wait "$PS_PID" 2>/dev/null || true
    sleep 1
    echo "== starting the ps again on port $PS_PORT; the workers recover from the last checkpoint"
    start_ps
  fi
  sleep 0.3
done
[ "$TTY" = 1 ] && echo

status=0
wait "$W0_PID" || status=$?
wait "$W1_PID" || status=$?
grep -h "recovered" "$DIR/worker0.log" "$DIR/worker1.log" | sed 's/^/   /' || true
if [ "$status" != 0 ]; then
  echo "== a worker failed (exit $status); its log:" >&2
  tail -n 20 "$DIR/worker0.log" "$DIR/worker1.log" >&2
  exit 1
fi
echo "== final metrics (one JSON line per worker):"
grep -h '^{' "$DIR/worker0.log" "$DIR/worker1.log" | sed 's/^/   /'
echo "== checkpoints in $CKPT (latest: $(sed -n 's/^model_checkpoint_path: "\(.*\)"/\1/p' "$CKPT/checkpoint")):"
./build/core/tools/weft checkpoint ls "$CKPT" 2>/dev/null | sed 's/^/   /' || ls "$CKPT" | sed 's/^/   /'

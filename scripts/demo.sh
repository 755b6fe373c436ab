#!/usr/bin/env bash
# Installs what is missing, builds what the demo needs and runs it: a real training cluster on
# loopback. One ps task and two workers (separate weft-train processes on free ports) train the
# MLP classifier asynchronously with checkpoints. Halfway, the workers hold still
# (--pause_at_step), the ps is killed with SIGKILL and started again, and the workers, let go,
# recover from the chief's last checkpoint and finish; the final metrics and the checkpoint's
# place are printed, then what to try next. Whatever the machine's speed and the length, the
# kill lands halfway: it is triggered by training progress, not by a timer.
#   WEFT_DEMO_STEPS  global steps to train (default 2000)
#   WEFT_DEMO_DIR    where the logs and checkpoints go (default: a new folder under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

STEPS=${WEFT_DEMO_STEPS:-2000}
if ! [[ "$STEPS" =~ ^[0-9]+$ ]] || (( STEPS < 20 )); then
  echo "demo: error: WEFT_DEMO_STEPS must be a whole number of at least 20 (got '$STEPS')" >&2
  exit 2
fi
DIR=${WEFT_DEMO_DIR:-$(mktemp -d /tmp/weft-demo.XXXXXX)}
mkdir -p "$DIR"
CKPT="$DIR/checkpoints"
HALF=$(( STEPS / 2 ))
SAVE=$(( STEPS / 10 > 0 ? STEPS / 10 : 1 ))

# Only the programs and plugins the demo runs; the build's log goes to a file so that the
# demo's own output reads as a story (the full build: `ninja -C build`).
echo "== building weft-train, weft and the backend plugins (log: $DIR/build.log)"
if [ ! -f build/build.ninja ]; then
  meson setup build >"$DIR/build.log" 2>&1 || { tail -n 30 "$DIR/build.log" >&2; exit 1; }
fi
targets=(core/tools/weft-train core/tools/weft:executable plugins/cpu/weft-cpu)
for plugin in vulkan cuda; do  # built where their toolkits are (meson_options.txt)
  if meson introspect build --targets 2>/dev/null | grep -q "\"name\": \"weft-$plugin\""; then
    targets+=("plugins/$plugin/weft-$plugin")
  fi
done
meson compile -C build "${targets[@]}" >>"$DIR/build.log" 2>&1 ||
  { echo "demo: error: the build failed; its last lines:" >&2; tail -n 30 "$DIR/build.log" >&2; exit 1; }

TRAIN=./build/core/tools/weft-train
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
COMMON=(--model mlp --train_steps "$STEPS" --save_steps "$SAVE" --log_every 20 --progress lines
        --pause_at_step "$HALF")

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start_ps() {
  "$TRAIN" "${HOSTS[@]}" --job_name ps >>"$DIR/ps.log" 2>&1 &
  PS_PID=$!
  PIDS+=("$PS_PID")
}

# A process's state letter from /proc (T: stopped), or "gone" once it has exited.
state_of() {
  local rest st
  if [ -r "/proc/$1/stat" ] && rest=$(cat "/proc/$1/stat" 2>/dev/null); then
    rest=${rest##*) }
    st=${rest%% *}
    if [ "$st" = Z ]; then echo gone; else echo "$st"; fi
  else
    echo gone
  fi
}

# The latest progress of a worker's log, as "STEP LOSS".
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
LAST_QUARTER=-1
# Shows both workers' progress: a redrawn line on a terminal; in a file, one line per quarter.
show_progress() {
  local s0 l0 s1 l1
  read -r s0 l0 < <(progress_of "$DIR/worker0.log")
  read -r s1 l1 < <(progress_of "$DIR/worker1.log")
  local line="worker 0 $(bar "$s0" "$STEPS") loss $l0 | worker 1 $(bar "$s1" "$STEPS") loss $l1"
  if [ "$TTY" = 1 ]; then
    printf '\r%s' "$line"
  else
    local s=$(( s0 > s1 ? s0 : s1 )) quarter
    quarter=$(( s * 4 / STEPS ))
    if (( quarter > LAST_QUARTER )); then
      echo "   $line"
      LAST_QUARTER=$quarter
    fi
  fi
}
end_progress_line() { if [ "$TTY" = 1 ]; then echo; fi; }

# Waits until every given process is stopped (T) or gone, drawing progress; fails after 300 s.
wait_until_stopped_or_gone() {
  local deadline=$(( $(date +%s) + 300 )) p st all
  while :; do
    all=1
    for p in "$@"; do
      st=$(state_of "$p")
      if [ "$st" != T ] && [ "$st" != gone ]; then all=0; fi
    done
    show_progress
    (( all )) && return 0
    if (( $(date +%s) > deadline )); then
      end_progress_line
      echo "demo: error: the workers did not reach global step $HALF in 300 s (logs in $DIR)" >&2
      return 1
    fi
    sleep 0.1
  done
}

echo "== Weft demo: 1 ps + 2 workers on loopback (ports $PS_PORT, $W0_PORT, $W1_PORT), logs in $DIR"
echo "   $TRAIN ${HOSTS[*]} --job_name ps"
echo "   $TRAIN ${HOSTS[*]} --job_name worker --task_index 0|1 ${COMMON[*]} --checkpoint_dir $CKPT"
echo "== training the MLP for $STEPS global steps, a checkpoint every $SAVE (chief: worker 0)"
start_ps
"$TRAIN" "${HOSTS[@]}" --job_name worker --task_index 0 "${COMMON[@]}" \
  --checkpoint_dir "$CKPT" >"$DIR/worker0.json" 2>"$DIR/worker0.log" &
W0_PID=$!
"$TRAIN" "${HOSTS[@]}" --job_name worker --task_index 1 "${COMMON[@]}" \
  >"$DIR/worker1.json" 2>"$DIR/worker1.log" &
W1_PID=$!
PIDS+=("$W0_PID" "$W1_PID")

wait_until_stopped_or_gone "$W0_PID" "$W1_PID"
end_progress_line
if [ "$(state_of "$W0_PID")" != T ] || [ "$(state_of "$W1_PID")" != T ]; then
  echo "demo: error: a worker ended before global step $HALF; its log:" >&2
  tail -n 20 "$DIR/worker0.log" "$DIR/worker1.log" >&2
  exit 1
fi
latest=$(sed -n 's/^model_checkpoint_path: "\(.*\)"/\1/p' "$CKPT/checkpoint" 2>/dev/null || true)
echo "== halfway: both workers hold at global step $HALF (or a step past it, training is asynchronous);"
echo "   the chief's last checkpoint is ${latest:-(none yet)}"
echo "== killing the ps with SIGKILL: the variables it held are gone"
kill -9 "$PS_PID"
wait "$PS_PID" 2>/dev/null || true
echo "== starting the ps again on port $PS_PORT, then letting the workers go on"
start_ps
kill -CONT "$W0_PID" "$W1_PID"

# The rest of the training, until both workers have ended (at most 300 s).
deadline=$(( $(date +%s) + 300 ))
while [ "$(state_of "$W0_PID")" != gone ] || [ "$(state_of "$W1_PID")" != gone ]; do
  show_progress
  if (( $(date +%s) > deadline )); then
    end_progress_line
    echo "demo: error: training did not finish in 300 s after the restart (logs in $DIR)" >&2
    exit 1
  fi
  sleep 0.1
done
show_progress
end_progress_line

status=0
wait "$W0_PID" || status=$?
wait "$W1_PID" || status=$?
echo "== what the workers said:"
grep -h -e "recovered" -e "paused" "$DIR/worker0.log" "$DIR/worker1.log" | sed 's/^/   /' || true
if [ "$status" != 0 ]; then
  echo "demo: error: a worker failed (exit $status); its log:" >&2
  tail -n 20 "$DIR/worker0.log" "$DIR/worker1.log" >&2
  exit 1
fi
recoveries=$(grep -ho '"recoveries":[0-9]*' "$DIR/worker0.json" "$DIR/worker1.json" | grep -vc '"recoveries":0' || true)
echo "== final metrics (one JSON line per worker; $recoveries of 2 workers recovered):"
sed 's/^/   /' "$DIR/worker0.json" "$DIR/worker1.json"
if [ "$recoveries" != 2 ]; then
  echo "demo: error: expected both workers to recover from the lost ps" >&2
  exit 1
fi
echo "== checkpoints in $CKPT (latest: $(sed -n 's/^model_checkpoint_path: "\(.*\)"/\1/p' "$CKPT/checkpoint")):"
./build/core/tools/weft checkpoint ls "$CKPT" 2>/dev/null | sed 's/^/   /' || ls "$CKPT" | sed 's/^/   /'
cat <<EOF
== what to try next:
   ./build/core/tools/weft devices                 # the devices placement chooses from, in order
   ./build/core/tools/weft checkpoint ls $CKPT --values
   $TRAIN --local --model mlp --train_steps 2000   # the same model in one process
   WEFT_DEMO_STEPS=400 bash scripts/demo.sh        # a shorter run (this run's logs: $DIR)
   bash scripts/test.sh                            # every test (docs/training.md, README.md)
   ./build/core/tools/weft inspect $CKPT           # the event file: losses, graph, restarts
   ./build/core/tools/weft inspect --dot $CKPT | dot -Tsvg -o $DIR/graph.svg   # placed graph
== watch this run in TensorBoard (docs/tensorboard.md), if you have it:
   tensorboard --logdir $CKPT
EOF

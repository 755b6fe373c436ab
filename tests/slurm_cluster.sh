#!/bin/bash
# A real single-node Slurm (Debian's slurm-wlm and munge) in a scratch folder: its own munge key
# and socket, slurm.conf, state and spool folders and free ports; slurmctld, slurmd and munged run
# as root and are stopped by their pid files at the end, whatever happened. It submits
# examples/slurm/weft-train.sbatch with `sbatch --wait --ntasks=3` (srun -n 3 inside: 1 ps + 2
# workers of weft-train --cluster-from slurm) and checks the trained model each worker prints and
# the chief's checkpoint. Skips with the reason where not root, the programs are missing or the
# daemons cannot start here. TAP on stdout.
# Usage: slurm_cluster.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
echo "1..4"

skip_all() {
  for n in 1 2 3 4; do echo "ok $n # SKIP $1"; done
  exit 0
}

[ "$(id -u)" = 0 ] || skip_all "a Slurm of its own needs root (slurmd runs jobs as their user)"
for p in munged slurmctld slurmd sbatch srun scontrol sinfo python3; do
  command -v "$p" >/dev/null 2>&1 || skip_all "$p is not installed (Debian: slurm-wlm, munge)"
done
[ -x "$build/core/tools/weft-train" ] || skip_all "weft-train is not built"

dir=$(mktemp -d /tmp/weft-slurm-XXXXXX)
chmod 700 "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge" "$dir/out"
chmod 700 "$dir/munge"

# Everything this test started, stopped by pid file (then SIGKILL after a bounded wait), and
# the folder removed unless the test failed (then it stays for the logs).
failed=0
stop_pidfile() {
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
cleanup() {
  [ -n "${job:-}" ] && SLURM_CONF=$dir/slurm.conf scancel "$job" 2>/dev/null
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
  # A weft-train task that outlived slurmd (it should not) is ours to end: it runs from the build.
  for pid in $(pgrep -f "^$build/core/tools/weft-train --cluster-from slurm" || true); do
    grep -qs "SLURM_JOB_ID=${job:-none}" "/proc/$pid/environ" && kill -KILL "$pid"
  done
  if [ "$failed" = 0 ]; then rm -rf "$dir"; else echo "# logs kept in $dir"; fi
}
trap cleanup EXIT

# Three free TCP ports: slurmctld, slurmd, and the training tasks' base (they use base .. base+2).
read -r ctld_port slurmd_port port_base < <(python3 - <<'EOF'
import socket
socks = []
for _ in range(3):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
ports = [s.getsockname()[1] for s in socks]
while any(ports[2] + k in ports[:2] for k in range(3)) or ports[2] > 65500:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports[2] = s.getsockname()[1]; socks.append(s)
print(*ports)
EOF
)

dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge/munge.key"
sock=$dir/munge/munge.socket
if ! munged --force --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" 2>"$dir/munge/start.err"; then
  skip_all "munged cannot start here: $(tr '\n' ' ' <"$dir/munge/start.err")"
fi

: >"$dir/plugstack.conf"
cat >"$dir/slurm.conf" <<EOF
ClusterName=weftest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CryptoType=crypto/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=weft Nodes=localhost Default=YES MaxTime=30 State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$dir/slurm.conf

if ! slurmctld -f "$dir/slurm.conf" -i 2>"$dir/slurmctld.err" || \
   ! slurmd -f "$dir/slurm.conf" -N localhost 2>"$dir/slurmd.err"; then
  skip_all "slurmctld or slurmd cannot start here: $(cat "$dir"/slurm*.err | tr '\n' ' ')"
fi

# The node registers within seconds; a loaded machine gets two minutes.
idle=0
for _ in $(seq 1 240); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1)
  case "$state" in idle*|mix*) idle=1; break ;; esac
  sleep 0.5
done
if [ "$idle" = 1 ]; then
  echo "ok 1 - a single-node Slurm is up (node localhost idle)"
else
  failed=1
  echo "not ok 1 - the node never became idle (state '$state')"
  sed 's/^/# /' "$dir/slurmctld.log" "$dir/slurmd.log" 2>/dev/null | tail -40
  for n in 2 3 4; do echo "not ok $n # node not up"; done
  exit 1
fi

ckpt=$dir/ckpt
out=$(cd "$dir/out" && WEFT_TRAIN=$build/core/tools/weft-train WEFT_PORT_BASE=$port_base \
  WEFT_CHECKPOINT_DIR=$ckpt WEFT_BIND=127.0.0.1 \
  timeout 600 sbatch --wait --parsable --ntasks=3 --time=10 \
  "$src/examples/slurm/weft-train.sbatch" \
  --model linear --train_steps 150 --sync_replicas --log_every 50 2>&1)
rc=$?
job=$(echo "$out" | head -1 | cut -d';' -f1)
if [ "$rc" = 0 ]; then
  echo "ok 2 - sbatch --wait of examples/slurm/weft-train.sbatch (job $job) exits 0"
else
  failed=1
  echo "not ok 2 - sbatch exited $rc"
  echo "$out" | sed 's/^/# /'
  tail -n 30 "$dir"/out/* "$dir/slurmd.log" 2>/dev/null | sed 's/^/# /'
fi

# Each worker's last stdout line is its JSON result: y = 2x + 1 learnt by synchronous training.
if python3 - "$dir/out" "$job" <<'EOF'
import glob, json, sys
folder, job = sys.argv[1], sys.argv[2]
results = {}
for path in sorted(glob.glob(f"{folder}/weft-train-{job}-*.out")):
    lines = [l for l in open(path) if l.startswith("{")]
    if lines:
        r = json.loads(lines[-1]); results[r["worker"]] = r
assert sorted(results) == [0, 1], f"worker results {sorted(results)}"
for w, r in results.items():
    assert r["global_step"] >= 150, r
    assert r["loss"] < 0.05 and abs(r["W"] - 2) < 0.2 and abs(r["b"] - 1) < 0.2, r
    print(f"# worker {w}: loss {r['loss']:.4f} W {r['W']:.3f} b {r['b']:.3f} "
          f"accuracy {r['accuracy']:.3f}")
EOF
then
  echo "ok 3 - both workers trained y = 2x + 1 (loss < 0.05, W and b within 0.2)"
else
  failed=1
  echo "not ok 3 - the workers' results"
  tail -n 20 "$dir"/out/* 2>/dev/null | sed 's/^/# /'
fi

if [ -s "$ckpt/checkpoint" ] && ls "$ckpt"/*.index >/dev/null 2>&1 &&
   "$build/core/tools/weft" checkpoint ls "$ckpt" 2>/dev/null | grep -q global_step; then
  echo "ok 4 - the chief's checkpoint in $(basename "$ckpt") lists global_step"
else
  failed=1
  echo "not ok 4 - no readable checkpoint in $ckpt"
  ls -la "$ckpt" 2>&1 | sed 's/^/# /'
fi
[ "$failed" = 0 ]

#!/usr/bin/env bash
# Times the TensorFlow corpus's conv nets (2-D and 3-D), pools, MLPs and LSTMs beside ONNX Runtime (`weft bench --graph
# ... --peer ort`, docs/performance.md) at batch 1 and 64, one and two threads, and prints a
# Markdown table: per row the medians over the runs of Weft's and the peer's ms per step, and of
# their ratio (Weft / ONNX Runtime, > 1: the peer is faster), with the ratios' spread.
#
#   scripts/bench-corpus.sh                             # every model, one run each
#   WEFT_BENCH_REPS=3 scripts/bench-corpus.sh > t.md    # three runs each (the median of three)
#   WEFT_BENCH_BATCHES=64 WEFT_BENCH_THREADS="1 2" scripts/bench-corpus.sh \
#     ../shared/corpus/tf/dl4j/sepconv2d_layers/*/frozen_model.pb   # these models only
#
# Environment: WEFT_BIN (the weft binary; default build/core/tools/weft), WEFT_ORT_LIB (ONNX
# Runtime's library, as `weft bench --peer-lib`; default what the bench finds itself),
# WEFT_CORPUS (default ../shared/corpus), WEFT_BENCH_REPS (1), WEFT_BENCH_BATCHES ("1 64"),
# WEFT_BENCH_THREADS ("1 2"). Progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
weft="${WEFT_BIN:-$here/build/core/tools/weft}"
corpus="${WEFT_CORPUS:-$here/../shared/corpus}"
reps="${WEFT_BENCH_REPS:-1}"
batches="${WEFT_BENCH_BATCHES:-1 64}"
threads="${WEFT_BENCH_THREADS:-1 2}"
peer=(--peer ort)
[ -n "${WEFT_ORT_LIB:-}" ] && peer+=(--peer-lib "$WEFT_ORT_LIB")

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  if [ ! -d "$corpus/tf" ]; then
    echo "bench-corpus: no corpus at $corpus/tf (set WEFT_CORPUS)" >&2
    exit 2
  fi
  shopt -s nullglob
  for d in cnn1d_layers cnn1d_nn cnn2d_layers cnn2d_nn sepconv1d_layers sepconv2d_layers \
           max_pooling1d avg_pooling1d conv2d_transpose cnn3d_layers max_pooling3d avg_pooling3d \
           conv3d_transpose_layers conv3d_transpose_nn Conv3DBackpropInputV2 lrn leaky_relu; do
    models+=("$corpus"/tf/dl4j/$d/*/frozen_model.pb)
  done
  # MLPs and LSTMs (ae_00, lstm_mnist and primitive_lstm are float64; g_07's int32 feed is a
  # permutation, which the bench refuses to invent), and the unrolled (static) RNN cells.
  for d in mnist_00 ae_00 lstm_mnist primitive_lstm; do
    models+=("$corpus"/tf/dl4j/$d/frozen_model.pb)
  done
  models+=("$corpus"/tf/dl4j/rnn/{basiclstmcell,basicrnncell,srucell}/static_*/frozen_model.pb)
  models+=("$corpus"/tf/dl4j/rnn/bstack/sta_*/frozen_model.pb)
  models+=("$corpus"/tf/dl4j/rnn/lstmcell/static_batch1_*/frozen_model.pb)
  models+=("$corpus"/tf/graphdef/{fc_layers_frozen,mlp_5_5_1_frozen,regression_frozen}.pb)
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$reps"); do
  for m in "${models[@]}"; do
    name="${m##*/tf/}"
    name="${name#dl4j/}"
    name="${name%/frozen_model.pb}"
    name="${name%.pb}"
    for b in $batches; do
      extra=()
      # Its placeholder has no shape: the bench is told it.
      case "$name" in graphdef/regression_frozen) extra=(--feed "X=$b,1") ;; esac
      for t in $threads; do
        echo "bench-corpus: run $r $name batch $b threads $t" >&2
        out="$tmp/$r.$(echo "$name" | tr / _).$b.$t.json"
        if ! "$weft" bench --graph "$m" --batch "$b" --threads "$t" "${peer[@]}" \
               "${extra[@]}" --json "$out" >/dev/null 2>"$tmp/err"; then
          echo "bench-corpus: $name batch $b threads $t failed: $(tail -1 "$tmp/err")" >&2
          continue
        fi
        printf '%s\t%s\t%s\t%s\n' "$name" "$b" "$t" "$out" >> "$tmp/index"
      done
    done
  done
done

python3 - "$tmp/index" <<'EOF'
import collections, json, statistics, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    name, b, t, path = line.rstrip("\n").split("\t")
    for r in json.load(open(path)):
        rows.setdefault((name, int(b), int(t)), []).append(r)
print("| model | batch | threads | Weft ms | ORT ms | Weft/ORT | spread | runs |")
print("|---|---:|---:|---:|---:|---:|---|---:|")
for (name, b, t), rs in rows.items():
    w = [r["weft"] for r in rs if not r["skipped"]]
    p = [r["peer"] for r in rs if r.get("peer")]
    q = [r["peer_ratio"] for r in rs if r.get("peer_ratio")]
    if not q:
        note = next((r.get("peer_note") or r.get("note") for r in rs), "") or "no peer figure"
        wm = "%.4f" % statistics.median(w) if w else "-"
        print(f"| {name} | {b} | {t} | {wm} | - | - | {note} | {len(rs)} |")
        continue
    print(f"| {name} | {b} | {t} | {statistics.median(w):.4f} | {statistics.median(p):.4f} | "
          f"{statistics.median(q):.2f} | {min(q):.2f}-{max(q):.2f} | {len(q)} |")
EOF

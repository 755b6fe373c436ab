/* Internal interface of `weft bench`: the harness (timing, statistics, reports) and the
 * benchmark groups it runs. Every figure is measured beside a baseline in the same run. */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "weft/weft.h"

typedef struct bench_peer bench_peer_t;

typedef struct bench_options {
  /* --only NAME..., NULL-terminated, or NULL for every benchmark: exact names, groups (NAME or
   * NAME/: the names starting with "NAME/"), or globs (* and ?) over the whole name. */
  const char *const *only;
  const char *device; /* device spec for kernel benchmarks, e.g. "/device:CPU:0" */
  bool quick;
  int warmup;
  int runs;
  int threads;         /* --threads: Weft's, the baselines' and the peer's threads (>= 1) */
  const char *peer_name; /* --peer NAME, or NULL when no peer was asked for */
  bench_peer_t *peer;  /* that peer, opened; NULL when it could not be (peer_why says why) */
  const char *peer_why;
} bench_options_t;

/* Summary of repeated timings of one side (Weft or baseline), in the benchmark's unit. */
typedef struct bench_stats {
  double min, median, max;
  int runs;
  int calls_per_run; /* calls of the body each run averages (short bodies are called several
                        times so that a run lasts about 20 ms); 0 counts as 1 */
} bench_stats_t;

/* A row's verdict against its target: the table's met/missed column and the JSON's "target". */
typedef enum bench_target {
  BENCH_NO_TARGET = 0, /* a report without a target (or the row was not measured) */
  BENCH_TARGET_MET,
  BENCH_TARGET_MISSED,
} bench_target_t;

typedef struct bench_result {
  char *name;       /* "matmul/1024" */
  char *params;     /* "n=1024 dtype=float32 device=/device:CPU:0" */
  char *unit;       /* "GFLOP/s", "GB/s", "us", "s", "bytes" */
  bool higher_is_better;
  bench_stats_t weft;
  bench_stats_t baseline; /* runs == 0: no baseline (absolute figure) */
  char *baseline_name;
  char *note;       /* target, skip reason, or NULL */
  bool skipped;
  bench_target_t target; /* whether the row met the target its note states */
  bench_stats_t peer;     /* runs == 0: no peer figure (peer_note says why, when one was asked) */
  char *peer_note;        /* why the peer column is empty, or NULL */
} bench_result_t;

typedef struct bench_report bench_report_t;

/* A timed body: returns seconds taken for one repetition, or a negative value on failure (with
 * *error set). */
typedef double (*bench_body_fn)(void *arg, weft_status_t **error);

/* Runs body warmup times, then `runs` runs, and summarises the runs as value = scale / seconds
 * (throughput) or value = seconds * scale (latency) depending on `throughput`. A run calls body
 * often enough to last about 20 ms (judged from the last warm-up call; one call when there is
 * no warm-up) and takes the mean of its calls' seconds. */
bool bench_measure(const bench_options_t *o, bench_body_fn body, void *arg, double scale,
                   bool throughput, bench_stats_t *out, weft_status_t **error);

/* The same for a row's two sides at once: after both warm up, runs alternate between them
 * (W B, B W, W B, ...) so that the machine's drift during the row falls on both alike. */
bool bench_measure_pair(const bench_options_t *o, bench_body_fn weft_body, void *weft_arg,
                        bench_body_fn base_body, void *base_arg, double scale, bool throughput,
                        bench_stats_t *weft, bench_stats_t *base, weft_status_t **error);

/* The same for up to three sides of a row at once (Weft, the baseline, the peer), any of the
 * last two absent (NULL body): after all warm up, runs rotate among them so that drift weighs
 * on every side alike. */
bool bench_measure_row(const bench_options_t *o, bench_body_fn weft_body, void *weft_arg,
                       bench_body_fn base_body, void *base_arg, bench_body_fn peer_body,
                       void *peer_arg, double scale, bool throughput, bench_stats_t *weft,
                       bench_stats_t *base, bench_stats_t *peer, weft_status_t **error);

/* A session of a graph, the one tensor a step fetches and the one it feeds (bench_kernels.c):
 * the Weft side of the kernel and model rows. fetch and feed_name are owned by the graph (node
 * names); feed, when set, is the case's reference (bench_case_feed). The data input is fed
 * on every step, as the peer's is and as a model's is: built as a Const, constant folding
 * (docs/performance.md, "Constant folding") would compute the whole row once, at plan time. */
typedef struct bench_case {
  weft_graph_t *graph;
  weft_session_t *session;
  const char *fetch;
  const char *feed_name;
  weft_tensor_t *feed;
} bench_case_t;
/* A Placeholder `name` of value's dtype and shape, fed with value on every step of c (c takes a
 * reference to value). */
weft_output_t bench_case_feed(bench_case_t *c, const char *name, weft_tensor_t *value,
                              weft_status_t **status);
/* One step of the case (a bench_body_fn: arg is a bench_case_t). */
double bench_run_case(void *arg, weft_status_t **error);
/* The fetch of one more step, for comparing with a peer's output (unref); NULL if it failed. */
weft_tensor_t *bench_case_output(bench_case_t *c);

/* Adds a result; the report takes ownership of the strings (g_strdup'ed by the caller). */
void bench_report_add(bench_report_t *r, bench_result_t *res);
bool bench_selected(const bench_options_t *o, const char *name);
/* Adds a measured row (base may be NULL for an absolute figure); strings are copied. */
void bench_add_row(bench_report_t *r, const char *name, const char *params, const char *unit,
                   bool higher_is_better, const bench_stats_t *weft, const bench_stats_t *base,
                   const char *base_name, const char *note);
/* The verdict of the row added last (by bench_add_row), judged by its caller: `met` says whether
 * it met the target its note states. */
void bench_set_target_met(bench_report_t *r, bool met);
/* The same for a target on the row's ratio to its baseline (oriented like the table's: > 1
 * means Weft is better): met when ratio >= min_ratio. */
void bench_set_target_ratio(bench_report_t *r, double min_ratio);
/* The peer's figure of the row added last, or (peer NULL) why it has none: note, copied. */
void bench_set_peer(bench_report_t *r, const bench_stats_t *peer, const char *note);
/* Adds a row that was not measured, with the reason. */
void bench_add_skip(bench_report_t *r, const char *name, const char *why);
/* Adds a "failed: <message>" row; takes st. */
void bench_add_failure(bench_report_t *r, const char *name, weft_status_t *st);
double bench_now(void); /* seconds, monotonic (or the thread's CPU time: bench_clock_is_thread) */
/* Whether WEFT_BENCH_CLOCK=thread asked for the calling thread's CPU time (bench.c). */
bool bench_clock_is_thread(void);

/* Benchmark groups (bench_kernels.c, bench_session.c, bench_distributed.c). */
void bench_run_kernels(const bench_options_t *o, bench_report_t *r);
void bench_run_session(const bench_options_t *o, bench_report_t *r);
/* A program installed beside the weft binary (weftd, weft-train: core/tools in the build tree,
 * bin once installed); NULL when /proc/self/exe cannot be read. g_free(). */
char *bench_tool_path(const char *name);
/* A loopback port nobody listens on now (0 on failure); another process may take it first. */
int bench_free_port(void);
/* n distinct such ports into ports[0..n-1]; false on failure. */
bool bench_free_ports(int n, int *ports);
/* Asynchronous training by weft-train processes beside weft-train --local (bench_training.c);
 * called by bench_run_session. */
void bench_run_training(const bench_options_t *o, bench_report_t *r);
/* A bench_body_fn timing `repeat` weft_session_run calls fetching `fetch`, feeding `feed_value`
 * (borrowed) to `feed` when feed is not NULL (bench_session.c). */
typedef struct bench_steps {
  weft_session_t *session;
  const char *fetch;
  int repeat;
  const char *feed;
  weft_tensor_t *feed_value;
} bench_steps_t;
double bench_run_steps(void *arg, weft_status_t **error);
/* Session.run from Python beside the C API (bench_python.c); called by bench_run_session. */
void bench_run_python(const bench_options_t *o, bench_report_t *r);
/* Remote step and tensor transfers against weftd children; called by bench_run_session. */
void bench_run_distributed(const bench_options_t *o, bench_report_t *r);

/* `weft bench --netns-child MODE ...`: one side of a netns_transfer row, run by the bench itself
 * in a network namespace (bench_netns.c); not for users. */
int bench_netns_child_main(int argc, char **argv);
/* The attack rows: a good client's step p99 unloaded and while unauthenticated child processes
 * post gzip bodies of 1 GiB of zeros (bench_attack.c); called by bench_run_distributed. */
void bench_run_attack(const bench_options_t *o, bench_report_t *r);
/* `weft bench --attack-child HOST:PORT`: one such attacker, run by the bench; not for users. */
int bench_attack_child_main(int argc, char **argv);

/* ONNX Runtime as the peer (bench_ort.c): the library at lib_path, else $WEFT_ORT_LIB, else
 * the copy scripts/install-ort-peer.sh made in the build tree, else the loader's path. NULL and
 * *why (g_free) when it cannot be used. Close with bench_peer_close. */
bench_peer_t *bench_peer_open(const char *lib_path, char **why);
void bench_peer_close(bench_peer_t *peer);
const char *bench_peer_version(const bench_peer_t *peer); /* "1.30.0"; owned by peer */
const char *bench_peer_path(const bench_peer_t *peer);

/* An ONNX model (opset 13, float tensors) built in memory for the peer. */
typedef struct bench_onnx bench_onnx_t;
typedef struct bench_onnx_ints { /* an INTS attribute, or (n = -1) the INT values[0] */
  const char *name;
  int n;
  const int64_t *values;
} bench_onnx_ints_t;
bench_onnx_t *bench_onnx_new(void);
void bench_onnx_input(bench_onnx_t *m, const char *name, int rank, const int64_t *dims);
void bench_onnx_output(bench_onnx_t *m, const char *name, int rank, const int64_t *dims);
/* ONNX's TensorProto element type of dtype (float32, float64, float16, int32, int64, bool); 0
 * for the others. */
int bench_onnx_elem_type(weft_dtype_t dtype);
/* Graph inputs and outputs of another element type than float32. */
void bench_onnx_input_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                            const int64_t *dims);
void bench_onnx_output_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                             const int64_t *dims);
/* A constant of dtype (bench_onnx_elem_type's), data copied. */
void bench_onnx_initializer_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                                  const int64_t *dims, const void *data);
/* A constant (ONNX Runtime may pre-pack it, as it does weights); data is copied. */
void bench_onnx_initializer(bench_onnx_t *m, const char *name, int rank, const int64_t *dims,
                            const float *data);
/* The same for an int64 constant (shapes, axes, pads). */
void bench_onnx_initializer_int64(bench_onnx_t *m, const char *name, int rank,
                                  const int64_t *dims, const int64_t *data);
/* A node of the default domain; inputs NULL-terminated; attrs ended by a NULL name, or NULL. */
void bench_onnx_node(bench_onnx_t *m, const char *op, const char *const *inputs,
                     const char *output, const bench_onnx_ints_t *attrs);
typedef struct bench_onnx_float { /* a FLOAT attribute */
  const char *name;
  float value;
} bench_onnx_float_t;
/* The same with FLOAT attributes too (ended by a NULL name, or NULL). */
void bench_onnx_node_floats(bench_onnx_t *m, const char *op, const char *const *inputs,
                            const char *output, const bench_onnx_ints_t *attrs,
                            const bench_onnx_float_t *floats);
/* The same with several outputs (NULL-terminated; the node is named after the first). */
void bench_onnx_node_outputs(bench_onnx_t *m, const char *op, const char *const *inputs,
                             const char *const *outputs, const bench_onnx_ints_t *attrs,
                             const bench_onnx_float_t *floats);
/* The ModelProto's bytes; frees m. */
GBytes *bench_onnx_finish(bench_onnx_t *m);

/* A peer session of one model with o->threads intra-op threads, fed `inputs` (tensors of the
 * dtypes bench_onnx_elem_type maps;
 * the case keeps a reference and feeds their data without copying) under input_names, fetching
 * output_name. Takes model (unref). NULL when no peer is asked for or it is absent (*why: the
 * reason, or NULL when no peer was asked for) or the session failed (*why: "failed: ..."); g_free
 * *why. */
typedef struct bench_peer_case bench_peer_case_t;
bench_peer_case_t *bench_peer_row_case(const bench_options_t *o, GBytes *model, int n_inputs,
                                       const char *const *input_names, weft_tensor_t **inputs,
                                       const char *output_name, char **why);
/* Runs per timed call (the step rows time a call of many runs, as Weft's side does). */
void bench_peer_case_set_repeat(bench_peer_case_t *c, int repeat);
double bench_peer_case_run(void *arg, weft_status_t **error); /* a bench_body_fn */
/* NULL when the peer's latest output equals expected[0..n) within atol + rtol * |expected|;
 * otherwise a status naming the worst element. */
weft_status_t *bench_peer_case_check(bench_peer_case_t *c, const float *expected, int64_t n,
                                     double rtol, double atol);
/* The same against a tensor of any dtype bench_onnx_elem_type maps, compared in that dtype (the
 * peer's output must be of its ONNX element type). */
weft_status_t *bench_peer_case_check_tensor(bench_peer_case_t *c, const weft_tensor_t *expected,
                                            double rtol, double atol);
void bench_peer_case_free(bench_peer_case_t *c);
/* After the row's bench_add_row: checks the peer's output against Weft's `expected` and sets
 * the row's peer column (stats, or "failed: <worst element>"), or why it is empty; frees c and
 * why. */
void bench_peer_finish(bench_report_t *r, const bench_options_t *o, bench_peer_case_t *c,
                       char *why, const bench_stats_t *peer, const weft_tensor_t *expected,
                       double rtol, double atol);

/* A frozen TensorFlow graph's computation from its feeds to one fetch (bench_graph_export.c),
 * all borrowed: the session runs graph, feed_values are what it is fed (float32 tensors, their
 * shapes fixed), fetch_value the fetch's value in such a step (for its shape). */
typedef struct bench_graph_io {
  weft_graph_t *graph;
  weft_session_t *session;
  int n_feeds;
  const weft_output_t *feeds;
  weft_tensor_t *const *feed_values;
  weft_output_t fetch;
  const weft_tensor_t *fetch_value;
} bench_graph_io_t;
/* The ONNX name of a Weft tensor in the exported model: the node's name for output 0, else
 * "node:k" (g_free). */
char *bench_onnx_tensor_name(weft_output_t o);
/* The computation as an ONNX model (opset 13), inputs named after the feeds and the output after
 * the fetch (bench_onnx_tensor_name): *model (g_bytes_unref), or UNIMPLEMENTED naming the op and
 * node it cannot export, or the status of evaluating a constant. */
weft_status_t *bench_graph_to_onnx(const bench_graph_io_t *io, GBytes **model);

/* `weft bench --graph` (bench_graph.c): a frozen graph (or a SavedModel's signature) timed in
 * Weft and, with --peer ort, in ONNX Runtime on the same seeded random inputs. */
typedef struct bench_graph_options {
  const char *graph_path;       /* --graph FILE.pb, or NULL */
  const char *saved_model_dir;  /* --saved-model DIR, or NULL */
  const char *const *feeds;     /* --feed NAME=SHAPE..., NULL-terminated, or NULL */
  const char *const *fetches;   /* --fetch NAME..., NULL-terminated, or NULL */
  int batch;                    /* --batch: the size of unknown (-1) dimensions */
} bench_graph_options_t;
/* Adds the row (or a failure naming what went wrong); false on a usage error (*why, g_free). */
bool bench_run_graph(const bench_options_t *o, const bench_graph_options_t *g,
                     bench_report_t *r, char **why);

/* Entry point behind `weft bench`. */
int weft_bench_main(int argc, char **argv);

#endif /* WEFT_BENCH_H */

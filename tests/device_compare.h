/* Shared helpers for the device backend tests (test_cuda.c, test_vulkan.c): build one op on a
 * device through the public API, run it, and compare what it gives with the same op on the CPU
 * within tolerances. Both tests check the same thing (a device agrees with the CPU), so they
 * share one way of building, running and comparing; the device under test is set once with
 * dc_set_device. */
#ifndef WEFT_TESTS_DEVICE_COMPARE_H
#define WEFT_TESTS_DEVICE_COMPARE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "weft/weft.h"

#define CPU_DEV "/device:CPU:0"
#define CPU_FULL "/job:localhost/replica:0/task:0/device:CPU:0"

#define OK(expr)                                                   \
  do {                                                             \
    weft_status_t *st_ = (expr);                                   \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));   \
  } while (0)

/* Sets the device the comparisons run on, by type ("CUDA", "VULKAN"): ordinal 0 of it. */
void dc_set_device(const char *device_type);

/* Ordinal 0 of device_type in weft_devices, or NULL (borrowed from the library). */
const weft_device_info_t *dc_find_device(const char *device_type);

/* Restarts the pseudo-random sequence, so that a test can draw the same values twice. */
void dc_seed(guint64 seed);
double dc_rnd(double lo, double hi);

/* New tensors (the caller unrefs them). dc_rand_t: values in [lo, hi]; integers are whole
 * numbers, bools 0/1. */
weft_tensor_t *dc_rand_t(weft_dtype_t dtype, int rank, const int64_t *dims, double lo, double hi);
weft_tensor_t *dc_rand_f32(int rank, const int64_t *dims, double lo, double hi);
weft_tensor_t *dc_rand_i32(int rank, const int64_t *dims, int lo, int hi);
weft_tensor_t *dc_rand_bool(int rank, const int64_t *dims);
weft_tensor_t *dc_vec_f32(int n, const float *v);
weft_tensor_t *dc_vec_i32(int n, const int32_t *v);

bool dc_is_float(weft_dtype_t t);
const char *dc_dtype_of(weft_tensor_t *t);
/* "[2,3]"; the caller g_frees it. */
char *dc_shape_str(weft_tensor_t *t);

typedef void (*attrs_fn)(weft_op_builder_t *b, const void *arg);

typedef struct op_run {
  const char *op;
  weft_tensor_t *const *ins; /* each becomes a Const input (at most 8) */
  int n_ins;
  attrs_fn attrs;
  const void *arg;
  const char *input_device; /* where the Consts go; NULL: with the op */
  int list_len;             /* the first list_len inputs form one list argument (AddN, Pack) */
  int fetch_index;          /* which output to fetch */
} op_run_t;

#define RUN(OP, INS, N, ATTRS, ARG) \
  { .op = (OP), .ins = (INS), .n_ins = (N), .attrs = (ATTRS), .arg = (ARG) }

/* A new session of g with soft placement on; asserts that it could be made. */
weft_session_t *dc_soft_session(weft_graph_t *g);

/* Builds the op on `device`, runs it, and returns output fetch_index in *out (a new reference)
 * or the error; *placed (if asked for, g_free it) is the device the op ran on. */
weft_status_t *dc_run_on(const char *device, const op_run_t *r, weft_tensor_t **out,
                         char **placed);

/* Runs the op on `device` with its inputs fed to Placeholders of unknown shape (on the CPU), so
 * that the kernel, not shape inference, meets what is wrong with them. */
weft_status_t *dc_run_fed(const char *device, const op_run_t *r);

/* Compares element by element: floats within atol + rtol * |want| (NaN matching NaN, infinities
 * matching exactly), everything else exactly. Marks the test failed (and says where) if not. */
bool dc_same_values(const char *what, weft_tensor_t *got, weft_tensor_t *want, double rtol,
                    double atol);

/* Runs the op on the device under test and on the CPU and compares; checks it really ran on the
 * device under test. */
bool dc_check_op(const char *what, const op_run_t *r, double rtol, double atol);

/* Runs the op on the device under test and on the CPU with fed inputs and checks both fail with
 * the same code, the device's message naming `substr` and the device. */
void dc_check_error(const char *what, const op_run_t *r, const char *substr);

/* Attribute setters for op_run_t.attrs; arg points at what they set. */
void dc_set_dst_t(weft_op_builder_t *b, const void *arg);       /* weft_dtype_t */
void dc_set_string(weft_op_builder_t *b, const void *arg);      /* {name, value} */
void dc_set_transposes(weft_op_builder_t *b, const void *arg);  /* bool[2] */
void dc_set_adj(weft_op_builder_t *b, const void *arg);         /* {"adj_x", "0|1", "adj_y", ..} */
void dc_set_keep_dims(weft_op_builder_t *b, const void *arg);   /* bool */
void dc_set_output_type(weft_op_builder_t *b, const void *arg); /* weft_dtype_t */
void dc_set_num_split(weft_op_builder_t *b, const void *arg);   /* int */
void dc_set_num(weft_op_builder_t *b, const void *arg);         /* int */
void dc_set_axis(weft_op_builder_t *b, const void *arg);        /* int */

/* Scenarios both backends go through, on the device under test (the caller skips them where
 * the device is missing). */

/* 700 dependent adds, then 8 parallel branches of 50 adds over branch_elems floats summed by
 * AddN, run `runs` times with 8 inter-op threads. */
void dc_check_long_chain_and_parallel(int64_t branch_elems, int runs);

/* An [m, k] x [k, n] MatMul on the device whose operands come from the CPU and whose product
 * goes back there, against the same on the CPU. */
void dc_check_cross_device_matmul(int64_t m, int64_t k, int64_t n);

/* /gpu:0 and unpinned ops land on the device under test; skipped when others_may_outrank and
 * another gpu-like backend is present. */
void dc_check_gpu_alias(bool others_may_outrank);

/* A float32 variable on the device: uninitialised reads fail (FAILED_PRECONDITION),
 * IsVariableInitialized, AssignAdd/AssignSub across runs, reads feeding other ops, and
 * re-initialising. */
void dc_check_float_variable(void);

/* AddV2 of fed [3] and [4] floats pinned to the device fails with INVALID_ARGUMENT, the CPU's
 * "Incompatible shapes" message and the device's name. */
void dc_check_incompatible_add(void);

/* `unsupported` (3 elements of a dtype the device has no AddV2 for) added to itself on the
 * device: without soft placement INVALID_ARGUMENT naming error_substr; with it the sum (element
 * 2 being want_sum_2) and a string Const go to the CPU while a float Const stays on the device. */
void dc_check_soft_placement(weft_tensor_t *unsupported, double want_sum_2,
                             const char *error_substr);

/* The unary ops both backends implement, with input ranges inside their domains; `ints`: the op
 * also takes integers. */
typedef struct dc_unary_case {
  const char *op;
  double lo, hi;
  bool ints;
} dc_unary_case_t;
extern const dc_unary_case_t dc_unary_cases[];
extern const size_t dc_n_unary_cases;

#endif

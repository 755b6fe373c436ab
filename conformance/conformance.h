/* conformance.h: what the files of weft-conformance share: value arrays in double precision (the
 * inputs and the reference results), deterministic input generators, the description of one
 * case (op, inputs, attributes, expected outputs, tolerances), the runner that sends a case
 * through the public runtime path on one device, result records and reports, the per-op case
 * suites and the ONNX node-test runner.
 *
 * Names here start with cf_; everything else in the program is static to its file. */
#ifndef WEFT_CONFORMANCE_H
#define WEFT_CONFORMANCE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "weft/weft.h"

/* ---------------------------------------------------------------------------------------------
 * Arrays: a tensor's values as doubles (exact for every integer of magnitude below 2^53) or, for
 * string tensors, as byte strings. References compute on these. */

typedef struct cf_array {
  weft_dtype_t dtype;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t n;
  double *v;     /* n values (bools as 0/1); NULL for strings */
  GString **s;   /* n byte strings for WEFT_DT_STRING; NULL otherwise */
} cf_array_t;

/* Zero-filled (empty strings). The caller owns the array and frees it with cf_array_free. */
cf_array_t *cf_array_new(weft_dtype_t dtype, int rank, const int64_t *dims);
cf_array_t *cf_array_new_like(const cf_array_t *like, weft_dtype_t dtype);
cf_array_t *cf_array_scalar(weft_dtype_t dtype, double value);
/* A rank-1 array of n values. */
cf_array_t *cf_array_vec(weft_dtype_t dtype, int64_t n, const double *values);
/* An int32 or int64 vector from integers (axes, shapes, permutations). */
cf_array_t *cf_array_ints(weft_dtype_t dtype, int64_t n, const int64_t *values);
cf_array_t *cf_array_copy(const cf_array_t *a);
/* Same values, another shape of the same element count. */
cf_array_t *cf_array_reshape(const cf_array_t *a, int rank, const int64_t *dims);
void cf_array_free(cf_array_t *a);
/* "[2,3]" into a static-free buffer the caller g_free()s. */
char *cf_shape_str(int rank, const int64_t *dims);
int64_t cf_num_elements(int rank, const int64_t *dims);
/* Row-major strides (in elements) of a shape. */
void cf_strides(int rank, const int64_t *dims, int64_t *strides);

/* A host tensor holding the array's values in its dtype's storage (the caller unrefs it). */
weft_tensor_t *cf_array_to_tensor(const cf_array_t *a, weft_status_t **status);
/* The values of a host tensor (a new array the caller frees); NULL for an unknown dtype. */
cf_array_t *cf_array_from_tensor(const weft_tensor_t *t);
/* value as the dtype stores it: rounded to float/half/bfloat16, integers truncated toward zero
 * and wrapped modulo 2^bits (two's complement), bools 0/1. NaN and +-Inf stay for floats. */
double cf_round_to_dtype(weft_dtype_t dtype, double value);
/* Rounds every value of a in place (references call it on their results). */
void cf_array_round(cf_array_t *a);

bool cf_dtype_is_float(weft_dtype_t dtype);   /* float, double, half, bfloat16 */
bool cf_dtype_is_int(weft_dtype_t dtype);     /* signed or unsigned integers */
bool cf_dtype_is_signed(weft_dtype_t dtype);  /* floats and signed integers */
/* The smallest and largest finite values of a dtype (for integers: exactly representable ones
 * as doubles, within +-2^53). */
double cf_dtype_min(weft_dtype_t dtype);
double cf_dtype_max(weft_dtype_t dtype);

/* ---------------------------------------------------------------------------------------------
 * Deterministic inputs. Every case seeds its own generator from its op, dtype and name, so a
 * failing case reproduces alone (--op/--case) with the same numbers. */

typedef struct cf_rng {
  uint64_t state;
} cf_rng_t;

void cf_rng_seed(cf_rng_t *rng, const char *a, const char *b, const char *c);
uint64_t cf_rng_next(cf_rng_t *rng);
double cf_rng_uniform(cf_rng_t *rng, double lo, double hi); /* [lo, hi) */
int64_t cf_rng_int(cf_rng_t *rng, int64_t lo, int64_t hi);  /* [lo, hi] */

typedef enum cf_gen_kind {
  CF_GEN_UNIFORM = 0, /* uniform in [lo, hi], integers within the dtype's range */
  CF_GEN_NONZERO,     /* as UNIFORM but never 0 (divisors) */
  CF_GEN_POSITIVE,    /* (0, hi] (logarithms, square roots) */
  CF_GEN_SPECIAL,     /* the dtype's special values (NaN, +-Inf, +-0, denormals, extremes)
                         cycled, mixed with ordinary values */
  CF_GEN_ARANGE,      /* 0, 1, 2, ... (data movement: every element distinct) */
  CF_GEN_BOOL,        /* random 0/1 */
} cf_gen_kind_t;

typedef struct cf_gen {
  cf_gen_kind_t kind;
  double lo, hi; /* 0,0: the kind's default range for the dtype */
} cf_gen_t;

/* New array of the dtype and shape filled by the generator (strings: short distinct words). */
cf_array_t *cf_gen_array(cf_rng_t *rng, weft_dtype_t dtype, int rank, const int64_t *dims,
                         cf_gen_t gen);
/* Shorthand: uniform in [lo, hi] (clamped to the dtype). */
cf_array_t *cf_gen_uniform(cf_rng_t *rng, weft_dtype_t dtype, int rank, const int64_t *dims,
                           double lo, double hi);

/* ---------------------------------------------------------------------------------------------
 * Tolerances and comparison. */

typedef struct cf_tol {
  double rtol;     /* |got - want| <= atol + rtol * |want| elementwise (numpy's allclose) */
  double atol;
  double max_nmse; /* sum (got-want)^2 / sum want^2 over finite elements */
} cf_tol_t;

/* The default for a dtype: exact for integers and bools, a few ulps for floats. */
cf_tol_t cf_tol_default(weft_dtype_t dtype);
/* Loosens t by a factor (>= 1) on rtol, atol and nmse. */
cf_tol_t cf_tol_scale(cf_tol_t t, double factor);

typedef struct cf_compare {
  bool ok;
  double max_abs_err; /* over finite elements; 0 when none */
  double max_rel_err;
  double nmse;
  char *message;      /* why not ok (first offending element), or NULL; g_free() */
} cf_compare_t;

/* Compares got with want: dtypes, shapes, NaN/Inf positions, allclose and NMSE. Folds the errors
 * into *acc (max of max errors), so several outputs give one record. */
void cf_compare_arrays(const cf_array_t *got, const cf_array_t *want, cf_tol_t tol,
                       cf_compare_t *acc, const char *what);

/* ---------------------------------------------------------------------------------------------
 * Cases. */

#define CF_MAX_INPUTS 16
#define CF_MAX_OUTPUTS 8
#define CF_MAX_ATTRS 12

typedef enum cf_attr_kind {
  CF_ATTR_INT,
  CF_ATTR_FLOAT,
  CF_ATTR_BOOL,
  CF_ATTR_TYPE,
  CF_ATTR_STRING,
  CF_ATTR_INTS,
  CF_ATTR_FLOATS,
  CF_ATTR_SHAPE,
  CF_ATTR_TENSOR,
  CF_ATTR_TYPES,  /* list(type): ints holds the n dtypes */
  CF_ATTR_SHAPES, /* list(shape): ints holds n runs of rank, dims... */
  CF_ATTR_STRINGS, /* list(string): s holds the n strings, each ended by '\n' */
} cf_attr_kind_t;

typedef struct cf_attr {
  char *name;
  cf_attr_kind_t kind;
  int64_t i;
  double f;
  char *s;
  int n;
  int64_t *ints;
  float *floats;
  cf_array_t *tensor; /* owned */
} cf_attr_t;

typedef struct cf_case cf_case_t;
struct cf_case {
  char *op;         /* the op under test */
  char *name;       /* what this case checks: "odd_1023", "bcast_row", "nan_inf" */
  weft_dtype_t dtype; /* the dtype the case is filed under */
  int n_inputs;
  cf_array_t *inputs[CF_MAX_INPUTS]; /* owned */
  bool is_const[CF_MAX_INPUTS];      /* a Const node rather than a fed Placeholder */
  bool unknown_shape[CF_MAX_INPUTS]; /* a Placeholder of unknown shape (kernel-side checks) */
  /* How the flat inputs group into the op's input args: 0 = one tensor, k >= 1 = a list of k.
   * n_args == 0 means one arg per input. */
  int n_args;
  int arg_len[CF_MAX_INPUTS];
  int n_attrs;
  cf_attr_t attrs[CF_MAX_ATTRS];
  int n_outputs;                          /* outputs fetched (0..n_outputs-1) */
  cf_array_t *expected[CF_MAX_OUTPUTS];   /* owned; NULL: fetched but not compared */
  cf_tol_t tol;
  weft_code_t expect_code; /* WEFT_OK, or the error the run must end with */
  char *expect_message;    /* a substring the error must contain, or NULL */
  /* Inputs that are variables: a VariableV2 on the device, initialised from the input's value
   * before the op runs; expected_var[i] (owned, may be NULL) is its value after the run. */
  bool is_variable[CF_MAX_INPUTS];
  cf_array_t *expected_var[CF_MAX_INPUTS];
  /* A property check used instead of expected values (random ops): NULL when the fetched
   * outputs are right, else why not (the caller g_free()s it). */
  char *(*check)(const cf_case_t *c, cf_array_t *const *outputs, int n_outputs);
  /* An "unsupported" result covers only this case, not the op/dtype's other cases (Cast: one
   * destination dtype may lack a kernel while the next has one). */
  bool unsupported_per_case;
};

/* New case for op/name/dtype with the dtype's default tolerance. */
cf_case_t *cf_case_new(const char *op, const char *name, weft_dtype_t dtype);
void cf_case_free(cf_case_t *c);
/* Adds an input (the case takes ownership of a). Returns its index. */
int cf_case_input(cf_case_t *c, cf_array_t *a);
int cf_case_const_input(cf_case_t *c, cf_array_t *a);
/* A ref input: a variable holding a's value (see is_variable); want (may be NULL) is its value
 * after the run. */
int cf_case_variable_input(cf_case_t *c, cf_array_t *a, cf_array_t *want);
/* Declares that the next k inputs (from input index `first`) form one list arg. */
void cf_case_args(cf_case_t *c, int n_args, const int *arg_len);
void cf_case_attr_int(cf_case_t *c, const char *name, int64_t v);
void cf_case_attr_float(cf_case_t *c, const char *name, double v);
void cf_case_attr_bool(cf_case_t *c, const char *name, bool v);
void cf_case_attr_type(cf_case_t *c, const char *name, weft_dtype_t v);
void cf_case_attr_string(cf_case_t *c, const char *name, const char *v);
void cf_case_attr_ints(cf_case_t *c, const char *name, const int64_t *v, int n);
void cf_case_attr_floats(cf_case_t *c, const char *name, const float *v, int n);
void cf_case_attr_shape(cf_case_t *c, const char *name, int rank, const int64_t *dims);
void cf_case_attr_tensor(cf_case_t *c, const char *name, cf_array_t *value); /* takes value */
void cf_case_attr_types(cf_case_t *c, const char *name, const weft_dtype_t *v, int n);
/* A list(string) of n strings without '\n' in them. */
void cf_case_attr_strings(cf_case_t *c, const char *name, const char *const *v, int n);
/* n shapes: shape k has rank ranks[k] (>= 0) and dims dims[k]. */
void cf_case_attr_shapes(cf_case_t *c, const char *name, const int *ranks,
                         const int64_t *const *dims, int n);
/* Adds an expected output (the case takes ownership; NULL: fetched, not compared). */
void cf_case_expect(cf_case_t *c, cf_array_t *want);
/* The run must fail with code (and a message containing substring, if not NULL). */
void cf_case_expect_error(cf_case_t *c, weft_code_t code, const char *substring);
/* Attr lookups for references (fallback when absent). */
int64_t cf_case_int(const cf_case_t *c, const char *name, int64_t fallback);
double cf_case_float(const cf_case_t *c, const char *name, double fallback);
const char *cf_case_string(const cf_case_t *c, const char *name, const char *fallback);
const cf_attr_t *cf_case_find_attr(const cf_case_t *c, const char *name);

/* ---------------------------------------------------------------------------------------------
 * Results. */

typedef enum cf_status {
  CF_PASSED = 0,
  CF_FAILED,
  CF_UNSUPPORTED,
  CF_XFAIL,  /* failed, and listed as an expected failure */
  CF_XPASS,  /* listed as an expected failure, but passed */
  CF_N_STATUS
} cf_status_t;

const char *cf_status_name(cf_status_t s); /* "passed", "failed", "unsupported", ... */

typedef struct cf_record {
  char *suite;   /* "cases" or "onnx" */
  char *op;
  char *device;  /* "CPU:0" */
  char *dtype;   /* "float32", or "" when not applicable */
  char *name;    /* the case, or the ONNX test folder */
  cf_status_t status;
  double max_abs_err, max_rel_err, nmse; /* NAN when not computed */
  char *message;
  char *xfail_reason; /* for XFAIL/XPASS: the list's reason */
} cf_record_t;

typedef struct cf_report cf_report_t;

cf_report_t *cf_report_new(void);
void cf_report_free(cf_report_t *r);
/* Reads <dir>/<DEVICE_TYPE>.txt for each device type seen; a missing file is an empty list.
 * Lines: "op dtype case reason..." with glob patterns (*, ?); '#' starts a comment. */
void cf_report_load_expected(cf_report_t *r, const char *dir, const char *device_type);
/* Files a result, turning a failure listed as expected into XFAIL (and a pass into XPASS).
 * Takes copies of every string. */
void cf_report_add(cf_report_t *r, const char *suite, const char *op, const char *device,
                   const char *device_type, const char *dtype, const char *name,
                   cf_status_t status, double max_abs, double max_rel, double nmse,
                   const char *message);
int cf_report_count(const cf_report_t *r, const char *suite, cf_status_t status);
int cf_report_n_records(const cf_report_t *r);
const cf_record_t *cf_report_record(const cf_report_t *r, int index);
/* The tables, the failures and the summary lines: one per suite with records, and one (of 0
 * cases) for a suite that was run (cases_run, onnx_run) but filed nothing. */
void cf_report_print_console(const cf_report_t *r, bool verbose, bool cases_run, bool onnx_run);
bool cf_report_write_json(const cf_report_t *r, const char *path, GError **error);
bool cf_report_write_markdown(const cf_report_t *r, const char *path, GError **error);

/* ---------------------------------------------------------------------------------------------
 * Devices and the runner. */

typedef struct cf_device {
  char *label;       /* "CPU:0" */
  char *type;        /* "CPU" */
  int ordinal;
  char *spec;        /* "/device:CPU:0" */
  bool host_accessible;
  bool guarded;      /* its kernels' outputs carry guard bytes */
} cf_device_t;

/* Marks a device whose kernel outputs carry guard bytes: host-accessible devices, when the core's
 * host-buffer guards are on (WEFT_GUARD_BYTES=1, set by main before the first allocation). */
bool cf_guard_install(cf_device_t *device);
/* Guard regions found overwritten since the process started; *last_nbytes (may be NULL) is the
 * size of the last buffer found damaged. */
uint64_t cf_guard_violations(size_t *last_nbytes);

typedef struct cf_run_ctx {
  cf_report_t *report;
  const cf_device_t *device;
  const char *cpu_spec;    /* where inputs live ("/device:CPU:0"), or NULL: on the device */
  GPtrArray *case_filter;  /* glob patterns on case names, or NULL */
  int intra_threads;
  bool verbose;
  /* Per (op, dtype): unsupported already reported. */
  GHashTable *unsupported_seen;
  int n_run;
} cf_run_ctx_t;

/* Runs one case on ctx->device and files its record. Takes ownership of c. */
void cf_run_case(cf_run_ctx_t *ctx, cf_case_t *c);

/* Asks the kernel registry whether the device has a kernel for op with type_attr = dtype
 * (type_attr NULL: no type attribute). */
bool cf_kernel_available(const cf_run_ctx_t *ctx, const char *op, const char *type_attr,
                         weft_dtype_t dtype);
/* Whether a suite should emit cases for op/dtype: false without a record when the op's own
 * definition does not allow dtype for type_attr; false with one "unsupported" record when the
 * device has no kernel for it; true otherwise. */
bool cf_supported(cf_run_ctx_t *ctx, const char *op, const char *type_attr, weft_dtype_t dtype);
/* A generator seeded from the case's op, dtype and name. */
void cf_case_rng(const cf_case_t *c, cf_rng_t *rng);

/* ---------------------------------------------------------------------------------------------
 * Suites: the cases of one op, per dtype. */

typedef struct cf_suite {
  const char *op;
  /* The dtypes the suite tries (each one either runs or is reported unsupported). */
  const weft_dtype_t *dtypes;
  /* Emits this op's cases for one dtype through cf_run_case. */
  void (*emit)(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype);
  /* The type attribute the dtypes are for, for --list (NULL: "T"). */
  const char *type_attr;
} cf_suite_t;

/* dtype lists shared by suites (terminated by WEFT_DT_INVALID). */
extern const weft_dtype_t cf_dtypes_float[];    /* float32, float64, float16, bfloat16 */
extern const weft_dtype_t cf_dtypes_numeric[];  /* floats and every integer */
extern const weft_dtype_t cf_dtypes_signed[];   /* floats and signed integers */
extern const weft_dtype_t cf_dtypes_real_int[]; /* floats, int8..int64, uint8..uint64 */
extern const weft_dtype_t cf_dtypes_all[];      /* numeric, bool, string */
extern const weft_dtype_t cf_dtypes_none[];     /* just WEFT_DT_INVALID: ops without a T */

/* The shapes, axes and flags the scans (Cumsum, CumulativeLogsumexp) are checked over
 * (cases_math.c), terminated by a NULL name. */
typedef struct cf_scan_case {
  const char *name;
  int rank;
  int64_t dims[3];
  int axis;
  bool exclusive, reverse;
} cf_scan_case_t;
extern const cf_scan_case_t cf_scan_cases[];

/* Operand shape pairs for broadcasting binary ops (cases_bits.c: same shapes, scalars, rows,
 * rank-4 broadcasts, empties), terminated by a NULL name. */
typedef struct cf_shape_pair {
  const char *name;
  int ra;
  int64_t da[4];
  int rb;
  int64_t db[4];
} cf_shape_pair_t;
extern const cf_shape_pair_t cf_binary_shapes[];
/* Shapes for unary ops (cases_bits.c: scalar, empties, odd lengths, rank 4), NULL-terminated. */
typedef struct cf_shape {
  const char *name;
  int rank;
  int64_t dims[4];
} cf_shape_t;
extern const cf_shape_t cf_unary_shapes[];
/* The case "error_incompatible_shapes": [2,3] against [4] of unknown static shape must fail in
 * the kernel with "Incompatible shapes". */
void cf_incompatible_shapes_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt);

/* Each cases_*.c file defines one table, terminated by {NULL}. */
extern const cf_suite_t cf_suites_ragged[]; /* cases_ragged.c: RaggedRange */
extern const cf_suite_t cf_suites_elementwise[];
extern const cf_suite_t cf_suites_math[];
extern const cf_suite_t cf_suites_nn[];
extern const cf_suite_t cf_suites_array[];
extern const cf_suite_t cf_suites_image[];
extern const cf_suite_t cf_suites_fused[]; /* cases_fused.c */
extern const cf_suite_t cf_suites_conv[]; /* cases_conv.c */
extern const cf_suite_t cf_suites_state[];
extern const cf_suite_t cf_suites_summary[]; /* cases_summary.c */
extern const cf_suite_t cf_suites_scatter[];
extern const cf_suite_t cf_suites_search[]; /* cases_search.c */
extern const cf_suite_t cf_suites_ctc[];    /* cases_ctc.c */
extern const cf_suite_t cf_suites_array_extra[]; /* cases_array_extra.c */
extern const cf_suite_t cf_suites_imgproc[]; /* cases_imgproc.c */
extern const cf_suite_t cf_suites_bits[]; /* cases_bits.c */
extern const cf_suite_t cf_suites_special[]; /* cases_special.c: Zeta, Erfinv, Xlogy, ... */
extern const cf_suite_t cf_suites_nn_extra[]; /* cases_nn_extra.c */
extern const cf_suite_t cf_suites_candidate[]; /* cases_candidate.c */
extern const cf_suite_t cf_suites_stateless[]; /* cases_stateless.c: the Stateless* random ops */
extern const cf_suite_t cf_suites_linalg[];
extern const cf_suite_t cf_suites_svd_misc[]; /* cases_svd_misc.c */
extern const cf_suite_t cf_suites_sparse[]; /* cases_sparse.c */
extern const cf_suite_t cf_suites_control_flow[];
extern const cf_suite_t cf_suites_resource_vars[]; /* cases_resource_vars.c */
extern const cf_suite_t cf_suites_parsing[];       /* cases_parsing.c */
extern const cf_suite_t cf_suites_io[];            /* cases_io.c */
extern const cf_suite_t cf_suites_string[];        /* cases_string.c */

/* The cases plugins ship (cases_plugin.c, ABI 1.1): runs each selected plugin case on ctx's
 * device when the device has a kernel for its op; lists them for --list. */
void cf_run_plugin_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op));
void cf_list_plugin_cases(GPtrArray *devices, bool (*op_selected)(const char *op));
/* Gradient checks (cases_grad.c): the built-in gradient of each differentiable op against
 * central finite differences, as records named "grad_<case>" under the op. */
void cf_run_grad_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op));
/* Whether a case name matches --case (every name does without it). */
bool cf_case_name_selected(const cf_run_ctx_t *ctx, const char *name);
/* Shared by the gradient checks. cf_grad_missing_kernel: the first node of g from id `first` on
 * (placeholders aside) without a kernel on ctx's device, as a message "<what> uses OP ('NAME'),
 * which has no TYPE kernel for its types" (the caller g_free()s it), or NULL. cf_grad_session: a
 * session on g without soft placement. cf_grad_compare: got against want (rounded to dtype here)
 * at the gradient tolerances (rtol 1e-6 / 2e-3 for float64 / float32, atol 1e-7 / 1e-4 plus a
 * tenth of rtol times the largest |want|), into cmp. cf_grad_report: files the record (a passed
 * status becomes failed on st or a failed comparison) and frees message and cmp's message. */
/* cf_grad_begin: the record's name prefix + case_name (the caller g_free()s it) with rng seeded
 * from op, dtype and name, or NULL when --case leaves the case out. */
char *cf_grad_begin(const cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype,
                    const char *prefix, const char *case_name, cf_rng_t *rng);
char *cf_grad_missing_kernel(const cf_run_ctx_t *ctx, weft_graph_t *g, int first,
                             const char *what);
weft_session_t *cf_grad_session(const cf_run_ctx_t *ctx, weft_graph_t *g, weft_status_t **st);
void cf_grad_compare(const weft_tensor_t *got, cf_array_t *want, weft_dtype_t dtype,
                     cf_compare_t *cmp, const char *what);
void cf_grad_report(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype, const char *name,
                    cf_status_t status, char *message, const weft_status_t *st,
                    cf_compare_t *cmp, bool compared);
/* Gradient checks through control flow (cases_grad_cf.c): conds, while loops, nested loops and
 * TensorArrays, as records named "grad_cf_<case>" under the construct's op. */
void cf_run_grad_cf_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op));

/* ---------------------------------------------------------------------------------------------
 * The ONNX node-test runner (onnx_runner.c, onnx/). */

typedef struct cf_onnx_options {
  const char *dir;          /* the folder holding test_* folders */
  GPtrArray *op_filter;     /* ONNX op types, or NULL for all */
  GPtrArray *case_filter;   /* glob patterns on test folder names, or NULL */
  bool include_expanded;    /* also run *_expanded tests */
} cf_onnx_options_t;

/* Runs every test of the corpus on the device; records go into ctx->report with suite "onnx".
 * False (and *error set) when the folder cannot be read. */
bool cf_onnx_run_all(cf_run_ctx_t *ctx, const cf_onnx_options_t *opts, GError **error);

#endif /* WEFT_CONFORMANCE_H */

/* A kernel-set plugin built out of tree against the Weft SDK (docs/sdk.md walks through it).
 * It adds one op, FusedSwish (y = x * sigmoid(beta * x), one pass over memory instead of three
 * ops), with
 *   - its definition: inputs, outputs, a type attr and a float attr with a default;
 *   - a shape function (y has x's shape);
 *   - its gradient, written as a program over existing ops;
 *   - a CPU kernel (float and double), split over the intra-op thread pool;
 *   - a Vulkan kernel (float, swish_vulkan.c) when the build found the Vulkan headers and glslc;
 *   - conformance cases with a reference in double precision, which weft-conformance runs on
 *     every device that has a kernel for the op.
 * It includes nothing but the SDK headers and libc, and links nothing but libm. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "swish.h"

const weft_host_t *swish_host;

/* ---------------------------------------------------------------------------------------------
 * The op */

static const char *const swish_inputs[] = {"x: T", NULL};
static const char *const swish_outputs[] = {"y: T", NULL};
static const char *const swish_attrs[] = {"T: {float, double}", "beta: float = 1.0", NULL};

/* y has the shape of x (unknown stays unknown). */
static weft_status_t *swish_shape(weft_shape_ctx_t *ctx) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = swish_host->shape_input(ctx, 0, dims);
  return swish_host->shape_set_output(ctx, 0, rank, dims);
}

/* dy/dx = s + beta * x * s * (1 - s) with s = sigmoid(beta * x); and x * s is y. */
static const char swish_gradient[] =
    "s  = Sigmoid(Mul(x, $beta))\n"
    "dx = Mul(dy, AddV2(s, Mul(Mul(y, $beta), Sub(1, s))))\n";

static const weft_op_def_t swish_op = {
    .struct_size = sizeof(weft_op_def_t),
    .name = "FusedSwish",
    .inputs = swish_inputs,
    .outputs = swish_outputs,
    .attrs = swish_attrs,
    .is_stateful = 0,
    .shape_fn = swish_shape,
    .gradient = swish_gradient,
};

/* ---------------------------------------------------------------------------------------------
 * The CPU kernel */

typedef struct swish_args {
  const void *x;
  void *y;
  weft_dtype_t dtype;
  float beta;
} swish_args_t;

/* One chunk [begin, end) of the elements; parallel_for calls it from several threads. */
static void swish_range(void *arg, int64_t begin, int64_t end) {
  const swish_args_t *a = arg;
  if (a->dtype == WEFT_DT_FLOAT) {
    const float *x = a->x;
    float *y = a->y;
    for (int64_t i = begin; i < end; i++) y[i] = x[i] / (1.0f + expf(-a->beta * x[i]));
  } else {
    const double *x = a->x;
    double *y = a->y;
    const double beta = a->beta;
    for (int64_t i = begin; i < end; i++) y[i] = x[i] / (1.0 + exp(-beta * x[i]));
  }
}

static weft_status_t *swish_cpu(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_host_t *h = swish_host;
  float beta = 1.0f;
  weft_status_t *st = h->attr_float(h->kernel_attrs(ctx), "beta", &beta);
  if (st) return st;
  weft_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
  if ((st = h->kernel_input(ctx, 0, &x))) return st;
  if ((st = h->kernel_allocate_output(ctx, 0, x.dtype, x.rank, x.dims, &y))) return st;
  swish_args_t args = {x.data, y.data, x.dtype, beta};
  h->parallel_for(ctx, x.num_elements, 40, swish_range, &args);
  return NULL;
}

static const weft_dtype_t cpu_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_type_constraint_t cpu_constraint = {"T", cpu_types, 2};

static const weft_kernel_def_t swish_cpu_kernel = {
    .struct_size = sizeof(weft_kernel_def_t),
    .op = "FusedSwish",
    .device_type = "CPU",
    .constraints = &cpu_constraint,
    .n_constraints = 1,
    .priority = 0,
    .compute = swish_cpu,
};

/* ---------------------------------------------------------------------------------------------
 * Conformance cases */

/* The reference: y = x * sigmoid(beta * x) in double, whatever the dtype under test. */
static weft_status_t *swish_reference(const weft_host_t *host, const weft_attrs_t *attrs,
                                      const weft_case_array_t *inputs, size_t n_inputs,
                                      weft_case_array_t *outputs, size_t n_outputs,
                                      void *user_data) {
  (void)n_inputs;
  (void)n_outputs;
  (void)user_data;
  float beta = 1.0f;
  weft_status_t *st = host->attr_float(attrs, "beta", &beta);
  if (st) return st;
  const double *x = inputs[0].values;
  double *y = outputs[0].values;
  for (int64_t i = 0; i < inputs[0].num_elements; i++)
    y[i] = x[i] * (1.0 / (1.0 + exp(-(double)beta * x[i])));
  return NULL;
}

static const weft_dtype_t case_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};

/* Inputs: the dtype under test (WEFT_DT_INVALID), a shape, a generator and its range. */
static const weft_case_input_t in_scalar = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 0, {0}, WEFT_CASE_GEN_UNIFORM, -6, 6, 0};
static const weft_case_input_t in_odd = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 1, {1023}, WEFT_CASE_GEN_UNIFORM, -8, 8, 0};
static const weft_case_input_t in_matrix = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 3, {4, 5, 6}, WEFT_CASE_GEN_UNIFORM, -4, 4, 0};
static const weft_case_input_t in_empty = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 2, {3, 0}, WEFT_CASE_GEN_UNIFORM, 0, 0, 0};
static const weft_case_input_t in_large = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 1, {1 << 20}, WEFT_CASE_GEN_UNIFORM, -20, 20, 0};
static const weft_case_input_t in_special = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 1, {64}, WEFT_CASE_GEN_SPECIAL, -10, 10, 0};
static const weft_case_input_t in_small = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 2, {3, 7}, WEFT_CASE_GEN_UNIFORM, -3, 3, 0};

static const char *const beta_2[] = {"beta=2.0", NULL};
static const char *const beta_half[] = {"beta=0.5", NULL};

/* One case per line: its name, attrs, input and whether to check the gradient too. A GPU's exp
 * may be several ulps off C's (and worse for large arguments), hence tol_scale: four times the
 * default float tolerance. */
#define SWISH_CASE(case_name, case_attrs, input, grad)                                         \
  {                                                                                            \
    .struct_size = sizeof(weft_conformance_case_t), .op = "FusedSwish", .name = case_name,     \
    .dtypes = case_types, .n_dtypes = 2, .attrs = case_attrs, .inputs = &input, .n_inputs = 1, \
    .reference = swish_reference, .tol_scale = 4, .check_gradient = grad,                      \
  }

static const weft_conformance_case_t swish_cases[] = {
    SWISH_CASE("scalar", NULL, in_scalar, 1),
    SWISH_CASE("odd_1023", NULL, in_odd, 0),
    SWISH_CASE("rank3", beta_2, in_matrix, 1),
    SWISH_CASE("beta_half", beta_half, in_small, 1),
    SWISH_CASE("empty", NULL, in_empty, 0),
    SWISH_CASE("large_2e20", NULL, in_large, 0),
    SWISH_CASE("special_values", NULL, in_special, 0),
};

/* ---------------------------------------------------------------------------------------------
 * The plugin */

static weft_status_t *swish_init(const weft_host_t *host, const weft_registrar_t *reg,
                                 void **plugin_state) {
  *plugin_state = NULL;
  WEFT_PLUGIN_INIT(host, reg, "swish plugin");
  swish_host = host;
  /* Everything below is ABI 1.1; the loader refuses this plugin in an older core anyway. */
  weft_status_t *st = reg->register_op(reg->ctx, &swish_op);
  if (!st) st = reg->register_kernel(reg->ctx, &swish_cpu_kernel);
#ifdef SWISH_WITH_VULKAN
  if (!st) st = swish_register_vulkan(reg);
#endif
  for (size_t i = 0; !st && i < sizeof swish_cases / sizeof swish_cases[0]; i++)
    st = reg->register_conformance_case(reg->ctx, &swish_cases[i]);
  return st;
}

static const weft_plugin_info_t swish_info = {
    .struct_size = sizeof(weft_plugin_info_t),
    .abi_major = WEFT_ABI_MAJOR,
    .abi_minor = WEFT_ABI_MINOR,
    .name = "swish",
    .version = "1.0.0",
    .init = swish_init,
    .shutdown = NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void) { return &swish_info; }

/* A kernel-set plugin whose CPU kernels are wrong on purpose, for tests/test_conformance.c: it
 * proves that weft-conformance catches each kind of fault. For float32 only, at a priority above
 * the CPU plugin's: Neg writes one element past the end of its output (guard bytes), Abs gets one
 * element wrong (comparison), Sqrt writes into its input (input check). */
#include <math.h>

#include "weft/plugin.h"

static const weft_host_t *host;

static weft_status_t *io(weft_kernel_ctx_t *ctx, weft_tensor_view_t *x, weft_tensor_view_t *y) {
  x->struct_size = sizeof *x;
  y->struct_size = sizeof *y;
  weft_status_t *st = host->kernel_input(ctx, 0, x);
  if (st) return st;
  return host->kernel_allocate_output(ctx, 0, x->dtype, x->rank, x->dims, y);
}

static weft_status_t *neg_overrun(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  weft_status_t *st = io(ctx, &x, &y);
  if (st) return st;
  const float *a = x.data;
  float *b = y.data;
  for (int64_t i = 0; i < x.num_elements; i++) b[i] = -a[i];
  if (x.num_elements > 0) b[x.num_elements] = 1.0f; /* one past the end */
  return NULL;
}

static weft_status_t *abs_wrong(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  weft_status_t *st = io(ctx, &x, &y);
  if (st) return st;
  const float *a = x.data;
  float *b = y.data;
  for (int64_t i = 0; i < x.num_elements; i++) b[i] = fabsf(a[i]);
  if (x.num_elements > 3) b[3] += 1.0f;
  return NULL;
}

static weft_status_t *sqrt_clobber(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  weft_status_t *st = io(ctx, &x, &y);
  if (st) return st;
  float *a = x.data;
  float *b = y.data;
  for (int64_t i = 0; i < x.num_elements; i++) b[i] = sqrtf(a[i]);
  if (x.num_elements > 0) a[0] = 42.0f; /* into the input */
  return NULL;
}

static weft_status_t *init(const weft_host_t *h, const weft_registrar_t *reg, void **state) {
  (void)state;
  host = h;
  static const weft_dtype_t f32[] = {WEFT_DT_FLOAT};
  static const weft_type_constraint_t t = {"T", f32, 1};
  const char *ops[] = {"Neg", "Abs", "Sqrt"};
  weft_kernel_compute_fn fns[] = {neg_overrun, abs_wrong, sqrt_clobber};
  for (int i = 0; i < 3; i++) {
    weft_kernel_def_t k = {0};
    k.struct_size = sizeof k;
    k.op = ops[i];
    k.device_type = "CPU";
    k.constraints = &t;
    k.n_constraints = 1;
    k.priority = 10;
    k.compute = fns[i];
    weft_status_t *st = reg->register_kernel(reg->ctx, &k);
    if (st) return st;
  }
  return NULL;
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR, WEFT_ABI_MINOR, "faulty-kernels", "0.1", init,
    NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }

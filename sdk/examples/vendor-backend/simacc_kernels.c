/* The SIMACC kernels: what the simulated accelerator can run. Every tensor a kernel sees is a
 * SIMACC buffer handle (simacc_bytes gives its device memory); outputs are allocated on the
 * device by the host. Ops without a SIMACC kernel (Softmax, Sum, ...) cannot be pinned here:
 * with allow_soft_placement the placer moves them to the CPU and Weft copies tensors across.
 *
 *   Const, Identity, VariableV2, Assign     every fixed-size dtype (bytes are bytes)
 *   AddV2, Sub, Mul                         float, double, int32, int64, with broadcasting
 *   MatMul                                  float, double (transpose_a/transpose_b), naive
 *   Relu                                    float, double */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "simacc.h"

#define H simacc_host
static weft_tensor_view_t new_view(void) {
  weft_tensor_view_t v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  return v;
}

static bool attr_bool(weft_kernel_ctx_t *ctx, const char *name, bool dflt) {
  int v = dflt;
  weft_status_t *st = H->attr_bool(H->kernel_attrs(ctx), name, &v);
  if (st) H->status_free(st);
  return v != 0;
}

static void shape_str(int rank, const int64_t *dims, char *buf, size_t len) {
  size_t at = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < rank && at < len; d++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", d ? "," : "", (long long)dims[d]);
  if (at < len) snprintf(buf + at, len - at, "]");
}

/* ---------------------------------------------------------------------------------------------
 * Data movement and state */

static weft_status_t *k_const(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_output_from_attr(ctx, 0, "value"); /* the host copies it to the device */
}

static weft_status_t *k_identity(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 0, &x));
  return H->kernel_forward_input(ctx, 0, 0, x.rank, x.dims); /* no copy */
}

static weft_status_t *k_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_variable(ctx);
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static weft_status_t *assign_locked(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *value) {
  if (attr_bool(ctx, "validate_shape", true)) {
    weft_tensor_view_t old = new_view();
    weft_status_t *st = H->kernel_ref_input(ctx, 0, &old);
    if (st && H->status_code(st) != WEFT_FAILED_PRECONDITION) return st;
    bool initialised = st == NULL;
    if (st) H->status_free(st); /* not initialised yet: any shape will do */
    if (initialised && !same_shape(&old, value)) {
      char a[128], b[128];
      shape_str(old.rank, old.dims, a, sizeof a);
      shape_str(value->rank, value->dims, b, sizeof b);
      return H->status_new(WEFT_INVALID_ARGUMENT,
                           "Assign '%s': shapes of both tensors must "
                           "match. lhs shape= %s rhs shape= %s",
                           H->kernel_node_name(ctx), a, b);
    }
  }
  weft_tensor_view_t dst = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_ref_assign(ctx, 0, value->dtype, value->rank, value->dims, &dst));
  if (dst.data == value->data || value->nbytes == 0) return NULL;
  weft_status_t *st = NULL;
  void *to = simacc_bytes(ctx, &dst, &st);
  if (st) return st;
  const void *from = simacc_bytes(ctx, value, &st);
  if (st) return st;
  memcpy(to, from, value->nbytes);
  return NULL;
}

static weft_status_t *k_assign(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t value = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 1, &value));
  bool lock = attr_bool(ctx, "use_locking", true);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *st = assign_locked(ctx, &value);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(st);
  return H->kernel_forward_ref(ctx, 0, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Binary arithmetic with numpy broadcasting */

typedef enum { OP_ADD, OP_SUB, OP_MUL } binop_t;

/* Integers wrap (two's complement), computed unsigned so that overflow is defined. */
#define BINARY_LOOP(T, U)                                                          \
  {                                                                                \
    const T *xa = x;                                                               \
    const T *ya = y;                                                               \
    T *za = z;                                                                     \
    for (int64_t i = 0; i < n; i++) {                                              \
      T a = xa[xi], b = ya[yi];                                                    \
      za[i] = op == OP_ADD   ? (T)((U)a + (U)b)                                    \
              : op == OP_SUB ? (T)((U)a - (U)b)                                    \
                             : (T)((U)a * (U)b);                                   \
      for (int d = rank - 1; d >= 0; d--) { /* odometer over the output's index */ \
        xi += xs[d];                                                               \
        yi += ys[d];                                                               \
        if (++idx[d] < out[d]) break;                                              \
        xi -= xs[d] * out[d];                                                      \
        yi -= ys[d] * out[d];                                                      \
        idx[d] = 0;                                                                \
      }                                                                            \
    }                                                                              \
  }

static weft_status_t *binary(weft_kernel_ctx_t *ctx, binop_t op) {
  weft_tensor_view_t a = new_view(), b = new_view(), c = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 0, &a));
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 1, &b));
  int rank = a.rank > b.rank ? a.rank : b.rank;
  int64_t out[WEFT_MAX_RANK], xs[WEFT_MAX_RANK], ys[WEFT_MAX_RANK], idx[WEFT_MAX_RANK];
  int64_t xstride = 1, ystride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    int da = d - (rank - a.rank), db = d - (rank - b.rank);
    int64_t na = da >= 0 ? a.dims[da] : 1, nb = db >= 0 ? b.dims[db] : 1;
    if (na != nb && na != 1 && nb != 1) {
      char sa[128], sb[128];
      shape_str(a.rank, a.dims, sa, sizeof sa);
      shape_str(b.rank, b.dims, sb, sizeof sb);
      return H->status_new(WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s (node '%s')", sa,
                           sb, H->kernel_node_name(ctx));
    }
    out[d] = na == 1 ? nb : na;
    xs[d] = na == 1 ? 0 : xstride;
    ys[d] = nb == 1 ? 0 : ystride;
    xstride *= na;
    ystride *= nb;
    idx[d] = 0;
  }
  WEFT_RETURN_IF_ERROR(H->kernel_allocate_output(ctx, 0, a.dtype, rank, out, &c));
  int64_t n = c.num_elements, xi = 0, yi = 0;
  if (n == 0) return NULL;
  weft_status_t *st = NULL;
  const void *x = simacc_bytes(ctx, &a, &st);
  if (!st) {
    const void *y = simacc_bytes(ctx, &b, &st);
    void *z = st ? NULL : simacc_bytes(ctx, &c, &st);
    if (!st) {
      switch (a.dtype) {
        case WEFT_DT_FLOAT:
          BINARY_LOOP(float, float) break;
        case WEFT_DT_DOUBLE:
          BINARY_LOOP(double, double) break;
        case WEFT_DT_INT32:
          BINARY_LOOP(int32_t, uint32_t) break;
        case WEFT_DT_INT64:
          BINARY_LOOP(int64_t, uint64_t) break;
        default:
          break; /* the kernel's constraint admits nothing else */
      }
    }
  }
  return st;
}

static weft_status_t *k_add(weft_kernel_ctx_t *ctx, void *s) {
  (void)s;
  return binary(ctx, OP_ADD);
}
static weft_status_t *k_sub(weft_kernel_ctx_t *ctx, void *s) {
  (void)s;
  return binary(ctx, OP_SUB);
}
static weft_status_t *k_mul(weft_kernel_ctx_t *ctx, void *s) {
  (void)s;
  return binary(ctx, OP_MUL);
}

/* ---------------------------------------------------------------------------------------------
 * Relu and MatMul */

static weft_status_t *k_relu(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x = new_view(), y = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(H->kernel_allocate_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  weft_status_t *st = NULL;
  const void *in = simacc_bytes(ctx, &x, &st);
  void *out = st ? NULL : simacc_bytes(ctx, &y, &st);
  if (st) return st;
  for (int64_t i = 0; i < x.num_elements; i++) {
    if (x.dtype == WEFT_DT_FLOAT) {
      float v = ((const float *)in)[i];
      ((float *)out)[i] = isnan(v) ? v : v > 0 ? v : 0.0f; /* NaN stays NaN */
    } else {
      double v = ((const double *)in)[i];
      ((double *)out)[i] = isnan(v) ? v : v > 0 ? v : 0.0;
    }
  }
  return NULL;
}

static weft_status_t *k_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t a = new_view(), b = new_view(), c = new_view();
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 0, &a));
  WEFT_RETURN_IF_ERROR(H->kernel_input(ctx, 1, &b));
  bool ta = attr_bool(ctx, "transpose_a", false), tb = attr_bool(ctx, "transpose_b", false);
  if (a.rank != 2 || b.rank != 2)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "MatMul '%s': both inputs must be matrices (ranks %d and %d)",
                         H->kernel_node_name(ctx), a.rank, b.rank);
  int64_t m = ta ? a.dims[1] : a.dims[0], k = ta ? a.dims[0] : a.dims[1];
  int64_t kb = tb ? b.dims[1] : b.dims[0], n = tb ? b.dims[0] : b.dims[1];
  if (k != kb)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "MatMul '%s': Matrix size-incompatible: In[0]: "
                         "[%lld,%lld], In[1]: [%lld,%lld]",
                         H->kernel_node_name(ctx), (long long)a.dims[0], (long long)a.dims[1],
                         (long long)b.dims[0], (long long)b.dims[1]);
  int64_t dims[2] = {m, n};
  WEFT_RETURN_IF_ERROR(H->kernel_allocate_output(ctx, 0, a.dtype, 2, dims, &c));
  if (m * n == 0) return NULL;
  weft_status_t *st = NULL;
  const void *pa = k ? simacc_bytes(ctx, &a, &st) : NULL;
  const void *pb = (!st && k) ? simacc_bytes(ctx, &b, &st) : NULL;
  void *pc = st ? NULL : simacc_bytes(ctx, &c, &st);
  if (st) return st;
  /* Element (i, j) of op(A) and op(B), whatever the transposes. */
  int64_t a_ik = ta ? m : k, b_kj = tb ? k : n;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0; /* accumulated in double: the simulated hardware is generous */
      for (int64_t p = 0; p < k; p++) {
        int64_t ai = ta ? p * a_ik + i : i * a_ik + p;
        int64_t bi = tb ? j * b_kj + p : p * b_kj + j;
        if (a.dtype == WEFT_DT_FLOAT)
          acc += (double)((const float *)pa)[ai] * (double)((const float *)pb)[bi];
        else
          acc += ((const double *)pa)[ai] * ((const double *)pb)[bi];
      }
      if (a.dtype == WEFT_DT_FLOAT)
        ((float *)pc)[i * n + j] = (float)acc;
      else
        ((double *)pc)[i * n + j] = acc;
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t all_types[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_HALF,  WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64, WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,
};
static const weft_dtype_t arith_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                           WEFT_DT_INT64};
static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

typedef struct spec {
  const char *op;
  const char *type_attr;
  const weft_dtype_t *types;
  size_t n_types;
  weft_kernel_compute_fn compute;
} spec_t;

static const spec_t specs[] = {
    {"Const", "dtype", all_types, N_OF(all_types), k_const},
    {"Identity", "T", all_types, N_OF(all_types), k_identity},
    {"VariableV2", "dtype", all_types, N_OF(all_types), k_variable},
    {"Assign", "T", all_types, N_OF(all_types), k_assign},
    {"AddV2", "T", arith_types, N_OF(arith_types), k_add},
    {"Sub", "T", arith_types, N_OF(arith_types), k_sub},
    {"Mul", "T", arith_types, N_OF(arith_types), k_mul},
    {"MatMul", "T", float_types, N_OF(float_types), k_matmul},
    {"Relu", "T", float_types, N_OF(float_types), k_relu},
};

weft_status_t *simacc_register_kernels(const weft_registrar_t *reg) {
  for (size_t i = 0; i < N_OF(specs); i++) {
    weft_type_constraint_t c = {specs[i].type_attr, specs[i].types, specs[i].n_types};
    weft_kernel_def_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    k.op = specs[i].op;
    k.device_type = SIMACC_DEVICE_TYPE;
    k.constraints = &c;
    k.n_constraints = 1;
    k.compute = specs[i].compute;
    WEFT_RETURN_IF_ERROR(reg->register_kernel(reg->ctx, &k)); /* copied by the host */
  }
  return NULL;
}

/* cpu_fused.c: the kernel of _FusedElementwise, a chain of float32 elementwise ops that the
 * plan-time fusion pass (core/src/exec/fuse.c) made one node. It runs the chain block by block:
 * each block of x is read once, every op of the chain runs over it while it sits in L1, and the
 * block of y is written once, where the unfused chain reads and writes every intermediate tensor
 * in memory. The unary steps call the very loops of the unfused kernels (cpu_elementwise.c) and
 * the binary steps compute TensorFlow's expressions as cpu_binary.c does, so the fused result
 * equals the unfused one bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* 2048 floats: x's block and y's block (8 KiB each) stay in a 32 KiB L1 through the chain. */
#define FUSED_BLOCK 2048

typedef enum { BIN_NONE, BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MAX, BIN_MIN, BIN_SQDIFF } bin_t;

typedef struct fused_step {
  weft_cpu_unary_f32_fn unary; /* or NULL, and then bin says which binary op */
  bin_t bin;
  double param;
  int operand;                 /* index into the kernel's operands, -1 for a unary op */
  bool left;                   /* the operand is the op's first argument */
} fused_step_t;

typedef struct fused {
  int n_steps;
  int n_operands;
  int64_t cost; /* rough cycles per element of the whole chain */
  fused_step_t *steps;
} fused_t;

static const struct {
  const char *name;
  bin_t bin;
} bin_names[] = {
    {"Add", BIN_ADD},     {"AddV2", BIN_ADD},   {"BiasAdd", BIN_ADD},
    {"Sub", BIN_SUB},     {"Mul", BIN_MUL},     {"Div", BIN_DIV},
    {"RealDiv", BIN_DIV}, {"Maximum", BIN_MAX}, {"Minimum", BIN_MIN},
    {"SquaredDifference", BIN_SQDIFF},
};

static void fused_destroy(void *state) {
  fused_t *f = state;
  if (!f) return;
  free(f->steps);
  free(f);
}

static weft_status_t *fused_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                   void *user_data, void **state) {
  (void)user_data;
  const char *ops = NULL;
  size_t ops_len = 0, n_operand = 0, n_left = 0, n_alpha = 0;
  const int64_t *operand = NULL, *left = NULL;
  const float *alpha = NULL;
  int64_t n_in = 0;
  WEFT_RETURN_IF_ERROR(host->attr_string(attrs, "ops", &ops, &ops_len));
  WEFT_RETURN_IF_ERROR(host->attr_int_list(attrs, "operand", &operand, &n_operand));
  WEFT_RETURN_IF_ERROR(host->attr_int_list(attrs, "operand_left", &left, &n_left));
  WEFT_RETURN_IF_ERROR(host->attr_float_list(attrs, "alpha", &alpha, &n_alpha));
  WEFT_RETURN_IF_ERROR(host->attr_int(attrs, "N", &n_in));
  fused_t *f = calloc(1, sizeof *f);
  if (!f) return host->status_new(WEFT_RESOURCE_EXHAUSTED, "_FusedElementwise: out of memory");
  f->n_operands = (int)n_in;
  f->steps = calloc(n_operand + 1, sizeof *f->steps);
  weft_status_t *st = NULL;
  if (!f->steps) st = host->status_new(WEFT_RESOURCE_EXHAUSTED, "_FusedElementwise: out of memory");
  size_t k = 0;
  const char *p = ops, *end = ops + ops_len;
  while (!st && p < end) {
    const char *q = memchr(p, ';', (size_t)(end - p));
    size_t len = q ? (size_t)(q - p) : (size_t)(end - p);
    char name[64];
    if (len == 0 || len >= sizeof name || k >= n_operand || k >= n_left || k >= n_alpha) {
      st = host->status_new(WEFT_INVALID_ARGUMENT,
                            "_FusedElementwise: ops '%.*s' do not match its %zu operand entries",
                            (int)ops_len, ops, n_operand);
      break;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    fused_step_t *s = &f->steps[k];
    s->operand = (int)operand[k];
    s->left = left[k] != 0;
    s->param = alpha[k];
    if (s->operand >= f->n_operands) {
      st = host->status_new(WEFT_INVALID_ARGUMENT,
                            "_FusedElementwise: op %s names operand %d of %d", name, s->operand,
                            f->n_operands);
    } else if (s->operand < 0) {
      const char *param = NULL;
      float dflt = 0;
      int64_t cost = 1;
      s->unary = weft__cpu_unary_f32(name, &param, &dflt, &cost);
      f->cost += cost;
      if (!s->unary)
        st = host->status_new(WEFT_UNIMPLEMENTED,
                              "_FusedElementwise: %s is not a float32 unary op of the CPU plugin",
                              name);
    } else {
      for (size_t b = 0; b < sizeof bin_names / sizeof bin_names[0]; b++)
        if (strcmp(bin_names[b].name, name) == 0) s->bin = bin_names[b].bin;
      f->cost += 1;
      if (s->bin == BIN_NONE)
        st = host->status_new(WEFT_UNIMPLEMENTED,
                              "_FusedElementwise: %s is not a binary op it can fuse", name);
    }
    k++;
    p += len + 1;
  }
  if (!st && (k == 0 || k != n_operand))
    st = host->status_new(WEFT_INVALID_ARGUMENT,
                          "_FusedElementwise: %zu ops in '%.*s' but %zu operand entries", k,
                          (int)ops_len, ops, n_operand);
  if (st) {
    fused_destroy(f);
    return st;
  }
  f->n_steps = (int)k;
  *state = f;
  return NULL;
}

typedef struct fused_job {
  const fused_t *f;
  const float *x;
  float *y;
  int64_t n;
  const float *const *operands;
  const int64_t *operand_n; /* per operand: 1 (scalar), n (same shape) or a row length */
} fused_job_t;

/* y = y OP b (or b OP y) over one block starting at element `pos`; b is read at i, at 0 (a
 * scalar) or at (pos + i) % m (a row repeated over the last dimension). */
#define BIN_LOOP(EXPR)                                                        \
  do {                                                                        \
    if (m == 1) {                                                             \
      const float bv = b[0];                                                  \
      for (int64_t i = 0; i < len; i++) {                                     \
        float v = y[i];                                                       \
        float a0 = left ? bv : v, b0 = left ? v : bv;                         \
        y[i] = (EXPR);                                                        \
      }                                                                       \
    } else if (m == job->n) {                                                 \
      const float *restrict bb = b + pos;                                     \
      for (int64_t i = 0; i < len; i++) {                                     \
        float v = y[i];                                                       \
        float a0 = left ? bb[i] : v, b0 = left ? v : bb[i];                   \
        y[i] = (EXPR);                                                        \
      }                                                                       \
    } else {                                                                  \
      int64_t c = pos % m;                                                    \
      for (int64_t i = 0; i < len; i++) {                                     \
        float v = y[i];                                                       \
        float a0 = left ? b[c] : v, b0 = left ? v : b[c];                     \
        y[i] = (EXPR);                                                        \
        if (++c == m) c = 0;                                                  \
      }                                                                       \
    }                                                                         \
  } while (0)

static void binary_block(const fused_job_t *job, const fused_step_t *s, float *restrict y,
                         int64_t pos, int64_t len) {
  const float *restrict b = job->operands[s->operand];
  const int64_t m = job->operand_n[s->operand];
  const bool left = s->left;
  /* The expressions of cpu_binary.c's float loops, a0 the first argument. */
  switch (s->bin) {
    case BIN_ADD: BIN_LOOP(a0 + b0); break;
    case BIN_SUB: BIN_LOOP(a0 - b0); break;
    case BIN_MUL: BIN_LOOP(a0 * b0); break;
    case BIN_DIV: BIN_LOOP(a0 / b0); break;
    case BIN_MAX: BIN_LOOP((a0 > b0 || a0 != a0) ? a0 : b0); break;
    case BIN_MIN: BIN_LOOP((a0 < b0 || a0 != a0) ? a0 : b0); break;
    case BIN_SQDIFF: BIN_LOOP((a0 - b0) * (a0 - b0)); break;
    case BIN_NONE: break;
  }
}

static void fused_range(void *arg, int64_t begin, int64_t end) {
  const fused_job_t *job = arg;
  const fused_t *f = job->f;
  /* The unary loops take restrict pointers, so they never run in place: they alternate between
   * y's block and this one. */
  float tmp[FUSED_BLOCK];
  for (int64_t blk = begin; blk < end; blk++) {
    int64_t pos = blk * FUSED_BLOCK;
    int64_t len = job->n - pos < FUSED_BLOCK ? job->n - pos : FUSED_BLOCK;
    float *y = job->y + pos;
    const float *cur = job->x + pos;
    for (int k = 0; k < f->n_steps; k++) {
      const fused_step_t *s = &f->steps[k];
      if (s->unary) {
        float *out = cur == y ? tmp : y;
        s->unary(cur, out, len, s->param);
        cur = out;
      } else {
        float *out = cur == tmp ? tmp : y;
        if (cur != out) memcpy(out, cur, (size_t)len * sizeof(float));
        binary_block(job, s, out, pos, len);
        cur = out;
      }
    }
    if (cur != y) memcpy(y, cur, (size_t)len * sizeof(float));
  }
}

static weft_status_t *k_fused(weft_kernel_ctx_t *ctx, void *state) {
  const fused_t *f = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.dtype != WEFT_DT_FLOAT)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "_FusedElementwise is float32 only, not %s",
                           weft__cpu_dtype_name(x.dtype));
  /* One allocation for the operands' pointers and lengths, freed on every path below. */
  void *mem = NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_host->kernel_scratch(
      ctx, (size_t)(f->n_operands + 1) * (sizeof(const float *) + sizeof(int64_t)), &mem));
  const float **operands = mem;
  int64_t *operand_n = (int64_t *)(void *)(operands + f->n_operands + 1);
  int64_t last = x.rank > 0 ? x.dims[x.rank - 1] : 1;
  for (int k = 0; k < f->n_operands; k++) {
    weft_tensor_view_t o;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1 + k, &o));
    bool fits = o.num_elements == 1 || o.num_elements == x.num_elements ||
                (o.rank == 1 && o.num_elements == last);
    if (o.dtype != WEFT_DT_FLOAT || !fits) {
      char xs[CPU_SHAPE_STR_LEN], os[CPU_SHAPE_STR_LEN];
      weft__cpu_shape_str(x.rank, x.dims, xs, sizeof xs);
      weft__cpu_shape_str(o.rank, o.dims, os, sizeof os);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "_FusedElementwise: operand %d (%s %s) is neither a scalar, x's shape "
                             "%s nor a row of its last dimension", k,
                             weft__cpu_dtype_name(o.dtype), os, xs);
    }
    operands[k] = o.data;
    operand_n[k] = o.num_elements;
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, WEFT_DT_FLOAT, &x, &y));
  if (x.num_elements == 0) return NULL;
  fused_job_t job = {f, x.data, y.data, x.num_elements, operands, operand_n};
  int64_t blocks = (x.num_elements + FUSED_BLOCK - 1) / FUSED_BLOCK;
  weft__cpu_parallel(ctx, blocks, f->cost * FUSED_BLOCK, fused_range, &job);
  return NULL;
}

weft_status_t *weft__cpu_register_fused(const weft_registrar_t *reg) {
  static const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT};
  weft_cpu_kernel_spec_t spec;
  memset(&spec, 0, sizeof spec);
  spec.op = "_FusedElementwise";
  spec.compute = k_fused;
  spec.type_attr = "T";
  spec.dtypes = dtypes;
  spec.n_dtypes = 1;
  spec.create = fused_create;
  spec.destroy = fused_destroy;
  return weft__cpu_register(reg, &spec);
}

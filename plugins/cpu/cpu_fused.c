/* cpu_fused.c: the kernel of _FusedElementwise, a chain of float32 elementwise ops that the
 * plan-time fusion pass (core/src/exec/fuse.c) made one node. It runs the chain block by block:
 * each block of x is read once, every op of the chain runs over it while it sits in L1, and the
 * block of y is written once, where the unfused chain reads and writes every intermediate tensor
 * in memory. The unary steps call the very loops of the unfused kernels (cpu_elementwise.c) and
 * the binary steps the vector loops cpu_binary.c's float32 kernels call (cpu_vmath.h), so the
 * fused result equals the unfused one bit for bit. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vmath.h"

/* 1024 floats: x's block, the two intermediate blocks and y's block (4 KiB each) stay in a
 * 32 KiB L1 through the chain, beside the next block's prefetched lines. */
#define FUSED_BLOCK 1024
/* The longest run of unary ops one chain step takes; a longer run is several steps. */
#define FUSED_MAX_VOPS 16


typedef struct fused_step {
  weft_cpu_unary_f32_fn unary; /* or NULL, and then fn is the binary op's loops */
  weft_cpu_unary_f32_fn unary_nt; /* their streaming forms (NULL: none), for the last step */
  const weft_cpu_vm2_t *fn, *fn_nt;
  /* A run of n_vops >= 1 unary ops with a vector function (cpu_vmath.h's chain evaluator), in
   * place of unary and fn: each vector loaded once, every op applied in registers, stored once. */
  uint8_t vops[FUSED_MAX_VOPS];
  int n_vops;
  bool costly; /* the run holds an op with more arithmetic than a load and a store */
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

/* The unary ops the chain evaluator runs, by their code (cpu_vmath.h): those whose float32 kernel
 * is the vector function of that code (cpu_elementwise.c's VM_F32), so the bits are the same. */
static const struct {
  const char *name;
  weft_cpu_vop_t code;
} vop_names[] = {
    {"Exp", WEFT_CPU_VOP_EXP},         {"Log", WEFT_CPU_VOP_LOG},
    {"Tanh", WEFT_CPU_VOP_TANH},       {"Sigmoid", WEFT_CPU_VOP_SIGMOID},
    {"Expm1", WEFT_CPU_VOP_EXPM1},     {"Log1p", WEFT_CPU_VOP_LOG1P},
    {"Erf", WEFT_CPU_VOP_ERF},         {"Softplus", WEFT_CPU_VOP_SOFTPLUS},
    {"Elu", WEFT_CPU_VOP_ELU},         {"Selu", WEFT_CPU_VOP_SELU},
    {"Sqrt", WEFT_CPU_VOP_SQRT},       {"Rsqrt", WEFT_CPU_VOP_RSQRT},
    {"Reciprocal", WEFT_CPU_VOP_RECIPROCAL}, {"Inv", WEFT_CPU_VOP_RECIPROCAL},
    {"Softsign", WEFT_CPU_VOP_SOFTSIGN}, {"Square", WEFT_CPU_VOP_SQUARE},
    {"Neg", WEFT_CPU_VOP_NEG},         {"Relu", WEFT_CPU_VOP_RELU},
    {"Relu6", WEFT_CPU_VOP_RELU6},     {"Sin", WEFT_CPU_VOP_SIN},
    {"Cos", WEFT_CPU_VOP_COS},         {"Abs", WEFT_CPU_VOP_ABS},
    {"Erfc", WEFT_CPU_VOP_ERFC},
};

/* op's code, or -1 where the chain evaluator does not run it. */
static int vop_code(const char *op) {
  for (size_t i = 0; i < sizeof vop_names / sizeof vop_names[0]; i++)
    if (strcmp(vop_names[i].name, op) == 0) return (int)vop_names[i].code;
  return -1;
}

/* The binary ops it fuses, by their loops in weft_cpu_vmath_t. */
static const struct {
  const char *name;
  size_t offset;
} bin_names[] = {
    {"Add", offsetof(weft_cpu_vmath_t, add)},
    {"AddV2", offsetof(weft_cpu_vmath_t, add)},
    {"BiasAdd", offsetof(weft_cpu_vmath_t, add)},
    {"Sub", offsetof(weft_cpu_vmath_t, sub)},
    {"Mul", offsetof(weft_cpu_vmath_t, mul)},
    {"Div", offsetof(weft_cpu_vmath_t, div)},
    {"RealDiv", offsetof(weft_cpu_vmath_t, div)},
    {"Maximum", offsetof(weft_cpu_vmath_t, maximum)},
    {"Minimum", offsetof(weft_cpu_vmath_t, minimum)},
    {"SquaredDifference", offsetof(weft_cpu_vmath_t, sqdiff)},
    {"Pow", offsetof(weft_cpu_vmath_t, pow)},
};

/* What a fused chain knows of the values flowing into its next op, from the op that made them:
 * the forms of cpu_vmath.h that give the same bits there with less work apply. */
typedef enum value_range {
  RANGE_ANY,
  RANGE_ABOVE_M87, /* >= -87 or NaN: Sigmoid needs no test for its other path */
  RANGE_0_8,       /* in [-0, 8] or NaN (and so above -87): Tanh is its quotient alone */
} value_range_t;

/* The range of what unary op `name` outputs, whatever its input. */
static value_range_t output_range(const char *name) {
  static const char *const unit[] = {"Sigmoid", "Relu6", "Erfc", NULL};
  static const char *const above[] = {"Exp",  "Tanh",     "Relu", "Abs",  "Square", "Sqrt",
                                      "Erf",  "Softplus", "Sin",  "Cos",  "Softsign",
                                      "Elu",  "Selu",     "Expm1", NULL};
  for (const char *const *n = unit; *n; n++)
    if (strcmp(*n, name) == 0) return RANGE_0_8;
  for (const char *const *n = above; *n; n++)
    if (strcmp(*n, name) == 0) return RANGE_ABOVE_M87;
  return RANGE_ANY;
}

/* The range forms as loops of the unary kernels' signature, plain and streaming. */
#define RANGE_FORM(OP)                                                        \
  static void OP##_f32(const void *x, void *y, int64_t n, double p) {           \
    (void)p;                                                                  \
    (weft__cpu_vmath()->OP)((const float *)x, (float *)y, n);                 \
  }                                                                           \
  static void OP##_f32_nt(const void *x, void *y, int64_t n, double p) {        \
    (void)p;                                                                  \
    (weft__cpu_vmath()->nt->OP)((const float *)x, (float *)y, n);             \
  }
RANGE_FORM(sigmoid_above_m87)
RANGE_FORM(tanh_nonneg_small)

/* Step s, unary op `name`, on values of range `in`: where a cheaper form gives the same bits
 * there, s runs it instead. */
static void take_range_form(fused_step_t *s, const char *name, value_range_t in) {
  if (strcmp(name, "Sigmoid") == 0 && in != RANGE_ANY) {
    s->unary = sigmoid_above_m87_f32;
    s->unary_nt = sigmoid_above_m87_f32_nt;
    s->vops[0] = WEFT_CPU_VOP_SIGMOID_ABOVE_M87;
  } else if (strcmp(name, "Tanh") == 0 && in == RANGE_0_8) {
    s->unary = tanh_nonneg_small_f32;
    s->unary_nt = tanh_nonneg_small_f32_nt;
    s->vops[0] = WEFT_CPU_VOP_TANH_NONNEG_SMALL;
  }
}

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
  value_range_t range = RANGE_ANY; /* of x: nothing known */
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
      s->unary = weft__cpu_unary_f32(name, &param, &dflt, &cost, &s->unary_nt);
      f->cost += cost;
      int code = vop_code(name);
      if (code >= 0) {
        s->vops[0] = (uint8_t)code;
        s->n_vops = 1;
        s->costly = cost > 1;
        take_range_form(s, name, range);
      }
      range = output_range(name);
      if (!s->unary)
        st = host->status_new(WEFT_UNIMPLEMENTED,
                              "_FusedElementwise: %s is not a float32 unary op of the CPU plugin",
                              name);
    } else {
      for (size_t b = 0; b < sizeof bin_names / sizeof bin_names[0]; b++) {
        if (strcmp(bin_names[b].name, name) != 0) continue;
        s->fn = (const weft_cpu_vm2_t *)(const void *)((const char *)weft__cpu_vmath() +
                                                       bin_names[b].offset);
        s->fn_nt = (const weft_cpu_vm2_t *)(const void *)((const char *)weft__cpu_vmath()->nt +
                                                          bin_names[b].offset);
      }
      f->cost += 1;
      range = RANGE_ANY;
      if (s->fn == NULL)
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
  /* Each run of chain-evaluator ops becomes one step, at AVX-512 only: with 16 vector registers
   * the evaluator's loop loses more than the passes it saves (16M floats, one thread, avx2:
   * 6.4 GB/s against 6.8 for the chain benchmark). */
  bool group = false;
#if defined(__x86_64__) || defined(__i386__)
  group = weft__cpu_vmath() == &weft__cpu_vmath_avx512;
#endif
  for (size_t i = 0; i < k && !group; i++) f->steps[i].n_vops = 0;
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    fused_step_t *prev = m > 0 ? &f->steps[m - 1] : NULL;
    if (prev && prev->n_vops > 0 && f->steps[i].n_vops > 0 && prev->n_vops < FUSED_MAX_VOPS &&
        !(prev->costly && f->steps[i].costly)) {
      prev->vops[prev->n_vops++] = f->steps[i].vops[0];
      prev->costly |= f->steps[i].costly;
    }
    else
      f->steps[m++] = f->steps[i];
  }
  /* A run of one op keeps that op's own loop, which the compiler schedules better than the
   * evaluator's switch (about a tenth faster in cache). */
  for (size_t i = 0; i < m; i++)
    if (f->steps[i].n_vops == 1) f->steps[i].n_vops = 0;
  f->n_steps = (int)m;
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
  bool stream;              /* y is written with streaming stores (cpu_internal.h) */
} fused_job_t;

/* out = in OP b (or b OP in, s->left) over one block starting at element `pos`, through the
 * binary kernels' own vector loops (cpu_vmath.h, the level chosen at plugin init), so the fused
 * result is the unfused one bit for bit; b is read at pos + i, at 0 (a scalar) or at
 * (pos + i) % m (a row repeated over the last dimension). */
static void binary_block(const fused_job_t *job, const fused_step_t *s, const weft_cpu_vm2_t *fn,
                         const float *in, float *out, int64_t pos, int64_t len) {
  const float *b = job->operands[s->operand];
  const int64_t m = job->operand_n[s->operand];
  if (m == 1) {
    if (s->left)
      fn->sv(b, in, out, len);
    else
      fn->vs(in, b, out, len);
    return;
  }
  if (m == job->n) {
    if (s->left)
      fn->vv(b + pos, in, out, len);
    else
      fn->vv(in, b + pos, out, len);
    return;
  }
  /* A row: runs of up to m elements, each against b from its column on. */
  int64_t c = pos % m;
  for (int64_t i = 0; i < len;) {
    int64_t run = m - c < len - i ? m - c : len - i;
    if (s->left)
      fn->vv(b + c, in + i, out + i, run);
    else
      fn->vv(in + i, b + c, out + i, run);
    i += run;
    c = 0;
  }
}

/* Asks for part `part` of `parts` of the block of x (and of every whole-tensor operand) at pos,
 * the next one, while this one computes: the chain's arithmetic leaves the memory idle for long
 * stretches, in which the hardware's stream prefetcher, which only follows the loads it sees,
 * does not run ahead; without this the first op of each block waited on memory for about a
 * quarter of the chain's time (perf, 16M floats, Neg first). y's lines are asked for writing
 * (the last step's stores would otherwise wait on each line's read), unless y is streamed, whose
 * stores read nothing and whose lines must not be brought into cache. The requests are spread
 * over the chain's steps, since a whole block's at once fill the core's miss buffers and stall
 * it. */
static void prefetch_part(const fused_job_t *job, int64_t pos, int part, int parts) {
  int64_t len = job->n - pos < FUSED_BLOCK ? job->n - pos : FUSED_BLOCK;
  const int64_t line = 64 / sizeof(float);
  int64_t lines = (len + line - 1) / line;
  int64_t from = lines * part / parts * line, to = lines * (part + 1) / parts * line;
  for (int64_t i = from; i < to; i += line) {
    __builtin_prefetch(job->x + pos + i, 0, 3);
    if (!job->stream) __builtin_prefetch(job->y + pos + i, 1, 3);
  }
  for (int k = 0; k < job->f->n_operands; k++) {
    if (job->operand_n[k] != job->n) continue;
    for (int64_t i = from; i < to; i += line) __builtin_prefetch(job->operands[k] + pos + i, 0, 3);
  }
}

static void fused_range(void *arg, int64_t begin, int64_t end) {
  const fused_job_t *job = arg;
  const fused_t *f = job->f;
  /* Each step reads the previous one's block and writes the other of two scratch blocks; only
   * the last writes y. So y's lines are written once, by one loop, and the first steps never
   * wait on a store to a line not yet in cache. */
  float tmp[2][FUSED_BLOCK] __attribute__((aligned(64)));
  const weft_cpu_vmath_t *vm = weft__cpu_vmath();
  for (int64_t blk = begin; blk < end; blk++) {
    int64_t pos = blk * FUSED_BLOCK;
    int64_t len = job->n - pos < FUSED_BLOCK ? job->n - pos : FUSED_BLOCK;
    const float *cur = job->x + pos;
    for (int k = 0; k < f->n_steps; k++) {
      const fused_step_t *s = &f->steps[k];
      bool last = k == f->n_steps - 1;
      float *out = last ? job->y + pos : tmp[k & 1];
      bool nt = last && job->stream;
      if (blk + 1 < end) prefetch_part(job, pos + FUSED_BLOCK, k, f->n_steps);
      if (s->n_vops > 0)
        (nt ? vm->nt->chain : vm->chain)(s->vops, s->n_vops, cur, out, len);
      else if (s->unary)
        (nt && s->unary_nt ? s->unary_nt : s->unary)(cur, out, len, s->param);
      else
        binary_block(job, s, nt ? s->fn_nt : s->fn, cur, out, pos, len);
      cur = out;
    }
  }
  if (job->stream) weft__cpu_stream_fence();
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
  /* A chain costly enough keeps ordinary stores on one thread (WEFT_CPU_STREAM_COSTLY). */
  bool costly_alone =
      f->cost >= WEFT_CPU_STREAM_COSTLY && weft__cpu_host->kernel_num_threads(ctx) <= 1;
  bool stream = !costly_alone && weft__cpu_stream_output(x.num_elements, sizeof(float));
  fused_job_t job = {f, x.data, y.data, x.num_elements, operands, operand_n, stream};
  int64_t blocks = (x.num_elements + FUSED_BLOCK - 1) / FUSED_BLOCK;
  weft__cpu_parallel_f32(ctx, blocks, f->cost * FUSED_BLOCK, FUSED_BLOCK, fused_range, &job);
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

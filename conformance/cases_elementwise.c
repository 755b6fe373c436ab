/* cases_elementwise.c: conformance cases of the elementwise ops: unary math and activations,
 * classification (IsNan, ...), binary arithmetic and comparisons with broadcasting, logic,
 * Select/SelectV2, ClipByValue, LeakyRelu, AddN and the activation gradients. Each op runs per
 * dtype on scalars, empty tensors, odd sizes (1, 7, 1023, 2^20 for float32), higher ranks,
 * broadcast shapes and the dtype's special values (NaN, +-Inf, +-0, denormals, extremes), and
 * checks that incompatible shapes are refused by the kernel. */
#include <math.h>
#include <string.h>

#include "reference.h"

const weft_dtype_t cf_dtypes_float[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                        WEFT_DT_BFLOAT16, WEFT_DT_INVALID};
const weft_dtype_t cf_dtypes_numeric[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};
const weft_dtype_t cf_dtypes_signed[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                         WEFT_DT_BFLOAT16, WEFT_DT_INT8, WEFT_DT_INT16,
                                         WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
const weft_dtype_t cf_dtypes_real_int[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};
const weft_dtype_t cf_dtypes_all[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,   WEFT_DT_STRING,   WEFT_DT_INVALID};
const weft_dtype_t cf_dtypes_none[] = {WEFT_DT_INVALID};

/* The sizes every elementwise op runs on. */
typedef struct shape_case {
  const char *name;
  int rank;
  int64_t dims[4];
} shape_case_t;

static const shape_case_t unary_shapes[] = {
    {"scalar", 0, {0}},     {"empty", 1, {0}},        {"empty_2d", 2, {3, 0}},
    {"n1", 1, {1}},         {"n7", 1, {7}},           {"n1023", 1, {1023}},
    {"rank4", 4, {2, 3, 4, 5}},
};

/* ---------------------------------------------------------------------------------------------
 * Unary ops */

typedef struct unary_spec {
  const char *op;
  cf_gen_kind_t gen;
  double lo, hi;
  double f32_tol; /* tolerance factor for floats (transcendentals get a few ulps more) */
  bool bool_out;
} unary_spec_t;

static const unary_spec_t unary_specs[] = {
    {"Neg", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"Abs", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"Square", CF_GEN_UNIFORM, -10, 10, 1, false},
    {"Sign", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"Reciprocal", CF_GEN_NONZERO, -8, 8, 1, false},
    {"Inv", CF_GEN_NONZERO, -8, 8, 1, false},
    {"Sqrt", CF_GEN_POSITIVE, 0, 100, 1, false},
    {"Rsqrt", CF_GEN_POSITIVE, 0.01, 100, 1, false},
    {"Exp", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Log", CF_GEN_POSITIVE, 0.001, 1000, 2, false},
    {"Log1p", CF_GEN_UNIFORM, -0.9, 10, 2, false},
    {"Expm1", CF_GEN_UNIFORM, -10, 10, 2, false},
    {"Floor", CF_GEN_UNIFORM, -100, 100, 1, false},
    {"Ceil", CF_GEN_UNIFORM, -100, 100, 1, false},
    {"Round", CF_GEN_UNIFORM, -100, 100, 1, false},
    {"Sin", CF_GEN_UNIFORM, -10, 10, 2, false},
    {"Cos", CF_GEN_UNIFORM, -10, 10, 2, false},
    {"Tan", CF_GEN_UNIFORM, -1.5, 1.5, 4, false},
    {"Asin", CF_GEN_UNIFORM, -0.99, 0.99, 2, false},
    {"Acos", CF_GEN_UNIFORM, -0.99, 0.99, 2, false},
    {"Atan", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Sinh", CF_GEN_UNIFORM, -8, 8, 2, false},
    {"Cosh", CF_GEN_UNIFORM, -8, 8, 2, false},
    {"Asinh", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Acosh", CF_GEN_UNIFORM, 1, 20, 2, false},
    {"Atanh", CF_GEN_UNIFORM, -0.99, 0.99, 2, false},
    {"Erf", CF_GEN_UNIFORM, -4, 4, 2, false},
    {"Erfc", CF_GEN_UNIFORM, -4, 4, 2, false},
    {"Relu", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"Relu6", CF_GEN_UNIFORM, -10, 10, 1, false},
    {"Elu", CF_GEN_UNIFORM, -8, 8, 2, false},
    {"Selu", CF_GEN_UNIFORM, -8, 8, 2, false},
    {"Softplus", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Softsign", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Sigmoid", CF_GEN_UNIFORM, -20, 20, 2, false},
    {"Tanh", CF_GEN_UNIFORM, -10, 10, 2, false},
    {"IsNan", CF_GEN_SPECIAL, 0, 0, 1, true},
    {"IsInf", CF_GEN_SPECIAL, 0, 0, 1, true},
    {"IsFinite", CF_GEN_SPECIAL, 0, 0, 1, true},
    {"LogicalNot", CF_GEN_BOOL, 0, 0, 1, false},
    {"Identity", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"StopGradient", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"PreventGradient", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"ZerosLike", CF_GEN_UNIFORM, 0, 0, 1, false},
    {"OnesLike", CF_GEN_UNIFORM, 0, 0, 1, false},
};

static const unary_spec_t *find_unary(const char *op) {
  for (size_t i = 0; i < G_N_ELEMENTS(unary_specs); i++)
    if (strcmp(unary_specs[i].op, op) == 0) return &unary_specs[i];
  return NULL;
}

static void run_unary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype, const char *name,
                      cf_array_t *x, double tol_factor, bool bool_out) {
  cf_case_t *c = cf_case_new(op, name, dtype);
  cf_unary_fn fn = cf_ref_unary_fn(op);
  weft_dtype_t out = bool_out ? WEFT_DT_BOOL : dtype;
  cf_case_expect(c, cf_ref_map1(x, out, fn));
  cf_case_input(c, x);
  c->tol = cf_tol_scale(c->tol, tol_factor);
  cf_run_case(ctx, c);
}

static void emit_unary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  const char *type_attr = strcmp(op, "LogicalNot") == 0 ? NULL : "T";
  if (!cf_supported(ctx, op, type_attr, dtype)) return;
  const unary_spec_t *spec = find_unary(op);
  if (spec == NULL) return;
  weft_dtype_t dt = type_attr ? dtype : WEFT_DT_BOOL;
  double tol = cf_dtype_is_float(dt) ? spec->f32_tol : 1;
  cf_gen_t gen = {spec->gen, spec->lo, spec->hi};
  if (!cf_dtype_is_float(dt) && spec->gen != CF_GEN_SPECIAL) gen.lo = gen.hi = 0;
  if (dt == WEFT_DT_BOOL || dt == WEFT_DT_STRING) gen.kind = CF_GEN_BOOL;
  if (!cf_dtype_is_float(dt) && gen.kind == CF_GEN_SPECIAL) gen.kind = CF_GEN_UNIFORM;
  for (size_t s = 0; s < G_N_ELEMENTS(unary_shapes); s++) {
    const shape_case_t *sc = &unary_shapes[s];
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sc->name);
    cf_array_t *x = cf_gen_array(&rng, dt, sc->rank, sc->dims, gen);
    run_unary(ctx, op, dt, sc->name, x, tol, spec->bool_out);
  }
  cf_rng_t rng;
  cf_rng_seed(&rng, op, weft_dtype_name(dt), "large");
  if (dt == WEFT_DT_FLOAT) {
    int64_t n = 1 << 20;
    run_unary(ctx, op, dtype, "large_1M", cf_gen_array(&rng, dt, 1, &n, gen), tol,
              spec->bool_out);
  }
  /* Special values: every float op, and integer ops where wrapping matters. */
  if (cf_dtype_is_float(dt) || (cf_dtype_is_int(dt) && dt != WEFT_DT_INT64 &&
                                dt != WEFT_DT_UINT64)) {
    int64_t n = 64;
    cf_gen_t sg = {CF_GEN_SPECIAL, 0, 0};
    run_unary(ctx, op, dtype, "special_values", cf_gen_array(&rng, dt, 1, &n, sg), tol,
              spec->bool_out);
  }
  if (strcmp(op, "Round") == 0 && cf_dtype_is_float(dt)) {
    /* Halves: TensorFlow rounds them to even. */
    double v[] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5, 0.49999997, 1e7 + 0.5};
    run_unary(ctx, op, dtype, "halves_to_even", cf_array_vec(dt, G_N_ELEMENTS(v), v), 1, false);
  }
  if (strcmp(op, "Abs") == 0 || strcmp(op, "Neg") == 0) {
    /* Denormals must survive exactly (no flush to zero). */
    if (dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE) {
      double tiny = dt == WEFT_DT_FLOAT ? 1.401298464324817e-45 : 4.9406564584124654e-324;
      double v[] = {tiny, -tiny, 3 * tiny, -1000 * tiny};
      cf_case_t *c = cf_case_new(op, "denormals_exact", dtype);
      cf_array_t *x = cf_array_vec(dt, 4, v);
      cf_case_expect(c, cf_ref_map1(x, dt, cf_ref_unary_fn(op)));
      cf_case_input(c, x);
      c->tol = (cf_tol_t){0, 0, 0};
      cf_run_case(ctx, c);
    }
  }
}

/* Identity-like ops move any dtype, strings and bools included. */
static void emit_identity(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  for (size_t s = 0; s < G_N_ELEMENTS(unary_shapes); s++) {
    const shape_case_t *sc = &unary_shapes[s];
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dtype), sc->name);
    cf_gen_t gen = {dtype == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_SPECIAL, 0, 0};
    if (!cf_dtype_is_float(dtype)) gen.kind = dtype == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM;
    cf_array_t *x = cf_gen_array(&rng, dtype, sc->rank, sc->dims, gen);
    cf_case_t *c = cf_case_new(op, sc->name, dtype);
    cf_case_expect(c, cf_array_copy(x));
    cf_case_input(c, x);
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

/* EnsureShape: the input itself when its shape fits the attr (exactly, with unknown dims, or
 * an unknown rank), TensorFlow's error from the kernel when a dim or the rank differs (the input
 * fed through a placeholder of unknown shape), and from the shape function when the mismatch is
 * known while building. */
static void emit_ensure_shape(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  typedef struct {
    const char *name;
    int want_rank;
    int64_t want[3];
    bool fits;
  } es_t;
  static const es_t cases[] = {
      {"exact", 3, {2, 3, 4}, true},       {"unknown_dims", 3, {-1, 3, -1}, true},
      {"unknown_rank", -1, {0}, true},     {"wrong_dim", 3, {2, 4, 4}, false},
      {"wrong_rank", 2, {2, 12}, false},   {"wrong_dim_static", 3, {2, 3, 5}, false},
  };
  const int64_t dims[3] = {2, 3, 4};
  for (size_t s = 0; s < G_N_ELEMENTS(cases); s++) {
    const es_t *e = &cases[s];
    cf_case_t *c = cf_case_new(op, e->name, dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t gen = {dtype == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dtype, 3, dims, gen);
    cf_case_attr_shape(c, "shape", e->want_rank, e->want);
    bool at_build = strcmp(e->name, "wrong_dim_static") == 0;
    if (e->fits)
      cf_case_expect(c, cf_array_copy(x));
    else
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                           at_build ? "[2,3,4] and [2,3,5]"
                                    : "is not compatible with expected shape");
    cf_case_input(c, x);
    c->unknown_shape[0] = !e->fits && !at_build;
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

static void emit_zeros_ones(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  bool ones = strcmp(op, "OnesLike") == 0;
  for (size_t s = 0; s < G_N_ELEMENTS(unary_shapes); s++) {
    const shape_case_t *sc = &unary_shapes[s];
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dtype), sc->name);
    cf_gen_t gen = {dtype == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dtype, sc->rank, sc->dims, gen);
    cf_case_t *c = cf_case_new(op, sc->name, dtype);
    cf_array_t *want = cf_array_new_like(x, dtype);
    for (int64_t i = 0; want->v && i < want->n; i++) want->v[i] = ones ? 1 : 0;
    cf_case_expect(c, want);
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Binary ops */

typedef struct binary_shape {
  const char *name;
  int ra;
  int64_t da[4];
  int rb;
  int64_t db[4];
} binary_shape_t;

static const binary_shape_t binary_shapes[] = {
    {"scalar", 0, {0}, 0, {0}},
    {"n1", 1, {1}, 1, {1}},
    {"n7", 1, {7}, 1, {7}},
    {"n1023", 1, {1023}, 1, {1023}},
    {"rank3", 3, {4, 5, 6}, 3, {4, 5, 6}},
    {"bcast_scalar_rhs", 2, {3, 4}, 0, {0}},
    {"bcast_scalar_lhs", 0, {0}, 2, {3, 4}},
    {"bcast_row", 2, {4, 5}, 1, {5}},
    {"bcast_outer", 2, {4, 1}, 2, {1, 5}},
    {"bcast_rank4", 4, {2, 1, 3, 1}, 4, {1, 4, 1, 5}},
    {"bcast_rank_mismatch", 3, {2, 3, 4}, 2, {3, 1}},
    {"empty", 1, {0}, 1, {0}},
    {"empty_bcast", 2, {3, 0}, 1, {1}},
};

typedef struct binary_spec {
  const char *op;
  cf_gen_t gx, gy;  /* float generators; integers use their own defaults */
  cf_gen_t ix, iy;  /* integer generators */
  double f32_tol;
  bool bool_out;
  bool int_special; /* integers with extreme values (wrapping) make sense */
} binary_spec_t;

#define U(lo, hi) {CF_GEN_UNIFORM, lo, hi}
#define NZ(lo, hi) {CF_GEN_NONZERO, lo, hi}
#define POS(lo, hi) {CF_GEN_POSITIVE, lo, hi}
static const binary_spec_t binary_specs[] = {
    {"Add", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, false, true},
    {"AddV2", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, false, true},
    {"Sub", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, false, true},
    {"Mul", U(0, 0), U(0, 0), U(-20, 20), U(-20, 20), 1, false, true},
    {"Div", U(-10, 10), NZ(-10, 10), U(-100, 100), NZ(-9, 9), 1, false, false},
    {"RealDiv", U(-10, 10), NZ(-10, 10), U(0, 0), NZ(0, 0), 1, false, false},
    {"FloorDiv", U(-10, 10), NZ(-10, 10), U(-100, 100), NZ(-9, 9), 1, false, false},
    {"FloorMod", U(-10, 10), NZ(-10, 10), U(-100, 100), NZ(-9, 9), 1, false, false},
    {"Mod", U(-10, 10), NZ(-10, 10), U(-100, 100), NZ(-9, 9), 1, false, false},
    {"Pow", POS(0.1, 4), U(-3, 3), U(-5, 5), U(0, 5), 4, false, false},
    {"Atan2", U(-10, 10), U(-10, 10), U(0, 0), U(0, 0), 2, false, false},
    {"Maximum", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, false, true},
    {"Minimum", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, false, true},
    {"SquaredDifference", U(0, 0), U(0, 0), U(-20, 20), U(-20, 20), 1, false, false},
    {"Equal", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"NotEqual", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"Less", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"LessEqual", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"Greater", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"GreaterEqual", U(-3, 3), U(-3, 3), U(-3, 3), U(-3, 3), 1, true, true},
    {"LogicalAnd", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, true, false},
    {"LogicalOr", U(0, 0), U(0, 0), U(0, 0), U(0, 0), 1, true, false},
};

static const binary_spec_t *find_binary(const char *op) {
  for (size_t i = 0; i < G_N_ELEMENTS(binary_specs); i++)
    if (strcmp(binary_specs[i].op, op) == 0) return &binary_specs[i];
  return NULL;
}

/* Equal and Less on floats drawn from a small set so that ties occur. */
static void quantize(cf_array_t *a) {
  if (!cf_dtype_is_float(a->dtype)) return;
  for (int64_t i = 0; i < a->n; i++)
    if (isfinite(a->v[i])) a->v[i] = cf_round_to_dtype(a->dtype, round(a->v[i] * 2) / 2);
}

static void run_binary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype, const char *name,
                       cf_array_t *x, cf_array_t *y, const binary_spec_t *spec) {
  cf_case_t *c = cf_case_new(op, name, dtype);
  weft_dtype_t out = spec->bool_out ? WEFT_DT_BOOL : x->dtype;
  cf_array_t *want = cf_ref_map2(x, y, out, cf_ref_binary_fn(op));
  cf_case_input(c, x);
  cf_case_input(c, y);
  cf_case_expect(c, want);
  if (cf_dtype_is_float(dtype)) c->tol = cf_tol_scale(c->tol, spec->f32_tol);
  cf_run_case(ctx, c);
}

static void emit_binary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  bool logical = strncmp(op, "Logical", 7) == 0;
  if (!cf_supported(ctx, op, logical ? NULL : "T", dtype)) return;
  const binary_spec_t *spec = find_binary(op);
  weft_dtype_t dt = logical ? WEFT_DT_BOOL : dtype;
  bool is_float = cf_dtype_is_float(dt);
  cf_gen_t gx = is_float ? spec->gx : spec->ix, gy = is_float ? spec->gy : spec->iy;
  if (dt == WEFT_DT_BOOL || dt == WEFT_DT_STRING) gx.kind = gy.kind = CF_GEN_BOOL;
  bool comparison = spec->bool_out && !logical;
  for (size_t s = 0; s < G_N_ELEMENTS(binary_shapes); s++) {
    const binary_shape_t *sc = &binary_shapes[s];
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sc->name);
    cf_array_t *x = cf_gen_array(&rng, dt, sc->ra, sc->da, gx);
    cf_array_t *y = cf_gen_array(&rng, dt, sc->rb, sc->db, gy);
    if (comparison) {
      quantize(x);
      quantize(y);
    }
    run_binary(ctx, op, dt, sc->name, x, y, spec);
  }
  cf_rng_t rng;
  cf_rng_seed(&rng, op, weft_dtype_name(dt), "more");
  if (dt == WEFT_DT_FLOAT) {
    int64_t n = 1 << 20, rows[2] = {1024, 1024}, row = 1024;
    run_binary(ctx, op, dtype, "large_1M", cf_gen_array(&rng, dt, 1, &n, gx),
               cf_gen_array(&rng, dt, 1, &n, gy), spec);
    run_binary(ctx, op, dtype, "large_bcast_row", cf_gen_array(&rng, dt, 2, rows, gx),
               cf_gen_array(&rng, dt, 1, &row, gy), spec);
  }
  if (is_float || (spec->int_special && cf_dtype_is_int(dt) && dt != WEFT_DT_INT64 &&
                   dt != WEFT_DT_UINT64)) {
    int64_t n = 64;
    cf_gen_t sg = {CF_GEN_SPECIAL, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dt, 1, &n, sg);
    cf_array_t *y = cf_gen_array(&rng, dt, 1, &n, sg);
    run_binary(ctx, op, dtype, "special_values", x, y, spec);
  }
  /* Shapes that do not broadcast, hidden from shape inference: the kernel must refuse them. */
  {
    int64_t a = 3, b = 4;
    cf_case_t *c = cf_case_new(op, "error_incompatible_shapes", dtype);
    int i0 = cf_case_input(c, cf_gen_array(&rng, dt, 1, &a, gx));
    int i1 = cf_case_input(c, cf_gen_array(&rng, dt, 1, &b, gy));
    c->unknown_shape[i0] = c->unknown_shape[i1] = true;
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
  if (strcmp(op, "Equal") == 0 || strcmp(op, "NotEqual") == 0) {
    /* incompatible_shape_error = false: mismatched shapes compare as one scalar. */
    int64_t a = 3, b = 4;
    cf_case_t *c = cf_case_new(op, "incompatible_shape_error_false", dtype);
    cf_case_input(c, cf_gen_array(&rng, dt, 1, &a, gx));
    cf_case_input(c, cf_gen_array(&rng, dt, 1, &b, gy));
    cf_case_attr_bool(c, "incompatible_shape_error", false);
    cf_case_expect(c, cf_array_scalar(WEFT_DT_BOOL, strcmp(op, "NotEqual") == 0));
    cf_run_case(ctx, c);
  }
  if (is_float && (strcmp(op, "Div") == 0 || strcmp(op, "RealDiv") == 0)) {
    /* Division by zero follows IEEE: +-Inf and NaN. */
    double xv[] = {1, -1, 0, 2.5}, yv[] = {0, 0, 0, -0.0};
    cf_case_t *c = cf_case_new(op, "divide_by_zero", dtype);
    cf_array_t *x = cf_array_vec(dt, 4, xv), *y = cf_array_vec(dt, 4, yv);
    cf_case_expect(c, cf_ref_map2(x, y, dt, cf_ref_binary_fn(op)));
    cf_case_input(c, x);
    cf_case_input(c, y);
    cf_run_case(ctx, c);
  }
}

/* String concatenation (Add) and comparison (Equal/NotEqual). */
static void emit_string_binary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  (void)dtype;
  if (!cf_supported(ctx, op, "T", WEFT_DT_STRING)) return;
  const char *names[] = {"n7", "bcast_scalar_rhs", "empty"};
  int64_t d7 = 7, d0 = 0, d34[2] = {3, 4};
  for (int s = 0; s < 3; s++) {
    cf_case_t *c = cf_case_new(op, names[s], WEFT_DT_STRING);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {CF_GEN_UNIFORM, 0, 0};
    cf_array_t *x = s == 0   ? cf_gen_array(&rng, WEFT_DT_STRING, 1, &d7, g)
                    : s == 1 ? cf_gen_array(&rng, WEFT_DT_STRING, 2, d34, g)
                             : cf_gen_array(&rng, WEFT_DT_STRING, 1, &d0, g);
    cf_array_t *y = s == 0   ? cf_gen_array(&rng, WEFT_DT_STRING, 1, &d7, g)
                    : s == 1 ? cf_gen_array(&rng, WEFT_DT_STRING, 0, NULL, g)
                             : cf_gen_array(&rng, WEFT_DT_STRING, 1, &d0, g);
    if (s == 0) g_string_assign(y->s[2], x->s[2]->str); /* one equal pair */
    weft_dtype_t out = strcmp(op, "Add") == 0 ? WEFT_DT_STRING : WEFT_DT_BOOL;
    cf_case_expect(c, cf_ref_map2(x, y, out, cf_ref_binary_fn(op)));
    cf_case_input(c, x);
    cf_case_input(c, y);
    cf_run_case(ctx, c);
  }
}

static void emit_binary_or_string(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (dtype == WEFT_DT_STRING)
    emit_string_binary(ctx, op, dtype);
  else
    emit_binary(ctx, op, dtype);
}

/* ---------------------------------------------------------------------------------------------
 * Activation gradients, LeakyRelu, ClipByValue, Select, AddN */

/* The value ranges of an activation gradient's two inputs: where the forward op's inputs or
 * outputs lie (Relu6's features on both sides of 0 and 6, Elu's and Selu's outputs above their
 * lower bounds, Sqrt's and Rsqrt's outputs positive and away from 0). */
typedef struct grad_ranges {
  const char *op;
  double a_lo, a_hi, b_lo, b_hi;
} grad_ranges_t;

static const grad_ranges_t grad_ranges[] = {
    {"ReluGrad", -3, 3, -3, 3},         {"SigmoidGrad", -1, 1, -3, 3},
    {"TanhGrad", -1, 1, -3, 3},         {"Relu6Grad", -3, 3, -2, 8},
    {"LeakyReluGrad", -3, 3, -3, 3},    {"EluGrad", -3, 3, -0.99, 3},
    {"SeluGrad", -3, 3, -1.75, 3},      {"SoftplusGrad", -3, 3, -6, 6},
    {"SoftsignGrad", -3, 3, -6, 6},     {"SqrtGrad", 0.25, 3, -3, 3},
    {"RsqrtGrad", 0.25, 3, -3, 3},      {"ReciprocalGrad", -3, 3, -3, 3},
    {"InvGrad", -3, 3, -3, 3},
};

static void emit_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  const grad_ranges_t *r = &grad_ranges[0];
  for (size_t i = 0; i < G_N_ELEMENTS(grad_ranges); i++)
    if (strcmp(grad_ranges[i].op, op) == 0) r = &grad_ranges[i];
  const char *names[] = {"scalar", "n7", "n1023", "rank3", "empty"};
  int ranks[] = {0, 1, 1, 3, 1};
  int64_t dims[][3] = {{0}, {7}, {1023}, {3, 4, 5}, {0}};
  for (int s = 0; s < 5; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *a = cf_gen_uniform(&rng, dtype, ranks[s], dims[s], r->a_lo, r->a_hi);
    cf_array_t *b = cf_gen_uniform(&rng, dtype, ranks[s], dims[s], r->b_lo, r->b_hi);
    cf_case_expect(c, cf_ref_map2(a, b, dtype, cf_ref_binary_fn(op)));
    cf_case_input(c, a);
    cf_case_input(c, b);
    cf_run_case(ctx, c);
  }
}

static void emit_leaky_relu(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  const double alphas[] = {-1, 0.2, 0.01, 1.5};
  const char *names[] = {"default_alpha_n1023", "alpha_0.01_rank3", "alpha_1.5_n7",
                         "special_values"};
  int ranks[] = {1, 3, 1, 1};
  int64_t dims[][3] = {{1023}, {2, 3, 4}, {7}, {64}};
  for (int s = 0; s < 4; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {s == 3 ? CF_GEN_SPECIAL : CF_GEN_UNIFORM, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dtype, ranks[s], dims[s], g);
    double alpha = s == 0 ? 0.2 : s == 3 ? 0.3 : alphas[s];
    if (s != 0) cf_case_attr_float(c, "alpha", alpha);
    double fa = (double)(float)alpha;
    cf_array_t *want = cf_array_new_like(x, dtype);
    for (int64_t i = 0; i < x->n; i++) want->v[i] = x->v[i] < 0 ? fa * x->v[i] : x->v[i];
    cf_array_round(want);
    cf_case_expect(c, want);
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
}

/* LeakyReluGrad: gradients where the features are positive, alpha times them elsewhere. */
static void emit_leaky_relu_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  const char *names[] = {"default_alpha_n1023", "alpha_0.01_rank3", "alpha_1.5_n7"};
  const double alphas[] = {0.2, 0.01, 1.5};
  int ranks[] = {1, 3, 1};
  int64_t dims[][3] = {{1023}, {2, 3, 4}, {7}};
  for (int s = 0; s < 3; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *g = cf_gen_uniform(&rng, dtype, ranks[s], dims[s], -3, 3);
    cf_array_t *f = cf_gen_uniform(&rng, dtype, ranks[s], dims[s], -3, 3);
    if (s != 0) cf_case_attr_float(c, "alpha", alphas[s]);
    double fa = (double)(float)alphas[s];
    cf_array_t *want = cf_array_new_like(g, dtype);
    for (int64_t i = 0; i < g->n; i++) want->v[i] = f->v[i] > 0 ? g->v[i] : fa * g->v[i];
    cf_array_round(want);
    cf_case_expect(c, want);
    cf_case_input(c, g);
    cf_case_input(c, f);
    cf_run_case(ctx, c);
  }
}

static void emit_clip(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  for (int s = 0; s < 4; s++) {
    static const char *const names[] = {"scalar_bounds", "tensor_bounds", "empty", "scalar_input"};
    cf_case_t *c = cf_case_new(op, names[s], dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[2] = {s == 2 ? 0 : 5, 7};
    int rank = s == 3 ? 0 : 2;
    cf_array_t *t = cf_gen_uniform(&rng, dtype, rank, d, 0, 0);
    cf_array_t *lo, *hi;
    if (s == 1) {
      lo = cf_gen_uniform(&rng, dtype, rank, d, cf_dtype_is_signed(dtype) ? -3 : 0, 10);
      hi = cf_array_copy(lo);
      for (int64_t i = 0; i < hi->n; i++)
        hi->v[i] = cf_round_to_dtype(dtype, hi->v[i] + (double)cf_rng_int(&rng, 0, 20));
    } else {
      lo = cf_array_scalar(dtype, cf_dtype_is_signed(dtype) ? -2 : 10);
      hi = cf_array_scalar(dtype, cf_dtype_is_signed(dtype) ? 3 : 60);
    }
    cf_array_t *want = cf_array_new_like(t, dtype);
    for (int64_t i = 0; i < t->n; i++) {
      double l = lo->v[lo->rank ? i : 0], h = hi->v[hi->rank ? i : 0];
      want->v[i] = t->v[i] < l ? l : t->v[i] > h ? h : t->v[i];
    }
    cf_case_expect(c, want);
    cf_case_input(c, t);
    cf_case_input(c, lo);
    cf_case_input(c, hi);
    cf_run_case(ctx, c);
  }
}

static void emit_select(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  bool v2 = strcmp(op, "SelectV2") == 0;
  typedef struct {
    const char *name;
    int rc, rt, re;
    int64_t dc[3], dt[3], de[3];
  } sel_shape_t;
  static const sel_shape_t shapes_v1[] = {
      {"same_shape", 2, 2, 2, {4, 5}, {4, 5}, {4, 5}},
      {"scalar_cond", 0, 2, 2, {0}, {4, 5}, {4, 5}},
      {"vector_cond", 1, 3, 3, {3}, {3, 2, 2}, {3, 2, 2}},
      {"n1023", 1, 1, 1, {1023}, {1023}, {1023}},
      {"empty", 1, 1, 1, {0}, {0}, {0}},
  };
  static const sel_shape_t shapes_v2[] = {
      {"same_shape", 2, 2, 2, {4, 5}, {4, 5}, {4, 5}},
      {"scalar_cond", 0, 2, 2, {0}, {4, 5}, {4, 5}},
      {"bcast_all", 2, 2, 1, {4, 1}, {1, 5}, {5}},
      {"bcast_scalar_values", 2, 0, 0, {3, 4}, {0}, {0}},
      {"n1023", 1, 1, 1, {1023}, {1023}, {1023}},
      {"empty", 1, 1, 1, {0}, {0}, {0}},
  };
  const sel_shape_t *shapes = v2 ? shapes_v2 : shapes_v1;
  int n = v2 ? (int)G_N_ELEMENTS(shapes_v2) : (int)G_N_ELEMENTS(shapes_v1);
  for (int s = 0; s < n; s++) {
    cf_case_t *c = cf_case_new(op, shapes[s].name, dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t b = {CF_GEN_BOOL, 0, 0};
    cf_gen_t g = {dtype == WEFT_DT_BOOL ? CF_GEN_BOOL
                                        : cf_dtype_is_float(dtype) ? CF_GEN_SPECIAL
                                                                   : CF_GEN_UNIFORM,
                  0, 0};
    cf_array_t *cond = cf_gen_array(&rng, WEFT_DT_BOOL, shapes[s].rc, shapes[s].dc, b);
    cf_array_t *t = cf_gen_array(&rng, dtype, shapes[s].rt, shapes[s].dt, g);
    cf_array_t *e = cf_gen_array(&rng, dtype, shapes[s].re, shapes[s].de, g);
    cf_case_expect(c, v2 ? cf_ref_select_v2(cond, t, e) : cf_ref_select(cond, t, e));
    cf_case_input(c, cond);
    cf_case_input(c, t);
    cf_case_input(c, e);
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

static void emit_addn(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  if (!cf_supported(ctx, op, "T", dtype)) return;
  const int ns[] = {1, 2, 5, 3};
  const char *names[] = {"n1_inputs", "two_inputs_n1023", "five_inputs_rank3", "empty"};
  int ranks[] = {1, 1, 3, 2};
  int64_t dims[][3] = {{7}, {1023}, {2, 3, 4}, {0, 3}};
  for (int s = 0; s < 4; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dtype);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *xs[8];
    for (int k = 0; k < ns[s]; k++) {
      xs[k] = cf_gen_uniform(&rng, dtype, ranks[s], dims[s], 0, 0);
      cf_case_input(c, xs[k]);
    }
    int len = ns[s];
    cf_case_args(c, 1, &len);
    cf_case_attr_int(c, "N", ns[s]);
    cf_case_expect(c, cf_ref_addn(xs, ns[s]));
    cf_run_case(ctx, c);
  }
}

const cf_suite_t cf_suites_elementwise[] = {
    {"Neg", cf_dtypes_signed, emit_unary, NULL},
    {"Abs", cf_dtypes_signed, emit_unary, NULL},
    {"Square", cf_dtypes_numeric, emit_unary, NULL},
    {"Sign", cf_dtypes_signed, emit_unary, NULL},
    {"Reciprocal", cf_dtypes_signed, emit_unary, NULL},
    {"Inv", cf_dtypes_signed, emit_unary, NULL},
    {"Sqrt", cf_dtypes_float, emit_unary, NULL},
    {"Rsqrt", cf_dtypes_float, emit_unary, NULL},
    {"Exp", cf_dtypes_float, emit_unary, NULL},
    {"Log", cf_dtypes_float, emit_unary, NULL},
    {"Log1p", cf_dtypes_float, emit_unary, NULL},
    {"Expm1", cf_dtypes_float, emit_unary, NULL},
    {"Floor", cf_dtypes_float, emit_unary, NULL},
    {"Ceil", cf_dtypes_float, emit_unary, NULL},
    {"Round", cf_dtypes_signed, emit_unary, NULL},
    {"Sin", cf_dtypes_float, emit_unary, NULL},
    {"Cos", cf_dtypes_float, emit_unary, NULL},
    {"Tan", cf_dtypes_float, emit_unary, NULL},
    {"Asin", cf_dtypes_float, emit_unary, NULL},
    {"Acos", cf_dtypes_float, emit_unary, NULL},
    {"Atan", cf_dtypes_float, emit_unary, NULL},
    {"Sinh", cf_dtypes_float, emit_unary, NULL},
    {"Cosh", cf_dtypes_float, emit_unary, NULL},
    {"Asinh", cf_dtypes_float, emit_unary, NULL},
    {"Acosh", cf_dtypes_float, emit_unary, NULL},
    {"Atanh", cf_dtypes_float, emit_unary, NULL},
    {"Erf", cf_dtypes_float, emit_unary, NULL},
    {"Erfc", cf_dtypes_float, emit_unary, NULL},
    {"Relu", cf_dtypes_real_int, emit_unary, NULL},
    {"Relu6", cf_dtypes_real_int, emit_unary, NULL},
    {"Elu", cf_dtypes_float, emit_unary, NULL},
    {"Selu", cf_dtypes_float, emit_unary, NULL},
    {"Softplus", cf_dtypes_float, emit_unary, NULL},
    {"Softsign", cf_dtypes_float, emit_unary, NULL},
    {"Sigmoid", cf_dtypes_float, emit_unary, NULL},
    {"Tanh", cf_dtypes_float, emit_unary, NULL},
    {"IsNan", cf_dtypes_float, emit_unary, NULL},
    {"IsInf", cf_dtypes_float, emit_unary, NULL},
    {"IsFinite", cf_dtypes_float, emit_unary, NULL},
    {"LogicalNot", cf_dtypes_none, emit_unary, NULL},
    {"Identity", cf_dtypes_all, emit_identity, NULL},
    {"StopGradient", cf_dtypes_all, emit_identity, NULL},
    {"PreventGradient", cf_dtypes_all, emit_identity, NULL},
    {"Snapshot", cf_dtypes_all, emit_identity, NULL},
    {"GuaranteeConst", cf_dtypes_all, emit_identity, NULL},
    {"EnsureShape", cf_dtypes_all, emit_ensure_shape, NULL},
    {"ZerosLike", cf_dtypes_all, emit_zeros_ones, NULL},
    {"OnesLike", cf_dtypes_all, emit_zeros_ones, NULL},
    {"Add", cf_dtypes_all, emit_binary_or_string, NULL},
    {"AddV2", cf_dtypes_numeric, emit_binary, NULL},
    {"Sub", cf_dtypes_numeric, emit_binary, NULL},
    {"Mul", cf_dtypes_numeric, emit_binary, NULL},
    {"Div", cf_dtypes_numeric, emit_binary, NULL},
    {"RealDiv", cf_dtypes_numeric, emit_binary, NULL},
    {"FloorDiv", cf_dtypes_numeric, emit_binary, NULL},
    {"FloorMod", cf_dtypes_numeric, emit_binary, NULL},
    {"Mod", cf_dtypes_numeric, emit_binary, NULL},
    {"Pow", cf_dtypes_signed, emit_binary, NULL},
    {"Atan2", cf_dtypes_float, emit_binary, NULL},
    {"Maximum", cf_dtypes_numeric, emit_binary, NULL},
    {"Minimum", cf_dtypes_numeric, emit_binary, NULL},
    {"SquaredDifference", cf_dtypes_numeric, emit_binary, NULL},
    {"Equal", cf_dtypes_all, emit_binary_or_string, NULL},
    {"NotEqual", cf_dtypes_all, emit_binary_or_string, NULL},
    {"Less", cf_dtypes_numeric, emit_binary, NULL},
    {"LessEqual", cf_dtypes_numeric, emit_binary, NULL},
    {"Greater", cf_dtypes_numeric, emit_binary, NULL},
    {"GreaterEqual", cf_dtypes_numeric, emit_binary, NULL},
    {"LogicalAnd", cf_dtypes_none, emit_binary, NULL},
    {"LogicalOr", cf_dtypes_none, emit_binary, NULL},
    {"ReluGrad", cf_dtypes_float, emit_grad, NULL},
    {"SigmoidGrad", cf_dtypes_float, emit_grad, NULL},
    {"TanhGrad", cf_dtypes_float, emit_grad, NULL},
    {"Relu6Grad", cf_dtypes_float, emit_grad, NULL},
    {"EluGrad", cf_dtypes_float, emit_grad, NULL},
    {"SeluGrad", cf_dtypes_float, emit_grad, NULL},
    {"SoftplusGrad", cf_dtypes_float, emit_grad, NULL},
    {"SoftsignGrad", cf_dtypes_float, emit_grad, NULL},
    {"LeakyReluGrad", cf_dtypes_float, emit_leaky_relu_grad, NULL},
    {"SqrtGrad", cf_dtypes_float, emit_grad, NULL},
    {"RsqrtGrad", cf_dtypes_float, emit_grad, NULL},
    {"ReciprocalGrad", cf_dtypes_float, emit_grad, NULL},
    {"InvGrad", cf_dtypes_float, emit_grad, NULL},
    {"LeakyRelu", cf_dtypes_float, emit_leaky_relu, NULL},
    {"ClipByValue", cf_dtypes_real_int, emit_clip, NULL},
    {"Select", cf_dtypes_all, emit_select, NULL},
    {"SelectV2", cf_dtypes_all, emit_select, NULL},
    {"AddN", cf_dtypes_numeric, emit_addn, NULL},
    {NULL, NULL, NULL, NULL},
};

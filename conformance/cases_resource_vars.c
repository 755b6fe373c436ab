/* cases_resource_vars.c: conformance cases of the resource-variable ops (VarHandleOp,
 * ReadVariableOp, AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp, VarIsInitializedOp,
 * ResourceGather, VariableShape, DestroyResourceOp) run as single ops.
 *
 * The handle is fed as a string scalar "container|shared_name" (Weft's encoding of DT_RESOURCE).
 * A resource variable is the resource manager's variable of that container and name, the one a
 * VariableV2 of that name refers to; so a case gets an initialised variable by adding a variable
 * input (the harness's VariableV2 "input_N", initialised before the run) that the op under test
 * does not take (cf_case_args wires only the leading inputs), and names it in the handle: the
 * op's outputs and the variable's value afterwards are both checked. The errors follow
 * tensorflow/core/kernels/resource_variable_ops.cc: reading a variable nobody assigned,
 * updating one that does not exist, mismatched shapes, out-of-range gather indices. */
#include <string.h>

#include "reference.h"

static cf_array_t *handle(const char *text) {
  cf_array_t *h = cf_array_new(WEFT_DT_STRING, 0, NULL);
  g_string_assign(h->s[0], text);
  return h;
}

static cf_array_t *values(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  bool is_num = dt != WEFT_DT_BOOL && dt != WEFT_DT_STRING;
  cf_gen_t g = {is_num ? CF_GEN_UNIFORM : (dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE),
                cf_dtype_is_signed(dt) ? -20 : 0, 20};
  return cf_gen_array(rng, dt, rank, dims, g);
}

/* An int vector reshaped to [2, 2]. */
static cf_array_t *ints_2x2(weft_dtype_t dt, const int64_t *values) {
  cf_array_t *flat = cf_array_ints(dt, 4, values);
  cf_array_t *a = cf_array_reshape(flat, 2, (const int64_t[]){2, 2});
  cf_array_free(flat);
  return a;
}

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt, cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  c->tol = (cf_tol_t){0, 0, 0};
  return c;
}

/* Wires only the first n inputs into the op under test: the rest are variables it reaches
 * through its handle. */
static void wire_first(cf_case_t *c, int n) {
  int lens[CF_MAX_INPUTS] = {0};
  cf_case_args(c, n, lens);
}

static const char *const kShapeNames[] = {"rank2", "scalar", "empty"};
static const int kRanks[] = {2, 0, 2};
static const int64_t kDims[][2] = {{3, 4}, {0, 0}, {0, 3}};

/* VarHandleOp: a string scalar naming container and shared name. */
static char *check_handle(const cf_case_t *c, cf_array_t *const *outs, int n) {
  (void)c;
  if (n < 1 || !outs[0]) return g_strdup("missing output");
  const cf_array_t *h = outs[0];
  if (h->dtype != WEFT_DT_STRING || h->rank != 0) return g_strdup("not a string scalar");
  const char *want = strcmp(c->name, "container") == 0 ? "box|v" : "|v";
  if (strcmp(h->s[0]->str, want) != 0)
    return g_strdup_printf("handle '%s', expected '%s'", h->s[0]->str, want);
  return NULL;
}

static void emit_var_handle(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  for (int k = 0; k < 2; k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, k ? "container" : "default_container", dt, &rng);
    cf_case_attr_type(c, "dtype", dt);
    cf_case_attr_shape(c, "shape", 2, (const int64_t[]){2, 3});
    cf_case_attr_string(c, "shared_name", "v");
    if (k) cf_case_attr_string(c, "container", "box");
    cf_case_expect(c, NULL);
    c->check = check_handle;
    cf_run_case(ctx, c);
  }
}

static void emit_read(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  for (int s = 0; s < 3; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, kShapeNames[s], dt, &rng);
    cf_case_input(c, handle("|input_1"));
    cf_array_t *v = values(&rng, dt, kRanks[s], kDims[s]);
    cf_case_expect(c, cf_array_copy(v));
    cf_case_variable_input(c, v, NULL);
    wire_first(c, 1);
    cf_case_attr_type(c, "dtype", dt);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "uninitialized", dt, &rng);
  cf_case_input(c, handle("|nobody"));
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_FAILED_PRECONDITION,
                       "Error while reading resource variable nobody from Container: localhost. "
                       "This could mean that the variable was uninitialized. Not found: Resource "
                       "localhost/nobody/N10tensorflow3VarE does not exist.");
  cf_run_case(ctx, c);
  if (dt != WEFT_DT_FLOAT) return;
  c = new_case(op, "wrong_dtype", dt, &rng);
  cf_case_input(c, handle("|input_1"));
  cf_case_variable_input(c, cf_array_new(WEFT_DT_INT32, 1, (const int64_t[]){2}), NULL);
  wire_first(c, 1);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "Trying to read variable with wrong dtype. Expected float got int32");
  cf_run_case(ctx, c);
  c = new_case(op, "malformed_handle", dt, &rng);
  cf_case_input(c, handle("no separator"));
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "is not a resource variable handle");
  cf_run_case(ctx, c);
}

static void emit_assign(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  bool add = strcmp(op, "AssignAddVariableOp") == 0, sub = strcmp(op, "AssignSubVariableOp") == 0;
  for (int s = 0; s < 3; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, kShapeNames[s], dt, &rng);
    cf_case_input(c, handle("|input_2"));
    cf_array_t *value = values(&rng, dt, kRanks[s], kDims[s]);
    cf_array_t *var = values(&rng, dt, kRanks[s], kDims[s]);
    cf_array_t *after = cf_array_copy(value);
    if (add || sub) {
      for (int64_t i = 0; i < after->n; i++)
        after->v[i] = add ? var->v[i] + value->v[i] : var->v[i] - value->v[i];
      cf_array_round(after);
    }
    cf_case_input(c, value);
    cf_case_variable_input(c, var, after);
    wire_first(c, 2);
    cf_case_attr_type(c, "dtype", dt);
    cf_run_case(ctx, c);
  }
  if (!add && !sub) {
    /* A first assignment creates the variable, of any shape. */
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "creates", dt, &rng);
    cf_case_input(c, handle("|fresh"));
    cf_case_input(c, values(&rng, dt, 1, (const int64_t[]){5}));
    cf_case_attr_type(c, "dtype", dt);
    cf_run_case(ctx, c);
    if (dt != WEFT_DT_FLOAT) return;
    c = new_case(op, "validate_shape", dt, &rng);
    cf_case_input(c, handle("|input_2"));
    cf_case_input(c, values(&rng, dt, 1, (const int64_t[]){3}));
    cf_case_variable_input(c, values(&rng, dt, 2, (const int64_t[]){2, 3}), NULL);
    wire_first(c, 2);
    cf_case_attr_type(c, "dtype", dt);
    cf_case_attr_bool(c, "validate_shape", true);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                         "Trying to assign to variable with tensor with wrong shape. Expected "
                         "[2,3] got [3]");
    cf_run_case(ctx, c);
    return;
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "no_variable", dt, &rng);
  cf_case_input(c, handle("box|nobody"));
  cf_case_input(c, values(&rng, dt, 1, (const int64_t[]){2}));
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_NOT_FOUND, "Resource box/nobody/N10tensorflow3VarE does not exist.");
  cf_run_case(ctx, c);
  c = new_case(op, "shape_mismatch", dt, &rng);
  cf_case_input(c, handle("|input_2"));
  cf_case_input(c, values(&rng, dt, 1, (const int64_t[]){3}));
  cf_case_variable_input(c, values(&rng, dt, 2, (const int64_t[]){2, 3}), NULL);
  wire_first(c, 2);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "Cannot update variable with shape [2,3] using a Tensor with shape [3], "
                       "shapes must be equal.");
  cf_run_case(ctx, c);
}

static void emit_is_initialized(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  for (int k = 0; k < 2; k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, k ? "initialized" : "no_variable", dt, &rng);
    cf_case_input(c, handle(k ? "|input_1" : "|nobody"));
    if (k) {
      cf_case_variable_input(c, cf_array_new(WEFT_DT_FLOAT, 1, (const int64_t[]){2}), NULL);
      wire_first(c, 1);
    }
    cf_case_expect(c, cf_array_scalar(WEFT_DT_BOOL, k));
    cf_run_case(ctx, c);
  }
}

static void emit_gather(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  static const weft_dtype_t index_types[] = {WEFT_DT_INT32, WEFT_DT_INT64};
  for (int t = 0; t < 2; t++) {
    for (int s = 0; s < 3; s++) {
      cf_rng_t rng;
      char name[48];
      g_snprintf(name, sizeof name, "%s_%s", s == 0 ? "matrix" : s == 1 ? "indices_2d" : "empty",
                 t ? "int64" : "int32");
      cf_case_t *c = new_case(op, name, dt, &rng);
      cf_case_input(c, handle("|input_2"));
      cf_array_t *indices =
          s == 0   ? cf_array_ints(index_types[t], 3, (const int64_t[]){3, 0, 3})
          : s == 1 ? ints_2x2(index_types[t], (const int64_t[]){1, 2, 0, 1})
                   : cf_array_new(index_types[t], 1, (const int64_t[]){0});
      cf_array_t *params = values(&rng, dt, s == 1 ? 3 : 2,
                                  s == 1 ? (const int64_t[]){3, 2, 2} : (const int64_t[]){4, 3});
      cf_case_expect(c, cf_ref_gather(params, indices, 0, 0));
      cf_case_input(c, indices);
      cf_case_variable_input(c, params, NULL);
      wire_first(c, 2);
      cf_case_attr_type(c, "dtype", dt);
      cf_run_case(ctx, c);
    }
  }
  if (dt != WEFT_DT_FLOAT) return;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "index_out_of_range", dt, &rng);
  cf_case_input(c, handle("|input_2"));
  cf_case_input(c, ints_2x2(WEFT_DT_INT32, (const int64_t[]){0, 1, 4, 0}));
  cf_case_variable_input(c, values(&rng, dt, 2, (const int64_t[]){4, 3}), NULL);
  wire_first(c, 2);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "indices[1,0] = 4 is not in [0, 4)");
  cf_run_case(ctx, c);
  c = new_case(op, "negative_index", dt, &rng);
  cf_case_input(c, handle("|input_2"));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){0, -1}));
  cf_case_variable_input(c, values(&rng, dt, 2, (const int64_t[]){4, 3}), NULL);
  wire_first(c, 2);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "indices[1] = -1 is not in [0, 4)");
  cf_run_case(ctx, c);
  c = new_case(op, "scalar_params", dt, &rng);
  cf_case_input(c, handle("|input_2"));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, (const int64_t[]){0}));
  cf_case_variable_input(c, cf_array_scalar(dt, 1), NULL);
  wire_first(c, 2);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "params must be at least 1 dimensional");
  cf_run_case(ctx, c);
  c = new_case(op, "no_variable", dt, &rng);
  cf_case_input(c, handle("|nobody"));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, (const int64_t[]){0}));
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_NOT_FOUND,
                       "Resource localhost/nobody/N10tensorflow3VarE does not exist.");
  cf_run_case(ctx, c);
}

static void emit_variable_shape(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "out_type", dt)) return;
  static const int64_t dims[3] = {2, 0, 3};
  for (int s = 0; s < 2; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s ? "scalar" : "rank3", dt, &rng);
    cf_case_input(c, handle("|input_1"));
    cf_case_variable_input(c, cf_array_new(WEFT_DT_FLOAT, s ? 0 : 3, dims), NULL);
    wire_first(c, 1);
    cf_case_attr_type(c, "out_type", dt);
    cf_case_expect(c, cf_array_ints(dt, s ? 0 : 3, dims));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "no_variable", dt, &rng);
  cf_case_input(c, handle("|nobody"));
  cf_case_attr_type(c, "out_type", dt);
  cf_case_expect_error(c, WEFT_NOT_FOUND,
                       "Resource localhost/nobody/N10tensorflow3VarE does not exist.");
  cf_run_case(ctx, c);
}

static void emit_destroy(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  for (int k = 0; k < 3; k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, k == 0 ? "existing" : k == 1 ? "missing_ignored" : "missing",
                            dt, &rng);
    cf_case_input(c, handle(k == 0 ? "|input_1" : "|nobody"));
    if (k == 0) {
      cf_case_variable_input(c, cf_array_new(WEFT_DT_FLOAT, 1, (const int64_t[]){2}), NULL);
      wire_first(c, 1);
    }
    if (k == 2) {
      cf_case_attr_bool(c, "ignore_lookup_error", false);
      cf_case_expect_error(c, WEFT_NOT_FOUND,
                           "Resource localhost/nobody/N10tensorflow3VarE does not exist.");
    }
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t index_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_resource_vars[] = {
    {"VarHandleOp", cf_dtypes_all, emit_var_handle, "dtype"},
    {"ReadVariableOp", cf_dtypes_all, emit_read, "dtype"},
    {"AssignVariableOp", cf_dtypes_all, emit_assign, "dtype"},
    {"AssignAddVariableOp", cf_dtypes_real_int, emit_assign, "dtype"},
    {"AssignSubVariableOp", cf_dtypes_real_int, emit_assign, "dtype"},
    {"VarIsInitializedOp", cf_dtypes_none, emit_is_initialized, NULL},
    {"ResourceGather", cf_dtypes_all, emit_gather, "dtype"},
    {"VariableShape", index_dtypes, emit_variable_shape, "out_type"},
    {"DestroyResourceOp", cf_dtypes_none, emit_destroy, NULL},
    {NULL, NULL, NULL, NULL},
};

/* TensorFlow's sparse, FTRL and proximal Adagrad optimizer updates (SparseApplyAdagrad/
 * AdagradV2/Momentum/Ftrl/FtrlV2/ProximalAdagrad, ApplyFtrl/FtrlV2/ProximalAdagrad and their
 * Resource* twins) in a local session through the public C API: one step of each on a [3, 2]
 * variable against numbers computed independently in float64 (tests/ref/sparse_apply_ref.py),
 * slots included, on resource variables and on ref variables (VariableV2); and the errors of
 * tensorflow/core/kernels/training_ops.cc: an index out of range (the variable left as it was),
 * grad rows that do not match the indices, FTRL's and proximal Adagrad's hyper-parameter checks. */
#include <math.h>
#include <string.h>

#include <glib.h>

#include "weft/weft.h"

#define OK(expr)                                                                  \
  do {                                                                            \
    weft_status_t *st_ = (expr);                                                  \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                  \
  } while (0)

#define N 6 /* elements of the [3, 2] variable */

static const float var0[N] = {1, -2, 0.5f, 0.25f, -1, 3};
static const float accum0[N] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
static const float linear0[N] = {0.01f, -0.02f, 0.03f, 0, -0.05f, 0.04f};
static const float sparse_grad[4] = {0.5f, -0.3f, 0.2f, 0.4f}; /* rows for indices {2, 0} */
static const float dense_grad[N] = {0.5f, -0.3f, 0.2f, 0.4f, -0.1f, 0.6f};

/* One update. `args` has one letter per input after the variables: 'k' the next scalar,
 * 'g' the gradient (sparse [2, 2] or dense [3, 2]), 'i' the indices. */
typedef struct update_case {
  const char *op;
  int n_refs;
  const char *args;
  float scalars[6];
  int64_t indices[2];
  const char *bool_attr; /* set true when not NULL */
  double want[3][N];
} update_case_t;

static weft_node_t *finish(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static weft_output_t const_tensor(weft_graph_t *g, weft_dtype_t dt, int rank, const int64_t *dims,
                                  const void *values) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  memcpy(weft_tensor_data(t), values, weft_tensor_nbytes(t));
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, "c", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static const float *initial(int r) { return r == 0 ? var0 : r == 1 ? accum0 : linear0; }

/* The variables (resource: VarHandleOp + AssignVariableOp "assignR" + ReadVariableOp "readR";
 * ref: VariableV2 "vR" with its initializer) and the update "update" on them. */
static void build(weft_graph_t *g, const update_case_t *c, bool resource, bool use_locking,
                  const int64_t *indices, weft_dtype_t index_dtype) {
  const int64_t vd[2] = {3, 2};
  weft_output_t vars[3];
  for (int r = 0; r < c->n_refs; r++) {
    char name[16];
    g_snprintf(name, sizeof name, "v%d", r);
    weft_output_t init = const_tensor(g, WEFT_DT_FLOAT, 2, vd, initial(r));
    if (resource) {
      weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", name);
      weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
      weft_op_set_attr_shape(b, "shape", 2, vd);
      vars[r] = weft_out(finish(b), 0);
      g_snprintf(name, sizeof name, "assign%d", r);
      b = weft_op_new(g, "AssignVariableOp", name);
      weft_op_add_input(b, vars[r]);
      weft_op_add_input(b, init);
      weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
      finish(b);
      g_snprintf(name, sizeof name, "read%d", r);
      b = weft_op_new(g, "ReadVariableOp", name);
      weft_op_add_input(b, vars[r]);
      weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
      finish(b);
    } else {
      weft_status_t *st = NULL;
      weft_variable(g, name, init, &st); /* its read; the update takes the reference */
      OK(st);
      char ref[16];
      g_snprintf(ref, sizeof ref, "%s:0", name);
      OK(weft_graph_find_output(g, ref, &vars[r]));
    }
  }
  weft_op_builder_t *b = weft_op_new(g, c->op, "update");
  for (int r = 0; r < c->n_refs; r++) weft_op_add_input(b, vars[r]);
  const int64_t gd[2] = {2, 2}, id = 2;
  int32_t idx32[2] = {(int32_t)indices[0], (int32_t)indices[1]};
  for (int a = 0, k = 0; c->args[a]; a++) {
    if (c->args[a] == 'k') {
      weft_op_add_input(b, const_tensor(g, WEFT_DT_FLOAT, 0, NULL, &c->scalars[k++]));
    } else if (c->args[a] == 'i') {
      weft_op_add_input(b, const_tensor(g, index_dtype, 1, &id,
                                        index_dtype == WEFT_DT_INT64 ? (const void *)indices
                                                                     : (const void *)idx32));
    } else {
      bool sparse = strchr(c->args, 'i') != NULL;
      weft_op_add_input(b, sparse ? const_tensor(g, WEFT_DT_FLOAT, 2, gd, sparse_grad)
                                  : const_tensor(g, WEFT_DT_FLOAT, 2, vd, dense_grad));
    }
  }
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_bool(b, "use_locking", use_locking);
  if (c->bool_attr) weft_op_set_attr_bool(b, c->bool_attr, true);
  finish(b);
}

/* A session on the graph with its variables initialised. */
static weft_session_t *start(weft_graph_t *g, const update_case_t *c, bool resource) {
  weft_status_t *st = NULL;
  weft_node_t *init = resource ? NULL : weft_global_variables_initializer(g, NULL, &st);
  OK(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  for (int r = 0; r < c->n_refs; r++) {
    char target[16];
    g_snprintf(target, sizeof target, "assign%d", r);
    const char *t = resource ? target : weft_node_name(init);
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &t, 1));
  }
  return s;
}

/* Variable r's value now, as float32. */
static weft_tensor_t *read_var(weft_session_t *s, int r, bool resource) {
  char name[16];
  g_snprintf(name, sizeof name, resource ? "read%d:0" : "v%d:0", r);
  const char *fetch = name;
  weft_tensor_t *t = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &t, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_num_elements(t), ==, N);
  return t;
}

static void check_case(const update_case_t *c, bool resource, bool use_locking,
                       weft_dtype_t index_dtype) {
  char *op = resource ? g_strdup_printf("Resource%s", c->op) : g_strdup(c->op);
  update_case_t rc = *c;
  rc.op = op;
  weft_graph_t *g = weft_graph_new();
  build(g, &rc, resource, use_locking, c->indices, index_dtype);
  weft_session_t *s = start(g, &rc, resource);
  const char *target = "update";
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
  for (int r = 0; r < c->n_refs; r++) {
    weft_tensor_t *t = read_var(s, r, resource);
    const float *got = weft_tensor_data(t);
    for (int i = 0; i < N; i++) {
      double tol = 1e-5 * fmax(1.0, fabs(c->want[r][i]));
      if (fabs(got[i] - c->want[r][i]) > tol)
        g_error("%s (%s indices): variable %d element %d is %.8g, want %.8g", op,
                weft_dtype_name(index_dtype), r, i, got[i], c->want[r][i]);
    }
    weft_tensor_unref(t);
  }
  g_test_message("%s (%s, %s indices, use_locking=%d): matches", op,
                 resource ? "resource" : "ref", weft_dtype_name(index_dtype), use_locking);
  weft_session_free(s);
  weft_graph_free(g);
  g_free(op);
}

#define SPARSE_ACCUM \
  {0.14000000268220902, 0.36000000774860386, 0.30000001192092896, 0.40000000596046448, 0.75, \
   0.69000003099441543}
#define DENSE_ACCUM \
  {0.35000000149011612, 0.29000001013278975, 0.34000001311302186, 0.5600000107288361, \
   0.51000000029802317, 0.96000005245208797}
#define LR 0.1f
#define FTRL_KS LR, 0.05f, 0.02f

/* Names without the Resource prefix; want: tests/ref/sparse_apply_ref.py. */
static const update_case_t cases[] = {
    {"SparseApplyAdagrad", 2, "kgi", {LR}, {2, 0}, NULL,
     {{0.94654775053655005, -2.0666666679360248, 0.5, 0.25, -1.0577350277792816,
       3.0361157570878587},
      SPARSE_ACCUM}},
    {"SparseApplyAdagradV2", 2, "kkgi", {LR, 0.01f}, {2, 0}, NULL,
     {{0.94793913561906984, -2.065573771775949, 0.5, 0.25, -1.0570759712467412,
       3.0356861463894664},
      SPARSE_ACCUM}},
    {"SparseApplyMomentum", 2, "kgik", {LR, 0.9f}, {2, 0}, NULL,
     {{0.97099999937415127, -2.0580000012516977, 0.5, 0.25, -1.0950000002235174,
       2.9760000001192095},
      {0.29000000193715092, 0.58000000387430184, 0.30000001192092896, 0.40000000596046448,
       0.94999998807907104, 0.23999999523162785}}},
    {"SparseApplyMomentum", 2, "kgik", {LR, 0.9f}, {2, 0}, "use_nesterov",
     {{0.95389999953210358, -2.0922000009357928, 0.5, 0.25, -1.1354999986812473,
       3.0084000023186208},
      {0.29000000193715092, 0.58000000387430184, 0.30000001192092896, 0.40000000596046448,
       0.94999998807907104, 0.23999999523162785}}},
    {"SparseApplyFtrl", 3, "gikkkk", {FTRL_KS, -0.5f}, {2, 0}, NULL,
     {{0.084454961368606474, -0.56055101441314081, 0.5, 0.25, -0.22863541936417375,
       0.22667507408477736},
      SPARSE_ACCUM,
      {-0.36937972749713732, 3.4357281133778224, 0.029999999329447746, 0, 2.0391862015531323,
       -1.9419715972591667}}},
    {"SparseApplyFtrl", 3, "gikkkk", {FTRL_KS, -0.7f}, {2, 0}, NULL,
     {{0.10521817380517111, -0.73607262871564483, 0.5, 0.25, -0.29458428530442954,
       0.30524545700975741},
      SPARSE_ACCUM,
      {-0.31990189997152618, 3.6796909602702796, 0.029999999329447746, 0, 2.4703155613701804,
       -2.416411045378398}}},
    {"SparseApplyFtrlV2", 3, "gikkkkk", {FTRL_KS, 0.1f, -0.5f}, {2, 0}, NULL,
     {{0.031568096265460949, -0.4943258475812875, 0.5, 0.25, -0.20564758417024093,
       0.15478972087541415},
      SPARSE_ACCUM,
      {-0.16937972451690508, 3.0357281074173579, 0.029999999329447746, 0, 1.8391861985729001,
       -1.34197158831847}}},
    {"ApplyFtrl", 3, "gkkkk", {FTRL_KS, -0.5f}, {0, 0}, NULL,
     {{0.3683298710662074, -0.26838959453794592, -0.0005342987876593324, -0.0080164318827857396,
       0.004127226846833679, 0.55560071057179672},
      DENSE_ACCUM,
      {-2.2438020711528801, 1.5060577871067342, 0.053136843238056619, 0.11031014083353841,
       -0.079639384519675255, -5.5159770627843621}}},
    {"ApplyFtrlV2", 3, "gkkkkk", {FTRL_KS, 0.1f, -0.5f}, {0, 0}, "multiply_linear_by_lr",
     {{0.31964012650905854, -0.1614804004042249, -0.063556445120599908, -0.014662438665790277,
       0.094638469592858362, 0.45801949621978583},
      DENSE_ACCUM,
      {-0.19538021007883405, 0.092605780194915166, 0.042313684052808442, 0.016031014396740373,
       -0.072963939762732355, -0.45559771357401058}}},
    {"SparseApplyProximalAdagrad", 2, "kkkgi", {LR, 0.05f, 0.02f}, {2, 0}, NULL,
     {{0.92822312694161746, -2.0514950178424232, 0.5, 0.25, -1.0495377213895047,
       3.0228183732353573},
      SPARSE_ACCUM}},
    {"SparseApplyProximalAdagrad", 2, "kkkgi", {LR, 0, 0.02f}, {2, 0}, NULL,
     {{0.94151514050762652, -2.0598006658416002, 0.5, 0.25, -1.0552979216409011,
       3.0288232079911812},
      SPARSE_ACCUM}},
    /* l1 = 2 thresholds element 3 to zero. */
    {"ApplyProximalAdagrad", 2, "kkkg", {LR, 2, 0.02f}, {0, 0}, NULL,
     {{0.57547739856943958, -1.5670807295011391, 0.12228368426342123, 0, -0.70396966845183928,
       2.7290679256779007},
      DENSE_ACCUM}},
};

static void test_updates(void) {
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    bool sparse = strchr(cases[k].args, 'i') != NULL;
    check_case(&cases[k], true, false, WEFT_DT_INT32);
    check_case(&cases[k], false, k % 2 == 0, WEFT_DT_INT32);
    if (sparse) check_case(&cases[k], true, true, WEFT_DT_INT64);
  }
}

/* The update with its other inputs replaced: returns the run's status; the variables unchanged
 * afterwards when `unchanged`. */
static weft_status_t *run_bad(const update_case_t *c, const int64_t *indices, bool unchanged) {
  weft_graph_t *g = weft_graph_new();
  build(g, c, true, false, indices, WEFT_DT_INT64);
  weft_session_t *s = start(g, c, true);
  const char *target = "update";
  weft_status_t *st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
  g_assert_nonnull(st);
  for (int r = 0; unchanged && r < c->n_refs; r++) {
    weft_tensor_t *t = read_var(s, r, true);
    g_assert_cmpmem(weft_tensor_data(t), sizeof(float) * N, initial(r), sizeof(float) * N);
    weft_tensor_unref(t);
  }
  weft_session_free(s);
  weft_graph_free(g);
  return st;
}

/* st is INVALID_ARGUMENT with exactly "node 'update': MESSAGE", followed, when op is not NULL,
 * by the kernel's " (op OP on DEVICE)". */
static void expect(weft_status_t *st, const char *op, const char *message) {
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  char *want = op ? g_strdup_printf("node 'update': %s (op %s on "
                                    "/job:localhost/replica:0/task:0/device:CPU:0)",
                                    message, op)
                  : g_strdup_printf("node 'update': %s", message);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
}

static void test_errors(void) {
  /* Index 3 of a 3-row variable: nothing is updated, not even row 2 before it. */
  update_case_t c = cases[0];
  c.op = "ResourceSparseApplyAdagrad";
  expect(run_bad(&c, (const int64_t[]){2, 3}, true), c.op,
         "Index 3 at offset 1 in indices is out of range");
  expect(run_bad(&c, (const int64_t[]){-1, 0}, true), c.op,
         "Index -1 at offset 0 in indices is out of range");
  /* Hyper-parameters out of their range: case, op, which scalar, its value, the message. */
  static const struct {
    int k;
    const char *op;
    int scalar;
    float value;
    const char *msg;
  } bad[] = {
      {4, "ResourceSparseApplyFtrl", 0, 0, "lr is not a positive scalar: []"},
      {4, "ResourceSparseApplyFtrl", 3, 0.5f, "lr_power is not a non-positive scalar: []"},
      {6, "ResourceSparseApplyFtrlV2", 3, -0.1f,
       "l2 shrinkage regularization strength is not a non-negative scalar: []"},
      {7, "ResourceApplyFtrl", 1, -1,
       "l1 regularization strength is not a non-negative scalar: []"},
      {9, "ResourceSparseApplyProximalAdagrad", 0, -0.1f, "lr is not a positive scalar: []"},
      {11, "ResourceApplyProximalAdagrad", 2, -0.5f,
       "l2 regularization strength is not a non-negative scalar: []"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
    c = cases[bad[k].k];
    c.op = bad[k].op;
    c.scalars[bad[k].scalar] = bad[k].value;
    expect(run_bad(&c, c.indices, true), c.op, bad[k].msg);
  }
  c = cases[9];
  c.op = "ResourceSparseApplyProximalAdagrad";
  expect(run_bad(&c, (const int64_t[]){0, 5}, true), c.op,
         "Index 5 at offset 1 in indices is out of range");
}

/* grad with 3 rows for 2 indices: refused at graph construction by the shape function. */
static void test_grad_rows(void) {
  weft_graph_t *g = weft_graph_new();
  const int64_t vd[2] = {3, 2}, id = 2;
  weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", "v");
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_shape(b, "shape", 2, vd);
  weft_output_t h = weft_out(finish(b), 0);
  b = weft_op_new(g, "VarHandleOp", "a");
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_shape(b, "shape", 2, vd);
  weft_output_t a = weft_out(finish(b), 0);
  const int32_t idx[2] = {0, 1};
  float lr = 0.1f;
  b = weft_op_new(g, "ResourceSparseApplyAdagrad", "update");
  weft_op_add_input(b, h);
  weft_op_add_input(b, a);
  weft_op_add_input(b, const_tensor(g, WEFT_DT_FLOAT, 0, NULL, &lr));
  weft_op_add_input(b, const_tensor(g, WEFT_DT_FLOAT, 2, vd, dense_grad));
  weft_op_add_input(b, const_tensor(g, WEFT_DT_INT32, 1, &id, idx));
  weft_status_t *st = weft_op_finish(b, NULL);
  g_assert_nonnull(st);
  expect(st, NULL, "grad must be the same size as indices in the first dimension.");
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sparse_apply/updates", test_updates);
  g_test_add_func("/sparse_apply/errors", test_errors);
  g_test_add_func("/sparse_apply/grad_rows", test_grad_rows);
  return g_test_run();
}

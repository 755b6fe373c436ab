/* grad_check.h: the finite-difference harness the gradient tests share: graphs with placeholders
 * fed deterministic values, a non-linear scalar loss of one output, and the check of each fed
 * element's symbolic gradient against central differences of that loss. Header-only (static
 * inline), included by one test program at a time. */
#ifndef WEFT_TESTS_GRAD_CHECK_H
#define WEFT_TESTS_GRAD_CHECK_H

#include <glib.h>
#include <math.h>
#include <string.h>

#include "weft/weft.h"

#define OK(expr)                                                                               \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                                \
  } while (0)

static const weft_output_t NONE = {NULL, 0};

/* A node with inputs ins[0..n) and attributes set by the caller between new and finish. */
static inline weft_op_builder_t *op_new(weft_graph_t *g, const char *name,
                                        const weft_output_t *ins, int n) {
  weft_op_builder_t *b = weft_op_new(g, name, NULL);
  for (int i = 0; i < n; i++) weft_op_add_input(b, ins[i]);
  return b;
}

static inline weft_node_t *finish(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static inline weft_output_t op1(weft_graph_t *g, const char *name, weft_output_t x) {
  return weft_out(finish(op_new(g, name, &x, 1)), 0);
}

static inline weft_output_t op2(weft_graph_t *g, const char *name, weft_output_t x,
                                weft_output_t y) {
  weft_output_t ins[2] = {x, y};
  return weft_out(finish(op_new(g, name, ins, 2)), 0);
}

static inline weft_tensor_t *tensor(weft_dtype_t dt, int rank, const int64_t *dims,
                                    const double *v) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) {
    void *d = weft_tensor_data(t);
    switch (dt) {
      case WEFT_DT_DOUBLE: ((double *)d)[i] = v[i]; break;
      case WEFT_DT_FLOAT: ((float *)d)[i] = (float)v[i]; break;
      case WEFT_DT_INT64: ((int64_t *)d)[i] = (int64_t)v[i]; break;
      default: ((int32_t *)d)[i] = (int32_t)v[i]; break;
    }
  }
  return t;
}

static inline weft_output_t cst(weft_graph_t *g, weft_dtype_t dt, int rank, const int64_t *dims,
                                const double *v) {
  weft_tensor_t *t = tensor(dt, rank, dims, v);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, "c", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static inline weft_output_t ivec(weft_graph_t *g, int n, const double *v) {
  int64_t d = n;
  return cst(g, WEFT_DT_INT32, 1, &d, v);
}

static inline weft_output_t iscalar(weft_graph_t *g, int v) {
  double d = v;
  return cst(g, WEFT_DT_INT32, 0, NULL, &d);
}

static inline void set_ints(weft_op_builder_t *b, const char *name, int64_t a, int64_t c, int64_t d,
                            int64_t e) {
  int64_t v[4] = {a, c, d, e};
  weft_op_set_attr_int_list(b, name, v, 4);
}

/* The placeholders of one check: their tensors (owned) and which one is differentiated. */
typedef struct feeds {
  int n;
  const char *names[4];
  weft_output_t ph[4];
  weft_tensor_t *t[4];
} feeds_t;

static inline weft_output_t feed(weft_graph_t *g, feeds_t *f, const char *name, weft_dtype_t dt,
                                 int rank, const int64_t *dims, const double *v) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_placeholder(g, name, dt, rank, dims, &st);
  OK(st);
  f->names[f->n] = name;
  f->ph[f->n] = o;
  f->t[f->n] = tensor(dt, rank, dims, v);
  f->n++;
  return o;
}

/* Deterministic values in [-1, 1) spread apart, so max windows have no ties. */
static inline double *values(int64_t n, double seed) {
  double *v = g_new(double, n);
  for (int64_t i = 0; i < n; i++)
    v[i] = fmod(seed + 0.6180339887 * (double)(i * 7 % 101), 2.0) - 1.0;
  return v;
}

static inline char *tname(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

static inline weft_tensor_t *fetch1(weft_session_t *s, const feeds_t *f, weft_output_t y) {
  char *name = tname(y);
  const char *fetch = name;
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, f->names, f->t, f->n, &fetch, &out, 1, NULL, 0));
  g_free(name);
  return out;
}

/* loss = sum(sin(y) + y): not linear in y, so each element's gradient weighs differently. */
static inline weft_output_t loss_of(weft_graph_t *g, weft_output_t y) {
  weft_output_t s = op2(g, "AddV2", op1(g, "Sin", y), y);
  weft_output_t axes[3] = {iscalar(g, 0), op1(g, "Rank", s), iscalar(g, 1)};
  weft_output_t r = weft_out(finish(op_new(g, "Range", axes, 3)), 0);
  return op2(g, "Sum", s, r);
}

static inline void set_elem(weft_tensor_t *t, int64_t k, double v) {
  if (weft_tensor_dtype(t) == WEFT_DT_DOUBLE) ((double *)weft_tensor_data(t))[k] = v;
  else ((float *)weft_tensor_data(t))[k] = (float)v;
}

/* d loss / d each feed in `which` (a bit per feed) against central differences. */
static inline void check_fd(weft_graph_t *g, feeds_t *f, weft_output_t y, unsigned which,
                            const char *label) {
  weft_output_t loss = loss_of(g, y);
  bool f32 = weft_tensor_dtype(f->t[0]) == WEFT_DT_FLOAT;
  const double eps = f32 ? 1e-2 : 1e-6, tol = f32 ? 2e-2 : 1e-6;
  for (int i = 0; i < f->n; i++) {
    if (!((which >> i) & 1u)) continue;
    weft_output_t grad = NONE;
    OK(weft_gradients(g, &loss, 1, &f->ph[i], 1, NULL, &grad));
    g_assert_nonnull(grad.node);
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    weft_tensor_t *gt = fetch1(s, f, grad), *x = f->t[i];
    int64_t n = weft_tensor_num_elements(x);
    g_assert_cmpint(weft_tensor_num_elements(gt), ==, n);
    for (int64_t k = 0; k < n; k++) {
      double orig = weft_tensor_get_double(x, k);
      set_elem(x, k, orig + eps);
      weft_tensor_t *p = fetch1(s, f, loss);
      set_elem(x, k, orig - eps);
      weft_tensor_t *m = fetch1(s, f, loss);
      set_elem(x, k, orig);
      double num = (weft_tensor_get_double(p, 0) - weft_tensor_get_double(m, 0)) / (2 * eps);
      weft_tensor_unref(p);
      weft_tensor_unref(m);
      double sym = weft_tensor_get_double(gt, k);
      if (fabs(num - sym) > tol * fmax(1.0, fabs(num)))
        g_error("%s: d/d%s[%" G_GINT64_FORMAT "]: symbolic %.9g, numeric %.9g", label,
                f->names[i], k, sym, num);
    }
    weft_tensor_unref(gt);
    weft_session_free(s);
  }
  for (int i = 0; i < f->n; i++) weft_tensor_unref(f->t[i]);
}

#endif

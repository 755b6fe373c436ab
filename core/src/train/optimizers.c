/* Losses, the trainable-variables collection, the global step and TensorFlow's optimizers'
 * minimize: gradients, slot variables colocated with their variable, one Apply* op per variable
 * (the CPU plugin's update kernels, TensorFlow's formulas) and the global step increment. */
#include "train_internal.h"

#include <string.h>

static const weft_output_t NONE = {NULL, 0};

static weft_output_t set_status(weft_status_t **status, weft_status_t *st) {
  if (status) *status = st;
  else weft_status_free(st);
  return NONE;
}

static void set_element(weft_tensor_t *t, int64_t i, double v) {
  void *d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_DT_FLOAT: ((float *)d)[i] = (float)v; break;
    case WEFT_DT_DOUBLE: ((double *)d)[i] = v; break;
    case WEFT_DT_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case WEFT_DT_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case WEFT_DT_HALF: ((uint16_t *)d)[i] = weft__float_to_half((float)v); break;
    case WEFT_DT_BFLOAT16: ((uint16_t *)d)[i] = weft__float_to_bfloat16((float)v); break;
    default: break;
  }
}

/* A Const of `dtype` and shape filled with v. */
static weft_output_t filled(weft_graph_t *g, const char *name, weft_dtype_t dtype, int rank,
                            const int64_t *dims, double v, weft_status_t **status) {
  weft_tensor_t *t = weft_tensor_new(dtype, rank, dims);
  if (v != 0.0)
    for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) set_element(t, i, v);
  weft_output_t o = weft_const(g, name, t, status);
  weft_tensor_unref(t);
  return o;
}

/* ---------------------------------------------------------------------------------------------
 * Losses */

static weft_output_t mean_over(weft_graph_t *g, const char *name, weft_output_t x,
                               const int64_t *axes, int n_axes, weft_status_t **status) {
  int64_t dims[1] = {n_axes};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 1, dims);
  for (int i = 0; i < n_axes; i++) ((int32_t *)weft_tensor_data(t))[i] = (int32_t)axes[i];
  weft_status_t *st = NULL;
  weft_output_t ax = weft_const(g, "reduction_indices", t, &st);
  weft_tensor_unref(t);
  if (st) return set_status(status, st);
  return weft_binary(g, "Mean", name, x, ax, status);
}

weft_output_t weft_mean_squared_error(weft_graph_t *g, weft_output_t labels,
                                      weft_output_t predictions, weft_status_t **status) {
  if (!g || !labels.node || !predictions.node)
    return set_status(status, weft_status_new(WEFT_INVALID_ARGUMENT,
                                              "mean_squared_error: missing labels or predictions"));
  weft_graph_push_name_scope(g, "mean_squared_error");
  weft_status_t *st = NULL;
  weft_output_t out = NONE;
  weft_output_t d = weft_binary(g, "Sub", "Sub", predictions, labels, &st);
  weft_output_t sq = st ? NONE : weft_unary(g, "Square", "Square", d, &st);
  if (!st) {
    int64_t dims[WEFT_MAX_RANK];
    int rank = weft_node_output_shape(sq.node, sq.index, dims);
    if (rank < 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "mean_squared_error: '%s' has an unknown rank", predictions.node->name);
    } else {
      int64_t axes[WEFT_MAX_RANK];
      for (int i = 0; i < rank; i++) axes[i] = i;
      out = mean_over(g, "value", sq, axes, rank, &st);
    }
  }
  weft_graph_pop_name_scope(g);
  if (st) return set_status(status, st);
  if (status) *status = NULL;
  return out;
}

static weft_output_t xent(weft_graph_t *g, const char *op, const char *scope,
                          weft_output_t labels, weft_output_t logits, weft_status_t **status) {
  if (!g || !labels.node || !logits.node)
    return set_status(status,
                      weft_status_new(WEFT_INVALID_ARGUMENT, "%s: missing labels or logits", scope));
  weft_graph_push_name_scope(g, scope);
  weft_op_builder_t *b = weft_op_new(g, op, op);
  weft_op_add_input(b, logits);
  weft_op_add_input(b, labels);
  weft_node_t *n = NULL;
  weft_status_t *st = weft_op_finish(b, &n);
  weft_output_t out = NONE;
  if (!st) {
    int64_t axis = 0;
    out = mean_over(g, "value", weft_out(n, 0), &axis, 1, &st);
  }
  weft_graph_pop_name_scope(g);
  if (st) return set_status(status, st);
  if (status) *status = NULL;
  return out;
}

weft_output_t weft_softmax_cross_entropy(weft_graph_t *g, weft_output_t labels,
                                         weft_output_t logits, weft_status_t **status) {
  return xent(g, "SoftmaxCrossEntropyWithLogits", "softmax_cross_entropy_loss", labels, logits,
              status);
}

weft_output_t weft_sparse_softmax_cross_entropy(weft_graph_t *g, weft_output_t labels,
                                                weft_output_t logits, weft_status_t **status) {
  return xent(g, "SparseSoftmaxCrossEntropyWithLogits", "sparse_softmax_cross_entropy_loss",
              labels, logits, status);
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

int weft_graph_num_trainable_variables(const weft_graph_t *g) {
  weft_graph_t *mg = (weft_graph_t *)g;
  g_mutex_lock(&mg->lock);
  int n = (int)g->trainable->len;
  g_mutex_unlock(&mg->lock);
  return n;
}

weft_node_t *weft_graph_trainable_variable(const weft_graph_t *g, int index) {
  weft_graph_t *mg = (weft_graph_t *)g;
  g_mutex_lock(&mg->lock);
  weft_node_t *n = index >= 0 && index < (int)g->trainable->len ? g->trainable->pdata[index] : NULL;
  g_mutex_unlock(&mg->lock);
  return n;
}

weft_output_t weft__train_variable(weft_graph_t *g, const char *name, weft_output_t initial_value,
                                   bool trainable, weft_node_t **var_out,
                                   weft_status_t **status) {
  if (var_out) *var_out = NULL;
  weft_status_t *st = NULL;
  weft_output_t read = weft_variable(g, name, initial_value, &st);
  if (st) return set_status(status, st);
  weft_node_t *var = read.node->inputs[0].src;
  if (!trainable) {
    g_mutex_lock(&g->lock);
    g_ptr_array_remove(g->trainable, var);
    g_mutex_unlock(&g->lock);
  }
  if (var_out) *var_out = var;
  if (status) *status = NULL;
  return read;
}

weft_node_t *weft_train_global_step(weft_graph_t *g, weft_status_t **status) {
  if (status) *status = NULL;
  weft_node_t *existing = weft_graph_node(g, "global_step");
  if (existing) {
    if (strcmp(existing->op_name, "VariableV2") != 0) {
      set_status(status, weft_status_new(WEFT_INVALID_ARGUMENT,
                                         "'global_step' exists and is a %s, not a VariableV2",
                                         existing->op_name));
      return NULL;
    }
    return existing;
  }
  weft_status_t *st = NULL;
  weft_output_t zero = filled(g, "global_step/Initializer/zeros", WEFT_DT_INT64, 0, NULL, 0, &st);
  weft_node_t *var = NULL;
  if (!st) weft__train_variable(g, "global_step", zero, false, &var, &st);
  if (st) {
    set_status(status, st);
    return NULL;
  }
  return var;
}

/* ---------------------------------------------------------------------------------------------
 * Optimizers */

weft_optimizer_spec_t weft_optimizer_spec_default(weft_optimizer_kind_t kind,
                                                  double learning_rate) {
  weft_optimizer_spec_t s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  s.learning_rate = learning_rate;
  s.momentum = kind == WEFT_OPTIMIZER_MOMENTUM ? 0.9 : 0.0;
  s.initial_accumulator_value = 0.1;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  s.decay = 0.9;
  s.epsilon = kind == WEFT_OPTIMIZER_ADAM ? 1e-8 : 1e-10;
  return s;
}

static const char *kind_name(weft_optimizer_kind_t kind) {
  switch (kind) {
    case WEFT_OPTIMIZER_GRADIENT_DESCENT: return "GradientDescent";
    case WEFT_OPTIMIZER_MOMENTUM: return "Momentum";
    case WEFT_OPTIMIZER_ADAGRAD: return "Adagrad";
    case WEFT_OPTIMIZER_ADAM: return "Adam";
    case WEFT_OPTIMIZER_RMSPROP: return "RMSProp";
  }
  return NULL;
}

typedef struct var_info {
  weft_node_t *var;
  weft_output_t grad;
  weft_dtype_t dtype;
  weft__shape_t shape;
  weft_node_t *slot[2];
} var_info_t;

/* A slot variable "<var>/<suffix>" filled with v, colocated with var. */
static weft_status_t *make_slot(weft_graph_t *g, var_info_t *vi, const char *suffix, double v,
                                weft_node_t **out) {
  for (int d = 0; d < vi->shape.rank; d++) {
    if (vi->shape.dims[d] < 0 || vi->shape.rank < 0)
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "variable '%s' needs a fully defined shape for its slot '%s'",
                             vi->var->name, suffix);
  }
  if (vi->shape.rank < 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "variable '%s' needs a fully defined shape for its slot '%s'",
                           vi->var->name, suffix);
  char *name = g_strdup_printf("%s/%s", vi->var->name, suffix);
  char *init_name = g_strdup_printf("%s/Initializer/Const", name);
  weft_graph_push_colocate(g, vi->var);
  weft_status_t *st = NULL;
  weft_output_t init = filled(g, init_name, vi->dtype, vi->shape.rank, vi->shape.dims, v, &st);
  if (!st) weft__train_variable(g, name, init, false, out, &st);
  weft_graph_pop_colocate(g);
  g_free(name);
  g_free(init_name);
  return st;
}

static weft_output_t scalar_const(weft_graph_t *g, const char *name, weft_dtype_t dtype, double v,
                                  weft_status_t **st) {
  return filled(g, name, dtype, 0, NULL, v, st);
}

/* The Apply* op of one variable, built under colocation with it. */
static weft_status_t *apply_one(weft_graph_t *g, const weft_optimizer_spec_t *spec,
                                const var_info_t *vi, weft_output_t beta1_power,
                                weft_output_t beta2_power, weft_node_t **out) {
  static const char *const ops[] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad",
                                    "ApplyAdam", "ApplyRMSProp"};
  weft_status_t *st = NULL;
  weft_dtype_t t = vi->dtype;
  char *scope = g_strdup_printf("update_%s", vi->var->name);
  weft_graph_push_name_scope(g, scope);
  g_free(scope);
  weft_graph_push_colocate(g, vi->var);
  weft_output_t lr = scalar_const(g, "learning_rate", t, spec->learning_rate, &st);
  weft_op_builder_t *b = NULL;
  if (!st) {
    b = weft_op_new(g, ops[spec->kind], ops[spec->kind]);
    weft_op_add_input(b, weft_out(vi->var, 0));
    switch (spec->kind) {
      case WEFT_OPTIMIZER_GRADIENT_DESCENT:
        weft_op_add_input(b, lr);
        weft_op_add_input(b, vi->grad);
        break;
      case WEFT_OPTIMIZER_MOMENTUM: {
        weft_output_t m = scalar_const(g, "momentum", t, spec->momentum, &st);
        weft_op_add_input(b, weft_out(vi->slot[0], 0));
        weft_op_add_input(b, lr);
        weft_op_add_input(b, vi->grad);
        weft_op_add_input(b, m);
        weft_op_set_attr_bool(b, "use_nesterov", spec->use_nesterov);
        break;
      }
      case WEFT_OPTIMIZER_ADAGRAD:
        weft_op_add_input(b, weft_out(vi->slot[0], 0));
        weft_op_add_input(b, lr);
        weft_op_add_input(b, vi->grad);
        break;
      case WEFT_OPTIMIZER_ADAM: {
        weft_output_t b1 = scalar_const(g, "beta1", t, spec->beta1, &st);
        weft_output_t b2 = st ? NONE : scalar_const(g, "beta2", t, spec->beta2, &st);
        weft_output_t eps = st ? NONE : scalar_const(g, "epsilon", t, spec->epsilon, &st);
        weft_op_add_input(b, weft_out(vi->slot[0], 0));
        weft_op_add_input(b, weft_out(vi->slot[1], 0));
        weft_op_add_input(b, beta1_power);
        weft_op_add_input(b, beta2_power);
        weft_op_add_input(b, lr);
        weft_op_add_input(b, b1);
        weft_op_add_input(b, b2);
        weft_op_add_input(b, eps);
        weft_op_add_input(b, vi->grad);
        weft_op_set_attr_bool(b, "use_nesterov", spec->use_nesterov);
        break;
      }
      case WEFT_OPTIMIZER_RMSPROP: {
        weft_output_t rho = scalar_const(g, "rho", t, spec->decay, &st);
        weft_output_t mom = st ? NONE : scalar_const(g, "momentum", t, spec->momentum, &st);
        weft_output_t eps = st ? NONE : scalar_const(g, "epsilon", t, spec->epsilon, &st);
        weft_op_add_input(b, weft_out(vi->slot[0], 0));
        weft_op_add_input(b, weft_out(vi->slot[1], 0));
        weft_op_add_input(b, lr);
        weft_op_add_input(b, rho);
        weft_op_add_input(b, mom);
        weft_op_add_input(b, eps);
        weft_op_add_input(b, vi->grad);
        break;
      }
    }
    if (st) {
      /* Finishing frees the builder; its own error is not the interesting one. */
      weft_status_free(weft_op_finish(b, NULL));
    } else {
      st = weft_op_finish(b, out);
    }
  }
  weft_graph_pop_colocate(g);
  weft_graph_pop_name_scope(g);
  return st;
}

/* Adam's beta powers: beta_power *= beta after the updates. */
static weft_status_t *advance_power(weft_graph_t *g, weft_node_t *power_var, double beta,
                                    weft_dtype_t t, GPtrArray *updates, GPtrArray *finals) {
  weft_status_t *st = NULL;
  weft_graph_push_colocate(g, power_var);
  weft_graph_push_control_deps(g, (weft_node_t *const *)updates->pdata, (int)updates->len);
  weft_output_t bc = scalar_const(g, "beta", t, beta, &st);
  weft_output_t prod = st ? NONE
                          : weft_binary(g, "Mul", "mul", weft_out(power_var, 0), bc, &st);
  if (!st) {
    weft_op_builder_t *b = weft_op_new(g, "Assign", "Assign");
    weft_op_add_input(b, weft_out(power_var, 0));
    weft_op_add_input(b, prod);
    weft_node_t *n = NULL;
    st = weft_op_finish(b, &n);
    if (!st) g_ptr_array_add(finals, n);
  }
  weft_graph_pop_control_deps(g);
  weft_graph_pop_colocate(g);
  return st;
}

weft_status_t *weft_minimize(weft_graph_t *g, weft_output_t loss,
                             const weft_optimizer_spec_t *spec, weft_node_t *const *var_list,
                             int n_vars, weft_node_t *global_step, weft_node_t **train_op) {
  if (train_op) *train_op = NULL;
  if (!g || !loss.node || !spec || !kind_name(spec->kind))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "minimize: missing graph, loss or a valid optimizer spec");
  const char *opt_name = spec->name ? spec->name : kind_name(spec->kind);

  GPtrArray *vars = g_ptr_array_new();
  if (var_list && n_vars > 0) {
    for (int i = 0; i < n_vars; i++) g_ptr_array_add(vars, var_list[i]);
  } else {
    g_mutex_lock(&g->lock);
    for (guint k = 0; k < g->trainable->len; k++) g_ptr_array_add(vars, g->trainable->pdata[k]);
    g_mutex_unlock(&g->lock);
  }
  for (guint k = 0; k < vars->len; k++) {
    weft_node_t *v = vars->pdata[k];
    if (!v || v->graph != g || v->n_outputs < 1 || !weft__dtype_is_ref(v->output_types[0])) {
      g_ptr_array_free(vars, TRUE);
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "minimize: '%s' is not a variable (a node with a ref output)",
                             v ? v->name : "(null)");
    }
  }
  if (vars->len == 0) {
    g_ptr_array_free(vars, TRUE);
    return weft_status_new(WEFT_INVALID_ARGUMENT, "minimize: no variables to optimize");
  }

  int n = (int)vars->len;
  weft_output_t *xs = g_new0(weft_output_t, n);
  weft_output_t *grads = g_new0(weft_output_t, n);
  for (int i = 0; i < n; i++) xs[i] = weft_out(vars->pdata[i], 0);
  weft_status_t *st = weft_gradients(g, &loss, 1, xs, n, NULL, grads);
  int n_grads = 0;
  for (int i = 0; i < n; i++) n_grads += grads[i].node != NULL;
  if (!st && n_grads == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "minimize: no gradients provided for any variable (the loss '%s' does "
                         "not depend on them)", loss.node->name);
  if (st)
    st = weft_status_prefix(st, "minimize (%s)", opt_name);
  else
    st = weft__apply_gradients(g, spec, (weft_node_t *const *)vars->pdata, grads, n, global_step,
                               train_op);
  g_free(xs);
  g_free(grads);
  g_ptr_array_free(vars, TRUE);
  return st;
}

weft_status_t *weft__apply_gradients(weft_graph_t *g, const weft_optimizer_spec_t *spec,
                                     weft_node_t *const *vars, const weft_output_t *grads,
                                     int n, weft_node_t *global_step, weft_node_t **train_op) {
  if (train_op) *train_op = NULL;
  if (!g || !spec || !kind_name(spec->kind))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "apply gradients: missing a valid optimizer");
  const char *opt_name = spec->name ? spec->name : kind_name(spec->kind);
  weft_status_t *st = NULL;
  GArray *infos = g_array_new(FALSE, TRUE, sizeof(var_info_t));
  for (int i = 0; i < n; i++) {
    if (!grads[i].node) continue;
    var_info_t vi = {.var = vars[i], .grad = grads[i]};
    vi.dtype = weft__dtype_base(vi.var->output_types[0]);
    vi.shape = weft__node_shape(vi.var, 0);
    g_array_append_val(infos, vi);
  }
  if (infos->len == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "apply gradients: no gradient for any variable");

  /* Slots, named like TensorFlow's ("w/Momentum", "w/Adam_1"). */
  for (guint k = 0; k < infos->len && !st; k++) {
    var_info_t *vi = &g_array_index(infos, var_info_t, k);
    char *s1 = g_strdup(opt_name), *s2 = g_strdup_printf("%s_1", opt_name);
    switch (spec->kind) {
      case WEFT_OPTIMIZER_GRADIENT_DESCENT: break;
      case WEFT_OPTIMIZER_MOMENTUM: st = make_slot(g, vi, s1, 0.0, &vi->slot[0]); break;
      case WEFT_OPTIMIZER_ADAGRAD:
        st = make_slot(g, vi, s1, spec->initial_accumulator_value, &vi->slot[0]);
        break;
      case WEFT_OPTIMIZER_ADAM:
      case WEFT_OPTIMIZER_RMSPROP:
        /* RMSProp's ms starts at 1 in TensorFlow; Adam's m and v at 0. */
        st = make_slot(g, vi, s1, spec->kind == WEFT_OPTIMIZER_RMSPROP ? 1.0 : 0.0, &vi->slot[0]);
        if (!st) st = make_slot(g, vi, s2, 0.0, &vi->slot[1]);
        break;
    }
    g_free(s1);
    g_free(s2);
  }

  weft_node_t *beta1_power = NULL, *beta2_power = NULL;
  weft_dtype_t t0 = infos->len ? g_array_index(infos, var_info_t, 0).dtype : WEFT_DT_FLOAT;
  if (!st && spec->kind == WEFT_OPTIMIZER_ADAM) {
    weft_node_t *first = g_array_index(infos, var_info_t, 0).var;
    weft_graph_push_colocate(g, first);
    weft_output_t i1 = scalar_const(g, "beta1_power/initial_value", t0, spec->beta1, &st);
    if (!st) weft__train_variable(g, "beta1_power", i1, false, &beta1_power, &st);
    weft_output_t i2 = st ? NONE : scalar_const(g, "beta2_power/initial_value", t0, spec->beta2,
                                                &st);
    if (!st) weft__train_variable(g, "beta2_power", i2, false, &beta2_power, &st);
    weft_graph_pop_colocate(g);
  }

  GPtrArray *updates = g_ptr_array_new();
  GPtrArray *finals = g_ptr_array_new();
  weft_graph_push_name_scope(g, opt_name);
  for (guint k = 0; k < infos->len && !st; k++) {
    var_info_t *vi = &g_array_index(infos, var_info_t, k);
    weft_output_t b1 = NONE, b2 = NONE;
    if (beta1_power) {
      weft_op_builder_t *cb = weft_op_new(g, "Cast", "beta1_power_cast");
      weft_op_add_input(cb, weft_out(beta1_power, 0));
      weft_op_set_attr_type(cb, "DstT", vi->dtype);
      weft_node_t *c1 = NULL, *c2 = NULL;
      st = weft_op_finish(cb, &c1);
      if (!st) {
        cb = weft_op_new(g, "Cast", "beta2_power_cast");
        weft_op_add_input(cb, weft_out(beta2_power, 0));
        weft_op_set_attr_type(cb, "DstT", vi->dtype);
        st = weft_op_finish(cb, &c2);
      }
      if (st) break;
      b1 = weft_out(c1, 0);
      b2 = weft_out(c2, 0);
    }
    weft_node_t *u = NULL;
    st = apply_one(g, spec, vi, b1, b2, &u);
    if (!st) g_ptr_array_add(updates, u);
  }
  for (guint k = 0; k < updates->len; k++) g_ptr_array_add(finals, updates->pdata[k]);
  if (!st && beta1_power) st = advance_power(g, beta1_power, spec->beta1, t0, updates, finals);
  if (!st && beta2_power) st = advance_power(g, beta2_power, spec->beta2, t0, updates, finals);
  if (!st && global_step) {
    weft_graph_push_colocate(g, global_step);
    weft_graph_push_control_deps(g, (weft_node_t *const *)finals->pdata, (int)finals->len);
    weft_dtype_t gt = weft__dtype_base(global_step->output_types[0]);
    weft_output_t one = scalar_const(g, "global_step_increment", gt, 1.0, &st);
    if (!st) {
      weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "increment_global_step");
      weft_op_add_input(b, weft_out(global_step, 0));
      weft_op_add_input(b, one);
      weft_node_t *inc = NULL;
      st = weft_op_finish(b, &inc);
      if (!st) g_ptr_array_add(finals, inc);
    }
    weft_graph_pop_control_deps(g);
    weft_graph_pop_colocate(g);
  }
  weft_graph_pop_name_scope(g);
  if (!st) {
    /* With a global step the train op sits beside it, as TensorFlow's (the step's increment is
     * its train op): on a cluster the updates then signal it without leaving the ps task, and a
     * worker's step waits for no control message of its own. */
    if (global_step) weft_graph_push_colocate(g, global_step);
    weft_op_builder_t *b = weft_op_new(g, "NoOp", opt_name);
    for (guint k = 0; k < finals->len; k++) weft_op_add_control_input(b, finals->pdata[k]);
    st = weft_op_finish(b, train_op);
    if (global_step) weft_graph_pop_colocate(g);
  }
  g_ptr_array_free(updates, TRUE);
  g_ptr_array_free(finals, TRUE);
  g_array_free(infos, TRUE);
  return st ? weft_status_prefix(st, "minimize (%s)", opt_name) : NULL;
}

/* onnx/map_sequence.c: the ONNX sequence ops (SequenceConstruct, SequenceEmpty, SequenceInsert,
 * SequenceAt, SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence, SequenceMap),
 * Identity (of a tensor or a sequence) and Loops that carry sequences.
 *
 * A sequence is known element by element while the model is mapped (cf_onnx_seq_t: one Weft
 * output per element), so the sequence ops are list edits at mapping time: positions and split
 * sizes are read as constants (the runner evaluates them from the test inputs), and the result
 * is exactly ONNX's as long as the sequence's length does not depend on a value computed in a
 * frame. SequenceMap, and a Loop whose loop-carried values include a sequence, are unrolled: the
 * body is mapped once per element or iteration with its inputs bound to that iteration's values,
 * which also makes the iteration number a constant for the body's Slices and SequenceAts. */
#include <string.h>

#include "map.h"

/* Sequence input i of node, or NULL (*st set) when it is absent or not a sequence. */
static const cf_onnx_seq_t *seq_in(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i,
                                   weft_status_t **st) {
  const cf_onnx_seq_t *s = cf_onnx_has_in(node, i) ? cf_onnx_seq_get(x, node->input[i]) : NULL;
  if (s == NULL && *st == NULL)
    *st = cf_onnx_unsupported(x, "input %zu ('%s') is not a known sequence", i,
                              cf_onnx_has_in(node, i) ? node->input[i] : "");
  return s;
}

static void bind_seq_out(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t k,
                         cf_onnx_seq_t *s) {
  if (k < node->n_output) cf_onnx_seq_bind(x, node->output[k], s);
  else cf_onnx_seq_free(s);
}

/* The position input i as an index into a sequence of n (negative counts from the end), or dflt
 * when absent; INVALID_ARGUMENT outside [-n, n - 1] (or [-n, n] when past_end may be used). */
static bool position(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i, size_t n,
                     bool past_end, int64_t dflt, int64_t *pos, weft_status_t **st) {
  if (*st) return false;
  if (!cf_onnx_has_in(node, i)) {
    *pos = dflt;
    return true;
  }
  int64_t *v = NULL;
  int nv = 0;
  if (!cf_onnx_in_ints(x, node, i, &v, &nv, st)) return false;
  int64_t p = nv == 1 ? v[0] : 0;
  g_free(v);
  int64_t hi = (int64_t)n - (past_end ? 0 : 1);
  if (nv != 1) {
    *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the position has %d values, not one",
                          x->node_name, nv);
    return false;
  }
  if (p < -(int64_t)n || p > hi) {
    *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                          "%s: position %" G_GINT64_FORMAT " is out of range for a sequence of "
                          "%zu (a scalar in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "])",
                          x->node_name, p, n, -(int64_t)n, hi);
    return false;
  }
  *pos = p < 0 ? p + (int64_t)n : p;
  return true;
}

static weft_status_t *check_dtype(cf_onnx_ctx_t *x, const cf_onnx_seq_t *s, weft_output_t t) {
  if (cf_onnx_out_dtype(t) == s->dtype) return NULL;
  return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: a %s tensor for a sequence of %s",
                         x->node_name, weft_dtype_name(cf_onnx_out_dtype(t)),
                         weft_dtype_name(s->dtype));
}

static weft_status_t *map_sequence_construct(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  if (node->n_input == 0 || !cf_onnx_has_in(node, 0))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: no inputs", x->node_name);
  cf_onnx_seq_t *s = cf_onnx_seq_new(cf_onnx_out_dtype(cf_onnx_in(x, node, 0)));
  for (size_t i = 0; i < node->n_input && st == NULL; i++) {
    weft_output_t t = cf_onnx_in(x, node, i);
    if (t.node == NULL) st = cf_onnx_unsupported(x, "input %zu is not a known tensor", i);
    else st = check_dtype(x, s, t);
    g_array_append_val(s->items, t);
  }
  if (st) {
    cf_onnx_seq_free(s);
    return st;
  }
  bind_seq_out(x, node, 0, s);
  return NULL;
}

static weft_status_t *map_sequence_empty(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  int64_t t = cf_onnx_attr_int(node, "dtype", 1);
  weft_dtype_t dt = cf_onnx_dtype((int)t);
  if (dt == WEFT_DT_INVALID)
    return cf_onnx_unsupported(x, "dtype %" G_GINT64_FORMAT " has no Weft dtype", t);
  bind_seq_out(x, node, 0, cf_onnx_seq_new(dt));
  return NULL;
}

static weft_status_t *map_sequence_insert(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = seq_in(x, node, 0, &st);
  weft_output_t t = cf_onnx_in(x, node, 1);
  if (st == NULL && t.node == NULL) st = cf_onnx_unsupported(x, "input 1 is not a known tensor");
  if (st) return st;
  if ((st = check_dtype(x, s, t))) return st;
  int64_t pos = 0;
  if (!position(x, node, 2, s->items->len, true, s->items->len, &pos, &st)) return st;
  cf_onnx_seq_t *r = cf_onnx_seq_copy(s);
  g_array_insert_val(r->items, (guint)pos, t);
  bind_seq_out(x, node, 0, r);
  return NULL;
}

static weft_status_t *map_sequence_at(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = seq_in(x, node, 0, &st);
  int64_t pos = 0;
  if (st == NULL && !cf_onnx_has_in(node, 1))
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the position is required", x->node_name);
  if (st || !position(x, node, 1, s->items->len, false, 0, &pos, &st)) return st;
  weft_output_t t = g_array_index(s->items, weft_output_t, pos);
  cf_onnx_bind_out(x, node, 0, cf_onnx_unary(x, "Identity", t, &st));
  return st;
}

static weft_status_t *map_sequence_erase(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = seq_in(x, node, 0, &st);
  int64_t pos = 0;
  if (st == NULL && s->items->len == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the sequence is empty", x->node_name);
  if (st || !position(x, node, 1, s->items->len, false, (int64_t)s->items->len - 1, &pos, &st))
    return st;
  cf_onnx_seq_t *r = cf_onnx_seq_copy(s);
  g_array_remove_index(r->items, (guint)pos);
  bind_seq_out(x, node, 0, r);
  return NULL;
}

static weft_status_t *map_sequence_length(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = seq_in(x, node, 0, &st);
  if (st) return st;
  cf_onnx_bind_out(x, node, 0, cf_onnx_const_scalar(x, WEFT_DT_INT64, s->items->len, &st));
  return st;
}

/* ConcatV2 of the elements along axis, or Pack along a new axis (new_axis = 1). */
static weft_status_t *map_concat_from_sequence(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = seq_in(x, node, 0, &st);
  if (st) return st;
  if (s->items->len == 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the sequence is empty", x->node_name);
  bool new_axis = cf_onnx_attr_int(node, "new_axis", 0) != 0;
  if (cf_onnx_attr(node, "axis") == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: attribute axis is required", x->node_name);
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  weft_output_t *items = (weft_output_t *)(void *)s->items->data;
  if ((st = cf_onnx_need_shape(x, items[0], &rank, dims))) return st;
  if (!cf_onnx_norm_axes(x, &axis, 1, rank + (new_axis ? 1 : 0), &st)) return st;
  weft_op_builder_t *b = cf_onnx_op(x, new_axis ? "Pack" : "ConcatV2");
  weft_op_add_input_list(b, items, (int)s->items->len);
  if (new_axis)
    weft_op_set_attr_int(b, "axis", axis);
  else
    weft_op_add_input(b, cf_onnx_const_scalar(x, WEFT_DT_INT64, (double)axis, &st));
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

/* Slices of the input along axis: of the sizes in split (1-D), of split's value each with a
 * shorter last one (a scalar), or of 1 each, squeezed unless keepdims (no split). */
static weft_status_t *map_split_to_sequence(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if (v.node == NULL) return cf_onnx_unsupported(x, "input 0 is not a known tensor");
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  bool keep = cf_onnx_attr_int(node, "keepdims", 1) != 0;
  int64_t len = dims[axis];
  int64_t *split = NULL;
  int n = 0;
  bool scalar_split = false;
  if (cf_onnx_has_in(node, 1)) {
    if (!cf_onnx_in_ints(x, node, 1, &split, &n, &st)) return st;
    const weft_tensor_t *sv = cf_onnx_value(x, node->input[1], &st);
    scalar_split = sv && weft_tensor_rank(sv) == 0;
  }
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(int64_t));
  if (split == NULL || scalar_split) {
    int64_t c = scalar_split ? split[0] : 1;
    if (c <= 0)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: split is %" G_GINT64_FORMAT
                           ", not positive", x->node_name, c);
    for (int64_t at = 0; st == NULL && at < len; at += c) {
      int64_t sz = MIN(c, len - at);
      g_array_append_val(sizes, sz);
    }
  } else {
    int64_t sum = 0;
    for (int i = 0; i < n && st == NULL; i++) {
      if (split[i] < 0)
        st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: split %d is %" G_GINT64_FORMAT,
                             x->node_name, i, split[i]);
      sum += split[i];
      g_array_append_val(sizes, split[i]);
    }
    if (st == NULL && sum != len)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the splits add up to %" G_GINT64_FORMAT
                           ", axis %" G_GINT64_FORMAT " has %" G_GINT64_FORMAT,
                           x->node_name, sum, axis, len);
  }
  bool squeeze = split == NULL && !keep;
  g_free(split);
  cf_onnx_seq_t *s = cf_onnx_seq_new(cf_onnx_out_dtype(v));
  int64_t at = 0;
  for (guint i = 0; i < sizes->len && st == NULL; i++) {
    int64_t begin[WEFT_MAX_RANK] = {0}, sz[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) sz[d] = dims[d];
    begin[axis] = at;
    sz[axis] = g_array_index(sizes, int64_t, i);
    at += sz[axis];
    weft_op_builder_t *b = cf_onnx_op(x, "Slice");
    weft_op_add_input(b, v);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, sz, rank, false, &st));
    weft_output_t piece = cf_onnx_finish(x, b, &st);
    if (squeeze && st == NULL) {
      b = cf_onnx_op(x, "Squeeze");
      weft_op_add_input(b, piece);
      weft_op_set_attr_int_list(b, "squeeze_dims", &axis, 1);
      piece = cf_onnx_finish(x, b, &st);
    }
    g_array_append_val(s->items, piece);
  }
  g_array_free(sizes, TRUE);
  if (st) {
    cf_onnx_seq_free(s);
    return st;
  }
  bind_seq_out(x, node, 0, s);
  return NULL;
}

/* Identity of a tensor, or of each element of a sequence (onnx/map_elementwise.c maps the other
 * unary ops). */
static weft_status_t *map_identity(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const cf_onnx_seq_t *s = cf_onnx_has_in(node, 0) ? cf_onnx_seq_get(x, node->input[0]) : NULL;
  if (s == NULL) {
    cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Identity", cf_onnx_in(x, node, 0), CF_ONNX_NONE,
                                            &st));
    return st;
  }
  cf_onnx_seq_t *r = cf_onnx_seq_new(s->dtype);
  for (guint i = 0; i < s->items->len && st == NULL; i++) {
    weft_output_t t = cf_onnx_unary(x, "Identity", g_array_index(s->items, weft_output_t, i), &st);
    g_array_append_val(r->items, t);
  }
  if (st) {
    cf_onnx_seq_free(r);
    return st;
  }
  bind_seq_out(x, node, 0, r);
  return NULL;
}

/* ---- unrolling ---- */

/* Drops the cached constant values of the names g defines (its inputs and its nodes' outputs),
 * so that the next mapping of g evaluates them anew. */
static void forget_locals(cf_onnx_ctx_t *x, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_input; i++) g_hash_table_remove(x->values, g->input[i]->name);
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t o = 0; o < g->node[i]->n_output; o++)
      g_hash_table_remove(x->values, g->node[i]->output[o]);
}

/* A value of the unrolled program: a tensor or a sequence (owned). */
typedef struct value {
  weft_output_t t;
  cf_onnx_seq_t *seq;
} value_t;

static value_t value_of(cf_onnx_ctx_t *x, const char *name) {
  const cf_onnx_seq_t *s = cf_onnx_seq_get(x, name);
  value_t v = {cf_onnx_get(x, name), s ? cf_onnx_seq_copy(s) : NULL};
  return v;
}

static void value_bind(cf_onnx_ctx_t *x, const char *name, const value_t *v) {
  if (v->seq) cf_onnx_seq_bind(x, name, cf_onnx_seq_copy(v->seq));
  else cf_onnx_bind(x, name, v->t);
}

static bool value_known(const value_t *v) { return v->seq != NULL || v->t.node != NULL; }

/* Maps body once with its inputs bound to in[], and reads its outputs into out[] (whose old
 * sequences are freed). */
static weft_status_t *unroll_once(cf_onnx_ctx_t *x, const Onnx__GraphProto *body,
                                  const value_t *in, value_t *out) {
  forget_locals(x, body);
  for (size_t k = 0; k < body->n_input; k++) value_bind(x, body->input[k]->name, &in[k]);
  weft_status_t *st = cf_onnx_map_subgraph(x, body);
  for (size_t k = 0; k < body->n_output && st == NULL; k++) {
    cf_onnx_seq_free(out[k].seq);
    out[k] = value_of(x, body->output[k]->name);
    if (!value_known(&out[k]))
      st = cf_onnx_unsupported(x, "body output '%s' is not produced", body->output[k]->name);
  }
  return st;
}

static void values_free(value_t *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) cf_onnx_seq_free(v[i].seq);
  g_free(v);
}

/* The most iterations a loop is unrolled to; beyond, it is refused. */
#define MAX_UNROLLED 4096

weft_status_t *cf_onnx_loop_unrolled(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                     const Onnx__GraphProto *body) {
  weft_status_t *st = NULL;
  size_t n_in = node->n_input < 2 ? 0 : node->n_input - 2;
  size_t n_scan = body->n_output - 1 - n_in;
  int64_t trip = -1;
  double c = 1;
  if (cf_onnx_has_in(node, 0)) {
    int64_t *m = NULL;
    int nm = 0;
    if (!cf_onnx_in_ints(x, node, 0, &m, &nm, &st)) return st;
    trip = nm == 1 ? m[0] : -1;
    g_free(m);
    if (nm != 1)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the trip count has %d values",
                             x->node_name, nm);
  }
  if (cf_onnx_has_in(node, 1) && !cf_onnx_in_scalar(x, node, 1, &c, &st)) return st;
  value_t *in = g_new0(value_t, body->n_input + 1), *out = g_new0(value_t, body->n_output + 1);
  for (size_t k = 0; k < n_in && st == NULL; k++) {
    in[k + 2] = value_of(x, node->input[k + 2]);
    if (!value_known(&in[k + 2]))
      st = cf_onnx_unsupported(x, "loop-carried value %zu is missing", k);
  }
  GPtrArray **scans = g_new0(GPtrArray *, n_scan + 1);
  for (size_t s = 0; s < n_scan; s++) scans[s] = g_ptr_array_new_with_free_func(g_free);
  int64_t it = 0;
  for (; st == NULL && c != 0 && (trip < 0 || it < trip); it++) {
    if (it >= MAX_UNROLLED) {
      st = cf_onnx_unsupported(x, "a Loop unrolled for its sequences or constants runs past %d "
                               "iterations", MAX_UNROLLED);
      break;
    }
    in[0].t = cf_onnx_const_scalar(x, WEFT_DT_INT64, (double)it, &st);
    in[1].t = cf_onnx_const_scalar(x, WEFT_DT_BOOL, c, &st);
    if (st == NULL) st = unroll_once(x, body, in, out);
    /* The condition decides whether another copy of the body is mapped at all. */
    const weft_tensor_t *cv = NULL;
    if (st == NULL && out[0].t.node == NULL)
      st = cf_onnx_unsupported(x, "the body's condition is not a tensor");
    if (st == NULL) cv = cf_onnx_value(x, body->output[0]->name, &st);
    if (cv) c = weft_tensor_num_elements(cv) > 0 ? weft_tensor_get_double(cv, 0) : 0;
    for (size_t k = 0; k < n_in && st == NULL; k++) {
      cf_onnx_seq_free(in[k + 2].seq);
      in[k + 2] = out[k + 1];
      out[k + 1].seq = in[k + 2].seq ? cf_onnx_seq_copy(in[k + 2].seq) : NULL;
    }
    for (size_t s = 0; s < n_scan && st == NULL; s++) {
      if (out[n_in + 1 + s].t.node == NULL)
        st = cf_onnx_unsupported(x, "scan output %zu is a sequence", s);
      else
        g_ptr_array_add(scans[s], g_memdup2(&out[n_in + 1 + s].t, sizeof(weft_output_t)));
    }
  }
  for (size_t k = 0; k < n_in && st == NULL; k++)
    if (k < node->n_output) value_bind(x, node->output[k], &in[k + 2]);
  for (size_t s = 0; s < n_scan && st == NULL; s++) {
    if (scans[s]->len == 0) {
      st = cf_onnx_unsupported(x, "scan output %zu of a Loop of 0 iterations", s);
      break;
    }
    weft_output_t *items = g_new0(weft_output_t, scans[s]->len);
    for (guint i = 0; i < scans[s]->len; i++) items[i] = *(weft_output_t *)scans[s]->pdata[i];
    weft_op_builder_t *b = cf_onnx_op(x, "Pack");
    weft_op_add_input_list(b, items, (int)scans[s]->len);
    weft_op_set_attr_int(b, "axis", 0);
    cf_onnx_bind_out(x, node, n_in + s, cf_onnx_finish(x, b, &st));
    g_free(items);
  }
  for (size_t s = 0; s < n_scan; s++) g_ptr_array_free(scans[s], TRUE);
  g_free(scans);
  values_free(in, body->n_input);
  values_free(out, body->n_output);
  return st;
}

/* SequenceMap: the body mapped once per element of the first input; sequence inputs give it
 * their element at that position, tensor inputs themselves. */
static weft_status_t *map_sequence_map(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const Onnx__AttributeProto *a = cf_onnx_attr(node, "body");
  const Onnx__GraphProto *body = a ? a->g : NULL;
  if (body == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: attribute body (a graph) is required",
                           x->node_name);
  if (body->n_input != node->n_input || body->n_output != node->n_output)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the body has %zu inputs and %zu outputs, the node %zu and %zu",
                           x->node_name, body->n_input, body->n_output, node->n_input,
                           node->n_output);
  const cf_onnx_seq_t *first = seq_in(x, node, 0, &st);
  if (st) return st;
  guint n = first->items->len;
  for (size_t j = 0; j < node->n_input && st == NULL; j++) {
    const cf_onnx_seq_t *s = cf_onnx_seq_get(x, node->input[j]);
    if (s && s->items->len != n)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: input %zu has %u elements, input 0 %u",
                           x->node_name, j, s->items->len, n);
    else if (s == NULL && cf_onnx_in(x, node, j).node == NULL)
      st = cf_onnx_unsupported(x, "input %zu is missing", j);
  }
  if (st) return st;
  if (n == 0) return cf_onnx_unsupported(x, "a SequenceMap over an empty sequence");
  value_t *in = g_new0(value_t, node->n_input + 1), *out = g_new0(value_t, node->n_output + 1);
  cf_onnx_seq_t **res = g_new0(cf_onnx_seq_t *, node->n_output + 1);
  for (guint i = 0; i < n && st == NULL; i++) {
    for (size_t j = 0; j < node->n_input; j++) {
      const cf_onnx_seq_t *s = cf_onnx_seq_get(x, node->input[j]);
      in[j].t = s ? g_array_index(s->items, weft_output_t, i) : cf_onnx_in(x, node, j);
    }
    st = unroll_once(x, body, in, out);
    for (size_t k = 0; k < node->n_output && st == NULL; k++) {
      if (out[k].t.node == NULL) {
        st = cf_onnx_unsupported(x, "body output %zu is a sequence", k);
        break;
      }
      if (res[k] == NULL) res[k] = cf_onnx_seq_new(cf_onnx_out_dtype(out[k].t));
      g_array_append_val(res[k]->items, out[k].t);
    }
  }
  for (size_t k = 0; k < node->n_output; k++) {
    if (st == NULL) bind_seq_out(x, node, k, res[k]);
    else cf_onnx_seq_free(res[k]);
  }
  g_free(res);
  values_free(in, node->n_input);
  values_free(out, node->n_output);
  return st;
}

const cf_onnx_row_t cf_onnx_rows_sequence[] = {
    {"SequenceConstruct", 1, map_sequence_construct},
    {"SequenceEmpty", 1, map_sequence_empty},
    {"SequenceInsert", 1, map_sequence_insert},
    {"SequenceAt", 1, map_sequence_at},
    {"SequenceErase", 1, map_sequence_erase},
    {"SequenceLength", 1, map_sequence_length},
    {"ConcatFromSequence", 1, map_concat_from_sequence},
    {"SplitToSequence", 1, map_split_to_sequence},
    {"SequenceMap", 1, map_sequence_map},
    {"Identity", 1, map_identity},
    {NULL, 0, NULL},
};

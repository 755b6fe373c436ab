/* onnx_runner.c: runs the ONNX backend node tests (a folder of test_NAME/model.onnx with
 * test_data_set_0/input_N.pb and output_N.pb) through Weft: parses each ModelProto, translates
 * its graph node by node with the mappers of onnx/ into a Weft graph whose ops are pinned to
 * the device under test, feeds the inputs, and compares the fetched outputs with the expected
 * ones (rtol 1e-3, atol 1e-7 for float32, exact for integers, bools and strings). Tests that use
 * ops, dtypes or input kinds the mapping does not cover are counted as unsupported, with the
 * reason. Also holds the helpers mappers build with (declared in onnx_internal.h). */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "base/protobuf_internal.h"
#include "onnx_internal.h"
#include "plugin/plugin_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Tensors */

weft_dtype_t cf_onnx_dtype(int t) {
  switch (t) {
    case 1: return WEFT_DT_FLOAT;
    case 2: return WEFT_DT_UINT8;
    case 3: return WEFT_DT_INT8;
    case 4: return WEFT_DT_UINT16;
    case 5: return WEFT_DT_INT16;
    case 6: return WEFT_DT_INT32;
    case 7: return WEFT_DT_INT64;
    case 8: return WEFT_DT_STRING;
    case 9: return WEFT_DT_BOOL;
    case 10: return WEFT_DT_HALF;
    case 11: return WEFT_DT_DOUBLE;
    case 12: return WEFT_DT_UINT32;
    case 13: return WEFT_DT_UINT64;
    case 16: return WEFT_DT_BFLOAT16;
    default: return WEFT_DT_INVALID;
  }
}

static const char *onnx_type_name(int t) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",       "INT32",
      "INT64",     "STRING", "BOOL",   "FLOAT16",   "DOUBLE",     "UINT32",      "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  return t >= 0 && t < (int)G_N_ELEMENTS(names) ? names[t] : "UNKNOWN";
}

/* How many values the typed field that carries dtype holds (int32_data carries the 8/16/32-bit
 * types and the bits of the 16-bit floats). */
static size_t onnx_value_count(const Onnx__TensorProto *t, weft_dtype_t dt) {
  switch (dt) {
    case WEFT_DT_FLOAT: return t->n_float_data;
    case WEFT_DT_DOUBLE: return t->n_double_data;
    case WEFT_DT_INT64: return t->n_int64_data;
    case WEFT_DT_UINT32:
    case WEFT_DT_UINT64: return t->n_uint64_data;
    case WEFT_DT_STRING: return t->n_string_data;
    default: return t->n_int32_data;
  }
}

static void onnx_fill_typed(const Onnx__TensorProto *t, weft_dtype_t dt, void *data, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (dt) {
      case WEFT_DT_FLOAT: ((float *)data)[i] = t->float_data[i]; break;
      case WEFT_DT_DOUBLE: ((double *)data)[i] = t->double_data[i]; break;
      case WEFT_DT_INT64: ((int64_t *)data)[i] = t->int64_data[i]; break;
      case WEFT_DT_UINT32: ((uint32_t *)data)[i] = (uint32_t)t->uint64_data[i]; break;
      case WEFT_DT_UINT64: ((uint64_t *)data)[i] = t->uint64_data[i]; break;
      case WEFT_DT_INT32: ((int32_t *)data)[i] = t->int32_data[i]; break;
      case WEFT_DT_INT16: ((int16_t *)data)[i] = (int16_t)t->int32_data[i]; break;
      case WEFT_DT_INT8: ((int8_t *)data)[i] = (int8_t)t->int32_data[i]; break;
      case WEFT_DT_UINT16:
      case WEFT_DT_HALF:
      case WEFT_DT_BFLOAT16: ((uint16_t *)data)[i] = (uint16_t)t->int32_data[i]; break;
      case WEFT_DT_UINT8: ((uint8_t *)data)[i] = (uint8_t)t->int32_data[i]; break;
      case WEFT_DT_BOOL: ((uint8_t *)data)[i] = t->int32_data[i] != 0; break;
      default: break;
    }
  }
}

weft_tensor_t *cf_onnx_tensor(const Onnx__TensorProto *t, weft_status_t **status) {
  *status = NULL;
  const char *name = t->name ? t->name : "";
  weft_dtype_t dt = cf_onnx_dtype(t->data_type);
  if (dt == WEFT_DT_INVALID) {
    *status = weft_status_new(WEFT_UNIMPLEMENTED, "tensor '%s' has ONNX type %s (%d): no Weft "
                              "dtype holds it",
                              name, onnx_type_name(t->data_type), t->data_type);
    return NULL;
  }
  if (t->n_dims > WEFT_MAX_RANK) {
    *status = weft_status_new(WEFT_UNIMPLEMENTED, "tensor '%s' has rank %zu > %d", name,
                              t->n_dims, WEFT_MAX_RANK);
    return NULL;
  }
  int64_t dims[WEFT_MAX_RANK] = {0};
  bool has_zero = false;
  for (size_t d = 0; d < t->n_dims; d++) {
    dims[d] = t->dims[d];
    if (dims[d] < 0) {
      *status = weft_status_new(WEFT_DATA_LOSS, "tensor '%s': dim %zu is %" G_GINT64_FORMAT
                                ", which is negative",
                                name, d, dims[d]);
      return NULL;
    }
    has_zero |= dims[d] == 0;
  }
  /* The element count is checked against the values the file holds before anything is
   * allocated, so a shape that claims more than the file carries costs nothing. */
  guint64 n = has_zero ? 0 : 1;
  for (size_t d = 0; d < t->n_dims && n > 0; d++) {
    if (!g_uint64_checked_mul(&n, n, (guint64)dims[d]) || n > (guint64)G_MAXINT64) {
      *status = weft_status_new(WEFT_DATA_LOSS, "tensor '%s': its %zu dims multiply past "
                                "2^63 elements",
                                name, t->n_dims);
      return NULL;
    }
  }
  size_t es = weft_dtype_size(dt);
  bool raw = t->has_raw_data && dt != WEFT_DT_STRING;
  if (raw) {
    guint64 need = 0;
    if (!g_uint64_checked_mul(&need, n, es) || t->raw_data.len != need) {
      *status = weft_status_new(WEFT_DATA_LOSS, "tensor '%s': raw_data has %zu bytes, expected "
                                "%" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " elements of %zu)",
                                name, t->raw_data.len, n * (guint64)es, n, es);
      return NULL;
    }
  } else if (onnx_value_count(t, dt) != n) {
    *status = weft_status_new(WEFT_DATA_LOSS, "tensor '%s': %zu values for %" G_GUINT64_FORMAT
                              " elements",
                              name, onnx_value_count(t, dt), n);
    return NULL;
  }
  weft_tensor_t *out = weft_tensor_new(dt, (int)t->n_dims, dims);
  if (out == NULL) {
    *status = weft_status_new(WEFT_RESOURCE_EXHAUSTED, "tensor '%s': %" G_GUINT64_FORMAT
                              " elements of %s could not be allocated",
                              name, n, weft_dtype_name(dt));
    return NULL;
  }
  void *data = weft_tensor_data(out);
  if (raw) {
    if (n > 0) memcpy(data, t->raw_data.data, t->raw_data.len);
  } else if (dt == WEFT_DT_STRING) {
    for (guint64 i = 0; i < n && *status == NULL; i++) {
      *status = weft_tensor_set_string(out, (int64_t)i, (const char *)t->string_data[i].data,
                                       t->string_data[i].len);
      if (*status) *status = weft_status_prefix(*status, "tensor '%s'", name);
    }
  } else {
    onnx_fill_typed(t, dt, data, (size_t)n);
  }
  if (*status) {
    weft_tensor_unref(out);
    return NULL;
  }
  return out;
}

/* The message of type desc (named `what` in errors) in the file at path; NULL and *status set
 * when the file cannot be read or does not parse. */
static ProtobufCMessage *read_proto_file(const char *path, const ProtobufCMessageDescriptor *desc,
                                         const char *what, weft_status_t **status) {
  char *bytes = NULL;
  gsize len = 0;
  GError *err = NULL;
  *status = NULL;
  if (!g_file_get_contents(path, &bytes, &len, &err)) {
    *status = weft_status_new(WEFT_NOT_FOUND, "%s", err->message);
    g_error_free(err);
    return NULL;
  }
  ProtobufCMessage *m = weft__pb_unpack(desc, (const uint8_t *)bytes, len, path, status);
  g_free(bytes);
  if (*status) return NULL;
  if (m == NULL) *status = weft_status_new(WEFT_DATA_LOSS, "%s is not an ONNX %s", path, what);
  return m;
}

static weft_tensor_t *read_tensor_file(const char *path, weft_status_t **status) {
  Onnx__TensorProto *t = (Onnx__TensorProto *)read_proto_file(
      path, &onnx__tensor_proto__descriptor, "TensorProto", status);
  if (t == NULL) return NULL;
  weft_tensor_t *out = cf_onnx_tensor(t, status);
  if (*status) *status = weft_status_prefix(*status, "%s", path);
  onnx__tensor_proto__free_unpacked(t, NULL);
  return out;
}

/* The tensors of a SequenceProto file: elements of a type other than tensors (nested sequences,
 * maps, optionals) are UNIMPLEMENTED. */
static GPtrArray *read_sequence_file(const char *path, weft_status_t **status) {
  Onnx__SequenceProto *sp = (Onnx__SequenceProto *)read_proto_file(
      path, &onnx__sequence_proto__descriptor, "SequenceProto", status);
  if (sp == NULL) return NULL;
  GPtrArray *out = NULL;
  if (sp->elem_type > 1) {
    *status = weft_status_new(WEFT_UNIMPLEMENTED, "%s: a sequence of elem_type %d (not tensors)",
                              path, sp->elem_type);
  } else {
    out = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
    for (size_t i = 0; i < sp->n_tensor_values && *status == NULL; i++) {
      weft_tensor_t *t = cf_onnx_tensor(sp->tensor_values[i], status);
      if (*status)
        *status = weft_status_prefix(*status, "%s: element %zu", path, i);
      else
        g_ptr_array_add(out, t);
    }
  }
  onnx__sequence_proto__free_unpacked(sp, NULL);
  if (*status && out) {
    g_ptr_array_free(out, TRUE);
    out = NULL;
  }
  return out;
}

/* The value of a test data file: one tensor, or a sequence's elements. The caller frees the
 * array (which unrefs the tensors). */
static GPtrArray *read_value_file(const char *path, bool is_seq, weft_status_t **status) {
  if (is_seq) return read_sequence_file(path, status);
  weft_tensor_t *t = read_tensor_file(path, status);
  if (t == NULL) return NULL;
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  g_ptr_array_add(out, t);
  return out;
}

/* The element dtype of a sequence-typed graph input or output: its declared type, else its first
 * element's, else float32 (ONNX's default for SequenceEmpty). */
static weft_dtype_t seq_elem_dtype(const Onnx__ValueInfoProto *vi, const GPtrArray *vals) {
  const Onnx__TypeProto *et = vi->type && vi->type->sequence_type
                                  ? vi->type->sequence_type->elem_type
                                  : NULL;
  if (et && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && et->tensor_type->elem_type)
    return cf_onnx_dtype(et->tensor_type->elem_type);
  if (vals && vals->len) return weft_tensor_dtype(vals->pdata[0]);
  return WEFT_DT_FLOAT;
}

/* ---------------------------------------------------------------------------------------------
 * Helpers for mappers */

weft_status_t *cf_onnx_unsupported(cf_onnx_ctx_t *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  weft_status_t *st = weft_status_new(WEFT_UNIMPLEMENTED, "%s: %s", x->node_name, msg);
  g_free(msg);
  return st;
}

bool cf_onnx_has_kernel(cf_onnx_ctx_t *x, const char *op, weft_dtype_t dtype) {
  cf_run_ctx_t probe = {0};
  cf_device_t dev = {.type = (char *)x->device_type};
  probe.device = &dev;
  return cf_kernel_available(&probe, op, "T", dtype);
}

weft_output_t cf_onnx_get(cf_onnx_ctx_t *x, const char *name) {
  weft_output_t none = {NULL, 0};
  if (name == NULL || name[0] == '\0') return none;
  weft_output_t *o = g_hash_table_lookup(x->outputs, name);
  return o ? *o : none;
}

bool cf_onnx_has_in(const Onnx__NodeProto *node, size_t i) {
  return i < node->n_input && node->input[i] && node->input[i][0] != '\0';
}

weft_output_t cf_onnx_in(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i) {
  weft_output_t none = {NULL, 0};
  return cf_onnx_has_in(node, i) ? cf_onnx_get(x, node->input[i]) : none;
}

void cf_onnx_bind(cf_onnx_ctx_t *x, const char *name, weft_output_t out) {
  if (name == NULL || name[0] == '\0') return;
  if (x->sequences) g_hash_table_remove(x->sequences, name);
  g_hash_table_insert(x->outputs, g_strdup(name), g_memdup2(&out, sizeof out));
}

cf_onnx_seq_t *cf_onnx_seq_new(weft_dtype_t dtype) {
  cf_onnx_seq_t *s = g_new0(cf_onnx_seq_t, 1);
  s->dtype = dtype;
  s->items = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
  return s;
}

cf_onnx_seq_t *cf_onnx_seq_copy(const cf_onnx_seq_t *s) {
  cf_onnx_seq_t *c = cf_onnx_seq_new(s->dtype);
  g_array_append_vals(c->items, s->items->data, s->items->len);
  return c;
}

void cf_onnx_seq_free(cf_onnx_seq_t *s) {
  if (s == NULL) return;
  g_array_free(s->items, TRUE);
  g_free(s);
}

const cf_onnx_seq_t *cf_onnx_seq_get(cf_onnx_ctx_t *x, const char *name) {
  if (x->sequences == NULL || name == NULL || name[0] == '\0') return NULL;
  return g_hash_table_lookup(x->sequences, name);
}

void cf_onnx_seq_bind(cf_onnx_ctx_t *x, const char *name, cf_onnx_seq_t *seq) {
  if (name == NULL || name[0] == '\0') {
    cf_onnx_seq_free(seq);
    return;
  }
  if (x->sequences == NULL)
    x->sequences = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify)cf_onnx_seq_free);
  g_hash_table_remove(x->outputs, name);
  g_hash_table_insert(x->sequences, g_strdup(name), seq);
}

bool cf_onnx_is_bound(cf_onnx_ctx_t *x, const char *name) {
  return cf_onnx_get(x, name).node != NULL || cf_onnx_seq_get(x, name) != NULL;
}

static char *tensor_name(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

const weft_tensor_t *cf_onnx_value(cf_onnx_ctx_t *x, const char *name, weft_status_t **status) {
  *status = NULL;
  weft_tensor_t *v = g_hash_table_lookup(x->values, name);
  if (v) return v;
  weft_output_t o = cf_onnx_get(x, name);
  if (o.node == NULL) {
    *status = cf_onnx_unsupported(x, "the value of '%s' is needed but unknown", name);
    return NULL;
  }
  /* Evaluate what the graph computes so far for it, with the test inputs fed. */
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, true);
  weft_session_t *s = weft_session_new(x->graph, opts, status);
  weft_session_options_free(opts);
  if (*status) return NULL;
  char *fetch = tensor_name(o);
  const char *fetches[1] = {fetch};
  weft_tensor_t *out = NULL;
  *status = weft_session_run(s, (const char *const *)x->feed_names->pdata,
                             (weft_tensor_t *const *)x->feed_tensors->pdata,
                             (int)x->feed_names->len, fetches, &out, 1, NULL, 0);
  g_free(fetch);
  weft_session_free(s);
  if (*status) {
    *status = weft_status_prefix(*status, "evaluating '%s' as a constant", name);
    return NULL;
  }
  g_hash_table_insert(x->values, g_strdup(name), out);
  return out;
}

/* Integer element i of a host tensor. */
static int64_t tensor_int(const weft_tensor_t *t, int64_t i) {
  const void *d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_DT_INT64: return ((const int64_t *)d)[i];
    case WEFT_DT_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case WEFT_DT_INT32: return ((const int32_t *)d)[i];
    default: return (int64_t)weft_tensor_get_double(t, i);
  }
}

bool cf_onnx_in_ints(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i, int64_t **vals,
                     int *n, weft_status_t **status) {
  *vals = NULL;
  *n = 0;
  const weft_tensor_t *t = cf_onnx_value(x, node->input[i], status);
  if (t == NULL) return false;
  int64_t count = weft_tensor_num_elements(t);
  *vals = g_new0(int64_t, count > 0 ? count : 1);
  for (int64_t k = 0; k < count; k++) (*vals)[k] = tensor_int(t, k);
  *n = (int)count;
  return true;
}

bool cf_onnx_in_scalar(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i, double *v,
                       weft_status_t **status) {
  const weft_tensor_t *t = cf_onnx_value(x, node->input[i], status);
  if (t == NULL) return false;
  if (weft_tensor_num_elements(t) < 1) {
    *status = cf_onnx_unsupported(x, "input %zu is empty, a scalar was expected", i);
    return false;
  }
  *v = weft_tensor_get_double(t, 0);
  return true;
}

int cf_onnx_shape(weft_output_t o, int64_t *dims) {
  return weft_node_output_shape(o.node, o.index, dims);
}

weft_dtype_t cf_onnx_out_dtype(weft_output_t o) { return weft_node_output_dtype(o.node, o.index); }

const Onnx__AttributeProto *cf_onnx_attr(const Onnx__NodeProto *node, const char *name) {
  for (size_t i = 0; i < node->n_attribute; i++)
    if (node->attribute[i]->name && strcmp(node->attribute[i]->name, name) == 0)
      return node->attribute[i];
  return NULL;
}

int64_t cf_onnx_attr_int(const Onnx__NodeProto *node, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = cf_onnx_attr(node, name);
  return a && a->has_i ? a->i : dflt;
}

float cf_onnx_attr_float(const Onnx__NodeProto *node, const char *name, float dflt) {
  const Onnx__AttributeProto *a = cf_onnx_attr(node, name);
  return a && a->has_f ? a->f : dflt;
}

const char *cf_onnx_attr_string(const Onnx__NodeProto *node, const char *name, const char *dflt) {
  const Onnx__AttributeProto *a = cf_onnx_attr(node, name);
  /* Attribute strings are bytes; the ones mappers read are ASCII keywords, stored here
   * NUL-terminated by protobuf-c's allocation only when we copy them, so keep a copy. */
  if (a == NULL || !a->has_s) return dflt;
  static GHashTable *interned = NULL;
  if (interned == NULL) interned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char *s = g_strndup((const char *)a->s.data, a->s.len);
  char *kept = g_hash_table_lookup(interned, s);
  if (kept == NULL) {
    g_hash_table_add(interned, s);
    return s;
  }
  g_free(s);
  return kept;
}

const int64_t *cf_onnx_attr_ints(const Onnx__NodeProto *node, const char *name, size_t *n) {
  const Onnx__AttributeProto *a = cf_onnx_attr(node, name);
  *n = a ? a->n_ints : 0;
  return a ? a->ints : NULL;
}

weft_op_builder_t *cf_onnx_op(cf_onnx_ctx_t *x, const char *op) {
  char name[96];
  g_snprintf(name, sizeof name, "onnx_%d_%s", x->counter++, op);
  weft_op_builder_t *b = weft_op_new(x->graph, op, name);
  weft_op_set_device(b, x->device_spec);
  return b;
}

weft_output_t cf_onnx_finish(cf_onnx_ctx_t *x, weft_op_builder_t *b, weft_status_t **status) {
  (void)x;
  weft_output_t none = {NULL, 0};
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) {
    if (*status == NULL)
      *status = st;
    else
      weft_status_free(st);
    return none;
  }
  return weft_out(node, 0);
}

weft_output_t cf_onnx_unary(cf_onnx_ctx_t *x, const char *op, weft_output_t a,
                            weft_status_t **status) {
  weft_output_t none = {NULL, 0};
  if (*status || a.node == NULL) {
    if (*status == NULL) *status = cf_onnx_unsupported(x, "%s: missing input", op);
    return none;
  }
  weft_op_builder_t *b = cf_onnx_op(x, op);
  weft_op_add_input(b, a);
  return cf_onnx_finish(x, b, status);
}

weft_output_t cf_onnx_binary(cf_onnx_ctx_t *x, const char *op, weft_output_t a, weft_output_t c,
                             weft_status_t **status) {
  weft_output_t none = {NULL, 0};
  if (*status || a.node == NULL || c.node == NULL) {
    if (*status == NULL) *status = cf_onnx_unsupported(x, "%s: missing input", op);
    return none;
  }
  weft_op_builder_t *b = cf_onnx_op(x, op);
  weft_op_add_input(b, a);
  weft_op_add_input(b, c);
  return cf_onnx_finish(x, b, status);
}

weft_output_t cf_onnx_const_tensor(cf_onnx_ctx_t *x, weft_tensor_t *t, weft_status_t **status) {
  weft_output_t none = {NULL, 0};
  if (*status) return none;
  char name[64];
  g_snprintf(name, sizeof name, "onnx_%d_const", x->counter++);
  weft_graph_push_device(x->graph, x->input_spec);
  weft_output_t o = weft_const(x->graph, name, t, status);
  weft_graph_pop_device(x->graph);
  return o;
}

weft_output_t cf_onnx_const_ints(cf_onnx_ctx_t *x, weft_dtype_t dtype, const int64_t *v, int n,
                                 bool scalar, weft_status_t **status) {
  int64_t dim = n;
  weft_tensor_t *t = weft_tensor_new(dtype, scalar ? 0 : 1, &dim);
  for (int i = 0; i < n && i < (scalar ? 1 : n); i++) {
    if (dtype == WEFT_DT_INT64)
      ((int64_t *)weft_tensor_data(t))[i] = v[i];
    else
      ((int32_t *)weft_tensor_data(t))[i] = (int32_t)v[i];
  }
  weft_output_t o = cf_onnx_const_tensor(x, t, status);
  weft_tensor_unref(t);
  return o;
}

weft_output_t cf_onnx_const_scalar(cf_onnx_ctx_t *x, weft_dtype_t dtype, double v,
                                   weft_status_t **status) {
  cf_array_t *a = cf_array_scalar(dtype, v);
  weft_tensor_t *t = cf_array_to_tensor(a, NULL);
  cf_array_free(a);
  weft_output_t none = {NULL, 0};
  if (t == NULL) {
    if (*status == NULL) *status = cf_onnx_unsupported(x, "no constant of %s", weft_dtype_name(dtype));
    return none;
  }
  weft_output_t o = cf_onnx_const_tensor(x, t, status);
  weft_tensor_unref(t);
  return o;
}

weft_output_t cf_onnx_reshape(cf_onnx_ctx_t *x, weft_output_t a, const int64_t *dims, int rank,
                              weft_status_t **status) {
  weft_output_t shape = cf_onnx_const_ints(x, WEFT_DT_INT64, dims, rank, false, status);
  return cf_onnx_binary(x, "Reshape", a, shape, status);
}

weft_output_t cf_onnx_transpose(cf_onnx_ctx_t *x, weft_output_t a, const int64_t *perm, int rank,
                                weft_status_t **status) {
  weft_output_t p = cf_onnx_const_ints(x, WEFT_DT_INT32, perm, rank, false, status);
  return cf_onnx_binary(x, "Transpose", a, p, status);
}

weft_output_t cf_onnx_cast(cf_onnx_ctx_t *x, weft_output_t a, weft_dtype_t to,
                           weft_status_t **status) {
  weft_output_t none = {NULL, 0};
  if (*status) return none;
  if (cf_onnx_out_dtype(a) == to) return a;
  weft_op_builder_t *b = cf_onnx_op(x, "Cast");
  weft_op_add_input(b, a);
  weft_op_set_attr_type(b, "DstT", to);
  return cf_onnx_finish(x, b, status);
}

/* ---------------------------------------------------------------------------------------------
 * One test */

typedef struct test_result {
  cf_status_t status;
  char *message;
  cf_compare_t cmp;
  bool compared;
} test_result_t;

static gint cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool default_domain(const char *domain) {
  return domain == NULL || domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
}

Onnx__ModelProto *cf_onnx_model_parse(const uint8_t *bytes, size_t len, const char *what,
                                      weft_status_t **status) {
  *status = NULL;
  Onnx__ModelProto *m = (Onnx__ModelProto *)weft__pb_unpack(&onnx__model_proto__descriptor,
                                                            bytes, len, what, status);
  if (*status) return NULL;
  if (m == NULL || m->graph == NULL) {
    if (m) onnx__model_proto__free_unpacked(m, NULL);
    *status = weft_status_new(WEFT_DATA_LOSS, "%s is not an ONNX model", what);
    return NULL;
  }
  return m;
}

static Onnx__ModelProto *read_model(const char *path, weft_status_t **status) {
  char *bytes = NULL;
  gsize len = 0;
  GError *err = NULL;
  if (!g_file_get_contents(path, &bytes, &len, &err)) {
    *status = weft_status_new(WEFT_NOT_FOUND, "%s", err->message);
    g_error_free(err);
    return NULL;
  }
  Onnx__ModelProto *m = cf_onnx_model_parse((const uint8_t *)bytes, len, path, status);
  g_free(bytes);
  return m;
}

/* The op the test is filed under: the single node's type, or the base test's for *_expanded. */
static char *test_op_label(const char *dir, const char *name, const Onnx__ModelProto *m) {
  const Onnx__GraphProto *g = m->graph;
  const char *exp = strstr(name, "_expanded");
  if (exp == NULL && g->n_node == 1) {
    const Onnx__NodeProto *n = g->node[0];
    if (!default_domain(n->domain)) return g_strdup_printf("%s:%s", n->domain, n->op_type);
    return g_strdup(n->op_type);
  }
  if (exp != NULL) {
    char *base = g_strndup(name, (gsize)(exp - name));
    char *path = g_build_filename(dir, base, "model.onnx", NULL);
    g_free(base);
    weft_status_t *st = NULL;
    Onnx__ModelProto *bm = read_model(path, &st);
    g_free(path);
    weft_status_free(st);
    char *label = NULL;
    if (bm && bm->graph->n_node == 1)
      label = g_strdup_printf("%s (expanded)", bm->graph->node[0]->op_type);
    if (bm) onnx__model_proto__free_unpacked(bm, NULL);
    if (label) return label;
  }
  return g_strdup("(subgraph)");
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return true;
  return false;
}

static cf_tol_t onnx_tol(weft_dtype_t dt) {
  switch (dt) {
    case WEFT_DT_FLOAT:
    case WEFT_DT_DOUBLE: return (cf_tol_t){1e-3, 1e-7, INFINITY};
    case WEFT_DT_HALF: return (cf_tol_t){2e-3, 1e-4, INFINITY};
    case WEFT_DT_BFLOAT16: return (cf_tol_t){1.6e-2, 1e-3, INFINITY};
    default: return (cf_tol_t){0, 0, INFINITY};
  }
}

weft_status_t *cf_onnx_map_graph(cf_onnx_ctx_t *x, const Onnx__GraphProto *g,
                                 const char *label) {
  weft_status_t *st = NULL;
  /* Initializers: Consts. */
  for (size_t i = 0; i < g->n_initializer && st == NULL; i++) {
    weft_tensor_t *t = cf_onnx_tensor(g->initializer[i], &st);
    if (st) break;
    weft_output_t o = cf_onnx_const_tensor(x, t, &st);
    cf_onnx_bind(x, g->initializer[i]->name, o);
    g_hash_table_insert(x->values, g_strdup(g->initializer[i]->name), t);
  }
  /* Nodes, in the (topological) order ONNX stores them. */
  for (size_t i = 0; i < g->n_node && st == NULL; i++) {
    const Onnx__NodeProto *node = g->node[i];
    char *where = g_strdup_printf("ONNX %s", node->op_type);
    x->node_name = where;
    cf_onnx_map_fn fn =
        default_domain(node->domain) ? cf_onnx_find_mapper(node->op_type, x->opset) : NULL;
    if (fn == NULL)
      st = weft_status_new(WEFT_UNIMPLEMENTED, "ONNX op %s%s%s is not mapped to Weft ops",
                           default_domain(node->domain) ? "" : node->domain,
                           default_domain(node->domain) ? "" : ":", node->op_type);
    else
      st = fn(x, node);
    for (size_t o = 0; st == NULL && o < node->n_output; o++)
      if (node->output[o][0] && !cf_onnx_is_bound(x, node->output[o]))
        st = weft_status_new(WEFT_UNIMPLEMENTED, "%s: output %zu ('%s') is not produced", where,
                             o, node->output[o]);
    g_free(where);
    x->node_name = label;
  }
  return st;
}

static void run_test(cf_run_ctx_t *ctx, const char *dir, const char *name,
                     const Onnx__ModelProto *m, const char *label, test_result_t *res,
                     char **dtype_out) {
  const Onnx__GraphProto *g = m->graph;
  weft_status_t *st = NULL;
  cf_onnx_ctx_t x = {0};
  x.graph = weft_graph_new();
  x.device_spec = ctx->device->spec;
  x.device_type = ctx->device->type;
  x.input_spec = ctx->cpu_spec ? ctx->cpu_spec : ctx->device->spec;
  x.opset = 1;
  for (size_t i = 0; i < m->n_opset_import; i++)
    if (default_domain(m->opset_import[i]->domain)) x.opset = m->opset_import[i]->version;
  x.outputs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  x.values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)weft_tensor_unref);
  x.feed_names = g_ptr_array_new_with_free_func(g_free);
  x.feed_tensors = g_ptr_array_new();
  x.node_name = label;
  GPtrArray *expected = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  weft_session_t *session = NULL;
  weft_tensor_t **got = NULL;
  char **fetch_names = NULL;
  GPtrArray *whats = NULL; /* char*: each fetch's description */
  size_t n_out = 0;
  /* The fed tensors' own references (feed_tensors borrows them): a mapper dropping a value it
   * evaluated cannot free one. */
  GPtrArray *fed = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  res->status = CF_FAILED;

  /* Inputs: test data fed through Placeholders (one per element of a sequence). */
  size_t k = 0;
  for (size_t i = 0; i < g->n_input && st == NULL; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    if (is_initializer(g, vi->name)) continue;
    bool is_seq = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    if (vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && !is_seq) {
      st = weft_status_new(WEFT_UNIMPLEMENTED, "input '%s' is a %s, not a tensor", vi->name,
                           vi->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE
                               ? "optional"
                               : "non-tensor type");
      break;
    }
    char *file = g_strdup_printf("%s/%s/test_data_set_0/input_%zu.pb", dir, name, k++);
    GPtrArray *vals = read_value_file(file, is_seq, &st);
    g_free(file);
    if (st) break;
    cf_onnx_seq_t *seq = is_seq ? cf_onnx_seq_new(seq_elem_dtype(vi, vals)) : NULL;
    for (guint e = 0; e < vals->len && st == NULL; e++) {
      weft_tensor_t *t = vals->pdata[e];
      if (*dtype_out == NULL) *dtype_out = g_strdup(weft_dtype_name(weft_tensor_dtype(t)));
      char pname[64];
      if (is_seq)
        g_snprintf(pname, sizeof pname, "onnx_input_%zu_%u", i, e);
      else
        g_snprintf(pname, sizeof pname, "onnx_input_%zu", i);
      weft_graph_push_device(x.graph, x.input_spec);
      weft_output_t o = weft_placeholder(x.graph, pname, weft_tensor_dtype(t),
                                         weft_tensor_rank(t), weft_tensor_dims(t), &st);
      weft_graph_pop_device(x.graph);
      if (st) break;
      g_ptr_array_add(x.feed_names, g_strdup(pname));
      g_ptr_array_add(x.feed_tensors, t);
      g_ptr_array_add(fed, weft_tensor_ref(t));
      if (is_seq) {
        g_array_append_val(seq->items, o);
      } else {
        cf_onnx_bind(&x, vi->name, o);
        g_hash_table_insert(x.values, g_strdup(vi->name), weft_tensor_ref(t));
      }
    }
    if (seq && st == NULL)
      cf_onnx_seq_bind(&x, vi->name, seq);
    else
      cf_onnx_seq_free(seq);
    g_ptr_array_free(vals, TRUE);
  }
  if (st == NULL) st = cf_onnx_map_graph(&x, g, label);
  if (st) goto done;

  /* Every op that runs must have a kernel on the device. */
  {
    GString *missing = g_string_new(NULL);
    for (int i = 0; i < weft_graph_num_nodes(x.graph); i++) {
      weft_node_t *n = weft_graph_node_at(x.graph, i);
      if (strcmp(weft_node_requested_device(n), x.device_spec) != 0 &&
          strstr(weft_node_requested_device(n), x.device_spec) == NULL)
        continue;
      if (weft__kernel_exists(n->op_name, ctx->device->type, n->attrs)) continue;
      const weft__attr_value_t *t = weft__attrs_get(n->attrs, "T");
      g_string_append_printf(missing, "%s%s%s%s", missing->len ? ", " : "", n->op_name,
                             t && t->kind == WEFT_ATTR_TYPE ? "/" : "",
                             t && t->kind == WEFT_ATTR_TYPE ? weft_dtype_name(t->u.type) : "");
    }
    if (missing->len) {
      st = weft_status_new(WEFT_UNIMPLEMENTED, "no %s kernel for %s", ctx->device->type,
                           missing->str);
      g_string_free(missing, TRUE);
      goto done;
    }
    g_string_free(missing, TRUE);
  }

  /* Expected outputs and fetches: one per tensor output, one per element of a sequence. */
  GPtrArray *fetches = g_ptr_array_new_with_free_func(g_free);
  whats = g_ptr_array_new_with_free_func(g_free);
  for (size_t i = 0; i < g->n_output && st == NULL; i++) {
    const Onnx__ValueInfoProto *vo = g->output[i];
    bool is_seq = vo->type && vo->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    char *file = g_strdup_printf("%s/%s/test_data_set_0/output_%zu.pb", dir, name, i);
    GPtrArray *vals = read_value_file(file, is_seq, &st);
    g_free(file);
    if (st) break;
    const cf_onnx_seq_t *seq = cf_onnx_seq_get(&x, vo->name);
    weft_output_t o = cf_onnx_get(&x, vo->name);
    if (is_seq ? seq == NULL : o.node == NULL)
      st = weft_status_new(WEFT_UNIMPLEMENTED, "graph output '%s' is not produced%s", vo->name,
                           seq || o.node ? (is_seq ? " as a sequence" : " as a tensor") : "");
    else if (is_seq && seq->items->len != vals->len)
      st = weft_status_new(WEFT_INTERNAL, "output '%s': a sequence of %u tensors, expected %u",
                           vo->name, seq->items->len, vals->len);
    for (guint e = 0; e < vals->len && st == NULL; e++) {
      g_ptr_array_add(expected, weft_tensor_ref(vals->pdata[e]));
      weft_output_t fo = is_seq ? g_array_index(seq->items, weft_output_t, e) : o;
      g_ptr_array_add(fetches, tensor_name(fo));
      g_ptr_array_add(whats, is_seq ? g_strdup_printf("output '%s' element %u", vo->name, e)
                                    : g_strdup_printf("output '%s'", vo->name));
    }
    g_ptr_array_free(vals, TRUE);
  }
  n_out = expected->len;
  g_ptr_array_add(fetches, NULL);
  fetch_names = (char **)g_ptr_array_free(fetches, FALSE);
  got = g_new0(weft_tensor_t *, n_out + 1);
  if (st) goto done;
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, false);
  weft_session_options_set_intra_op_threads(opts, ctx->intra_threads);
  session = weft_session_new(x.graph, opts, &st);
  weft_session_options_free(opts);
  if (st == NULL)
    st = weft_session_run(session, (const char *const *)x.feed_names->pdata,
                          (weft_tensor_t *const *)x.feed_tensors->pdata, (int)x.feed_names->len,
                          (const char *const *)fetch_names, got, (int)n_out, NULL, 0);
  if (st) {
    res->message = g_strdup_printf("%s: %s", weft_code_name(weft_status_code(st)),
                                   weft_status_message(st));
    weft_status_free(st);
    st = NULL;
    goto done;
  }
  res->compared = true;
  res->cmp.ok = true;
  for (size_t i = 0; i < n_out; i++) {
    cf_array_t *want = cf_array_from_tensor(expected->pdata[i]);
    cf_array_t *have = cf_array_from_tensor(got[i]);
    cf_compare_arrays(have, want, onnx_tol(want->dtype), &res->cmp, whats->pdata[i]);
    cf_array_free(want);
    cf_array_free(have);
  }
  res->status = res->cmp.ok ? CF_PASSED : CF_FAILED;
  if (!res->cmp.ok) {
    res->message = res->cmp.message;
    res->cmp.message = NULL;
  }

done:
  if (st) {
    res->status = weft_status_code(st) == WEFT_UNIMPLEMENTED ? CF_UNSUPPORTED : CF_FAILED;
    res->message = g_strdup(weft_status_message(st));
    weft_status_free(st);
  }
  for (size_t i = 0; got && i < n_out; i++) weft_tensor_unref(got[i]);
  g_free(got);
  if (fetch_names) g_strfreev(fetch_names);
  if (session) weft_session_free(session);
  g_ptr_array_free(expected, TRUE);
  g_ptr_array_free(fed, TRUE);
  if (whats) g_ptr_array_free(whats, TRUE);
  if (x.sequences) g_hash_table_destroy(x.sequences);
  g_ptr_array_free(x.feed_names, TRUE);
  g_ptr_array_free(x.feed_tensors, TRUE);
  g_hash_table_destroy(x.values);
  g_hash_table_destroy(x.outputs);
  weft_graph_free(x.graph);
}

static bool op_selected(const cf_onnx_options_t *opts, const char *label,
                        const Onnx__ModelProto *m) {
  if (opts->op_filter == NULL || opts->op_filter->len == 0) return true;
  for (guint i = 0; i < opts->op_filter->len; i++) {
    const char *pat = opts->op_filter->pdata[i];
    if (g_pattern_match_simple(pat, label)) return true;
    /* "LayerNormalization" also selects "LayerNormalization (expanded)". */
    if (g_str_has_prefix(label, pat) && label[strlen(pat)] == ' ') return true;
    for (size_t n = 0; n < m->graph->n_node; n++)
      if (g_pattern_match_simple(pat, m->graph->node[n]->op_type) && m->graph->n_node == 1)
        return true;
  }
  return false;
}

static bool name_selected(const cf_onnx_options_t *opts, const char *name) {
  if (opts->case_filter == NULL || opts->case_filter->len == 0) return true;
  for (guint i = 0; i < opts->case_filter->len; i++)
    if (g_pattern_match_simple(opts->case_filter->pdata[i], name)) return true;
  return false;
}

bool cf_onnx_run_all(cf_run_ctx_t *ctx, const cf_onnx_options_t *opts, GError **error) {
  GDir *d = g_dir_open(opts->dir, 0, error);
  if (d == NULL) return false;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *entry;
  while ((entry = g_dir_read_name(d)) != NULL)
    if (g_str_has_prefix(entry, "test_")) g_ptr_array_add(names, g_strdup(entry));
  g_dir_close(d);
  if (names->len == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                "no test_* folders (ONNX node tests) in %s", opts->dir);
    g_ptr_array_free(names, TRUE);
    return false;
  }
  g_ptr_array_sort(names, cmp_str);
  for (guint i = 0; i < names->len; i++) {
    const char *name = names->pdata[i];
    if (!opts->include_expanded && strstr(name, "_expanded")) continue;
    if (!name_selected(opts, name)) continue;
    char *path = g_build_filename(opts->dir, name, "model.onnx", NULL);
    weft_status_t *st = NULL;
    Onnx__ModelProto *m = read_model(path, &st);
    g_free(path);
    if (m == NULL) {
      if (opts->op_filter == NULL)
        cf_report_add(ctx->report, "onnx", "(unreadable)", ctx->device->label, ctx->device->type,
                      "", name, CF_FAILED, NAN, NAN, NAN, weft_status_message(st));
      weft_status_free(st);
      continue;
    }
    char *label = test_op_label(opts->dir, name, m);
    if (op_selected(opts, label, m)) {
      test_result_t res = {0};
      char *dtype = NULL;
      run_test(ctx, opts->dir, name, m, label, &res, &dtype);
      cf_report_add(ctx->report, "onnx", label, ctx->device->label, ctx->device->type,
                    dtype ? dtype : "", name, res.status,
                    res.compared ? res.cmp.max_abs_err : NAN,
                    res.compared ? res.cmp.max_rel_err : NAN, res.compared ? res.cmp.nmse : NAN,
                    res.message);
      if (ctx->verbose)
        g_printerr("  %-8s %s onnx %s: %s\n", cf_status_name(res.status), ctx->device->label,
                   name, res.message ? res.message : "");
      g_free(res.message);
      g_free(res.cmp.message);
      g_free(dtype);
    }
    g_free(label);
    onnx__model_proto__free_unpacked(m, NULL);
  }
  g_ptr_array_free(names, TRUE);
  return true;
}

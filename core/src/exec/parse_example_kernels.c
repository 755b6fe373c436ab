/* parse_example_kernels.c: the core's CPU kernels for TensorFlow's tf.Example parsing ops
 * (ParseExample, ParseExampleV2, ParseSingleExample; tensorflow/core/kernels/
 * example_parsing_ops.cc): serialized Example protos (proto/example.proto) to dense tensors
 * (fixed shapes, with defaults; an empty default makes the feature required) and sparse ones
 * (indices, values, dense_shape), with TensorFlow's error messages. The bytes are untrusted:
 * they are unpacked behind the protobuf depth guard (base/protobuf.c) and every count is checked
 * against the output's size before anything is copied. ParseExampleV2's ragged outputs and
 * dense shapes with an unknown dimension (variable-length dense features) are refused. */
#include "exec_internal.h"

#include <string.h>

#include "../base/protobuf_internal.h"
#include "example.pb-c.h"

/* DataTypeString for the three dtypes a feature can have. */
static const char *tf_name(weft_dtype_t t) {
  return t == WEFT_DT_FLOAT ? "float" : t == WEFT_DT_INT64 ? "int64" : "string";
}

typedef struct feature_spec {
  char *key;
  weft_dtype_t type;
  const weft__shape_t *shape;     /* dense only */
  const weft_tensor_t *dflt;      /* dense only */
  int64_t n_elems;                /* dense only: elements per example */
} feature_spec_t;

typedef struct parse_job {
  weft_kernel_ctx_t *ctx;
  int ns, nd;
  feature_spec_t *sparse, *dense;
  const weft_tensor_t *serialized, *names;
  bool batch; /* serialized is a vector: outputs get a batch dimension */
  int64_t n;  /* examples */
  Tensorflow__Example **examples;
} parse_job_t;

/* Errors name the node (and so the op, through the executor's suffix). */
#define fail(j, ...) weft__kernel_error((j)->ctx, __VA_ARGS__)

static const weft__attr_value_t *attr(const weft_kernel_ctx_t *ctx, const char *name) {
  return weft__attrs_get(ctx->node->attrs, name);
}

static size_t list_len(const weft__attr_value_t *v) {
  return v && v->kind != WEFT_ATTR_LIST_EMPTY ? v->u.list.n : 0;
}

/* The example's name for messages: names[i] when given, else TensorFlow's "<unknown>". */
static char *example_name(const parse_job_t *j, int64_t i) {
  if (j->names && j->names->num_elements > i && j->names->dtype == WEFT_DT_STRING) {
    const weft_string_t *s = (const weft_string_t *)weft_tensor_data(j->names) + i;
    return g_strndup(s->data, s->len);
  }
  return g_strdup("<unknown>");
}

static const Tensorflow__Feature *find_feature(const Tensorflow__Example *ex, const char *key) {
  const Tensorflow__Features *fs = ex->features;
  for (size_t k = 0; fs && k < fs->n_feature; k++) {
    const Tensorflow__Features__FeatureEntry *e = fs->feature[k];
    if (e && e->key && strcmp(e->key, key) == 0 && e->value &&
        e->value->kind_case != TENSORFLOW__FEATURE__KIND__NOT_SET)
      return e->value;
  }
  return NULL;
}

static weft_dtype_t feature_type(const Tensorflow__Feature *f) {
  switch (f->kind_case) {
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: return WEFT_DT_FLOAT;
    case TENSORFLOW__FEATURE__KIND_INT64_LIST: return WEFT_DT_INT64;
    default: return WEFT_DT_STRING;
  }
}

static size_t feature_count(const Tensorflow__Feature *f) {
  switch (f->kind_case) {
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: return f->float_list ? f->float_list->n_value : 0;
    case TENSORFLOW__FEATURE__KIND_INT64_LIST: return f->int64_list ? f->int64_list->n_value : 0;
    default: return f->bytes_list ? f->bytes_list->n_value : 0;
  }
}

/* Copies the feature's values to dst from element `at` on. */
static weft_status_t *copy_values(weft_tensor_t *dst, int64_t at, const Tensorflow__Feature *f) {
  size_t n = feature_count(f);
  switch (f->kind_case) {
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST:
      if (n) memcpy((float *)weft_tensor_data(dst) + at, f->float_list->value, n * sizeof(float));
      return NULL;
    case TENSORFLOW__FEATURE__KIND_INT64_LIST:
      for (size_t k = 0; k < n; k++)
        ((int64_t *)weft_tensor_data(dst))[at + (int64_t)k] = f->int64_list->value[k];
      return NULL;
    default:
      for (size_t k = 0; k < n; k++) {
        const ProtobufCBinaryData *b = &f->bytes_list->value[k];
        WEFT_RETURN_IF_ERROR(weft_tensor_set_string(dst, at + (int64_t)k, (const char *)b->data,
                                                    b->len));
      }
      return NULL;
  }
}

static weft_status_t *type_mismatch(parse_job_t *j, int64_t i, const char *key,
                                    const Tensorflow__Feature *f, weft_dtype_t want) {
  char *name = example_name(j, i);
  weft_status_t *st = fail(j, WEFT_INVALID_ARGUMENT, "Name: %s, Feature: %s.  Data types don't "
                           "match. Data type: %s but expected type: %s", name, key,
                           tf_name(feature_type(f)), tf_name(want));
  g_free(name);
  return st;
}

static void set_output(weft_kernel_ctx_t *ctx, int index, weft_tensor_t *t) {
  weft_tensor_unref(ctx->outputs[index].tensor);
  ctx->outputs[index].tensor = t;
}

static weft_status_t *parse_dense(parse_job_t *j, int d) {
  const feature_spec_t *fs = &j->dense[d];
  int64_t dims[WEFT_MAX_RANK + 1];
  int rank = 0;
  if (j->batch) dims[rank++] = j->n;
  for (int k = 0; k < fs->shape->rank; k++) dims[rank++] = fs->shape->dims[k];
  if (fs->n_elems > 0 && j->n > G_MAXINT64 / fs->n_elems) {
    return fail(j, WEFT_INVALID_ARGUMENT, "dense feature %s: %" G_GINT64_FORMAT " examples of %"
                G_GINT64_FORMAT " elements overflow", fs->key, j->n, fs->n_elems);
  }
  weft_tensor_t *out = weft_tensor_new(fs->type, rank, dims);
  weft_status_t *st = NULL;
  for (int64_t i = 0; i < j->n && !st; i++) {
    const Tensorflow__Feature *f = find_feature(j->examples[i], fs->key);
    int64_t at = i * fs->n_elems;
    if (f == NULL) {
      if (fs->dflt->num_elements == 0) {
        char *name = example_name(j, i);
        st = fail(j, WEFT_INVALID_ARGUMENT, "Name: %s, Feature: %s (data type: %s) is required "
                  "but could not be found.", name, fs->key, tf_name(fs->type));
        g_free(name);
      } else if (fs->type == WEFT_DT_STRING) {
        const weft_string_t *s = weft_tensor_data(fs->dflt);
        for (int64_t k = 0; k < fs->n_elems && !st; k++)
          st = weft_tensor_set_string(out, at + k, s[k].data, s[k].len);
      } else {
        size_t es = weft_dtype_size(fs->type);
        memcpy((char *)weft_tensor_data(out) + (size_t)at * es, weft_tensor_data(fs->dflt),
               (size_t)fs->n_elems * es);
      }
      continue;
    }
    if (feature_type(f) != fs->type) {
      st = type_mismatch(j, i, fs->key, f, fs->type);
    } else if ((int64_t)feature_count(f) != fs->n_elems) {
      char *name = example_name(j, i);
      char *shape = weft__shape_to_string(fs->shape->rank, fs->shape->dims);
      st = fail(j, WEFT_INVALID_ARGUMENT, "Name: %s, Key: %s, Index: %" G_GINT64_FORMAT ".  "
                "Number of %s values != expected.  values size: %zu but output shape: %s", name,
                fs->key, i, tf_name(fs->type), feature_count(f), shape);
      g_free(shape);
      g_free(name);
    } else {
      st = copy_values(out, at, f);
    }
  }
  if (st) {
    weft_tensor_unref(out);
    return st;
  }
  set_output(j->ctx, 3 * j->ns + d, out);
  return NULL;
}

static weft_status_t *parse_sparse(parse_job_t *j, int s) {
  const feature_spec_t *fs = &j->sparse[s];
  int64_t total = 0, longest = 0;
  for (int64_t i = 0; i < j->n; i++) {
    const Tensorflow__Feature *f = find_feature(j->examples[i], fs->key);
    if (f == NULL) continue;
    if (feature_type(f) != fs->type) return type_mismatch(j, i, fs->key, f, fs->type);
    int64_t c = (int64_t)feature_count(f);
    total += c;
    if (c > longest) longest = c;
  }
  int cols = j->batch ? 2 : 1;
  int64_t idims[2] = {total, cols};
  weft_tensor_t *indices = weft_tensor_new(WEFT_DT_INT64, 2, idims);
  weft_tensor_t *values = weft_tensor_new(fs->type, 1, &total);
  int64_t sdim = cols;
  weft_tensor_t *shape = weft_tensor_new(WEFT_DT_INT64, 1, &sdim);
  int64_t *ix = weft_tensor_data(indices);
  int64_t at = 0;
  weft_status_t *st = NULL;
  for (int64_t i = 0; i < j->n && !st; i++) {
    const Tensorflow__Feature *f = find_feature(j->examples[i], fs->key);
    if (f == NULL) continue;
    int64_t c = (int64_t)feature_count(f);
    for (int64_t k = 0; k < c; k++) {
      if (j->batch) *ix++ = i;
      *ix++ = k;
    }
    st = copy_values(values, at, f);
    at += c;
  }
  int64_t *sh = weft_tensor_data(shape);
  if (j->batch) *sh++ = j->n;
  *sh = longest;
  if (st) {
    weft_tensor_unref(indices);
    weft_tensor_unref(values);
    weft_tensor_unref(shape);
    return st;
  }
  set_output(j->ctx, s, indices);
  set_output(j->ctx, j->ns + s, values);
  set_output(j->ctx, 2 * j->ns + s, shape);
  return NULL;
}

/* Checks the dense specs against their defaults, unpacks every example, fills the outputs. */
static weft_status_t *parse_all(parse_job_t *j) {
  const weft__attr_value_t *st_types = attr(j->ctx, "sparse_types");
  const weft__attr_value_t *tdense = attr(j->ctx, "Tdense");
  const weft__attr_value_t *shapes = attr(j->ctx, "dense_shapes");
  if ((int)list_len(st_types) != j->ns || (int)list_len(tdense) != j->nd ||
      (int)list_len(shapes) != j->nd) {
    return fail(j, WEFT_INVALID_ARGUMENT, "%d sparse and %d dense keys but sparse_types lists "
                "%zu, Tdense %zu and dense_shapes %zu", j->ns, j->nd, list_len(st_types),
                list_len(tdense), list_len(shapes));
  }
  for (int s = 0; s < j->ns; s++) j->sparse[s].type = st_types->u.list.type[s];
  for (int d = 0; d < j->nd; d++) {
    feature_spec_t *fs = &j->dense[d];
    fs->type = tdense->u.list.type[d];
    fs->shape = &shapes->u.list.shape[d];
    fs->n_elems = 1;
    if (fs->shape->rank < 0 || fs->shape->rank > WEFT_MAX_RANK - 1) {
      return fail(j, WEFT_UNIMPLEMENTED, "dense_shapes[%d] of rank %d is not supported", d,
                  fs->shape->rank);
    }
    for (int k = 0; k < fs->shape->rank; k++) {
      if (fs->shape->dims[k] < 0) {
        return fail(j, WEFT_UNIMPLEMENTED, "dense feature %s has an unknown dimension in "
                    "dense_shapes[%d]: variable-length dense features are not supported",
                    fs->key, d);
      }
      if (fs->shape->dims[k] > 0 && fs->n_elems > G_MAXINT64 / fs->shape->dims[k])
        return fail(j, WEFT_INVALID_ARGUMENT, "dense_shapes[%d] has too many elements", d);
      fs->n_elems *= fs->shape->dims[k];
    }
    if (fs->dflt->dtype != fs->type) {
      return fail(j, WEFT_INVALID_ARGUMENT, "dense_defaults[%d] is %s but Tdense[%d] is %s", d,
                  tf_name(fs->dflt->dtype), d, tf_name(fs->type));
    }
    if (fs->dflt->num_elements != 0 && fs->dflt->num_elements != fs->n_elems) {
      char *shape = weft__shape_to_string(fs->shape->rank, fs->shape->dims);
      weft_status_t *st = fail(j, WEFT_INVALID_ARGUMENT, "dense_defaults[%d] has %" G_GINT64_FORMAT
                               " elements but dense_shapes[%d] is %s", d,
                               fs->dflt->num_elements, d, shape);
      g_free(shape);
      return st;
    }
  }
  const weft_tensor_t *ser = j->serialized;
  if (ser->dtype != WEFT_DT_STRING || ser->rank > 1) {
    return fail(j, WEFT_INVALID_ARGUMENT, "serialized must be a string scalar or vector");
  }
  j->batch = ser->rank == 1;
  j->n = ser->num_elements;
  if (j->names && j->names->num_elements != 0 && j->names->num_elements != j->n) {
    return fail(j, WEFT_INVALID_ARGUMENT, "names has %" G_GINT64_FORMAT " elements but "
                "serialized %" G_GINT64_FORMAT, j->names->num_elements, j->n);
  }
  j->examples = g_new0(Tensorflow__Example *, j->n + 1);
  const weft_string_t *bytes = weft_tensor_data(ser);
  for (int64_t i = 0; i < j->n; i++) {
    weft_status_t *st = NULL;
    j->examples[i] = (Tensorflow__Example *)weft__pb_unpack(
        &tensorflow__example__descriptor, (const uint8_t *)bytes[i].data, bytes[i].len,
        "serialized Example", &st);
    if (st) return weft_status_prefix(st, "node '%s'", j->ctx->node->name);
    if (j->examples[i] == NULL) {
      /* The bytes shown escaped and cut at 64: they may be anything, of any length. */
      char *head = g_strndup(bytes[i].data, bytes[i].len > 64 ? 64 : bytes[i].len);
      gchar *esc = g_strescape(head, NULL);
      weft_status_t *err = fail(j, WEFT_INVALID_ARGUMENT, "Could not parse example input, "
                                "value: '%s%s'", esc, bytes[i].len > 64 ? "..." : "");
      g_free(esc);
      g_free(head);
      return err;
    }
  }
  for (int s = 0; s < j->ns; s++) WEFT_RETURN_IF_ERROR(parse_sparse(j, s));
  for (int d = 0; d < j->nd; d++) WEFT_RETURN_IF_ERROR(parse_dense(j, d));
  return NULL;
}

static void job_clear(parse_job_t *j) {
  for (int64_t i = 0; j->examples && i < j->n; i++)
    if (j->examples[i]) tensorflow__example__free_unpacked(j->examples[i], NULL);
  g_free(j->examples);
  for (int s = 0; s < j->ns; s++) g_free(j->sparse[s].key);
  for (int d = 0; d < j->nd; d++) g_free(j->dense[d].key);
  g_free(j->sparse);
  g_free(j->dense);
}

static char *string_at(const weft_tensor_t *t, int64_t k) {
  const weft_string_t *s = (const weft_string_t *)weft_tensor_data(t) + k;
  return g_strndup(s->data, s->len);
}

static weft_status_t *run_job(parse_job_t *j) {
  weft_status_t *st = parse_all(j);
  job_clear(j);
  return st;
}

/* ParseExample(serialized, names, sparse_keys: Nsparse scalars, dense_keys: Ndense scalars,
 * dense_defaults: Ndense). */
static weft_status_t *parse_example(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft__attr_value_t *ns = attr(ctx, "Nsparse"), *nd = attr(ctx, "Ndense");
  parse_job_t j = {.ctx = ctx};
  j.ns = ns && ns->kind == WEFT_ATTR_INT ? (int)ns->u.i : 0;
  j.nd = nd && nd->kind == WEFT_ATTR_INT ? (int)nd->u.i : 0;
  if (ctx->node->n_inputs != 2 + j.ns + 2 * j.nd)
    return fail(&j, WEFT_INVALID_ARGUMENT, "has %d inputs, not 2 + Nsparse + 2 Ndense",
                ctx->node->n_inputs);
  j.serialized = ctx->inputs[0].tensor;
  j.names = ctx->inputs[1].tensor;
  j.sparse = g_new0(feature_spec_t, j.ns + 1);
  j.dense = g_new0(feature_spec_t, j.nd + 1);
  for (int k = 0; k < j.ns + j.nd; k++) {
    const weft_tensor_t *key = ctx->inputs[2 + k].tensor;
    feature_spec_t *fs = k < j.ns ? &j.sparse[k] : &j.dense[k - j.ns];
    if (key->dtype != WEFT_DT_STRING || key->num_elements != 1) {
      weft_status_t *st = fail(&j, WEFT_INVALID_ARGUMENT, "%s key %d is not a string scalar",
                               k < j.ns ? "sparse" : "dense", k < j.ns ? k : k - j.ns);
      job_clear(&j);
      return st;
    }
    fs->key = string_at(key, 0);
  }
  for (int d = 0; d < j.nd; d++) j.dense[d].dflt = ctx->inputs[2 + j.ns + j.nd + d].tensor;
  return run_job(&j);
}

/* ParseExampleV2(serialized, names, sparse_keys, dense_keys, ragged_keys: vectors,
 * dense_defaults). */
static weft_status_t *parse_example_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  parse_job_t j = {.ctx = ctx};
  if (ctx->node->n_inputs < 5) return fail(&j, WEFT_INVALID_ARGUMENT, "has fewer than 5 inputs");
  const weft_tensor_t *sk = ctx->inputs[2].tensor, *dk = ctx->inputs[3].tensor;
  const weft_tensor_t *rk = ctx->inputs[4].tensor;
  if (rk->num_elements != 0 || list_len(attr(ctx, "ragged_value_types")) != 0) {
    return fail(&j, WEFT_UNIMPLEMENTED, "ragged features (ragged_keys) are not supported");
  }
  if (sk->dtype != WEFT_DT_STRING || dk->dtype != WEFT_DT_STRING || sk->rank > 1 || dk->rank > 1)
    return fail(&j, WEFT_INVALID_ARGUMENT, "sparse_keys and dense_keys must be string vectors");
  j.ns = (int)sk->num_elements;
  j.nd = (int)dk->num_elements;
  const weft__attr_value_t *nsa = attr(ctx, "num_sparse");
  if (!nsa || nsa->kind != WEFT_ATTR_INT || nsa->u.i != j.ns)
    return fail(&j, WEFT_INVALID_ARGUMENT, "sparse_keys has %d keys but num_sparse differs", j.ns);
  if (ctx->node->n_inputs != 5 + j.nd)
    return fail(&j, WEFT_INVALID_ARGUMENT, "%d dense keys but %d dense_defaults", j.nd,
                ctx->node->n_inputs - 5);
  j.serialized = ctx->inputs[0].tensor;
  j.names = ctx->inputs[1].tensor;
  j.sparse = g_new0(feature_spec_t, j.ns + 1);
  j.dense = g_new0(feature_spec_t, j.nd + 1);
  for (int s = 0; s < j.ns; s++) j.sparse[s].key = string_at(sk, s);
  for (int d = 0; d < j.nd; d++) {
    j.dense[d].key = string_at(dk, d);
    j.dense[d].dflt = ctx->inputs[5 + d].tensor;
  }
  return run_job(&j);
}

/* ParseSingleExample(serialized: scalar, dense_defaults), its keys in attrs. */
static weft_status_t *parse_single_example(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  parse_job_t j = {.ctx = ctx};
  const weft__attr_value_t *sk = attr(ctx, "sparse_keys"), *dk = attr(ctx, "dense_keys");
  j.ns = (int)list_len(sk);
  j.nd = (int)list_len(dk);
  if (ctx->node->n_inputs != 1 + j.nd)
    return fail(&j, WEFT_INVALID_ARGUMENT, "%d dense keys but %d dense_defaults", j.nd,
                ctx->node->n_inputs - 1);
  j.serialized = ctx->inputs[0].tensor;
  if (j.serialized->rank != 0)
    return fail(&j, WEFT_INVALID_ARGUMENT, "serialized must be a scalar");
  j.sparse = g_new0(feature_spec_t, j.ns + 1);
  j.dense = g_new0(feature_spec_t, j.nd + 1);
  for (int s = 0; s < j.ns; s++) j.sparse[s].key = g_strdup(sk->u.list.s[s].data);
  for (int d = 0; d < j.nd; d++) {
    j.dense[d].key = g_strdup(dk->u.list.s[d].data);
    j.dense[d].dflt = ctx->inputs[1 + d].tensor;
  }
  return run_job(&j);
}

void weft__parse_example_kernels_register(void) {
  static const struct {
    const char *op;
    weft_kernel_compute_fn compute;
  } kernels[] = {{"ParseExample", parse_example},
                 {"ParseExampleV2", parse_example_v2},
                 {"ParseSingleExample", parse_single_example}};
  for (size_t k = 0; k < G_N_ELEMENTS(kernels); k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = kernels[k].op,
                             .device_type = "CPU",
                             .compute = kernels[k].compute};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}

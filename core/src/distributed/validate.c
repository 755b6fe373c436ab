/* Checks every Master and Worker request against the server's limits before any work starts
 * (docs/security.md, "Request validation"). Two passes: the frame before it is decoded (its
 * size, and the tensors its TensorList declares: dtype, rank, shape against bytes, bytes against
 * the limit), so nothing is allocated for a request that lies about its sizes; then the decoded
 * message (graph node and attribute counts, op names, device names inside the cluster, constant
 * tensors in attributes, names that must not be empty). Each violation is INVALID_ARGUMENT
 * saying which request and which field, e.g. "Invalid RunStep request: field
 * 'feed[0].tensor_content' holds 12 bytes but dtype float32 and shape [4] need 16". */
#include "distributed_internal.h"

#include <grpc/compression.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#include "../base/protobuf_internal.h"
#include "../graph/graph_internal.h"
#include "../placement/placement_internal.h"
#include "wire_reader.h"

void weft__limits_default(weft__limits_t *l) {
  l->max_message_bytes = WEFT_DEFAULT_MAX_MESSAGE_BYTES;
  l->max_tensor_bytes = WEFT_DEFAULT_MAX_TENSOR_BYTES;
  l->max_graph_nodes = WEFT_DEFAULT_MAX_GRAPH_NODES;
  l->max_node_attrs = WEFT_DEFAULT_MAX_NODE_ATTRS;
  l->max_rank = WEFT_MAX_RANK;
  l->max_inflating_bytes = WEFT_DEFAULT_MAX_INFLATING_BYTES;
}

/* "/weft.Worker/RunGraph" -> "RunGraph". */
static const char *method_name(const char *method) {
  const char *slash = strrchr(method, '/');
  return slash ? slash + 1 : method;
}

static weft_status_t *invalid(const char *method, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static weft_status_t *invalid(const char *method, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  weft_status_t *st =
      weft_status_new(WEFT_INVALID_ARGUMENT, "Invalid %s request: %s", method_name(method), text);
  g_free(text);
  return st;
}

/* "[2,3]" */
static char *shape_text(const int64_t *dims, size_t n) {
  GString *s = g_string_new("[");
  for (size_t k = 0; k < n; k++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, k ? "," : "", dims[k]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* The element count of a shape, or an error for negative dimensions, too high a rank or a count
 * that overflows. */
static weft_status_t *check_dims(const char *method, const char *field, const weft__limits_t *l,
                                 const int64_t *dims, size_t n, uint64_t *elements) {
  if (n > (size_t)l->max_rank) {
    return invalid(method, "field '%s' has rank %zu; the server allows at most %d "
                   "(--max_tensor_rank)", field, n, l->max_rank);
  }
  size_t k = 0;
  switch (weft__wire_dims_check(dims, n, &k, elements)) {
    case WEFT__WIRE_META_NEGATIVE_DIM:
      return invalid(method, "field '%s' has negative dimension %" G_GINT64_FORMAT " at %zu",
                     field, dims[k], k);
    case WEFT__WIRE_META_DIMS_OVERFLOW:
      return invalid(method, "field '%s' has too many elements", field);
    default:
      return NULL;
  }
}

static bool dtype_ok(int dtype) {
  return weft__dtype_is_valid(dtype) && !weft__dtype_is_ref(dtype) &&
         (dtype == WEFT_DT_STRING || weft_dtype_size((weft_dtype_t)dtype) > 0);
}

static weft_status_t *too_large(const char *method, const char *field, uint64_t bytes,
                                const weft__limits_t *l) {
  return invalid(method, "field '%s' needs %" G_GUINT64_FORMAT " bytes; the server allows at "
                 "most %" G_GINT64_FORMAT " per tensor (--max_tensor_bytes)",
                 field, bytes, l->max_tensor_bytes);
}

/* ---------------------------------------------------------------------------------------------
 * The frame */

static weft_status_t *check_meta(const char *method, const weft__limits_t *l,
                                 const Weft__TensorMeta *m, size_t index) {
  char field[64];
  g_snprintf(field, sizeof field, "feed[%zu]", index);
  weft__wire_meta_check_t c;
  weft__wire_meta_check(m, l->max_rank, &c);
  if (c.fault == WEFT__WIRE_META_DTYPE) {
    return invalid(method, "field '%s.dtype' is %d, not a dtype a tensor can have", field,
                   m->dtype);
  }
  if (c.fault == WEFT__WIRE_META_RANK || c.fault == WEFT__WIRE_META_NEGATIVE_DIM ||
      c.fault == WEFT__WIRE_META_DIMS_OVERFLOW) {
    char shape_field[80];
    g_snprintf(shape_field, sizeof shape_field, "%s.shape", field);
    uint64_t elements = 0;
    return check_dims(method, shape_field, l, m->dims, m->n_dims, &elements);
  }
  char *shape = shape_text(m->dims, m->n_dims);
  const char *dtype = weft_dtype_name((weft_dtype_t)m->dtype);
  weft_status_t *st = NULL;
  switch (c.fault) {
    case WEFT__WIRE_META_STRING_COUNT:
      st = invalid(method, "field '%s.string_lengths' has %zu entries but shape %s has %"
                   G_GUINT64_FORMAT " elements", field, m->n_string_lengths, shape, c.elements);
      break;
    case WEFT__WIRE_META_STRING_BYTES:
      st = invalid(method, "field '%s.tensor_content' holds %" G_GUINT64_FORMAT " bytes but its "
                   "string lengths add up to %s%" G_GUINT64_FORMAT, field, (guint64)m->nbytes,
                   c.string_overflow ? "more than " : "",
                   /* string_total stops before the length that overflowed: name the bound. */
                   c.string_overflow ? (guint64)G_MAXINT64 : c.string_total);
      break;
    case WEFT__WIRE_META_BYTES_OVERFLOW:
      st = invalid(method, "field '%s' (dtype %s, shape %s) has too many elements", field, dtype,
                   shape);
      break;
    case WEFT__WIRE_META_BYTES:
      st = invalid(method, "field '%s.tensor_content' holds %" G_GUINT64_FORMAT " bytes but dtype "
                   "%s and shape %s need %" G_GUINT64_FORMAT, field, (guint64)m->nbytes, dtype,
                   shape, c.elements * weft_dtype_size((weft_dtype_t)m->dtype));
      break;
    default:
      break;
  }
  g_free(shape);
  if (!st && m->nbytes > (uint64_t)l->max_tensor_bytes) {
    char content[96];
    g_snprintf(content, sizeof content, "%s.tensor_content", field);
    st = too_large(method, content, m->nbytes, l);
  }
  return st;
}

weft_status_t *weft__validate_frame(const weft__limits_t *l, const char *method,
                                    grpc_byte_buffer *bb) {
  if (!bb) return NULL; /* the decoder says "no message" */
  size_t total = grpc_byte_buffer_length(bb);
  if ((uint64_t)total > (uint64_t)l->max_message_bytes) {
    return invalid(method, "the message is %zu bytes; the server accepts at most %" G_GINT64_FORMAT
                   " (--max_message_bytes)", total, l->max_message_bytes);
  }
  weft__wire_reader_t c;
  if (!weft__wire_reader_init(&c, bb)) return NULL;
  weft_status_t *st = NULL;
  /* A frame whose head is cut short, nests too deep or does not parse is the decoder's to
   * describe; the head is read (the message only skipped) as the decoder reads it. */
  Weft__TensorList *list = NULL;
  ProtobufCMessage *unused = NULL;
  weft_status_free(weft__wire_reader_head(&c, NULL, &unused, &list));
  uint64_t left = c.remaining;
  for (size_t k = 0; list && !st && k < list->n_tensor; k++) {
    const Weft__TensorMeta *m = list->tensor[k];
    st = check_meta(method, l, m, k);
    if (!st && m->nbytes > left) {
      st = invalid(method, "field 'feed[%zu].tensor_content' needs %" G_GUINT64_FORMAT " bytes "
                   "but only %" G_GUINT64_FORMAT " follow in the message", k,
                   (guint64)m->nbytes, left);
    }
    if (!st) left -= m->nbytes;
  }
  if (list) weft__tensor_list__free_unpacked(list, NULL);
  weft__wire_reader_destroy(&c);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Compressed requests */

/* Inflated bytes go into slices this large, so a small message takes little memory and a large
 * one is not copied again. */
#define INFLATE_SLICE_BYTES ((size_t)256 << 10)
/* A refused request that took this much memory hands it back to the system (malloc_trim): glibc
 * keeps freed memory of other threads' arenas otherwise, and the server's RSS stays high. */
#define TRIM_AFTER_BYTES ((size_t)16 << 20)

void weft__inflate_budget_init(weft__inflate_budget_t *b, int64_t limit) {
  g_mutex_init(&b->lock);
  b->limit = limit;
  b->in_use = 0;
  b->lead = NULL;
}

void weft__inflate_budget_clear(weft__inflate_budget_t *b) { g_mutex_clear(&b->lock); }

/* `held`: what owner reserved so far; a request that starts while no lead holds anything
 * becomes the lead. */
static bool budget_reserve(weft__inflate_budget_t *b, const void *owner, int64_t held,
                           int64_t bytes) {
  g_mutex_lock(&b->lock);
  if (!b->lead && held == 0) b->lead = owner;
  bool ok = b->lead == owner || b->in_use + bytes <= b->limit;
  if (ok) b->in_use += bytes;
  g_mutex_unlock(&b->lock);
  return ok;
}

void weft__inflate_budget_release(weft__inflate_budget_t *b, const void *owner, int64_t bytes) {
  if (!b) return;
  g_mutex_lock(&b->lock);
  b->in_use -= bytes;
  if (b->lead == owner) b->lead = NULL;
  g_mutex_unlock(&b->lock);
}

static void unmap_slice(void *p, size_t len) { munmap(p, len); }

/* A slice of inflated output. Full ones are mapped, not malloc'ed, so their pages go back to the
 * system when the request's payload is freed: malloc keeps freed 256 KiB blocks in the arena of
 * the thread that freed them, and concurrent requests on other threads then took fresh pages,
 * so the server's memory grew well past what the budget had reserved (measured: +182 MiB for a
 * 96 MiB budget and a 64 MiB message). */
static grpc_slice inflate_slice(size_t len) {
  if (len == INFLATE_SLICE_BYTES) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) return grpc_slice_new_with_len(p, len, unmap_slice);
  }
  return grpc_slice_malloc(len);
}

weft_status_t *weft__inflate_request(const weft__limits_t *l, weft__inflate_budget_t *budget,
                                     const void *owner, const char *method,
                                     grpc_byte_buffer **bb, int64_t *reserved) {
  *reserved = 0;
  grpc_byte_buffer *in = *bb;
  if (!in || in->type != GRPC_BB_RAW || in->data.raw.compression == GRPC_COMPRESS_NONE)
    return NULL;
  grpc_compression_algorithm alg = in->data.raw.compression;
  if (alg != GRPC_COMPRESS_GZIP && alg != GRPC_COMPRESS_DEFLATE) {
    const char *name = NULL;
    grpc_compression_algorithm_name(alg, &name);
    return weft_status_new(WEFT_UNIMPLEMENTED,
                           "%s: the request is compressed with '%s'; this server inflates only "
                           "gzip and deflate", method, name ? name : "unknown");
  }
  z_stream z;
  memset(&z, 0, sizeof z);
  /* 32 + MAX_WBITS: a zlib (gRPC's "deflate") or a gzip header, whichever the stream has. */
  if (inflateInit2(&z, 32 + MAX_WBITS) != Z_OK) {
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "%s: cannot start inflating the request: %s",
                           method, z.msg ? z.msg : "zlib could not allocate its state");
  }
  uint64_t limit = (uint64_t)l->max_message_bytes;
  GArray *out = g_array_new(FALSE, FALSE, sizeof(grpc_slice));
  grpc_slice cur = grpc_empty_slice();
  size_t cur_used = 0, cur_cap = 0;
  uint64_t total = 0;
  weft_status_t *st = NULL;
  int zr = Z_OK;
  grpc_slice_buffer *sb = &in->data.raw.slice_buffer;
  for (size_t k = 0; k < sb->count && zr != Z_STREAM_END && !st; k++) {
    z.next_in = GRPC_SLICE_START_PTR(sb->slices[k]);
    z.avail_in = (uInt)GRPC_SLICE_LENGTH(sb->slices[k]);
    while (z.avail_in > 0 && zr != Z_STREAM_END && !st) {
      if (cur_used == cur_cap) {
        if (cur_cap > 0) g_array_append_val(out, cur);
        /* One byte beyond the limit is enough to know the message is too large. */
        uint64_t room = limit + 1 - total;
        size_t want = room < INFLATE_SLICE_BYTES ? (size_t)room : INFLATE_SLICE_BYTES;
        if (budget && !budget_reserve(budget, owner, *reserved, (int64_t)want)) {
          st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                               "%s: compressed requests being inflated at once would take more "
                               "than %" G_GINT64_FORMAT " bytes (--max_inflating_bytes); this one "
                               "(%zu bytes compressed) was refused: send it again later",
                               method, budget->limit, grpc_byte_buffer_length(in));
          cur_cap = cur_used = 0;
          break;
        }
        if (budget) *reserved += (int64_t)want;
        cur_cap = want;
        cur = inflate_slice(cur_cap);
        cur_used = 0;
      }
      z.next_out = GRPC_SLICE_START_PTR(cur) + cur_used;
      z.avail_out = (uInt)(cur_cap - cur_used);
      zr = inflate(&z, Z_NO_FLUSH);
      size_t made = (cur_cap - cur_used) - z.avail_out;
      cur_used += made;
      total += made;
      if (total > limit) {
        st = invalid(method, "the message inflates to more than %" G_GINT64_FORMAT " bytes (it "
                     "came compressed, %zu bytes); the server accepts at most %" G_GINT64_FORMAT
                     " (--max_message_bytes)", l->max_message_bytes, grpc_byte_buffer_length(in),
                     l->max_message_bytes);
      } else if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && z.avail_out == 0)) {
        st = invalid(method, "the compressed message does not inflate: %s",
                     z.msg ? z.msg : "corrupt data");
      }
    }
  }
  if (!st && zr != Z_STREAM_END) {
    st = invalid(method, "the compressed message is truncated (it ends inside the stream)");
  }
  inflateEnd(&z);
  if (cur_cap > 0) {
    if (!st && cur_used < cur_cap) {
      grpc_slice whole = cur;
      cur = grpc_slice_sub(whole, 0, cur_used);
      grpc_slice_unref(whole);
    }
    g_array_append_val(out, cur);
  }
  if (!st) {
    grpc_slice *slices = (grpc_slice *)(void *)out->data;
    grpc_byte_buffer *plain = grpc_raw_byte_buffer_create(slices, out->len);
    grpc_byte_buffer_destroy(in);
    *bb = plain;
  }
  for (guint k = 0; k < out->len; k++) grpc_slice_unref(g_array_index(out, grpc_slice, k));
  g_array_free(out, TRUE);
  if (st) {
    weft__inflate_budget_release(budget, owner, *reserved);
    *reserved = 0;
    if (total >= TRIM_AFTER_BYTES) weft__malloc_trim();
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Decoded messages */

static weft_status_t *check_tensor_proto(const char *method, const char *field,
                                         const weft__limits_t *l,
                                         const Tensorflow__TensorProto *t) {
  if (!t) return NULL;
  if (!dtype_ok((int)t->dtype)) {
    return invalid(method, "field '%s.dtype' is %d, not a dtype a tensor can have", field,
                   (int)t->dtype);
  }
  size_t rank = t->tensor_shape ? t->tensor_shape->n_dim : 0;
  if (t->tensor_shape && t->tensor_shape->unknown_rank) {
    return invalid(method, "field '%s.tensor_shape' has an unknown rank", field);
  }
  if (rank > (size_t)l->max_rank) {
    return invalid(method, "field '%s.tensor_shape' has rank %zu; the server allows at most %d "
                   "(--max_tensor_rank)", field, rank, l->max_rank);
  }
  int64_t dims[WEFT_MAX_RANK];
  for (size_t k = 0; k < rank; k++)
    dims[k] = t->tensor_shape->dim[k] ? t->tensor_shape->dim[k]->size : 0;
  char *shape_field = g_strdup_printf("%s.tensor_shape", field);
  uint64_t elements = 0;
  weft_status_t *st = check_dims(method, shape_field, l, dims, rank, &elements);
  g_free(shape_field);
  if (st) return st;
  weft_dtype_t dtype = (weft_dtype_t)t->dtype;
  uint64_t size = dtype == WEFT_DT_STRING ? sizeof(weft_string_t) : weft_dtype_size(dtype);
  if (elements > (uint64_t)G_MAXINT64 / size || elements * size > (uint64_t)l->max_tensor_bytes) {
    return invalid(method, "field '%s' (dtype %s, %" G_GUINT64_FORMAT " elements) needs more than "
                   "the %" G_GINT64_FORMAT " bytes the server allows per tensor "
                   "(--max_tensor_bytes)", field, weft_dtype_name(dtype), elements,
                   l->max_tensor_bytes);
  }
  char *shape = shape_text(dims, rank);
  if (t->tensor_content.len > 0 && dtype != WEFT_DT_STRING &&
      t->tensor_content.len != elements * size) {
    st = invalid(method, "field '%s.tensor_content' holds %zu bytes but dtype %s and shape %s "
                 "need %" G_GUINT64_FORMAT, field, t->tensor_content.len, weft_dtype_name(dtype),
                 shape, elements * size);
  }
  /* Typed values may be fewer than the elements (the last one repeats), never more. */
  struct { const char *name; size_t n; } vals[] = {
      {"half_val", t->n_half_val},         {"float_val", t->n_float_val},
      {"double_val", t->n_double_val},     {"int_val", t->n_int_val},
      {"string_val", t->n_string_val},     {"scomplex_val", t->n_scomplex_val / 2},
      {"int64_val", t->n_int64_val},       {"bool_val", t->n_bool_val},
      {"dcomplex_val", t->n_dcomplex_val / 2}, {"uint32_val", t->n_uint32_val},
      {"uint64_val", t->n_uint64_val},
  };
  for (size_t k = 0; !st && k < G_N_ELEMENTS(vals); k++) {
    if (vals[k].n > elements) {
      st = invalid(method, "field '%s.%s' has %zu values but shape %s has %" G_GUINT64_FORMAT
                   " elements", field, vals[k].name, vals[k].n, shape, elements);
    }
  }
  g_free(shape);
  return st;
}

static weft_status_t *check_shape_proto(const char *method, const char *field,
                                        const weft__limits_t *l,
                                        const Tensorflow__TensorShapeProto *s) {
  if (s && s->n_dim > (size_t)l->max_rank) {
    return invalid(method, "field '%s' has rank %zu; the server allows at most %d "
                   "(--max_tensor_rank)", field, s->n_dim, l->max_rank);
  }
  return NULL;
}

static weft_status_t *check_attr(const char *method, const char *field, const weft__limits_t *l,
                                 const Tensorflow__AttrValue *v) {
  if (!v) return NULL;
  weft_status_t *st = NULL;
  switch (v->value_case) {
    case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR: {
      char *f = g_strdup_printf("%s.tensor", field);
      st = check_tensor_proto(method, f, l, v->tensor);
      g_free(f);
      break;
    }
    case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE: {
      char *f = g_strdup_printf("%s.shape", field);
      st = check_shape_proto(method, f, l, v->shape);
      g_free(f);
      break;
    }
    case TENSORFLOW__ATTR_VALUE__VALUE_LIST:
      for (size_t k = 0; v->list && !st && k < v->list->n_tensor; k++) {
        char *f = g_strdup_printf("%s.list.tensor[%zu]", field, k);
        st = check_tensor_proto(method, f, l, v->list->tensor[k]);
        g_free(f);
      }
      for (size_t k = 0; v->list && !st && k < v->list->n_shape; k++) {
        char *f = g_strdup_printf("%s.list.shape[%zu]", field, k);
        st = check_shape_proto(method, f, l, v->list->shape[k]);
        g_free(f);
      }
      break;
    default:
      break;
  }
  return st;
}

/* A requested device must parse and, when it names a job (and task), be inside the cluster. */
static weft_status_t *check_device(const char *method, const char *field_name, const char *node,
                                   const weft_cluster_spec_t *spec, const char *device) {
  if (!device || !*device) return NULL;
  char *field = node ? g_strdup_printf("%s' of node '%s", field_name, node) : g_strdup(field_name);
  weft__device_spec_t d;
  weft__device_spec_init(&d);
  weft_status_t *st = weft__device_spec_parse(device, &d);
  if (st) {
    weft_status_t *out = invalid(method, "field '%s': %s", field, weft_status_message(st));
    weft_status_free(st);
    g_free(field);
    return out;
  }
  if (spec && d.job) {
    if (!weft_cluster_spec_task_address(spec, d.job, 0)) {
      char *jobs = weft_cluster_spec_to_string(spec);
      st = invalid(method, "field '%s' is '%s', but the cluster has no job '%s' (cluster: %s)",
                   field, device, d.job, jobs);
      free(jobs);
    } else if (d.task >= 0 && !weft_cluster_spec_task_address(spec, d.job, d.task)) {
      st = invalid(method, "field '%s' is '%s', but job '%s' has no task %d", field, device, d.job,
                   d.task);
    } else if (d.replica > 0) {
      st = invalid(method, "field '%s' is '%s', but the cluster has only replica 0", field,
                   device);
    }
  }
  weft__device_spec_clear(&d);
  g_free(field);
  return st;
}

static weft_status_t *check_graph(const char *method, const char *field, const weft__limits_t *l,
                                  const weft_cluster_spec_t *spec, const Tensorflow__GraphDef *gd) {
  if (!gd) return NULL;
  if (gd->n_node > (uint64_t)l->max_graph_nodes) {
    return invalid(method, "field '%s.node' has %zu nodes; the server allows at most %"
                   G_GINT64_FORMAT " (--max_graph_nodes)", field, gd->n_node, l->max_graph_nodes);
  }
  weft_status_t *st = NULL;
  char f[160];
  for (size_t k = 0; k < gd->n_node && !st; k++) {
    const Tensorflow__NodeDef *n = gd->node[k];
    if (!n || !n->name || !*n->name) {
      st = invalid(method, "field '%s.node[%zu].name' is empty", field, k);
      break;
    }
    if (!n->op || !*n->op) {
      st = invalid(method, "field '%s.node[%zu].op' of node '%s' is empty", field, k, n->name);
    } else if (!weft__op_registry_lookup(n->op)) {
      st = invalid(method, "field '%s.node[%zu].op' of node '%s': Op type not registered '%s'",
                   field, k, n->name, n->op);
    } else if (n->n_attr > (uint64_t)l->max_node_attrs) {
      st = invalid(method, "field '%s.node[%zu].attr' of node '%s' has %zu attributes; the "
                   "server allows at most %" G_GINT64_FORMAT " (--max_node_attrs)",
                   field, k, n->name, n->n_attr, l->max_node_attrs);
    }
    if (!st) {
      g_snprintf(f, sizeof f, "%s.node[%zu].device", field, k);
      st = check_device(method, f, n->name, spec, n->device);
    }
    for (size_t a = 0; !st && a < n->n_attr; a++) {
      const Tensorflow__AttrEntry *e = n->attr[a];
      if (!e || !e->key || !*e->key) {
        st = invalid(method, "field '%s.node[%zu].attr[%zu]' of node '%s' has no name", field, k,
                     a, n->name);
        break;
      }
      char *af = g_strdup_printf("%s.node[%zu].attr['%s']", field, k, e->key);
      st = check_attr(method, af, l, e->value);
      g_free(af);
    }
  }
  return st;
}

static weft_status_t *check_names(const char *method, const char *field, char *const *names,
                                  size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (!names[k] || !*names[k]) return invalid(method, "field '%s[%zu]' is empty", field, k);
  }
  return NULL;
}

static weft_status_t *check_handle(const char *method, const char *field, const char *handle) {
  if (handle && *handle) return NULL;
  return invalid(method, "field '%s' is empty", field);
}

/* Deadlines are computed in microseconds from now plus slack: a timeout near INT64_MAX would
 * overflow that sum (undefined behaviour; weftd died under UBSan), so it has a ceiling. */
static weft_status_t *check_timeout(const char *method, const char *field, int64_t ms) {
  if (ms >= 0 && ms <= WEFT_MAX_TIMEOUT_MS) return NULL;
  if (ms > WEFT_MAX_TIMEOUT_MS) {
    return invalid(method, "field '%s' is %" G_GINT64_FORMAT "; it must be at most %"
                   G_GINT64_FORMAT " (about 34 years)", field, ms, WEFT_MAX_TIMEOUT_MS);
  }
  return invalid(method, "field '%s' is %" G_GINT64_FORMAT "; it must be 0 (the default) or more",
                 field, ms);
}

weft_status_t *weft__validate_request(const weft__limits_t *l, const weft_cluster_spec_t *spec,
                                      const char *method, const ProtobufCMessage *msg,
                                      int n_tensors) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  weft_status_t *st = NULL;
  if (d == &weft__create_session_request__descriptor) {
    const Weft__CreateSessionRequest *r = (const void *)msg;
    st = check_graph(method, "graph_def", l, spec, r->graph_def);
    if (!st && r->config) {
      st = check_timeout(method, "config.operation_timeout_ms", r->config->operation_timeout_ms);
    }
  } else if (d == &weft__extend_session_request__descriptor) {
    const Weft__ExtendSessionRequest *r = (const void *)msg;
    st = check_handle(method, "session_handle", r->session_handle);
    if (!st) st = check_graph(method, "graph_def", l, spec, r->graph_def);
  } else if (d == &weft__run_step_request__descriptor) {
    const Weft__RunStepRequest *r = (const void *)msg;
    st = check_handle(method, "session_handle", r->session_handle);
    uint64_t names = (uint64_t)r->n_feed + r->n_fetch + r->n_target;
    if (!st && names > (uint64_t)l->max_graph_nodes) {
      st = invalid(method, "fields 'feed', 'fetch' and 'target' name %" G_GUINT64_FORMAT
                   " tensors; the server allows at most %" G_GINT64_FORMAT " (--max_graph_nodes)",
                   names, l->max_graph_nodes);
    }
    if (!st) st = check_names(method, "feed", r->feed, r->n_feed);
    if (!st) st = check_names(method, "fetch", r->fetch, r->n_fetch);
    if (!st) st = check_names(method, "target", r->target, r->n_target);
    if (!st && (size_t)n_tensors != r->n_feed) {
      st = invalid(method, "field 'feed' names %zu tensors but the message carries %d",
                   r->n_feed, n_tensors);
    }
    if (!st) st = check_timeout(method, "timeout_ms", r->timeout_ms);
  } else if (d == &weft__close_session_request__descriptor) {
    st = check_handle(method, "session_handle",
                      ((const Weft__CloseSessionRequest *)msg)->session_handle);
  } else if (d == &weft__register_graph_request__descriptor) {
    const Weft__RegisterGraphRequest *r = (const void *)msg;
    if (!r->graph_def) st = invalid(method, "field 'graph_def' is missing");
    if (!st) st = check_graph(method, "graph_def", l, spec, r->graph_def);
    if (!st) st = check_names(method, "feed", r->feed, r->n_feed);
    if (!st) st = check_names(method, "fetch", r->fetch, r->n_fetch);
    for (size_t k = 0; !st && k < r->n_peer; k++) {
      const Weft__TaskAddress *p = r->peer[k];
      char *task = p && p->task ? weft__task_of_device(p->task) : NULL;
      if (!task || strcmp(task, p->task) != 0) {
        st = invalid(method, "field 'peer[%zu].task' is '%s', not a task name "
                     "(/job:J/replica:0/task:T)", k, p && p->task ? p->task : "");
      } else {
        char f[48];
        g_snprintf(f, sizeof f, "peer[%zu].task", k);
        st = check_device(method, f, NULL, spec, p->task);
      }
      if (!st && (!p->address || !*p->address)) {
        st = invalid(method, "field 'peer[%zu].address' of task %s is empty", k, p->task);
      }
      g_free(task);
    }
  } else if (d == &weft__deregister_graph_request__descriptor) {
    st = check_handle(method, "graph_handle",
                      ((const Weft__DeregisterGraphRequest *)msg)->graph_handle);
  } else if (d == &weft__run_graph_request__descriptor) {
    const Weft__RunGraphRequest *r = (const void *)msg;
    st = check_handle(method, "graph_handle", r->graph_handle);
    if (!st) st = check_timeout(method, "timeout_ms", r->timeout_ms);
  } else if (d == &weft__recv_tensor_request__descriptor) {
    const Weft__RecvTensorRequest *r = (const void *)msg;
    if (r->n_more_keys >= WEFT_MAX_RECV_GROUP) {
      st = invalid(method, "field 'more_keys' names %zu keys; a grouped receive takes at most %d "
                   "keys in all", r->n_more_keys, WEFT_MAX_RECV_GROUP);
    }
    if (!st) st = check_names(method, "more_keys", r->more_keys, r->n_more_keys);
  } else if (d == &weft__abort_request__descriptor) {
    /* The step's waiters and later calls are answered with this code: OK or a number outside
     * gRPC's codes would make them fail with an error that says nothing. */
    const Weft__AbortRequest *r = (const void *)msg;
    if (r->code < WEFT_CANCELLED || r->code > WEFT_UNAUTHENTICATED) {
      st = invalid(method, "field 'code' is %d; an abort needs an error code from %d to %d",
                   r->code, WEFT_CANCELLED, WEFT_UNAUTHENTICATED);
    }
  }
  return st;
}

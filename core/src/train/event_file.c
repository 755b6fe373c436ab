/* Event files as TensorBoard reads them (docs/tensorboard.md): TensorFlow's `Event` protobufs
 * (core/util/event.proto) in TFRecord framing, written by weft_event_writer_* and read back by
 * weft_event_reader_* and weft_event_decode. The messages are few and small, so they are encoded
 * and decoded by hand here with TensorFlow's field numbers rather than through protoc-c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint_internal.h"
#include "event_internal.h"
#include "graph.pb-c.h"

/* TensorFlow's EventsWriter flushes when asked and at close; FileWriter's default period. */
#define DEFAULT_FLUSH_SECS 120.0
/* A record larger than this is refused by the reader before allocating (a graph of a big model
 * is tens of MiB; a corrupt length must not make us allocate gigabytes). */
#define MAX_RECORD_BYTES ((uint64_t)1 << 30)

/* ---------------------------------------------------------------------------------------------
 * Wire-format helpers */

void weft__pb_put_tag(GByteArray *out, int field, int wire_type) {
  weft__put_varint64(out, ((uint64_t)field << 3) | (uint64_t)wire_type);
}

void weft__pb_put_bytes(GByteArray *out, int field, const void *data, size_t len) {
  weft__pb_put_tag(out, field, 2);
  weft__put_varint64(out, len);
  if (len) g_byte_array_append(out, data, (guint)len);
}

void weft__pb_put_string(GByteArray *out, int field, const char *s) {
  weft__pb_put_bytes(out, field, s, strlen(s));
}

void weft__pb_put_double(GByteArray *out, int field, double v) {
  guint8 b[8];
  memcpy(b, &v, 8); /* little-endian hosts only, as the rest of Weft's wire code */
  weft__pb_put_tag(out, field, 1);
  g_byte_array_append(out, b, 8);
}

void weft__pb_put_float(GByteArray *out, int field, float v) {
  guint8 b[4];
  memcpy(b, &v, 4);
  weft__pb_put_tag(out, field, 5);
  g_byte_array_append(out, b, 4);
}

void weft__pb_put_varint_field(GByteArray *out, int field, uint64_t v) {
  weft__pb_put_tag(out, field, 0);
  weft__put_varint64(out, v);
}

/* One field of a message: its number, wire type and, for length-delimited ones, the bytes; for
 * fixed ones the raw value in `u`. */
typedef struct pb_field {
  int field;
  int wire;
  uint64_t u;
  const guint8 *data;
  size_t len;
} pb_field_t;

/* Reads the next field of [*p, end); false at the end, *bad set when the bytes are malformed. */
static bool pb_next(const guint8 **p, const guint8 *end, pb_field_t *f, bool *bad) {
  *bad = false;
  if (*p >= end) return false;
  uint64_t key;
  if (!weft__get_varint64(p, end, &key) || (key >> 3) == 0 || (key >> 3) > INT32_MAX) {
    *bad = true;
    return false;
  }
  f->field = (int)(key >> 3);
  f->wire = (int)(key & 7);
  f->data = NULL;
  f->len = 0;
  switch (f->wire) {
  case 0:
    if (!weft__get_varint64(p, end, &f->u)) *bad = true;
    break;
  case 1:
  case 5: {
    size_t n = f->wire == 1 ? 8 : 4;
    if ((size_t)(end - *p) < n) {
      *bad = true;
      break;
    }
    f->u = 0;
    memcpy(&f->u, *p, n);
    *p += n;
    break;
  }
  case 2:
    if (!weft__get_varint64(p, end, &f->u) || f->u > (uint64_t)(end - *p)) {
      *bad = true;
      break;
    }
    f->data = *p;
    f->len = (size_t)f->u;
    *p += f->len;
    break;
  default:
    *bad = true;
  }
  return !*bad;
}

static double pb_double(const pb_field_t *f) {
  double d;
  memcpy(&d, &f->u, 8);
  return d;
}

static float pb_float(const pb_field_t *f) {
  float v;
  uint32_t u = (uint32_t)f->u;
  memcpy(&v, &u, 4);
  return v;
}

static char *pb_strdup(const pb_field_t *f) {
  return g_strndup((const char *)f->data, f->len);
}

/* ---------------------------------------------------------------------------------------------
 * Writer */

struct weft_event_writer {
  char *path;
  FILE *file;
  double flush_secs;
  gint64 last_flush_us;
  bool closed;
};

double weft__event_wall_time(void) {
  return (double)g_get_real_time() / 1e6;
}

/* One TFRecord: length, masked crc32c of the length, data, masked crc32c of the data. */
static weft_status_t *write_record(weft_event_writer_t *w, const void *data, size_t len) {
  if (w->closed) {
    return weft_status_new(WEFT_FAILED_PRECONDITION, "Event writer %s: it was closed", w->path);
  }
  guint8 header[12], footer[4];
  uint64_t n = len;
  memcpy(header, &n, 8);
  uint32_t crc = weft__crc32c_mask(weft__crc32c(header, 8));
  memcpy(header + 8, &crc, 4);
  crc = weft__crc32c_mask(weft__crc32c(data, len));
  memcpy(footer, &crc, 4);
  /* One buffer, one fwrite: a reader in another process sees a record whole or not at all once
   * it is flushed (the file is opened in append mode). */
  GByteArray *rec = g_byte_array_sized_new((guint)(len + 16));
  g_byte_array_append(rec, header, 12);
  if (len) g_byte_array_append(rec, data, (guint)len);
  g_byte_array_append(rec, footer, 4);
  size_t wrote = fwrite(rec->data, 1, rec->len, w->file);
  bool ok = wrote == rec->len;
  g_byte_array_free(rec, TRUE);
  if (!ok) {
    return weft_status_new(WEFT_INTERNAL, "Event writer: cannot write to %s: %s", w->path,
                           g_strerror(errno));
  }
  if (w->flush_secs >= 0 &&
      (double)(g_get_monotonic_time() - w->last_flush_us) / 1e6 >= w->flush_secs) {
    return weft_event_writer_flush(w);
  }
  return NULL;
}

/* An Event with wall_time, step and one more field (already encoded in `body`). */
static weft_status_t *write_event(weft_event_writer_t *w, int64_t step, const GByteArray *body) {
  GByteArray *ev = g_byte_array_new();
  weft__pb_put_double(ev, 1, weft__event_wall_time());
  if (step) weft__pb_put_varint_field(ev, 2, (uint64_t)step);
  if (body && body->len) g_byte_array_append(ev, body->data, body->len);
  weft_status_t *st = write_record(w, ev->data, ev->len);
  g_byte_array_free(ev, TRUE);
  return st;
}

weft_status_t *weft_event_writer_new(const char *dir, const char *suffix,
                                     weft_event_writer_t **out) {
  *out = NULL;
  if (!dir || !*dir) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Event writer: the folder name is empty");
  }
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    return weft_status_new(WEFT_INTERNAL, "Event writer: cannot create the folder %s: %s", dir,
                           g_strerror(errno));
  }
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) g_strlcpy(host, "localhost", sizeof host);
  host[sizeof host - 1] = '\0';
  gint64 secs = g_get_real_time() / G_USEC_PER_SEC;
  weft_event_writer_t *w = g_new0(weft_event_writer_t, 1);
  w->flush_secs = DEFAULT_FLUSH_SECS;
  w->last_flush_us = g_get_monotonic_time();
  /* A writer never appends to another's file: two in the same second on one host (a trainer
   * restarted at once) get ".1", ".2", ... after the name (TensorBoard reads any "tfevents"). */
  for (int n = 0; n < 1000 && !w->file; n++) {
    char *base = n ? g_strdup_printf("events.out.tfevents.%" G_GINT64_FORMAT ".%s%s.%d", secs,
                                     host, suffix ? suffix : "", n)
                   : g_strdup_printf("events.out.tfevents.%" G_GINT64_FORMAT ".%s%s", secs, host,
                                     suffix ? suffix : "");
    g_free(w->path);
    w->path = g_build_filename(dir, base, NULL);
    g_free(base);
    w->file = fopen(w->path, "wbx");
    if (!w->file && errno != EEXIST) break;
  }
  if (!w->file) {
    weft_status_t *st = weft_status_new(WEFT_INTERNAL, "Event writer: cannot open %s: %s",
                                        w->path, g_strerror(errno));
    w->closed = true;
    weft_event_writer_free(w);
    return st;
  }
  GByteArray *body = g_byte_array_new();
  weft__pb_put_string(body, 3, "brain.Event:2");
  weft_status_t *st = write_event(w, 0, body);
  g_byte_array_free(body, TRUE);
  /* The version record goes out at once: TensorBoard lists a run as soon as its file has it. */
  if (!st) st = weft_event_writer_flush(w);
  if (st) {
    weft_event_writer_free(w);
    return st;
  }
  *out = w;
  return NULL;
}

weft_status_t *weft_event_writer_open_records(const char *path, weft_event_writer_t **out) {
  *out = NULL;
  if (!path || !*path)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "TFRecord writer: the file name is empty");
  FILE *f = fopen(path, "wb");
  if (!f) {
    return weft_status_new(errno == ENOENT ? WEFT_NOT_FOUND : WEFT_INTERNAL,
                           "TFRecord writer: cannot open %s: %s", path, g_strerror(errno));
  }
  weft_event_writer_t *w = g_new0(weft_event_writer_t, 1);
  w->path = g_strdup(path);
  w->file = f;
  w->flush_secs = -1; /* TFRecordWriter flushes when asked and at close */
  w->last_flush_us = g_get_monotonic_time();
  *out = w;
  return NULL;
}

weft_status_t *weft_event_writer_add_record(weft_event_writer_t *w, const void *data,
                                            size_t len) {
  if (len > MAX_RECORD_BYTES) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "TFRecord writer %s: a record of %zu bytes is "
                           "larger than the readers' limit of %" G_GUINT64_FORMAT, w->path, len,
                           (guint64)MAX_RECORD_BYTES);
  }
  return write_record(w, data, len);
}

void weft_event_writer_set_flush_secs(weft_event_writer_t *w, double secs) {
  w->flush_secs = secs;
}

const char *weft_event_writer_path(const weft_event_writer_t *w) {
  return w->path;
}

weft_status_t *weft_event_writer_add_event(weft_event_writer_t *w, const void *event, size_t len) {
  return write_record(w, event, len);
}

weft_status_t *weft_event_writer_add_summary(weft_event_writer_t *w, const void *summary,
                                             size_t len, int64_t step) {
  GByteArray *body = g_byte_array_new();
  weft__pb_put_bytes(body, 5, summary, len);
  weft_status_t *st = write_event(w, step, body);
  g_byte_array_free(body, TRUE);
  return st;
}

void weft__summary_put_scalar(GByteArray *summary, const char *tag, float value) {
  GByteArray *v = g_byte_array_new();
  weft__pb_put_string(v, 1, tag);
  weft__pb_put_float(v, 2, value);
  weft__pb_put_bytes(summary, 1, v->data, v->len);
  g_byte_array_free(v, TRUE);
}

weft_status_t *weft_event_writer_add_scalar(weft_event_writer_t *w, const char *tag, float value,
                                            int64_t step) {
  if (!tag || !*tag) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Event writer %s: a scalar's tag is empty",
                           w->path);
  }
  GByteArray *s = g_byte_array_new();
  weft__summary_put_scalar(s, tag, value);
  weft_status_t *st = weft_event_writer_add_summary(w, s->data, s->len, step);
  g_byte_array_free(s, TRUE);
  return st;
}

weft_status_t *weft_event_writer_add_graph_def(weft_event_writer_t *w, const void *graph_def,
                                               size_t len) {
  GByteArray *body = g_byte_array_new();
  weft__pb_put_bytes(body, 4, graph_def, len);
  weft_status_t *st = write_event(w, 0, body);
  g_byte_array_free(body, TRUE);
  return st;
}

weft_status_t *weft__graphdef_with_devices(const weft_graph_t *graph, weft_session_t *session,
                                           GByteArray **out) {
  *out = NULL;
  void *bytes = NULL;
  size_t len = 0;
  WEFT_RETURN_IF_ERROR(weft_graph_export_graphdef(graph, &bytes, &len));
  Tensorflow__GraphDef *gd = tensorflow__graph_def__unpack(NULL, len, bytes);
  if (!gd) {
    weft_free(bytes);
    return weft_status_new(WEFT_INTERNAL, "Event writer: the exported GraphDef does not parse");
  }
  /* Each node's assigned device replaces the requested one: TensorBoard colours by it. Devices
   * point into the session (borrowed) and are detached again before the message is freed. */
  char **saved = g_new0(char *, gd->n_node + 1);
  for (size_t i = 0; session && i < gd->n_node; i++) {
    const char *dev = weft_session_node_device(session, gd->node[i]->name);
    if (dev && *dev) {
      saved[i] = gd->node[i]->device;
      gd->node[i]->device = (char *)dev;
    }
  }
  GByteArray *packed = g_byte_array_sized_new((guint)tensorflow__graph_def__get_packed_size(gd));
  g_byte_array_set_size(packed, (guint)tensorflow__graph_def__get_packed_size(gd));
  tensorflow__graph_def__pack(gd, packed->data);
  for (size_t i = 0; i < gd->n_node; i++)
    if (saved[i]) gd->node[i]->device = saved[i];
  g_free(saved);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  weft_free(bytes);
  *out = packed;
  return NULL;
}

weft_status_t *weft_event_writer_add_graph(weft_event_writer_t *w, const weft_graph_t *graph,
                                           weft_session_t *session) {
  GByteArray *gd = NULL;
  WEFT_RETURN_IF_ERROR(weft__graphdef_with_devices(graph, session, &gd));
  weft_status_t *st = weft_event_writer_add_graph_def(w, gd->data, gd->len);
  g_byte_array_free(gd, TRUE);
  return st;
}

weft_status_t *weft_event_writer_add_run_metadata(weft_event_writer_t *w, const char *tag,
                                                  const void *run_metadata, size_t len,
                                                  int64_t step) {
  GByteArray *t = g_byte_array_new();
  weft__pb_put_string(t, 1, tag ? tag : "");
  weft__pb_put_bytes(t, 2, run_metadata, len);
  GByteArray *body = g_byte_array_new();
  weft__pb_put_bytes(body, 8, t->data, t->len);
  weft_status_t *st = write_event(w, step, body);
  g_byte_array_free(body, TRUE);
  g_byte_array_free(t, TRUE);
  return st;
}

/* NodeExecStats of one node: TensorFlow's step_stats.proto numbers. Weft times a node as a
 * whole, so the op and the node end at the same relative time. */
static void put_node_stats(GByteArray *dev, const weft_node_stats_t *s) {
  GByteArray *ns = g_byte_array_new();
  weft__pb_put_string(ns, 1, s->node_name);
  weft__pb_put_varint_field(ns, 2, (uint64_t)s->start_us);
  weft__pb_put_varint_field(ns, 4, (uint64_t)s->duration_us);
  weft__pb_put_varint_field(ns, 5, (uint64_t)s->duration_us);
  char *label = g_strdup_printf("%s = %s(%s)", s->node_name, s->op, s->inputs ? s->inputs : "");
  weft__pb_put_string(ns, 8, label);
  g_free(label);
  weft__pb_put_varint_field(ns, 10, (uint32_t)s->thread_id);
  weft__pb_put_bytes(dev, 2, ns->data, ns->len);
  g_byte_array_free(ns, TRUE);
}

weft_status_t *weft_event_writer_add_step_stats(weft_event_writer_t *w, const char *tag,
                                                const weft_run_metadata_t *meta, int64_t step) {
  if (!meta) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Event writer %s: no run metadata", w->path);
  }
  /* Devices in the order their first node appears. */
  GPtrArray *devices = g_ptr_array_new();
  GHashTable *per_device = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                                 (GDestroyNotify)g_byte_array_unref);
  int n = weft_run_metadata_num_node_stats(meta);
  for (int i = 0; i < n; i++) {
    const weft_node_stats_t *s = weft_run_metadata_node_stats(meta, i);
    const char *dev = s->device ? s->device : "";
    GByteArray *d = g_hash_table_lookup(per_device, dev);
    if (!d) {
      d = g_byte_array_new();
      weft__pb_put_string(d, 1, dev);
      g_hash_table_insert(per_device, (gpointer)dev, d);
      g_ptr_array_add(devices, (gpointer)dev);
    }
    put_node_stats(d, s);
  }
  GByteArray *stats = g_byte_array_new();
  for (guint i = 0; i < devices->len; i++) {
    GByteArray *d = g_hash_table_lookup(per_device, devices->pdata[i]);
    weft__pb_put_bytes(stats, 1, d->data, d->len);
  }
  GByteArray *rm = g_byte_array_new();
  weft__pb_put_bytes(rm, 1, stats->data, stats->len);
  weft_status_t *st = weft_event_writer_add_run_metadata(w, tag, rm->data, rm->len, step);
  g_byte_array_free(rm, TRUE);
  g_byte_array_free(stats, TRUE);
  g_hash_table_destroy(per_device);
  g_ptr_array_free(devices, TRUE);
  return st;
}

weft_status_t *weft_event_writer_add_session_log(weft_event_writer_t *w,
                                                 weft_session_log_status_t status,
                                                 const char *msg, const char *checkpoint_path,
                                                 int64_t step) {
  if ((int)status < 0 || status > WEFT_SESSION_LOG_CHECKPOINT) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Event writer %s: session log status %d is not "
                           "one of SessionLog's (0..3)", w->path, (int)status);
  }
  GByteArray *sl = g_byte_array_new();
  if (status) weft__pb_put_varint_field(sl, 1, (uint64_t)status);
  if (checkpoint_path && *checkpoint_path) weft__pb_put_string(sl, 2, checkpoint_path);
  if (msg && *msg) weft__pb_put_string(sl, 3, msg);
  GByteArray *body = g_byte_array_new();
  weft__pb_put_bytes(body, 7, sl->data, sl->len);
  weft_status_t *st = write_event(w, step, body);
  g_byte_array_free(body, TRUE);
  g_byte_array_free(sl, TRUE);
  return st;
}

weft_status_t *weft_event_writer_flush(weft_event_writer_t *w) {
  w->last_flush_us = g_get_monotonic_time();
  if (!w->file) return NULL;
  if (fflush(w->file) != 0) {
    return weft_status_new(WEFT_INTERNAL, "Event writer: cannot flush %s: %s", w->path,
                           g_strerror(errno));
  }
  return NULL;
}

weft_status_t *weft_event_writer_close(weft_event_writer_t *w) {
  if (w->closed) return NULL;
  w->closed = true;
  if (!w->file) return NULL;
  int rc = fclose(w->file);
  w->file = NULL;
  if (rc != 0) {
    return weft_status_new(WEFT_INTERNAL, "Event writer: cannot close %s: %s", w->path,
                           g_strerror(errno));
  }
  return NULL;
}

void weft_event_writer_free(weft_event_writer_t *w) {
  if (!w) return;
  weft_status_free(weft_event_writer_close(w));
  g_free(w->path);
  g_free(w);
}

/* ---------------------------------------------------------------------------------------------
 * Reader */

struct weft_event_reader {
  char *path;
  FILE *file;
  int64_t offset;      /* where the next record starts */
  int64_t last_offset; /* where the record last returned started */
  GByteArray *record;
};

weft_status_t *weft_event_reader_open(const char *path, weft_event_reader_t **out) {
  *out = NULL;
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f) {
    return weft_status_new(WEFT_NOT_FOUND, "Event reader: cannot open %s: %s",
                           path ? path : "(null)", g_strerror(errno));
  }
  weft_event_reader_t *r = g_new0(weft_event_reader_t, 1);
  r->path = g_strdup(path);
  r->file = f;
  r->record = g_byte_array_new();
  *out = r;
  return NULL;
}

static weft_status_t *truncated(const weft_event_reader_t *r, const char *what) {
  return weft_status_new(WEFT_OUT_OF_RANGE, "Event reader: %s: truncated record at offset %"
                         G_GINT64_FORMAT " (%s cut short; a writer may still be writing it)",
                         r->path, r->offset, what);
}

weft_status_t *weft_event_reader_next(weft_event_reader_t *r, const void **data, size_t *len,
                                      bool *eof) {
  *data = NULL;
  *len = 0;
  *eof = false;
  /* Re-reading from the record's start lets a reader poll a file that is still growing. */
  if (fseeko(r->file, (off_t)r->offset, SEEK_SET) != 0) {
    return weft_status_new(WEFT_INTERNAL, "Event reader: cannot seek in %s: %s", r->path,
                           g_strerror(errno));
  }
  guint8 header[12];
  size_t got = fread(header, 1, 12, r->file);
  if (got == 0) {
    *eof = true;
    return NULL;
  }
  if (got < 12) return truncated(r, "the length");
  uint64_t n;
  uint32_t crc;
  memcpy(&n, header, 8);
  memcpy(&crc, header + 8, 4);
  if (weft__crc32c_mask(weft__crc32c(header, 8)) != crc) {
    return weft_status_new(WEFT_DATA_LOSS, "Event reader: %s: corrupted record at offset %"
                           G_GINT64_FORMAT ": the length's crc32c does not match", r->path,
                           r->offset);
  }
  if (n > MAX_RECORD_BYTES) {
    return weft_status_new(WEFT_DATA_LOSS, "Event reader: %s: record at offset %" G_GINT64_FORMAT
                           " claims %" G_GUINT64_FORMAT " bytes (more than the 1 GiB limit)",
                           r->path, r->offset, n);
  }
  g_byte_array_set_size(r->record, (guint)n + 4);
  if (fread(r->record->data, 1, (size_t)n + 4, r->file) != (size_t)n + 4)
    return truncated(r, "the data or its crc");
  memcpy(&crc, r->record->data + n, 4);
  if (weft__crc32c_mask(weft__crc32c(r->record->data, (size_t)n)) != crc) {
    return weft_status_new(WEFT_DATA_LOSS, "Event reader: %s: corrupted record at offset %"
                           G_GINT64_FORMAT ": the data's crc32c does not match", r->path,
                           r->offset);
  }
  r->last_offset = r->offset;
  r->offset += 16 + (int64_t)n;
  *data = r->record->data;
  *len = (size_t)n;
  return NULL;
}

int64_t weft_event_reader_offset(const weft_event_reader_t *r) {
  return r->last_offset;
}

void weft_event_reader_free(weft_event_reader_t *r) {
  if (!r) return;
  fclose(r->file);
  g_free(r->path);
  g_byte_array_free(r->record, TRUE);
  g_free(r);
}

/* ---------------------------------------------------------------------------------------------
 * Decoding */

static weft_status_t *malformed(const char *what) {
  return weft_status_new(WEFT_DATA_LOSS, "Event decode: malformed %s (bad protobuf wire format)",
                         what);
}

/* Appends the doubles of a repeated double field (packed, proto3's default, or not). */
static bool append_doubles(const pb_field_t *g, GArray *arr) {
  if (g->wire == 1) {
    double d = pb_double(g);
    g_array_append_val(arr, d);
    return true;
  }
  if (g->wire != 2 || g->len % 8) return false;
  for (size_t i = 0; i < g->len / 8; i++) {
    double d;
    memcpy(&d, g->data + 8 * i, 8);
    g_array_append_val(arr, d);
  }
  return true;
}

static weft_status_t *decode_histo(const pb_field_t *f, weft_summary_value_info_t *v) {
  const guint8 *p = f->data, *end = f->data + f->len;
  pb_field_t g;
  bool bad, ok = true;
  v->kind = WEFT_SUMMARY_HISTO;
  GArray *limits = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *counts = g_array_new(FALSE, FALSE, sizeof(double));
  while (ok && pb_next(&p, end, &g, &bad)) {
    if (g.wire == 1 && g.field >= 1 && g.field <= 5) {
      double d = pb_double(&g);
      if (g.field == 1) v->histo_min = d;
      else if (g.field == 2) v->histo_max = d;
      else if (g.field == 3) v->histo_num = d;
      else if (g.field == 4) v->histo_sum = d;
      else v->histo_sum_squares = d;
    } else if (g.field == 6 || g.field == 7) {
      ok = append_doubles(&g, g.field == 6 ? limits : counts);
    }
  }
  g_free(v->bucket_limit);
  g_free(v->bucket);
  v->n_bucket_limits = (int)limits->len;
  v->n_buckets = (int)counts->len;
  v->bucket_limit = (double *)(void *)g_array_free(limits, FALSE);
  v->bucket = (double *)(void *)g_array_free(counts, FALSE);
  return bad || !ok ? malformed("HistogramProto") : NULL;
}

/* SummaryMetadata.plugin_data(1).plugin_name(1) */
static weft_status_t *decode_metadata(const pb_field_t *g, weft_summary_value_info_t *v) {
  const guint8 *q = g->data, *qe = g->data + g->len;
  pb_field_t h, k;
  bool bad, bad2 = false;
  while (!bad2 && pb_next(&q, qe, &h, &bad)) {
    if (h.field != 1 || h.wire != 2) continue;
    const guint8 *r = h.data, *re = h.data + h.len;
    while (pb_next(&r, re, &k, &bad2)) {
      if (k.field == 1 && k.wire == 2) {
        g_free(v->plugin_name);
        v->plugin_name = pb_strdup(&k);
      }
    }
  }
  return bad || bad2 ? malformed("SummaryMetadata") : NULL;
}

static weft_status_t *decode_image(const pb_field_t *g, weft_summary_value_info_t *v) {
  const guint8 *q = g->data, *qe = g->data + g->len;
  pb_field_t h;
  bool bad;
  v->kind = WEFT_SUMMARY_IMAGE;
  while (pb_next(&q, qe, &h, &bad)) {
    if (h.field == 1 && h.wire == 0) v->image_height = (int)h.u;
    else if (h.field == 2 && h.wire == 0) v->image_width = (int)h.u;
    else if (h.field == 3 && h.wire == 0) v->image_colorspace = (int)h.u;
    else if (h.field == 4 && h.wire == 2) v->image_png_len = h.len;
  }
  return bad ? malformed("Summary.Image") : NULL;
}

static weft_status_t *decode_value(const pb_field_t *f, weft_summary_value_info_t *v) {
  const guint8 *p = f->data, *end = f->data + f->len;
  pb_field_t g;
  bool bad;
  weft_status_t *st = NULL;
  while (!st && pb_next(&p, end, &g, &bad)) {
    if (g.field == 1 && g.wire == 2) {
      g_free(v->tag);
      v->tag = pb_strdup(&g);
    } else if (g.field == 2 && g.wire == 5) {
      v->kind = WEFT_SUMMARY_SIMPLE_VALUE;
      v->simple_value = pb_float(&g);
    } else if (g.field == 4 && g.wire == 2) {
      st = decode_image(&g, v);
    } else if (g.field == 5 && g.wire == 2) {
      st = decode_histo(&g, v);
    } else if (g.field == 8 && g.wire == 2) {
      v->kind = WEFT_SUMMARY_TENSOR;
      v->tensor_len = g.len;
    } else if (g.field == 9 && g.wire == 2) {
      st = decode_metadata(&g, v);
    }
  }
  if (!v->tag) v->tag = g_strdup("");
  if (!st && bad) st = malformed("Summary.Value");
  return st;
}

void weft_summary_values_free(weft_summary_value_info_t *values, int n) {
  for (int i = 0; values && i < n; i++) {
    g_free(values[i].tag);
    g_free(values[i].plugin_name);
    g_free(values[i].bucket_limit);
    g_free(values[i].bucket);
  }
  g_free(values);
}

weft_status_t *weft_summary_decode(const void *bytes, size_t len,
                                   weft_summary_value_info_t **values, int *n_values) {
  *values = NULL;
  *n_values = 0;
  GArray *arr = g_array_new(FALSE, TRUE, sizeof(weft_summary_value_info_t));
  const guint8 *p = bytes, *end = (const guint8 *)bytes + len;
  pb_field_t f;
  bool bad = false;
  weft_status_t *st = NULL;
  while (!st && pb_next(&p, end, &f, &bad)) {
    if (f.field != 1 || f.wire != 2) continue;
    weft_summary_value_info_t v = {0};
    st = decode_value(&f, &v);
    g_array_append_val(arr, v);
  }
  if (!st && bad) st = malformed("Summary");
  int n = (int)arr->len;
  weft_summary_value_info_t *out = (weft_summary_value_info_t *)(void *)g_array_free(arr, FALSE);
  if (st) {
    weft_summary_values_free(out, n);
    return st;
  }
  *values = out;
  *n_values = n;
  return NULL;
}

static weft_status_t *decode_session_log(const pb_field_t *f, weft_event_t *e) {
  const guint8 *q = f->data, *qe = f->data + f->len;
  pb_field_t g;
  bool bad;
  e->session_log_status = 0;
  while (pb_next(&q, qe, &g, &bad)) {
    if (g.field == 1 && g.wire == 0) {
      e->session_log_status = (int)g.u;
    } else if (g.field == 2 && g.wire == 2) {
      g_free(e->session_log_checkpoint);
      e->session_log_checkpoint = pb_strdup(&g);
    } else if (g.field == 3 && g.wire == 2) {
      g_free(e->session_log_msg);
      e->session_log_msg = pb_strdup(&g);
    }
  }
  return bad ? malformed("SessionLog") : NULL;
}

static weft_status_t *decode_run_metadata(const pb_field_t *f, weft_event_t *e) {
  const guint8 *q = f->data, *qe = f->data + f->len;
  pb_field_t g;
  bool bad;
  g_free(e->run_metadata_tag);
  e->run_metadata_tag = NULL;
  while (pb_next(&q, qe, &g, &bad)) {
    if (g.field == 1 && g.wire == 2) {
      g_free(e->run_metadata_tag);
      e->run_metadata_tag = pb_strdup(&g);
    } else if (g.field == 2 && g.wire == 2) {
      g_free(e->run_metadata);
      e->run_metadata = g_memdup2(g.data, g.len);
      e->run_metadata_len = g.len;
    }
  }
  if (!e->run_metadata_tag) e->run_metadata_tag = g_strdup("");
  return bad ? malformed("TaggedRunMetadata") : NULL;
}

weft_status_t *weft_event_decode(const void *bytes, size_t len, weft_event_t **out) {
  *out = NULL;
  weft_event_t *e = g_new0(weft_event_t, 1);
  e->session_log_status = -1;
  const guint8 *p = bytes, *end = (const guint8 *)bytes + len;
  pb_field_t f;
  bool bad = false;
  weft_status_t *st = NULL;
  while (!st && pb_next(&p, end, &f, &bad)) {
    if (f.field == 1 && f.wire == 1) {
      e->wall_time = pb_double(&f);
    } else if (f.field == 2 && f.wire == 0) {
      e->step = (int64_t)f.u;
    } else if (f.field == 3 && f.wire == 2) {
      g_free(e->file_version);
      e->file_version = pb_strdup(&f);
    } else if (f.field == 4 && f.wire == 2) {
      g_free(e->graph_def);
      e->graph_def = g_memdup2(f.data, f.len);
      e->graph_def_len = f.len;
    } else if (f.field == 5 && f.wire == 2) {
      weft_summary_values_free(e->values, e->n_values);
      st = weft_summary_decode(f.data, f.len, &e->values, &e->n_values);
    } else if (f.field == 7 && f.wire == 2) {
      st = decode_session_log(&f, e);
    } else if (f.field == 8 && f.wire == 2) {
      st = decode_run_metadata(&f, e);
    } else if (f.field == 9 && f.wire == 2) {
      e->has_meta_graph_def = true;
    }
  }
  if (!st && bad) st = malformed("Event");
  if (st) {
    weft_event_free(e);
    return st;
  }
  *out = e;
  return NULL;
}

void weft_event_free(weft_event_t *e) {
  if (!e) return;
  g_free(e->file_version);
  g_free(e->graph_def);
  weft_summary_values_free(e->values, e->n_values);
  g_free(e->session_log_checkpoint);
  g_free(e->session_log_msg);
  g_free(e->run_metadata_tag);
  g_free(e->run_metadata);
  g_free(e);
}

/* Fuzz entry points for the core library's parsers of untrusted bytes: GraphDef import, TensorProto
 * decoding, checkpoint (tensor bundle) indexes, cluster specs and TF_CONFIG, and the framed RPC
 * requests a server decodes before any work starts, and NumPy .npy/.npz files. Each returns 0
 * and leaves nothing allocated; errors are expected results (most inputs are malformed) and are
 * freed, never reported. */
#include "fuzz_targets.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "base/protobuf_internal.h"
#include "distributed/distributed_internal.h"
#include "graph/graphdef_internal.h"
#include "train/checkpoint_internal.h"
#include "weft/weft.h"

void weft_fuzz_init(void) {
  /* The RPC decoder builds gRPC byte buffers; gRPC must be initialised once first. */
  weft__grpc_init_once();
}

/* ---- GraphDef import (what `weft import`, sessions and CreateSession do with client bytes). */

int weft_fuzz_graphdef(const uint8_t *data, size_t size) {
  weft_graph_t *graph = weft_graph_new();
  weft_status_free(weft_graph_import_graphdef(graph, data, size, NULL));
  /* A graph that imported must also export: the round trip walks every attribute again. */
  void *bytes = NULL;
  size_t len = 0;
  weft_status_free(weft_graph_export_graphdef(graph, &bytes, &len));
  free(bytes);
  weft_graph_free(graph);
  return 0;
}

/* ---- TensorProto decode (Const values, RPC tensors, checkpoint-free paths). */

int weft_fuzz_tensor_proto(const uint8_t *data, size_t size) {
  weft_status_t *st = NULL;
  Tensorflow__TensorProto *proto = (Tensorflow__TensorProto *)weft__pb_unpack(
      &tensorflow__tensor_proto__descriptor, data, size, "TensorProto", &st);
  if (proto == NULL) {
    weft_status_free(st);
    return 0;
  }
  weft_tensor_t *t = NULL;
  st = weft__tensor_from_proto(proto, &t);
  if (st == NULL) {
    /* A decoded tensor is re-encoded as a client would see it sent back. */
    Tensorflow__TensorProto *back = NULL;
    weft_status_free(weft__tensor_to_proto(t, &back));
    if (back) tensorflow__tensor_proto__free_unpacked(back, NULL);
  }
  weft_status_free(st);
  weft_tensor_unref(t);
  tensorflow__tensor_proto__free_unpacked(proto, NULL);
  return 0;
}

/* ---- Checkpoint reader. The first byte picks how the rest becomes PREFIX.index in a private
 * temporary folder: even, as is (the table layer: footer, blocks, checksums); odd, as records
 * [u8 key length][key][u16 LE value length][value] that are sorted and built into a valid table
 * (snappy when bit 1 is set), so mutations reach the bundle header and entries behind the table's
 * checksums. The same bytes are also the single data shard, so entries' offsets and sizes point
 * at real bytes. Every key is then looked up, described and read. */

static char *ckpt_dir;

static void ckpt_dir_remove(void) {
  if (ckpt_dir == NULL) return;
  GDir *d = g_dir_open(ckpt_dir, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
      char *p = g_build_filename(ckpt_dir, name, NULL);
      g_unlink(p);
      g_free(p);
    }
    g_dir_close(d);
  }
  g_rmdir(ckpt_dir);
  g_free(ckpt_dir);
  ckpt_dir = NULL;
}

/* Plain stdio: g_file_set_contents syncs to disk, which would cost most of each run. */
static bool write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return false;
  bool ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

static gint cmp_bytes(gconstpointer a, gconstpointer b) {
  const GByteArray *x = *(GByteArray *const *)a, *y = *(GByteArray *const *)b;
  /* An empty key's array has no data pointer at all. */
  int c = MIN(x->len, y->len) ? memcmp(x->data, y->data, MIN(x->len, y->len)) : 0;
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The records of `data` as a table (see above); the caller frees it. */
static GByteArray *records_to_table(const uint8_t *data, size_t size, bool snappy) {
  GPtrArray *keys = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
  GHashTable *values = g_hash_table_new(NULL, NULL); /* key array -> value array */
  size_t i = 0;
  while (i < size) {
    size_t kl = data[i++];
    if (kl > size - i) break;
    /* An empty key's array keeps a NULL data pointer, as the checkpoint writer's can: the
     * table builder must cope (fuzz/regressions/checkpoint/table-builder-empty-key). */
    GByteArray *k = g_byte_array_append(g_byte_array_new(), data + i, (guint)kl);
    i += kl;
    size_t vl = 0;
    if (size - i >= 2) vl = (size_t)data[i] | (size_t)data[i + 1] << 8, i += 2;
    if (vl > size - i) vl = size - i;
    GByteArray *v = g_byte_array_append(g_byte_array_new(), data + i, (guint)vl);
    i += vl;
    g_ptr_array_add(keys, k);
    g_hash_table_insert(values, k, v);
  }
  g_ptr_array_sort(keys, cmp_bytes);
  /* Keys must be strictly increasing: of equal keys the first in sorted order is kept. */
  GPtrArray *uk = g_ptr_array_new(), *uv = g_ptr_array_new();
  for (guint k = 0; k < keys->len; k++) {
    if (uk->len && cmp_bytes(&uk->pdata[uk->len - 1], &keys->pdata[k]) == 0) continue;
    g_ptr_array_add(uk, keys->pdata[k]);
    g_ptr_array_add(uv, g_hash_table_lookup(values, keys->pdata[k]));
  }
  GByteArray *table = weft__table_build((const GByteArray *const *)uk->pdata,
                                        (const GByteArray *const *)uv->pdata, uk->len, 256, snappy);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, values);
  while (g_hash_table_iter_next(&it, &key, &value)) g_byte_array_unref(value);
  g_hash_table_destroy(values);
  g_ptr_array_free(uk, TRUE);
  g_ptr_array_free(uv, TRUE);
  g_ptr_array_free(keys, TRUE);
  return table;
}

int weft_fuzz_checkpoint(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (ckpt_dir == NULL) {
    /* Memory-backed where there is one: every run writes two files. */
    ckpt_dir = g_strdup("/dev/shm/weft-fuzz-ckpt-XXXXXX");
    if (g_mkdtemp(ckpt_dir) == NULL) {
      g_free(ckpt_dir);
      ckpt_dir = g_dir_make_tmp("weft-fuzz-ckpt-XXXXXX", NULL);
    }
    if (ckpt_dir == NULL) return 0;
    atexit(ckpt_dir_remove);
  }
  GByteArray *table = NULL;
  const uint8_t *index_bytes = data + 1;
  size_t index_len = size - 1;
  if (data[0] & 1) {
    table = records_to_table(data + 1, size - 1, (data[0] & 2) != 0);
    index_bytes = table->data;
    index_len = table->len;
  }
  char *prefix = g_build_filename(ckpt_dir, "model", NULL);
  char *index = weft__bundle_index_filename(prefix);
  char *shard = weft__bundle_data_filename(prefix, 0, 1);
  if (write_file(index, index_bytes, index_len) && write_file(shard, data + 1, size - 1)) {
    weft_checkpoint_reader_t *r = NULL;
    weft_status_t *st = weft_checkpoint_reader_open(prefix, &r);
    if (st == NULL) {
      int n = weft_checkpoint_reader_num_tensors(r);
      for (int i = 0; i < n; i++) {
        const char *key = weft_checkpoint_reader_key(r, i);
        if (key == NULL) continue;
        (void)weft_checkpoint_reader_has(r, key);
        weft_dtype_t dtype;
        int rank;
        int64_t dims[WEFT_MAX_RANK];
        weft_status_free(weft_checkpoint_reader_info(r, key, &dtype, &rank, dims));
        weft_tensor_t *t = NULL;
        weft_status_free(weft_checkpoint_reader_read(r, key, &t));
        weft_tensor_unref(t);
      }
    }
    weft_status_free(st);
    weft_checkpoint_reader_free(r);
  }
  if (table) g_byte_array_unref(table);
  g_free(shard);
  g_free(index);
  g_free(prefix);
  return 0;
}

/* ---- Cluster specs. The first byte picks the way in (the "job=h:p,...;..." text, the
 * --ps_hosts/--worker_hosts pair split at the first newline, or TF_CONFIG JSON); the rest is the
 * text. A spec that parses is printed and parsed again, and every task is looked up. */

static void use_spec(weft_cluster_spec_t *spec) {
  int jobs = weft_cluster_spec_num_jobs(spec);
  for (int j = 0; j < jobs; j++) {
    const char *job = weft_cluster_spec_job_name(spec, j);
    int tasks = weft_cluster_spec_num_tasks(spec, job);
    for (int t = 0; t < tasks; t++) {
      (void)weft_cluster_spec_task_address(spec, job, t);
      weft_status_free(weft_cluster_spec_check_task(spec, job, t));
    }
  }
  char *text = weft_cluster_spec_to_string(spec);
  if (text) {
    weft_cluster_spec_t *again = NULL;
    weft_status_free(weft_cluster_spec_parse(text, &again));
    weft_cluster_spec_free(again);
  }
  free(text);
}

int weft_fuzz_cluster_spec(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  char *text = g_strndup((const char *)data + 1, size - 1); /* stops at an embedded NUL */
  weft_cluster_spec_t *spec = NULL;
  weft_status_t *st = NULL;
  switch (data[0] % 3) {
    case 0: st = weft_cluster_spec_parse(text, &spec); break;
    case 1: {
      char *nl = strchr(text, '\n');
      if (nl) *nl = '\0';
      st = weft_cluster_spec_from_hosts(text, nl ? nl + 1 : NULL, &spec);
      break;
    }
    default: {
      char *job = NULL;
      int task = -1;
      st = weft_cluster_spec_from_tf_config(text, &spec, &job, &task);
      if (st == NULL && spec && job)
        weft_status_free(weft_cluster_spec_check_task(spec, job, task));
      free(job);
      break;
    }
  }
  if (st == NULL && spec) use_spec(spec);
  weft_status_free(st);
  weft_cluster_spec_free(spec);
  g_free(text);
  return 0;
}

/* ---- Slurm's environment: the input's lines are SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE,
 * SLURM_NTASKS and SLURM_PROCID; the first byte is --ps (mod 4). The host list alone too. */
static const char *slurm_lookup(const char *name, void *user) {
  char **lines = user;
  static const char *const names[] = {"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE",
                                      "SLURM_NTASKS", "SLURM_PROCID"};
  for (int k = 0; k < 4 && lines[k]; k++)
    if (strcmp(name, names[k]) == 0) return lines[k];
  return NULL;
}

int weft_fuzz_slurm(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  char *text = g_strndup((const char *)data + 1, size - 1); /* stops at an embedded NUL */
  char **lines = g_strsplit(text, "\n", 5);
  char **hosts = NULL;
  weft_status_free(weft_slurm_hostlist_expand(lines[0], &hosts, NULL));
  weft_strv_free(hosts);
  weft_cluster_spec_t *spec = NULL;
  char *job = NULL;
  int task = -1;
  weft_status_t *st = weft_cluster_spec_from_slurm(slurm_lookup, lines, data[0] % 4, 2222, &spec,
                                                   &job, &task);
  if (st == NULL) {
    use_spec(spec);
    weft_status_free(weft_cluster_spec_check_task(spec, job, task));
  }
  weft_status_free(st);
  weft_cluster_spec_free(spec);
  weft_free(job);
  g_strfreev(lines);
  g_free(text);
  return 0;
}

/* ---- RPC requests. The first byte picks the method (in server.c's order); the rest is the
 * request frame as it arrives from gRPC. Decoding is the server's validation step; a request
 * carrying a GraphDef is then imported into a fresh graph, which is how the master and worker
 * check it before running anything. Execution itself is not fuzzed. */

typedef struct {
  const char *name;
  const ProtobufCMessageDescriptor *desc;
  bool takes_tensors;
} rpc_method_t;

static const rpc_method_t rpc_methods[] = {
    {"CreateSession", &weft__create_session_request__descriptor, false},
    {"ExtendSession", &weft__extend_session_request__descriptor, false},
    {"RunStep", &weft__run_step_request__descriptor, true},
    {"CloseSession", &weft__close_session_request__descriptor, false},
    {"ListDevices", &weft__list_devices_request__descriptor, false},
    {"Reset", &weft__reset_request__descriptor, false},
    {"GetStatus", &weft__get_status_request__descriptor, false},
    {"RegisterGraph", &weft__register_graph_request__descriptor, false},
    {"DeregisterGraph", &weft__deregister_graph_request__descriptor, false},
    {"RunGraph", &weft__run_graph_request__descriptor, true},
    {"RecvTensor", &weft__recv_tensor_request__descriptor, false},
    {"CleanupGraph", &weft__cleanup_graph_request__descriptor, false},
    {"CleanupAll", &weft__cleanup_all_request__descriptor, false},
    {"Abort", &weft__abort_request__descriptor, false},
};

static void import_checked(const Tensorflow__GraphDef *gd) {
  if (gd == NULL) return;
  weft_graph_t *graph = weft_graph_new();
  weft_status_free(weft__graph_import_graphdef_proto(graph, gd, NULL));
  weft_graph_free(graph);
}

int weft_fuzz_rpc_request(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const rpc_method_t *m = &rpc_methods[data[0] % G_N_ELEMENTS(rpc_methods)];
  grpc_slice slice = grpc_slice_from_copied_buffer((const char *)data + 1, size - 1);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  ProtobufCMessage *msg = NULL;
  weft_tensor_t **tensors = NULL;
  int n_tensors = 0;
  /* The server's limit checks (validate.c) run on every frame, before and after decoding. */
  weft__limits_t limits;
  weft__limits_default(&limits);
  weft_status_free(weft__validate_frame(&limits, m->name, bb));
  weft_status_t *st =
      weft__wire_decode(bb, m->desc, &msg, m->takes_tensors ? &tensors : NULL, &n_tensors);
  grpc_byte_buffer_destroy(bb);
  if (st == NULL && msg)
    weft_status_free(weft__validate_request(&limits, NULL, m->name, msg, n_tensors));
  if (st == NULL && msg) {
    if (m->desc == &weft__create_session_request__descriptor)
      import_checked(((const Weft__CreateSessionRequest *)msg)->graph_def);
    else if (m->desc == &weft__extend_session_request__descriptor)
      import_checked(((const Weft__ExtendSessionRequest *)msg)->graph_def);
    else if (m->desc == &weft__register_graph_request__descriptor)
      import_checked(((const Weft__RegisterGraphRequest *)msg)->graph_def);
  }
  weft_status_free(st);
  weft__tensors_free(tensors, n_tensors);
  if (msg) protobuf_c_message_free_unpacked(msg, NULL);
  return 0;
}

/* ---- NumPy files (`weft run --feed NAME=@FILE.npy|.npz`, weft_tensor_read_npy/npz). The first
 * byte picks: even, the rest is a .npy parsed from memory (and a tensor that parses is written
 * and parsed again); odd, the rest is an .npz archive in memory, and its only array, then its
 * array "a", are read. */

int weft_fuzz_npy(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    weft_tensor_t *t = NULL;
    weft_status_free(weft_tensor_parse_npy(data + 1, size - 1, "fuzz.npy", &t));
    if (t) {
      void *bytes = NULL;
      size_t len = 0;
      weft_tensor_t *back = NULL;
      weft_status_t *st = weft_tensor_to_npy(t, &bytes, &len);
      if (st == NULL) weft_status_free(weft_tensor_parse_npy(bytes, len, "fuzz.npy", &back));
      weft_status_free(st);
      free(bytes);
      weft_tensor_unref(back);
      weft_tensor_unref(t);
    }
    return 0;
  }
  weft_tensor_t *t = NULL;
  weft_status_free(weft__npz_parse(data + 1, size - 1, "fuzz.npz", NULL, &t));
  weft_tensor_unref(t);
  t = NULL;
  weft_status_free(weft__npz_parse(data + 1, size - 1, "fuzz.npz", "a", &t));
  weft_tensor_unref(t);
  return 0;
}

/* Event files (docs/tensorboard.md): first byte even, the rest decoded as one Event and as one
 * Summary; odd, the rest as a whole event file, every record read (crcs checked) and decoded. */
int weft_fuzz_event(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    weft_event_t *e = NULL;
    weft_status_free(weft_event_decode(data + 1, size - 1, &e));
    weft_event_free(e);
    weft_summary_value_info_t *v = NULL;
    int n = 0;
    weft_status_free(weft_summary_decode(data + 1, size - 1, &v, &n));
    weft_summary_values_free(v, n);
    return 0;
  }
  char *path = NULL;
  int fd = g_file_open_tmp("weft-fuzz-events-XXXXXX", &path, NULL);
  if (fd < 0) return 0;
  FILE *f = fdopen(fd, "wb");
  if (f) {
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
  }
  weft_event_reader_t *r = NULL;
  weft_status_t *st = weft_event_reader_open(path, &r);
  for (int i = 0; !st && i < 10000; i++) {
    const void *rec;
    size_t len;
    bool eof = false;
    st = weft_event_reader_next(r, &rec, &len, &eof);
    if (st || eof) break;
    weft_event_t *e = NULL;
    weft_status_free(weft_event_decode(rec, len, &e));
    weft_event_free(e);
  }
  weft_status_free(st);
  weft_event_reader_free(r);
  g_remove(path);
  g_free(path);
  return 0;
}

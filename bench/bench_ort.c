/* ONNX Runtime as a same-run peer of `weft bench --peer ort`: opens libonnxruntime.so at run
 * time (never linked: Weft does not depend on it), builds each row's computation as an ONNX
 * model in memory, runs it on the row's own inputs and checks its output against Weft's.
 *
 * The C API is reached through OrtGetApiBase()->GetApi(version), a table of function pointers
 * whose member order is frozen across releases. Rather than ONNX Runtime's header, this file
 * names the few members it calls by their positions in the OrtApi struct of
 * include/onnxruntime/core/session/onnxruntime_c_api.h at ORT_API_VERSION 13 (ONNX Runtime
 * 1.13), counted from its first member (CreateStatus = 0). Later releases append members only,
 * so any library that serves version 13 serves these. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define ORT_TABLE_VERSION 13
#define ORT_MIN_VERSION_TEXT "1.13"

/* Positions in the OrtApi struct (ORT_API_VERSION 13). */
enum {
  ORT_GET_ERROR_MESSAGE = 2,
  ORT_CREATE_ENV = 3,
  ORT_CREATE_SESSION_FROM_ARRAY = 8,
  ORT_RUN = 9,
  ORT_CREATE_SESSION_OPTIONS = 10,
  ORT_SET_GRAPH_OPTIMIZATION_LEVEL = 23,
  ORT_SET_INTRA_OP_NUM_THREADS = 24,
  ORT_SET_INTER_OP_NUM_THREADS = 25,
  ORT_CREATE_TENSOR_WITH_DATA = 49,
  ORT_GET_TENSOR_MUTABLE_DATA = 51,
  ORT_GET_TENSOR_ELEMENT_TYPE = 60,
  ORT_GET_TENSOR_TYPE_AND_SHAPE = 65,
  ORT_GET_TENSOR_SHAPE_ELEMENT_COUNT = 64,
  ORT_CREATE_CPU_MEMORY_INFO = 69,
  ORT_RELEASE_ENV = 92,
  ORT_RELEASE_STATUS = 93,
  ORT_RELEASE_MEMORY_INFO = 94,
  ORT_RELEASE_SESSION = 95,
  ORT_RELEASE_VALUE = 96,
  ORT_RELEASE_TENSOR_TYPE_AND_SHAPE_INFO = 99,
  ORT_RELEASE_SESSION_OPTIONS = 100,
  ORT_ADD_SESSION_CONFIG_ENTRY = 130,
};

enum { ORT_LOGGING_LEVEL_ERROR = 3, ORT_ENABLE_ALL = 99, ORT_DEVICE_ALLOCATOR = 0,
       ORT_MEM_TYPE_DEFAULT = 0, ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_BOOL = 9,
       ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11 };

int bench_onnx_elem_type(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return ONNX_FLOAT;
    case WEFT_DT_DOUBLE: return ONNX_DOUBLE;
    case WEFT_DT_HALF: return ONNX_FLOAT16;
    case WEFT_DT_INT32: return ONNX_INT32;
    case WEFT_DT_INT64: return ONNX_INT64;
    case WEFT_DT_BOOL: return ONNX_BOOL;
    default: return 0;
  }
}

typedef void *ort_status;
typedef struct ort_api_base {
  const void *const *(*get_api)(uint32_t version);
  const char *(*get_version_string)(void);
} ort_api_base_t;

struct bench_peer {
  void *lib;
  const void *const *api;
  char *version;
  char *path;
  void *env;
  void *memory_info;
};

#define ORT_FN(peer, index, type) ((type)(peer)->api[index])

/* NULL when status is (success); otherwise a Weft status naming `what`, and frees status. */
static weft_status_t *ort_check(bench_peer_t *p, ort_status status, const char *what) {
  if (!status) return NULL;
  const char *msg = ORT_FN(p, ORT_GET_ERROR_MESSAGE, const char *(*)(ort_status))(status);
  weft_status_t *st = weft_status_new(WEFT_INTERNAL, "ONNX Runtime %s: %s", what, msg);
  ORT_FN(p, ORT_RELEASE_STATUS, void (*)(ort_status))(status);
  return st;
}

/* "1.30.0" >= "1.13": compares the dotted numbers one by one. */
static bool version_at_least(const char *have, const char *need) {
  while (*need) {
    long h = strtol(have, (char **)&have, 10), n = strtol(need, (char **)&need, 10);
    if (h != n) return h > n;
    if (*have == '.') have++;
    if (*need == '.') need++;
  }
  return true;
}

void bench_peer_close(bench_peer_t *p) {
  if (!p) return;
  if (p->memory_info) ORT_FN(p, ORT_RELEASE_MEMORY_INFO, void (*)(void *))(p->memory_info);
  if (p->env) ORT_FN(p, ORT_RELEASE_ENV, void (*)(void *))(p->env);
  /* The library stays loaded: its thread pools' exit handlers run at process exit. */
  g_free(p->version);
  g_free(p->path);
  g_free(p);
}

/* The library to open: --peer-lib, then WEFT_ORT_LIB, then the copy
 * scripts/install-ort-peer.sh puts in the build tree, then the loader's search path. */
static GPtrArray *candidate_paths(const char *lib_path) {
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  if (lib_path && *lib_path) {
    g_ptr_array_add(paths, g_strdup(lib_path));
    return paths;
  }
  const char *env = g_getenv("WEFT_ORT_LIB");
  if (env && *env) {
    g_ptr_array_add(paths, g_strdup(env));
    return paths;
  }
  char *weft = bench_tool_path("weft");
  if (weft) {
    /* The weft binary is build/core/tools/weft: the peer lives in build/ort-peer. */
    char *tools = g_path_get_dirname(weft), *core = g_path_get_dirname(tools);
    char *build = g_path_get_dirname(core);
    char *glob_dir = g_build_filename(build, "ort-peer", "node_modules", "onnxruntime-node", "bin",
                                      NULL);
    GDir *d = g_dir_open(glob_dir, 0, NULL);
    const char *napi;
    while (d && (napi = g_dir_read_name(d))) {
      char *lib = g_build_filename(glob_dir, napi, "linux", "x64", "libonnxruntime.so.1", NULL);
      if (g_file_test(lib, G_FILE_TEST_EXISTS)) g_ptr_array_add(paths, lib);
      else g_free(lib);
    }
    if (d) g_dir_close(d);
    g_free(glob_dir);
    g_free(build);
    g_free(core);
    g_free(tools);
    g_free(weft);
  }
  g_ptr_array_add(paths, g_strdup("libonnxruntime.so.1"));
  g_ptr_array_add(paths, g_strdup("libonnxruntime.so"));
  return paths;
}

bench_peer_t *bench_peer_open(const char *lib_path, char **why) {
  GPtrArray *paths = candidate_paths(lib_path);
  void *lib = NULL;
  const char *used = NULL;
  GString *errors = g_string_new(NULL);
  for (guint k = 0; k < paths->len && !lib; k++) {
    lib = dlopen(paths->pdata[k], RTLD_NOW | RTLD_LOCAL);
    if (lib) used = paths->pdata[k];
    else g_string_append_printf(errors, "%s%s", errors->len ? "; " : "", dlerror());
  }
  bench_peer_t *p = NULL;
  if (!lib) {
    *why = (lib_path && *lib_path) || g_getenv("WEFT_ORT_LIB")
               ? g_strdup_printf("cannot open %s: %s", (char *)paths->pdata[0], errors->str)
               : g_strdup("libonnxruntime.so not found: run scripts/install-ort-peer.sh");
    goto out;
  }
  const ort_api_base_t *(*get_base)(void) = (const ort_api_base_t *(*)(void))dlsym(lib,
                                                                                  "OrtGetApiBase");
  const ort_api_base_t *base = get_base ? get_base() : NULL;
  if (!base) {
    *why = g_strdup_printf("%s has no OrtGetApiBase: not ONNX Runtime", used);
    goto out;
  }
  const char *version = base->get_version_string();
  if (!version || !version_at_least(version, ORT_MIN_VERSION_TEXT)) {
    *why = g_strdup_printf("%s is ONNX Runtime %s; the bench needs %s or later (C API version %d)",
                           used, version ? version : "(unknown)", ORT_MIN_VERSION_TEXT,
                           ORT_TABLE_VERSION);
    goto out;
  }
  const void *const *api = base->get_api(ORT_TABLE_VERSION);
  if (!api) {
    *why = g_strdup_printf("%s (ONNX Runtime %s) does not serve C API version %d", used, version,
                           ORT_TABLE_VERSION);
    goto out;
  }
  p = g_new0(bench_peer_t, 1);
  p->lib = lib;
  p->api = api;
  p->version = g_strdup(version);
  p->path = g_strdup(used);
  weft_status_t *st = ort_check(
      p, ORT_FN(p, ORT_CREATE_ENV, ort_status(*)(int, const char *, void **))(
             ORT_LOGGING_LEVEL_ERROR, "weft-bench", &p->env),
      "CreateEnv");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_CREATE_CPU_MEMORY_INFO, ort_status(*)(int, int, void **))(
                          ORT_DEVICE_ALLOCATOR, ORT_MEM_TYPE_DEFAULT, &p->memory_info),
                   "CreateCpuMemoryInfo");
  if (st) {
    *why = g_strdup(weft_status_message(st));
    weft_status_free(st);
    bench_peer_close(p);
    p = NULL;
  }
  lib = NULL; /* kept loaded once its API was used, as bench_peer_close says */
out:
  if (lib) dlclose(lib); /* a library that is no usable ONNX Runtime */
  g_string_free(errors, TRUE);
  g_ptr_array_free(paths, TRUE);
  return p;
}

const char *bench_peer_version(const bench_peer_t *p) { return p->version; }
const char *bench_peer_path(const bench_peer_t *p) { return p->path; }

/* ---------------------------------------------------------------------------------------------
 * ONNX models, encoded field by field (proto/onnx.proto's field numbers) */

struct bench_onnx {
  GByteArray *graph; /* GraphProto fields so far */
};

static void put_varint(GByteArray *b, uint64_t v) {
  while (v >= 0x80) {
    guint8 c = (guint8)(v | 0x80);
    g_byte_array_append(b, &c, 1);
    v >>= 7;
  }
  guint8 c = (guint8)v;
  g_byte_array_append(b, &c, 1);
}

static void put_tag(GByteArray *b, int field, int wire) {
  put_varint(b, (uint64_t)field << 3 | wire);
}

static void put_int(GByteArray *b, int field, int64_t v) {
  put_tag(b, field, 0);
  put_varint(b, (uint64_t)v);
}

static void put_bytes(GByteArray *b, int field, const void *data, size_t n) {
  put_tag(b, field, 2);
  put_varint(b, n);
  g_byte_array_append(b, data, (guint)n);
}

static void put_string(GByteArray *b, int field, const char *s) {
  put_bytes(b, field, s, strlen(s));
}

/* Appends sub as a length-delimited field and frees it. */
static void put_message(GByteArray *b, int field, GByteArray *sub) {
  put_bytes(b, field, sub->data, sub->len);
  g_byte_array_free(sub, TRUE);
}

bench_onnx_t *bench_onnx_new(void) {
  bench_onnx_t *m = g_new0(bench_onnx_t, 1);
  m->graph = g_byte_array_new();
  put_string(m->graph, 2, "weft_bench");
  return m;
}

/* A ValueInfoProto of a tensor: name, TypeProto{tensor_type{elem_type, shape}}. */
static void put_value_info(GByteArray *graph, int field, const char *name, int elem_type,
                           int rank, const int64_t *dims) {
  GByteArray *shape = g_byte_array_new();
  for (int k = 0; k < rank; k++) {
    GByteArray *dim = g_byte_array_new();
    put_int(dim, 1, dims[k]);
    put_message(shape, 1, dim);
  }
  GByteArray *tensor = g_byte_array_new();
  put_int(tensor, 1, elem_type);
  put_message(tensor, 2, shape);
  GByteArray *type = g_byte_array_new();
  put_message(type, 1, tensor);
  GByteArray *info = g_byte_array_new();
  put_string(info, 1, name);
  put_message(info, 2, type);
  put_message(graph, field, info);
}

void bench_onnx_input(bench_onnx_t *m, const char *name, int rank, const int64_t *dims) {
  put_value_info(m->graph, 11, name, ONNX_FLOAT, rank, dims);
}

void bench_onnx_output(bench_onnx_t *m, const char *name, int rank, const int64_t *dims) {
  put_value_info(m->graph, 12, name, ONNX_FLOAT, rank, dims);
}

void bench_onnx_input_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                            const int64_t *dims) {
  put_value_info(m->graph, 11, name, bench_onnx_elem_type(dtype), rank, dims);
}

void bench_onnx_output_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                             const int64_t *dims) {
  put_value_info(m->graph, 12, name, bench_onnx_elem_type(dtype), rank, dims);
}

static void put_initializer(bench_onnx_t *m, const char *name, int rank, const int64_t *dims,
                            int elem_type, const void *data, size_t elem_size) {
  GByteArray *t = g_byte_array_new();
  int64_t n = 1;
  for (int k = 0; k < rank; k++) {
    put_int(t, 1, dims[k]);
    n *= dims[k];
  }
  put_int(t, 2, elem_type);
  put_string(t, 8, name);
  /* raw_data is little-endian values, which is how this x86-64/arm64 process holds them. */
  put_bytes(t, 9, data, (size_t)n * elem_size);
  put_message(m->graph, 5, t);
}

void bench_onnx_initializer(bench_onnx_t *m, const char *name, int rank, const int64_t *dims,
                            const float *data) {
  put_initializer(m, name, rank, dims, ONNX_FLOAT, data, sizeof(float));
}

void bench_onnx_initializer_typed(bench_onnx_t *m, const char *name, weft_dtype_t dtype, int rank,
                                  const int64_t *dims, const void *data) {
  put_initializer(m, name, rank, dims, bench_onnx_elem_type(dtype), data, weft_dtype_size(dtype));
}

void bench_onnx_initializer_int64(bench_onnx_t *m, const char *name, int rank,
                                  const int64_t *dims, const int64_t *data) {
  put_initializer(m, name, rank, dims, ONNX_INT64, data, sizeof(int64_t));
}

void bench_onnx_node(bench_onnx_t *m, const char *op, const char *const *inputs,
                     const char *output, const bench_onnx_ints_t *attrs) {
  bench_onnx_node_floats(m, op, inputs, output, attrs, NULL);
}

void bench_onnx_node_floats(bench_onnx_t *m, const char *op, const char *const *inputs,
                            const char *output, const bench_onnx_ints_t *attrs,
                            const bench_onnx_float_t *floats) {
  bench_onnx_node_outputs(m, op, inputs, (const char *[]){output, NULL}, attrs, floats);
}

void bench_onnx_node_outputs(bench_onnx_t *m, const char *op, const char *const *inputs,
                             const char *const *outputs, const bench_onnx_ints_t *attrs,
                             const bench_onnx_float_t *floats) {
  GByteArray *node = g_byte_array_new();
  /* An empty name is an omitted optional input. */
  for (const char *const *in = inputs; *in; in++) put_string(node, 1, *in);
  for (const char *const *out = outputs; *out; out++) put_string(node, 2, *out);
  put_string(node, 3, outputs[0]);
  put_string(node, 4, op);
  for (const bench_onnx_ints_t *a = attrs; a && a->name; a++) {
    GByteArray *attr = g_byte_array_new();
    put_string(attr, 1, a->name);
    if (a->n < 0) {
      put_int(attr, 3, a->values[0]);
      put_int(attr, 20, 2); /* AttributeType INT */
    } else {
      for (int k = 0; k < a->n; k++) put_int(attr, 8, a->values[k]);
      put_int(attr, 20, 7); /* AttributeType INTS */
    }
    put_message(node, 5, attr);
  }
  for (const bench_onnx_float_t *a = floats; a && a->name; a++) {
    GByteArray *attr = g_byte_array_new();
    put_string(attr, 1, a->name);
    put_tag(attr, 2, 5); /* f: a fixed32 float, little-endian like the raw data above */
    g_byte_array_append(attr, (const guint8 *)&a->value, sizeof(float));
    put_int(attr, 20, 1); /* AttributeType FLOAT */
    put_message(node, 5, attr);
  }
  put_message(m->graph, 1, node);
}

GBytes *bench_onnx_finish(bench_onnx_t *m) {
  GByteArray *model = g_byte_array_new();
  put_int(model, 1, 7); /* ir_version 7: what opset 13 goes with */
  put_string(model, 2, "weft bench");
  put_message(model, 7, m->graph);
  GByteArray *opset = g_byte_array_new();
  put_string(opset, 1, "");
  put_int(opset, 2, 13);
  put_message(model, 8, opset);
  g_free(m);
  return g_byte_array_free_to_bytes(model);
}

/* ---------------------------------------------------------------------------------------------
 * A session of the peer running one model */

#define PEER_MAX_INPUTS 4

struct bench_peer_case {
  bench_peer_t *peer;
  void *session;
  int n_inputs;
  char *input_names[PEER_MAX_INPUTS];
  void *inputs[PEER_MAX_INPUTS]; /* OrtValue over the caller's weft tensors' data */
  weft_tensor_t *input_tensors[PEER_MAX_INPUTS];
  char *output_name;
  void *last_output; /* OrtValue of the latest run */
  int repeat;
};

void bench_peer_case_free(bench_peer_case_t *c) {
  if (!c) return;
  bench_peer_t *p = c->peer;
  void (*release_value)(void *) = ORT_FN(p, ORT_RELEASE_VALUE, void (*)(void *));
  if (c->last_output) release_value(c->last_output);
  for (int k = 0; k < c->n_inputs; k++) {
    if (c->inputs[k]) release_value(c->inputs[k]);
    weft_tensor_unref(c->input_tensors[k]);
    g_free(c->input_names[k]);
  }
  if (c->session) ORT_FN(p, ORT_RELEASE_SESSION, void (*)(void *))(c->session);
  g_free(c->output_name);
  g_free(c);
}

static bench_peer_case_t *peer_case_new(bench_peer_t *p, GBytes *model, int threads,
                                        int n_inputs, const char *const *input_names,
                                        weft_tensor_t **inputs, const char *output_name,
                                        weft_status_t **error) {
  bench_peer_case_t *c = g_new0(bench_peer_case_t, 1);
  c->peer = p;
  c->repeat = 1;
  c->output_name = g_strdup(output_name);
  void *options = NULL;
  weft_status_t *st = ort_check(
      p, ORT_FN(p, ORT_CREATE_SESSION_OPTIONS, ort_status(*)(void **))(&options),
      "CreateSessionOptions");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_SET_INTRA_OP_NUM_THREADS, ort_status(*)(void *, int))(
                          options, threads),
                   "SetIntraOpNumThreads");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_SET_INTER_OP_NUM_THREADS, ort_status(*)(void *, int))(
                          options, 1),
                   "SetInterOpNumThreads");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_SET_GRAPH_OPTIMIZATION_LEVEL, ort_status(*)(void *, int))(
                          options, ORT_ENABLE_ALL),
                   "SetSessionGraphOptimizationLevel");
  /* Its pool's threads would otherwise spin after each run, taking a core from Weft's next run
   * on a 2-core machine; Weft's pool blocks when idle. */
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_ADD_SESSION_CONFIG_ENTRY,
                             ort_status(*)(void *, const char *, const char *))(
                          options, "session.intra_op.allow_spinning", "0"),
                   "AddSessionConfigEntry");
  if (!st) {
    gsize len = 0;
    const void *bytes = g_bytes_get_data(model, &len);
    st = ort_check(p, ORT_FN(p, ORT_CREATE_SESSION_FROM_ARRAY,
                             ort_status(*)(void *, const void *, size_t, void *, void **))(
                          p->env, bytes, len, options, &c->session),
                   "CreateSessionFromArray");
  }
  if (options) ORT_FN(p, ORT_RELEASE_SESSION_OPTIONS, void (*)(void *))(options);
  for (int k = 0; k < n_inputs && !st; k++) {
    c->n_inputs = k + 1;
    c->input_names[k] = g_strdup(input_names[k]);
    c->input_tensors[k] = weft_tensor_ref(inputs[k]);
    int rank = weft_tensor_rank(inputs[k]);
    int64_t dims[8];
    for (int d = 0; d < rank && d < 8; d++) dims[d] = weft_tensor_dims(inputs[k])[d];
    st = ort_check(p, ORT_FN(p, ORT_CREATE_TENSOR_WITH_DATA,
                             ort_status(*)(const void *, void *, size_t, const int64_t *, size_t,
                                           int, void **))(
                          p->memory_info, weft_tensor_data(inputs[k]),
                          (size_t)weft_tensor_num_elements(inputs[k]) *
                              weft_dtype_size(weft_tensor_dtype(inputs[k])),
                          dims, (size_t)rank, bench_onnx_elem_type(weft_tensor_dtype(inputs[k])),
                          &c->inputs[k]),
                   "CreateTensorWithDataAsOrtValue");
  }
  if (st) {
    bench_peer_case_free(c);
    *error = st;
    return NULL;
  }
  return c;
}

bench_peer_case_t *bench_peer_row_case(const bench_options_t *o, GBytes *model, int n_inputs,
                                       const char *const *input_names, weft_tensor_t **inputs,
                                       const char *output_name, char **why) {
  *why = NULL;
  bench_peer_case_t *c = NULL;
  if (o->peer && n_inputs <= PEER_MAX_INPUTS) {
    weft_status_t *st = NULL;
    c = peer_case_new(o->peer, model, o->threads, n_inputs, input_names, inputs, output_name, &st);
    if (!c) *why = g_strdup_printf("failed: %s", weft_status_message(st));
    weft_status_free(st);
  } else if (o->peer_name) {
    *why = g_strdup(o->peer_why);
  }
  g_bytes_unref(model);
  return c;
}

void bench_peer_case_set_repeat(bench_peer_case_t *c, int repeat) {
  if (c) c->repeat = repeat > 0 ? repeat : 1;
}

double bench_peer_case_run(void *arg, weft_status_t **error) {
  bench_peer_case_t *c = arg;
  bench_peer_t *p = c->peer;
  void (*release_value)(void *) = ORT_FN(p, ORT_RELEASE_VALUE, void (*)(void *));
  ort_status (*run)(void *, const void *, const char *const *, const void *const *, size_t,
                    const char *const *, size_t, void **) =
      ORT_FN(p, ORT_RUN, ort_status(*)(void *, const void *, const char *const *,
                                       const void *const *, size_t, const char *const *, size_t,
                                       void **));
  const char *out_names[1] = {c->output_name};
  double t0 = bench_now();
  for (int k = 0; k < c->repeat; k++) {
    /* Releasing the previous output is part of a run, as a Weft step drops its fetch. */
    if (c->last_output) release_value(c->last_output);
    c->last_output = NULL;
    ort_status s = run(c->session, NULL, (const char *const *)c->input_names,
                       (const void *const *)c->inputs, (size_t)c->n_inputs, out_names, 1,
                       &c->last_output);
    weft_status_t *st = ort_check(p, s, "Run");
    if (st) {
      *error = st;
      return -1;
    }
  }
  return (bench_now() - t0) / c->repeat;
}

/* IEEE half bits as a double. */
static double half_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY)
                                                      : ldexp(mant | 0x400, exp - 25);
  return h & 0x8000 ? -v : v;
}

/* Element k of data of dtype as a double (float32, float64, float16, int32, int64, bool). */
static double element(const void *data, weft_dtype_t dtype, int64_t k) {
  switch (dtype) {
    case WEFT_DT_DOUBLE: return ((const double *)data)[k];
    case WEFT_DT_HALF: return half_value(((const uint16_t *)data)[k]);
    case WEFT_DT_INT32: return ((const int32_t *)data)[k];
    case WEFT_DT_INT64: return (double)((const int64_t *)data)[k];
    case WEFT_DT_BOOL: return ((const uint8_t *)data)[k] ? 1 : 0;
    default: return ((const float *)data)[k];
  }
}

/* The peer's latest output against expected[0..n) of dtype, compared in that dtype (read as
 * doubles: exact for the integers, float64's own precision for float64). */
static weft_status_t *peer_check(bench_peer_case_t *c, weft_dtype_t dtype, const void *expected,
                                 int64_t n, double rtol, double atol) {
  bench_peer_t *p = c->peer;
  if (!c->last_output) {
    weft_status_t *st = NULL;
    if (bench_peer_case_run(c, &st) < 0) return st;
  }
  void *info = NULL;
  size_t count = 0;
  int elem = 0;
  void *got = NULL;
  weft_status_t *st = ort_check(
      p, ORT_FN(p, ORT_GET_TENSOR_TYPE_AND_SHAPE, ort_status(*)(const void *, void **))(
             c->last_output, &info),
      "GetTensorTypeAndShape");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_GET_TENSOR_SHAPE_ELEMENT_COUNT,
                             ort_status(*)(const void *, size_t *))(info, &count),
                   "GetTensorShapeElementCount");
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_GET_TENSOR_ELEMENT_TYPE, ort_status(*)(const void *, int *))(
                          info, &elem),
                   "GetTensorElementType");
  if (info) ORT_FN(p, ORT_RELEASE_TENSOR_TYPE_AND_SHAPE_INFO, void (*)(void *))(info);
  if (!st)
    st = ort_check(p, ORT_FN(p, ORT_GET_TENSOR_MUTABLE_DATA, ort_status(*)(void *, void **))(
                          c->last_output, &got),
                   "GetTensorMutableData");
  if (st) return st;
  if (elem != bench_onnx_elem_type(dtype))
    return weft_status_new(WEFT_INTERNAL, "peer output is of ONNX element type %d, Weft's %s",
                           elem, weft_dtype_name(dtype));
  if ((int64_t)count != n)
    return weft_status_new(WEFT_INTERNAL, "peer output has %zu elements, Weft's %" G_GINT64_FORMAT,
                           count, n);
  /* The worst element relative to its allowance |peer - weft| <= atol + rtol * |weft|. */
  int64_t worst = -1;
  double worst_excess = 1.0;
  for (int64_t k = 0; k < n; k++) {
    double g = element(got, dtype, k), e = element(expected, dtype, k);
    double diff = fabs(g - e);
    double allowed = atol + rtol * fabs(e);
    double excess = isnan(diff) ? INFINITY : diff / allowed;
    if (isnan(g) && isnan(e)) excess = 0;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = k;
    }
  }
  if (worst < 0) return NULL;
  return weft_status_new(WEFT_INTERNAL,
                         "output differs at element %" G_GINT64_FORMAT ": peer %.9g, Weft %.9g "
                         "(allowed %.3g + %.3g relative)", worst, element(got, dtype, worst),
                         element(expected, dtype, worst), atol, rtol);
}

weft_status_t *bench_peer_case_check(bench_peer_case_t *c, const float *expected, int64_t n,
                                     double rtol, double atol) {
  return peer_check(c, WEFT_DT_FLOAT, expected, n, rtol, atol);
}

weft_status_t *bench_peer_case_check_tensor(bench_peer_case_t *c, const weft_tensor_t *expected,
                                            double rtol, double atol) {
  return peer_check(c, weft_tensor_dtype(expected), weft_tensor_data(expected),
                    weft_tensor_num_elements(expected), rtol, atol);
}

void bench_peer_finish(bench_report_t *r, const bench_options_t *o, bench_peer_case_t *c,
                       char *why, const bench_stats_t *peer, const weft_tensor_t *expected,
                       double rtol, double atol) {
  if (c) {
    weft_status_t *st = expected ? peer_check(c, weft_tensor_dtype(expected),
                                              weft_tensor_data(expected),
                                              weft_tensor_num_elements(expected), rtol, atol)
                                 : weft_status_new(WEFT_INTERNAL, "no Weft output to compare");
    if (st) {
      char *failed = g_strdup_printf("failed: %s", weft_status_message(st));
      bench_set_peer(r, NULL, failed);
      g_free(failed);
      weft_status_free(st);
    } else {
      bench_set_peer(r, peer, NULL);
    }
  } else if (o->peer_name) {
    bench_set_peer(r, NULL, why ? why : "not measured");
  }
  bench_peer_case_free(c);
  g_free(why);
}

/* The protobuf nesting limit (core/src/base/protobuf.c, docs/security.md "Protobuf nesting"): a
 * 45 KB GraphDef whose AttrValue.func -> NameAttrList.attr -> AttrValue chain nests 3,000 deep
 * once overflowed the stack of protobuf-c's recursive unpack (weftd, `weft run`). Every input
 * here is written byte by byte, never with the parsers under test. Checked: the limit and its
 * exact message; hostile framing around it; every real file of the shared corpus still passes;
 * `weft run --graph`; a weftd's CreateSession and RegisterGraph, which refuse with
 * INVALID_ARGUMENT and keep serving; weft-conformance's ONNX reader. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "base/protobuf_internal.h"
#include "distributed/distributed_internal.h"
#include "onnx.pb-c.h"
#include "process_util.h"
#include "saved_model.pb-c.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"
#define CONFORMANCE_EXE WEFT_BUILD_DIR "/conformance/weft-conformance"

#define OK(expr)                                                                          \
  do {                                                                                    \
    weft_status_t *st_ = (expr);                                                          \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(st_->code), weft_status_message(st_)); \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Writing nested messages by hand. A chain is built from the innermost message out: each
 * enclosure puts the message so far, as one length-delimited field, at the end of a new message.
 * Everything outside a message therefore precedes it, and the distance from the end of the bytes
 * to the tag of the field that opens it never changes as more levels enclose it. */

typedef struct chain {
  GByteArray *bytes; /* the outermost message so far */
  GArray *from_end;  /* size_t per enclosure, innermost first: see above */
} chain_t;

static void put_varint(GByteArray *b, uint64_t v) {
  do {
    uint8_t byte = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    g_byte_array_append(b, &byte, 1);
    v >>= 7;
  } while (v);
}

static void put_int(GByteArray *b, unsigned field, uint64_t v) {
  put_varint(b, (uint64_t)field << 3);
  put_varint(b, v);
}

static void put_bytes(GByteArray *b, unsigned field, const void *data, size_t len) {
  put_varint(b, ((uint64_t)field << 3) | 2);
  put_varint(b, len);
  g_byte_array_append(b, data, (guint)len);
}

static void put_string(GByteArray *b, unsigned field, const char *s) {
  put_bytes(b, field, s, strlen(s));
}

/* A chain whose innermost message is `inner` (taken). */
static chain_t chain_new(GByteArray *inner) {
  return (chain_t){inner, g_array_new(FALSE, FALSE, sizeof(size_t))};
}

static void chain_free(chain_t *c) {
  g_byte_array_free(c->bytes, TRUE);
  g_array_free(c->from_end, TRUE);
}

/* Makes the message so far field `field` of a new message whose other fields are `head` (taken;
 * NULL: none). */
static void enclose(chain_t *c, GByteArray *head, unsigned field) {
  GByteArray *out = head ? head : g_byte_array_new();
  guint before = out->len;
  put_varint(out, ((uint64_t)field << 3) | 2);
  put_varint(out, c->bytes->len);
  size_t from_end = out->len - before + c->bytes->len;
  g_byte_array_append(out, c->bytes->data, c->bytes->len);
  g_byte_array_free(c->bytes, TRUE);
  c->bytes = out;
  g_array_append_val(c->from_end, from_end);
}

static int chain_levels(const chain_t *c) { return 1 + (int)c->from_end->len; }

/* The byte offset of the field that opens nesting level `level` (2 .. levels). */
static size_t chain_opens(const chain_t *c, int level) {
  size_t from_end = g_array_index(c->from_end, size_t, chain_levels(c) - level);
  return c->bytes->len - from_end;
}

static GByteArray *with_string(unsigned field, const char *s) {
  GByteArray *b = g_byte_array_new();
  put_string(b, field, s);
  return b;
}

/* A GraphDef of one node: Const "c" (float 2.5) that also carries attribute "_deep", an
 * AttrValue whose func holds an attr whose value holds a func ..., so that the whole GraphDef
 * nests exactly `levels` deep (at least 4): GraphDef 1, NodeDef 2, AttrEntry 3, AttrValue 4,
 * then NameAttrList, AttrEntry, AttrValue again every three levels. */
static chain_t deep_graphdef(int levels) {
  g_assert_cmpint(levels, >=, 4);
  int kind = (levels - 4) % 3; /* of the innermost message: AttrValue, NameAttrList, AttrEntry */
  GByteArray *inner = g_byte_array_new();
  if (kind == 0) put_int(inner, 3, 1);          /* AttrValue.i */
  else if (kind == 1) put_string(inner, 1, "f"); /* NameAttrList.name */
  else put_string(inner, 1, "a");                /* AttrEntry.key */
  chain_t c = chain_new(inner);
  for (int level = levels - 1; level >= 4; level--) {
    switch ((level - 4) % 3) {
      case 0: enclose(&c, NULL, 10); break;                     /* AttrValue.func */
      case 1: enclose(&c, with_string(1, "f"), 2); break;       /* NameAttrList.attr */
      default: enclose(&c, with_string(1, "a"), 2); break;      /* AttrEntry.value */
    }
  }
  enclose(&c, with_string(1, "_deep"), 2); /* AttrEntry "_deep".value */
  GByteArray *node = g_byte_array_new();
  put_string(node, 1, "c"); /* name */
  put_string(node, 2, "Const");
  GByteArray *dtype = g_byte_array_new(), *av = g_byte_array_new();
  put_int(av, 6, 1); /* AttrValue.type = DT_FLOAT */
  put_string(dtype, 1, "dtype");
  put_bytes(dtype, 2, av->data, av->len);
  put_bytes(node, 5, dtype->data, dtype->len);
  GByteArray *tensor = g_byte_array_new(), *value = g_byte_array_new();
  put_int(tensor, 1, 1);       /* dtype DT_FLOAT */
  put_bytes(tensor, 2, "", 0); /* tensor_shape: a scalar */
  float f = 2.5f;
  put_varint(tensor, (5u << 3) | 5); /* float_val, one fixed32 */
  g_byte_array_append(tensor, (const guint8 *)&f, 4);
  g_byte_array_set_size(av, 0);
  put_bytes(av, 8, tensor->data, tensor->len); /* AttrValue.tensor */
  put_string(value, 1, "value");
  put_bytes(value, 2, av->data, av->len);
  put_bytes(node, 5, value->data, value->len);
  g_byte_array_free(dtype, TRUE);
  g_byte_array_free(av, TRUE);
  g_byte_array_free(tensor, TRUE);
  g_byte_array_free(value, TRUE);
  enclose(&c, node, 5); /* NodeDef.attr */
  enclose(&c, NULL, 1); /* GraphDef.node */
  g_assert_cmpint(chain_levels(&c), ==, levels);
  return c;
}

/* The refusal of a chain nested past the limit, as the walk words it. */
static char *refusal(const char *what, const chain_t *c, const char *path) {
  return g_strdup_printf("%s: protobuf nesting deeper than %d levels at byte %zu (%s)", what,
                         WEFT_PB_MAX_DEPTH, chain_opens(c, WEFT_PB_MAX_DEPTH + 1), path);
}

#define GRAPHDEF_PATH "node.attr.value.func.attr.value.func.attr..."

/* 3,000 AttrValues deep, as in the report: 45 KB. */
#define DEEP_LEVELS (4 + 3 * 2999)

static void expect_code(weft_status_t *st, weft_code_t code) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
}

/* ---------------------------------------------------------------------------------------------
 * The limit */

static void test_limit(void) {
  /* At the limit: accepted, and the graph imports (the nested attrs are kept opaque). */
  chain_t at = deep_graphdef(WEFT_PB_MAX_DEPTH);
  OK(weft__pb_check_depth(&tensorflow__graph_def__descriptor, at.bytes->data, at.bytes->len,
                          WEFT_PB_MAX_DEPTH, "GraphDef"));
  weft_graph_t *g = weft_graph_new();
  OK(weft_graph_import_graphdef(g, at.bytes->data, at.bytes->len, NULL));
  g_assert_nonnull(weft_graph_node(g, "c"));
  weft_graph_free(g);
  chain_free(&at);

  /* One level more, and 3,000 AttrValues deep: refused, naming where. */
  int levels[] = {WEFT_PB_MAX_DEPTH + 1, WEFT_PB_MAX_DEPTH + 2, DEEP_LEVELS};
  for (size_t i = 0; i < G_N_ELEMENTS(levels); i++) {
    chain_t c = deep_graphdef(levels[i]);
    g_test_message("%d levels: %u bytes", levels[i], c.bytes->len);
    g = weft_graph_new();
    weft_status_t *st = weft_graph_import_graphdef(g, c.bytes->data, c.bytes->len, NULL);
    expect_code(st, WEFT_INVALID_ARGUMENT);
    char *want = refusal("GraphDef", &c, GRAPHDEF_PATH);
    g_assert_cmpstr(weft_status_message(st), ==, want);
    g_free(want);
    weft_status_free(st);
    g_assert_null(weft_graph_node(g, "c"));
    weft_graph_free(g);
    chain_free(&c);
  }

  /* The limit is the caller's: the same bytes against a lower one. */
  chain_t c = deep_graphdef(10);
  OK(weft__pb_check_depth(&tensorflow__graph_def__descriptor, c.bytes->data, c.bytes->len, 10,
                          "x"));
  weft_status_t *st = weft__pb_check_depth(&tensorflow__graph_def__descriptor, c.bytes->data,
                                           c.bytes->len, 9, "x");
  char *want = g_strdup_printf("x: protobuf nesting deeper than 9 levels at byte %zu "
                               "(node.attr.value.func.attr.value.func.attr...)",
                               chain_opens(&c, 10));
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  /* Const's value (AttrValue.tensor -> TensorProto -> TensorShapeProto) nests 6 levels. */
  st = weft__pb_check_depth(&tensorflow__graph_def__descriptor, c.bytes->data, c.bytes->len, 6,
                            "x");
  want = g_strdup_printf("x: protobuf nesting deeper than 6 levels at byte %zu "
                         "(node.attr.value.func.attr.value)", chain_opens(&c, 7));
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  chain_free(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Hostile framing: the walk reads only inside the bytes, and what it cannot frame it leaves to
 * protobuf-c, which refuses it before recursing. */

static bool refused_for_nesting(const uint8_t *data, size_t len) {
  weft_status_t *st = NULL;
  ProtobufCMessage *m = weft__pb_unpack(&tensorflow__graph_def__descriptor, data, len, "g", &st);
  if (m) protobuf_c_message_free_unpacked(m, NULL);
  bool refused = st != NULL;
  if (st) {
    g_assert_nonnull(strstr(weft_status_message(st), "protobuf nesting deeper than 100 levels"));
    expect_code(st, WEFT_INVALID_ARGUMENT);
  }
  weft_status_free(st);
  return refused;
}

static void test_hostile(void) {
  chain_t deep = deep_graphdef(DEEP_LEVELS);
  const uint8_t *d = deep.bytes->data;
  size_t n = deep.bytes->len;
  g_assert_true(refused_for_nesting(d, n));
  /* Truncated: the outer lengths now run past the end, so nothing frames; protobuf-c refuses
   * the first bytes it cannot frame before it recurses, and the walk reads no further. Each
   * copy is exactly as long as the cut, so AddressSanitizer sees a read one byte too far. */
  for (size_t cut = 0; cut < n; cut += cut < 300 || cut > n - 300 ? 1 : 997) {
    uint8_t *copy = g_memdup2(d, cut);
    g_assert_false(refused_for_nesting(copy, cut));
    g_free(copy);
  }

  /* A malformed message does not hide a deep sibling: GraphDef{node: <garbage>, node: deep}. */
  GByteArray *b = g_byte_array_new();
  put_bytes(b, 1, "\xff\xff\xff", 3);
  g_byte_array_append(b, d, (guint)n);
  g_assert_true(refused_for_nesting(b->data, b->len));
  g_byte_array_free(b, TRUE);

  /* The deep bytes as an unknown length-delimited field (99): opaque, never walked, and
   * protobuf-c keeps them opaque. As a field that is not a message (NodeDef.name, a string) they
   * are not walked either, but a string holding NUL bytes is refused for that (protobuf-c would
   * cut it at the first). */
  unsigned opaque_fields[] = {99, 1};
  for (size_t i = 0; i < G_N_ELEMENTS(opaque_fields); i++) {
    GByteArray *node = g_byte_array_new();
    put_bytes(node, opaque_fields[i], d, n);
    GByteArray *gd = g_byte_array_new();
    put_bytes(gd, 1, node->data, node->len);
    if (opaque_fields[i] == 99) {
      g_assert_false(refused_for_nesting(gd->data, gd->len));
    } else {
      weft_status_t *st = weft__pb_check_depth(&tensorflow__graph_def__descriptor, gd->data,
                                               gd->len, WEFT_PB_MAX_DEPTH, "g");
      g_assert_nonnull(st);
      /* GraphDef.node's tag and 3-byte length, then NodeDef.name's tag at byte 4. */
      g_assert_cmpstr(weft_status_message(st), ==,
                      "g: string field 'node.name' holds a NUL byte (field at byte 4)");
      expect_code(st, WEFT_INVALID_ARGUMENT);
      weft_status_free(st);
    }
    g_byte_array_free(node, TRUE);
    g_byte_array_free(gd, TRUE);
  }

  /* Framing no parser takes: lengths past the end (up to 2^64-1), an 11-byte varint, groups,
   * field 0, a tag of 6 bytes, a message field sent as a varint. None is refused for nesting,
   * none reads outside the bytes. */
  static const struct {
    const char *bytes;
    size_t len;
  } junk[] = {
      {"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11},       /* length 2^64-1 */
      {"\x0a\x80\x80\x80\x80\x10", 6},                            /* length 2^32 */
      {"\x0a\x05\x0a\x03", 4},                                    /* nested length past end */
      {"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12},   /* varint of 11 bytes */
      {"\x0b\x0a\x00\x0c", 4},                                    /* a group */
      {"\x02\x00", 2},                                            /* field 0 */
      {"\x8a\x80\x80\x80\x80\x00\x00", 7},                        /* a 6-byte tag */
      {"\x08\x05", 2},                                            /* node as a varint */
      {"\x09\x01\x02\x03", 4},                                    /* fixed64 cut short */
      {"\x0d\x01", 2},                                            /* fixed32 cut short */
      {"\x0e\x00", 2},                                            /* wire type 6 */
  };
  for (size_t i = 0; i < G_N_ELEMENTS(junk); i++) {
    uint8_t *heap = g_memdup2(junk[i].bytes, junk[i].len);
    g_assert_false(refused_for_nesting(heap, junk[i].len));
    g_free(heap);
  }
  chain_free(&deep);
}

/* ---------------------------------------------------------------------------------------------
 * The shared corpus: every real GraphDef, SavedModel and ONNX file nests well within the limit. */

static char *corpus_dir(void) {
  const char *root = g_getenv("WEFT_CORPUS");
  return root ? g_strdup(root) : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", NULL);
}

typedef struct corpus_walk {
  int files;
  int deepest;
  char *deepest_file;
} corpus_walk_t;

static const ProtobufCMessageDescriptor *descriptor_for(const char *path) {
  char *base = g_path_get_basename(path);
  const ProtobufCMessageDescriptor *d = NULL;
  if (strcmp(base, "saved_model.pb") == 0) d = &tensorflow__saved_model__descriptor;
  else if (strcmp(base, "model.meta") == 0) d = &tensorflow__meta_graph_def__descriptor;
  else if (strcmp(base, "model.onnx") == 0) d = &onnx__model_proto__descriptor;
  else if (strstr(path, "onnx-node") && g_str_has_suffix(base, ".pb"))
    d = &onnx__tensor_proto__descriptor; /* test_data_set_N/input_N.pb, output_N.pb */
  else if (g_str_has_suffix(base, ".pb")) d = &tensorflow__graph_def__descriptor;
  g_free(base);
  return d;
}

static void walk_corpus(const char *dir, corpus_walk_t *w) {
  GDir *gd = g_dir_open(dir, 0, NULL);
  if (!gd) return;
  const char *name;
  while ((name = g_dir_read_name(gd)) != NULL) {
    char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
      walk_corpus(path, w);
    } else {
      const ProtobufCMessageDescriptor *d = descriptor_for(path);
      gchar *bytes = NULL;
      gsize len = 0;
      if (d && g_file_get_contents(path, &bytes, &len, NULL)) {
        const uint8_t *data = (const uint8_t *)bytes;
        OK(weft__pb_check_depth(d, data, len, WEFT_PB_MAX_DEPTH, path));
        /* The file's own depth: the least limit it passes (never below the deepest so far). */
        for (;;) {
          weft_status_t *st = weft__pb_check_depth(d, data, len, w->deepest, path);
          if (!st) break;
          weft_status_free(st);
          w->deepest++;
          g_free(w->deepest_file);
          w->deepest_file = g_strdup(path);
        }
        w->files++;
      }
      g_free(bytes);
    }
    g_free(path);
  }
  g_dir_close(gd);
}

static void test_corpus(void) {
  char *dir = corpus_dir();
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_test_skip("the shared corpus is not there (set WEFT_CORPUS)");
    g_free(dir);
    return;
  }
  corpus_walk_t w = {.deepest = 1};
  walk_corpus(dir, &w);
  g_test_message("%d corpus files pass the limit of %d; the deepest nests %d levels (%s)",
                 w.files, WEFT_PB_MAX_DEPTH, w.deepest, w.deepest_file);
  g_assert_cmpint(w.files, >, 1000);
  g_assert_cmpint(w.deepest, <, WEFT_PB_MAX_DEPTH / 4);
  g_free(w.deepest_file);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * `weft run --graph FILE` */

static char *write_temp(const char *pattern, const GByteArray *b) {
  char *path = NULL;
  int fd = g_file_open_tmp(pattern, &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  close(fd);
  g_assert_true(g_file_set_contents(path, (const char *)b->data, b->len, NULL));
  return path;
}

static void test_cli(void) {
  if (!g_file_test(WEFT_EXE, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft is not built");
    return;
  }
  chain_t deep = deep_graphdef(DEEP_LEVELS);
  char *path = write_temp("weft-deep-XXXXXX.pb", deep.bytes);
  run_result_t r = run_program(WEFT_EXE, (const char *[]){"run", "--graph", path, "--fetch", "c",
                                                          NULL}, NULL);
  g_test_message("%s", r.err);
  g_assert_cmpint(r.exit_code, ==, 1);
  char *what = g_strdup_printf("GraphDef '%s'", path);
  char *message = refusal(what, &deep, GRAPHDEF_PATH);
  char *want = g_strdup_printf("weft: error: INVALID_ARGUMENT: %s\n", message);
  g_assert_cmpstr(r.err, ==, want);
  g_free(want);
  g_free(message);
  g_free(what);
  run_result_clear(&r);
  g_unlink(path);
  g_free(path);
  chain_free(&deep);

  /* At the limit the graph runs. */
  chain_t at = deep_graphdef(WEFT_PB_MAX_DEPTH);
  path = write_temp("weft-deep-XXXXXX.pb", at.bytes);
  r = run_program(WEFT_EXE, (const char *[]){"run", "--graph", path, "--fetch", "c", NULL}, NULL);
  g_test_message("%s%s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_nonnull(strstr(r.out, "2.5"));
  run_result_clear(&r);
  g_unlink(path);
  g_free(path);
  chain_free(&at);
}

/* ---------------------------------------------------------------------------------------------
 * weftd: CreateSession and RegisterGraph */

/* The request frame of a method: the message, then an empty TensorList. */
static GByteArray *frame(const GByteArray *msg) {
  GByteArray *f = g_byte_array_new();
  put_varint(f, msg->len);
  g_byte_array_append(f, msg->data, msg->len);
  put_varint(f, 0);
  return f;
}

static weft_status_t *call(const char *address, const char *method, const GByteArray *msg) {
  GByteArray *f = frame(msg);
  char *answer = NULL;
  size_t answer_len = 0;
  weft_status_t *st =
      weft__rpc_raw(address, method, f->data, f->len, 10000, &answer, &answer_len);
  g_test_message("%s: %s", method, st ? weft_status_message(st) : "OK");
  g_free(answer);
  g_byte_array_free(f, TRUE);
  return st;
}

static void expect_refused(const char *address, const char *method, const char *request_type,
                           GByteArray *head, unsigned field) {
  chain_t c = deep_graphdef(DEEP_LEVELS);
  enclose(&c, head, field);
  weft_status_t *st = call(address, method, c.bytes);
  expect_code(st, WEFT_INVALID_ARGUMENT);
  char *what = g_strdup_printf("%s: Malformed request: the message (%s)", method, request_type);
  char *want = refusal(what, &c, "graph_def.node.attr.value.func.attr.value.func...");
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  g_free(what);
  weft_status_free(st);
  chain_free(&c);
}

static void test_weftd(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 0, NULL)) return;
  const char *address = c.address[0];
  expect_refused(address, "/weft.Master/CreateSession", "weft.CreateSessionRequest", NULL, 1);
  expect_refused(address, "/weft.Worker/RegisterGraph", "weft.RegisterGraphRequest",
                 with_string(1, "s"), 2);

  /* Just under the limit (the request is one level more than its GraphDef): accepted. */
  chain_t at = deep_graphdef(WEFT_PB_MAX_DEPTH - 1);
  enclose(&at, NULL, 1);
  OK(call(address, "/weft.Master/CreateSession", at.bytes));
  chain_free(&at);

  /* The server is still there and runs a step. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_const_float(g, "x", 4.0f, &st);
  OK(st);
  weft_session_t *s = weftd_remote_session(g, c.target[0]);
  const char *fetch = "x";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 4.0);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * weft-conformance's ONNX reader: TypeProto nests itself (Sequence.elem_type). */

/* A model.onnx whose graph input's type is a sequence of sequences ... nesting `levels` deep:
 * ModelProto 1, GraphProto 2, ValueInfoProto 3, TypeProto 4, then Sequence, TypeProto. */
static chain_t deep_onnx(int levels) {
  chain_t c = chain_new(g_byte_array_new()); /* an empty TypeProto or Sequence */
  for (int level = levels - 1; level >= 4; level--)
    enclose(&c, NULL, (level - 4) % 2 == 0 ? 4 : 1); /* sequence_type, Sequence.elem_type */
  enclose(&c, with_string(1, "x"), 2); /* ValueInfoProto.type */
  enclose(&c, with_string(2, "g"), 11); /* GraphProto.input */
  GByteArray *model = g_byte_array_new();
  put_int(model, 1, 7); /* ir_version */
  enclose(&c, model, 7); /* ModelProto.graph */
  g_assert_cmpint(chain_levels(&c), ==, levels);
  return c;
}

static void test_onnx(void) {
  if (!g_file_test(CONFORMANCE_EXE, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft-conformance is not built");
    return;
  }
  char *dir = g_dir_make_tmp("weft-deep-onnx-XXXXXX", NULL);
  int levels[] = {5000, WEFT_PB_MAX_DEPTH};
  const char *tests[] = {"test_deep", "test_at_limit"};
  chain_t chains[2];
  for (int i = 0; i < 2; i++) {
    chains[i] = deep_onnx(levels[i]);
    char *folder = g_build_filename(dir, tests[i], NULL);
    g_assert_cmpint(g_mkdir(folder, 0700), ==, 0);
    char *file = g_build_filename(folder, "model.onnx", NULL);
    g_assert_true(g_file_set_contents(file, (const char *)chains[i].bytes->data,
                                      chains[i].bytes->len, NULL));
    g_free(file);
    g_free(folder);
  }
  char *json = g_build_filename(dir, "report.json", NULL);
  run_result_t r = run_program(CONFORMANCE_EXE, (const char *[]){"--device", "CPU:0", "--onnx",
                                                                 dir, "--json", json, NULL},
                               NULL);
  g_test_message("%s%s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 1); /* the deep test fails */
  JsonParser *parser = json_parser_new();
  g_assert_true(json_parser_load_from_file(parser, json, NULL));
  JsonArray *results =
      json_object_get_array_member(json_node_get_object(json_parser_get_root(parser)), "results");
  int seen = 0;
  for (guint k = 0; k < json_array_get_length(results); k++) {
    JsonObject *res = json_array_get_object_element(results, k);
    const char *test = json_object_get_string_member(res, "case");
    const char *message = json_object_get_string_member(res, "message");
    g_test_message("%s: %s: %s", test, json_object_get_string_member(res, "status"), message);
    if (strcmp(test, "test_deep") == 0) {
      char *file = g_build_filename(dir, "test_deep", "model.onnx", NULL);
      char *want = refusal(file, &chains[0], "graph.input.type.sequence_type.elem_type."
                                             "sequence_type.elem_type.sequence_type...");
      g_assert_cmpstr(json_object_get_string_member(res, "status"), ==, "failed");
      g_assert_cmpstr(message, ==, want);
      g_free(want);
      g_free(file);
      seen++;
    } else if (strcmp(test, "test_at_limit") == 0) {
      g_assert_null(message ? strstr(message, "nesting") : NULL);
      seen++;
    }
  }
  g_assert_cmpint(seen, ==, 2);
  g_object_unref(parser);
  run_result_clear(&r);
  for (int i = 0; i < 2; i++) {
    char *file = g_build_filename(dir, tests[i], "model.onnx", NULL);
    char *folder = g_path_get_dirname(file);
    g_unlink(file);
    g_rmdir(folder);
    g_free(folder);
    g_free(file);
    chain_free(&chains[i]);
  }
  g_unlink(json);
  g_rmdir(dir);
  g_free(json);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/protobuf/limit", test_limit);
  g_test_add_func("/protobuf/hostile", test_hostile);
  g_test_add_func("/protobuf/corpus", test_corpus);
  g_test_add_func("/protobuf/cli", test_cli);
  g_test_add_func("/protobuf/weftd", test_weftd);
  g_test_add_func("/protobuf/onnx", test_onnx);
  return g_test_run();
}

/* weft_inspect.c: `weft inspect MODEL`, what TensorFlow's `saved_model_cli show --all` tells,
 * for a SavedModel folder (every MetaGraphDef) or a binary GraphDef: signatures with their
 * inputs and outputs, placeholders, variables, an op histogram and the ops this machine has no
 * kernel for. Nothing is imported or run: the protobufs are decoded and read as they are, so a
 * model full of ops Weft lacks is still described (that is when one wants to know). The text and
 * the `--json` schema are documented in docs/cli.md, "weft inspect". */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "base/base_internal.h"
#include "base/protobuf_internal.h"
#include "graph/graphdef_internal.h"
#include "plugin/plugin_internal.h"
#include "saved_model.pb-c.h"
#include "weft_io.h"

/* A tensor as a signature or a node attribute describes it. */
typedef struct tinfo {
  weft_dtype_t dtype;
  int rank; /* -1: unknown */
  int64_t dims[WEFT_MAX_RANK];
} tinfo_t;

static tinfo_t shape_info(weft_dtype_t dtype, const Tensorflow__TensorShapeProto *shape) {
  tinfo_t t = {.dtype = weft__dtype_base((int)dtype), .rank = -1};
  weft__shape_t s = {.rank = -1};
  weft_status_t *st = shape ? weft__shape_from_proto(shape, &s) : NULL;
  /* A shape that does not parse is reported as unknown: inspect describes, it does not judge. */
  if (shape && !st) {
    t.rank = s.rank;
    for (int d = 0; d < s.rank && d < WEFT_MAX_RANK; d++) t.dims[d] = s.dims[d];
  }
  weft_status_free(st);
  return t;
}

static const Tensorflow__AttrValue *attr(const Tensorflow__NodeDef *nd, const char *key) {
  for (size_t i = 0; i < nd->n_attr; i++) {
    const Tensorflow__AttrEntry *e = nd->attr[i];
    if (e && e->key && e->value && strcmp(e->key, key) == 0) return e->value;
  }
  return NULL;
}

/* The dtype and shape a Placeholder or variable node declares ("dtype", "shape"). */
static tinfo_t node_info(const Tensorflow__NodeDef *nd) {
  const Tensorflow__AttrValue *d = attr(nd, "dtype"), *s = attr(nd, "shape");
  weft_dtype_t dtype = d && d->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE
                           ? (weft_dtype_t)d->type : WEFT_DT_INVALID;
  return shape_info(dtype, s && s->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE ? s->shape
                                                                                  : NULL);
}

static const char *dtype_string(weft_dtype_t t) {
  const char *n = weft_dtype_name(t);
  return t == WEFT_DT_INVALID || n == NULL ? "unknown" : n;
}

static JsonNode *tinfo_json(const tinfo_t *t) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_array(b);
  for (int d = 0; d < t->rank; d++) json_builder_add_int_value(b, t->dims[d]);
  json_builder_end_array(b);
  JsonNode *n = t->rank < 0 ? json_node_new(JSON_NODE_NULL) : json_builder_get_root(b);
  g_object_unref(b);
  return n;
}

static void add_tensor_members(JsonBuilder *b, const tinfo_t *t) {
  json_builder_set_member_name(b, "dtype");
  json_builder_add_string_value(b, dtype_string(t->dtype));
  json_builder_set_member_name(b, "shape");
  json_builder_add_value(b, tinfo_json(t));
}

/* ---------------------------------------------------------------------------------------------
 * Kernels */

/* The node's type attributes, with the op's defaults for those the NodeDef leaves out
 * (TensorFlow strips default-valued attrs when it saves): what kernel constraints look at. */
static weft_attrs_t *kernel_attrs(const Tensorflow__NodeDef *nd, const weft__op_def_t *def) {
  weft_attrs_t *attrs = weft__attrs_new();
  for (size_t i = 0; i < nd->n_attr; i++) {
    const Tensorflow__AttrEntry *e = nd->attr[i];
    if (!e || !e->key || !e->value) continue;
    if (e->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE) {
      weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
      v->u.type = weft__dtype_base((int)e->value->type);
      weft__attrs_set(attrs, e->key, v);
    } else if (e->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && e->value->list &&
               e->value->list->n_type > 0) {
      const Tensorflow__AttrValue__ListValue *l = e->value->list;
      weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_TYPE);
      v->u.list.n = l->n_type;
      v->u.list.type = g_new(weft_dtype_t, l->n_type);
      for (size_t k = 0; k < l->n_type; k++) v->u.list.type[k] = weft__dtype_base((int)l->type[k]);
      weft__attrs_set(attrs, e->key, v);
    }
  }
  for (guint k = 0; def && k < def->attrs->len; k++) {
    const weft__attr_def_t *a = def->attrs->pdata[k];
    if (a->default_value && !weft__attrs_get(attrs, a->name))
      weft__attrs_set(attrs, a->name, weft__attr_value_copy(a->default_value));
  }
  return attrs;
}

/* NULL when some local device has a kernel for the node; else why not (static text). */
static const char *missing_kernel(const Tensorflow__NodeDef *nd) {
  const weft__op_def_t *def = weft__op_registry_lookup(nd->op);
  if (def == NULL) return "no such op in Weft";
  if (weft_devices_count() == 0) return "no devices (no backend plugin loaded)";
  weft_attrs_t *attrs = kernel_attrs(nd, def);
  bool found = false;
  for (int d = 0; d < weft_devices_count() && !found; d++)
    found = weft__kernel_exists(nd->op, weft_devices_get(d)->device_type, attrs);
  weft__attrs_free(attrs);
  return found ? NULL : "no kernel for its types on this machine's devices";
}

/* ---------------------------------------------------------------------------------------------
 * One graph (a GraphDef, or a MetaGraphDef's with its signatures) as JSON, the one description
 * both outputs are made from. */

typedef struct sig_tensor {
  const char *key;
  const Tensorflow__TensorInfo *info;
} sig_tensor_t;

static gint cmp_sig_tensor(gconstpointer a, gconstpointer b) {
  return g_strcmp0(((const sig_tensor_t *)a)->key, ((const sig_tensor_t *)b)->key);
}

/* A signature's inputs or outputs, sorted by key as `weft run --signature` orders them. */
static void add_signature_tensors(JsonBuilder *b, const char *member, GArray *v) {
  g_array_sort(v, cmp_sig_tensor);
  json_builder_set_member_name(b, member);
  json_builder_begin_array(b);
  for (guint i = 0; i < v->len; i++) {
    const sig_tensor_t *e = &g_array_index(v, sig_tensor_t, i);
    const Tensorflow__TensorInfo *ti = e->info;
    tinfo_t t = shape_info(ti ? ti->dtype : 0, ti ? ti->tensor_shape : NULL);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "key");
    json_builder_add_string_value(b, e->key);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, ti && ti->name ? ti->name : "");
    add_tensor_members(b, &t);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
}

static gint cmp_sig_entry(gconstpointer a, gconstpointer b) {
  const Tensorflow__MetaGraphDef__SignatureDefEntry *x = *(void *const *)a, *y = *(void *const *)b;
  return g_strcmp0(x->key, y->key);
}

static void add_signatures(JsonBuilder *b, const Tensorflow__MetaGraphDef *mg) {
  GPtrArray *sigs = g_ptr_array_new();
  for (size_t i = 0; mg && i < mg->n_signature_def; i++) {
    if (mg->signature_def[i] && mg->signature_def[i]->key && mg->signature_def[i]->value)
      g_ptr_array_add(sigs, mg->signature_def[i]);
  }
  g_ptr_array_sort(sigs, cmp_sig_entry);
  json_builder_set_member_name(b, "signatures");
  json_builder_begin_array(b);
  for (guint i = 0; i < sigs->len; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = sigs->pdata[i];
    const Tensorflow__SignatureDef *sig = e->value;
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "key");
    json_builder_add_string_value(b, e->key);
    json_builder_set_member_name(b, "method");
    json_builder_add_string_value(b, sig->method_name ? sig->method_name : "");
    GArray *v = g_array_new(FALSE, FALSE, sizeof(sig_tensor_t));
    for (size_t k = 0; k < sig->n_inputs; k++) {
      if (!sig->inputs[k] || !sig->inputs[k]->key) continue;
      sig_tensor_t t = {sig->inputs[k]->key, sig->inputs[k]->value};
      g_array_append_val(v, t);
    }
    add_signature_tensors(b, "inputs", v);
    g_array_set_size(v, 0);
    for (size_t k = 0; k < sig->n_outputs; k++) {
      if (!sig->outputs[k] || !sig->outputs[k]->key) continue;
      sig_tensor_t t = {sig->outputs[k]->key, sig->outputs[k]->value};
      g_array_append_val(v, t);
    }
    add_signature_tensors(b, "outputs", v);
    g_array_free(v, TRUE);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  g_ptr_array_free(sigs, TRUE);
}

static bool is_placeholder(const char *op) {
  return strcmp(op, "Placeholder") == 0 || strcmp(op, "PlaceholderWithDefault") == 0;
}

static bool is_variable(const char *op) {
  return strcmp(op, "VariableV2") == 0 || strcmp(op, "Variable") == 0 ||
         strcmp(op, "VarHandleOp") == 0;
}

static void add_nodes_of(JsonBuilder *b, const char *member, const Tensorflow__GraphDef *gd,
                         bool (*pick)(const char *op), bool with_op) {
  json_builder_set_member_name(b, member);
  json_builder_begin_array(b);
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (!nd || !nd->name || !nd->op || !pick(nd->op)) continue;
    tinfo_t t = node_info(nd);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, nd->name);
    if (with_op) {
      json_builder_set_member_name(b, "op");
      json_builder_add_string_value(b, nd->op);
    }
    add_tensor_members(b, &t);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
}

typedef struct op_count {
  const char *op;
  int nodes;
  const char *missing; /* why no kernel, or NULL */
  const char *first;   /* the first node of the op lacking a kernel */
} op_count_t;

static gint cmp_op_count(gconstpointer a, gconstpointer b) {
  return strcmp(((const op_count_t *)a)->op, ((const op_count_t *)b)->op);
}

static void add_ops(JsonBuilder *b, const Tensorflow__GraphDef *gd) {
  GHashTable *index = g_hash_table_new(g_str_hash, g_str_equal);
  GArray *ops = g_array_new(FALSE, TRUE, sizeof(op_count_t));
  int n_nodes = 0;
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (!nd || !nd->op || !nd->name) continue;
    n_nodes++;
    gpointer at = NULL;
    if (!g_hash_table_lookup_extended(index, nd->op, NULL, &at)) {
      op_count_t c = {.op = nd->op};
      g_array_append_val(ops, c);
      at = GUINT_TO_POINTER(ops->len - 1);
      g_hash_table_insert(index, nd->op, at);
    }
    op_count_t *c = &g_array_index(ops, op_count_t, GPOINTER_TO_UINT(at));
    c->nodes++;
    /* Kernels are matched per node (types differ between nodes of one op); the op is reported
     * once, with its first node that has none. */
    if (c->missing == NULL) {
      c->missing = missing_kernel(nd);
      if (c->missing) c->first = nd->name;
    }
  }
  g_array_sort(ops, cmp_op_count);
  json_builder_set_member_name(b, "num_nodes");
  json_builder_add_int_value(b, n_nodes);
  json_builder_set_member_name(b, "ops");
  json_builder_begin_object(b);
  for (guint i = 0; i < ops->len; i++) {
    const op_count_t *c = &g_array_index(ops, op_count_t, i);
    json_builder_set_member_name(b, c->op);
    json_builder_add_int_value(b, c->nodes);
  }
  json_builder_end_object(b);
  json_builder_set_member_name(b, "ops_without_kernel");
  json_builder_begin_array(b);
  for (guint i = 0; i < ops->len; i++) {
    const op_count_t *c = &g_array_index(ops, op_count_t, i);
    if (!c->missing) continue;
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, c->op);
    json_builder_set_member_name(b, "nodes");
    json_builder_add_int_value(b, c->nodes);
    json_builder_set_member_name(b, "node");
    json_builder_add_string_value(b, c->first);
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, c->missing);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  g_array_free(ops, TRUE);
  g_hash_table_destroy(index);
}

static gint cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One graph: mg is NULL for a plain GraphDef (no tags, no signatures). */
static void add_graph(JsonBuilder *b, const Tensorflow__MetaGraphDef *mg,
                      const Tensorflow__GraphDef *gd) {
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "tags");
  json_builder_begin_array(b);
  if (mg && mg->meta_info_def) {
    GPtrArray *tags = g_ptr_array_new();
    for (size_t i = 0; i < mg->meta_info_def->n_tags; i++)
      if (mg->meta_info_def->tags[i]) g_ptr_array_add(tags, mg->meta_info_def->tags[i]);
    g_ptr_array_sort(tags, cmp_str);
    for (guint i = 0; i < tags->len; i++) json_builder_add_string_value(b, tags->pdata[i]);
    g_ptr_array_free(tags, TRUE);
  }
  json_builder_end_array(b);
  add_signatures(b, mg);
  static const Tensorflow__GraphDef empty = TENSORFLOW__GRAPH_DEF__INIT;
  if (gd == NULL) gd = &empty;
  add_nodes_of(b, "placeholders", gd, is_placeholder, false);
  add_nodes_of(b, "variables", gd, is_variable, true);
  /* What runs is the graph with its function library inlined: count and check those nodes
   * (the raw graph's when the library does not inline, e.g. a recursive function). */
  Tensorflow__GraphDef *flat = NULL;
  if (weft__graphdef_has_functions(gd))
    weft_status_free(weft__graphdef_inline_functions(weft__op_registry_process(), gd, &flat));
  add_ops(b, flat ? flat : gd);
  if (flat) tensorflow__graph_def__free_unpacked(flat, NULL);
  json_builder_end_object(b);
}

/* ---------------------------------------------------------------------------------------------
 * Reading the model */

static weft_status_t *read_bytes(const char *path, gchar **bytes, gsize *len) {
  const char *kind = NULL;
  if (weft__file_is_special(path, &kind))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s is %s, not a file", path, kind);
  GError *err = NULL;
  if (g_file_get_contents(path, bytes, len, &err)) return NULL;
  weft_status_t *st = weft_status_new(g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                                          ? WEFT_NOT_FOUND : WEFT_UNAVAILABLE,
                                      "cannot read %s: %s", path, err->message);
  g_error_free(err);
  return st;
}

/* The whole description of MODEL as a JSON tree (*out, the caller's). */
static weft_status_t *describe(const char *model, JsonNode **out) {
  *out = NULL;
  bool is_dir = g_file_test(model, G_FILE_TEST_IS_DIR);
  char *base = g_path_get_basename(model);
  bool saved_model = is_dir || strcmp(base, "saved_model.pb") == 0;
  g_free(base);
  char *pb = is_dir ? g_build_filename(model, "saved_model.pb", NULL) : g_strdup(model);
  weft_status_t *st = NULL;
  if (!saved_model && (g_str_has_suffix(model, ".pbtxt") || g_str_has_suffix(model, ".txt"))) {
    st = weft_status_new(WEFT_UNIMPLEMENTED, "%s: text-format GraphDefs are not supported; give "
                         "the binary GraphDef (.pb)", model);
  }
  if (is_dir && !g_file_test(pb, G_FILE_TEST_EXISTS)) {
    st = weft_status_new(WEFT_NOT_FOUND, "%s is a folder without saved_model.pb (not a "
                         "SavedModel)", model);
  }
  gchar *bytes = NULL;
  gsize len = 0;
  if (!st) st = read_bytes(pb, &bytes, &len);
  Tensorflow__SavedModel *sm = NULL;
  Tensorflow__GraphDef *gd = NULL;
  /* Nesting bounded before protobuf-c's recursive unpack, as everywhere untrusted bytes enter. */
  if (!st && saved_model) {
    char *what = g_strdup_printf("SavedModel '%s'", pb);
    sm = (Tensorflow__SavedModel *)weft__pb_unpack(&tensorflow__saved_model__descriptor,
                                                   (const uint8_t *)bytes, len, what, &st);
    g_free(what);
    if (sm == NULL && !st)
      st = weft_status_new(WEFT_DATA_LOSS, "%s is not a valid SavedModel protobuf", pb);
  } else if (!st) {
    char *what = g_strdup_printf("GraphDef '%s'", pb);
    gd = (Tensorflow__GraphDef *)weft__pb_unpack(&tensorflow__graph_def__descriptor,
                                                 (const uint8_t *)bytes, len, what, &st);
    g_free(what);
    if (gd == NULL && !st)
      st = weft_status_new(WEFT_DATA_LOSS, "%s is not a valid binary GraphDef", pb);
  }
  g_free(bytes);
  if (!st) {
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "path");
    json_builder_add_string_value(b, model);
    json_builder_set_member_name(b, "format");
    json_builder_add_string_value(b, sm ? "saved_model" : "graphdef");
    json_builder_set_member_name(b, "meta_graphs");
    json_builder_begin_array(b);
    if (sm) {
      for (size_t i = 0; i < sm->n_meta_graphs; i++)
        if (sm->meta_graphs[i]) add_graph(b, sm->meta_graphs[i], sm->meta_graphs[i]->graph_def);
    } else {
      add_graph(b, NULL, gd);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    *out = json_builder_get_root(b);
    g_object_unref(b);
  }
  if (sm) tensorflow__saved_model__free_unpacked(sm, NULL);
  if (gd) tensorflow__graph_def__free_unpacked(gd, NULL);
  g_free(pb);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Text */

static char *tensor_text(JsonObject *o) {
  JsonNode *shape = json_object_get_member(o, "shape");
  GString *s = g_string_new(json_object_get_string_member(o, "dtype"));
  g_string_append_c(s, ' ');
  if (JSON_NODE_HOLDS_NULL(shape)) {
    g_string_append(s, "unknown");
  } else {
    JsonArray *a = json_node_get_array(shape);
    g_string_append_c(s, '[');
    for (guint d = 0; d < json_array_get_length(a); d++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? "," : "",
                             json_array_get_int_element(a, d));
    g_string_append_c(s, ']');
  }
  return g_string_free(s, FALSE);
}

static void print_text(JsonObject *root) {
  bool is_sm = strcmp(json_object_get_string_member(root, "format"), "saved_model") == 0;
  JsonArray *graphs = json_object_get_array_member(root, "meta_graphs");
  printf("%s %s\n", is_sm ? "SavedModel" : "GraphDef", json_object_get_string_member(root, "path"));
  for (guint g = 0; g < json_array_get_length(graphs); g++) {
    JsonObject *mg = json_array_get_object_element(graphs, g);
    if (is_sm) {
      JsonArray *tags = json_object_get_array_member(mg, "tags");
      GString *t = g_string_new("");
      for (guint k = 0; k < json_array_get_length(tags); k++)
        g_string_append_printf(t, "%s%s", k ? "," : "", json_array_get_string_element(tags, k));
      printf("\nMetaGraphDef with tag-set: '%s'\n", t->str);
      g_string_free(t, TRUE);
      JsonArray *sigs = json_object_get_array_member(mg, "signatures");
      printf("  signatures (%u):\n", json_array_get_length(sigs));
      for (guint i = 0; i < json_array_get_length(sigs); i++) {
        JsonObject *sig = json_array_get_object_element(sigs, i);
        const char *method = json_object_get_string_member(sig, "method");
        printf("    '%s'%s%s%s\n", json_object_get_string_member(sig, "key"),
               *method ? " (method " : "", method, *method ? ")" : "");
        static const char *const sides[2] = {"inputs", "outputs"};
        for (int side = 0; side < 2; side++) {
          JsonArray *ts = json_object_get_array_member(sig, sides[side]);
          for (guint k = 0; k < json_array_get_length(ts); k++) {
            JsonObject *ten = json_array_get_object_element(ts, k);
            char *text = tensor_text(ten);
            printf("      %-6s '%s': %s  %s\n", side ? "output" : "input",
                   json_object_get_string_member(ten, "key"),
                   json_object_get_string_member(ten, "name"), text);
            g_free(text);
          }
        }
      }
    }
    JsonArray *ph = json_object_get_array_member(mg, "placeholders");
    printf("  placeholders (%u):\n", json_array_get_length(ph));
    for (guint i = 0; i < json_array_get_length(ph); i++) {
      JsonObject *p = json_array_get_object_element(ph, i);
      char *text = tensor_text(p);
      printf("    %s  %s\n", json_object_get_string_member(p, "name"), text);
      g_free(text);
    }
    JsonArray *vars = json_object_get_array_member(mg, "variables");
    printf("  variables (%u):\n", json_array_get_length(vars));
    for (guint i = 0; i < json_array_get_length(vars); i++) {
      JsonObject *v = json_array_get_object_element(vars, i);
      char *text = tensor_text(v);
      printf("    %s  %s  (%s)\n", json_object_get_string_member(v, "name"), text,
             json_object_get_string_member(v, "op"));
      g_free(text);
    }
    JsonObject *ops = json_object_get_object_member(mg, "ops");
    GList *names = json_object_get_members(ops);
    names = g_list_sort(names, (GCompareFunc)strcmp);
    printf("  nodes: %" G_GINT64_FORMAT ", ops (%u):\n",
           json_object_get_int_member(mg, "num_nodes"), g_list_length(names));
    for (GList *l = names; l; l = l->next)
      printf("    %-28s %" G_GINT64_FORMAT "\n", (const char *)l->data,
             json_object_get_int_member(ops, l->data));
    g_list_free(names);
    JsonArray *missing = json_object_get_array_member(mg, "ops_without_kernel");
    printf("  ops without a kernel on this machine (%u):\n", json_array_get_length(missing));
    for (guint i = 0; i < json_array_get_length(missing); i++) {
      JsonObject *m = json_array_get_object_element(missing, i);
      printf("    %s  (%" G_GINT64_FORMAT " node%s, e.g. %s): %s\n",
             json_object_get_string_member(m, "op"), json_object_get_int_member(m, "nodes"),
             json_object_get_int_member(m, "nodes") == 1 ? "" : "s",
             json_object_get_string_member(m, "node"), json_object_get_string_member(m, "reason"));
    }
  }
}

int weft_cli_inspect(int argc, char **argv) {
  static const char help[] =
      "Usage:\n  weft inspect MODEL [--json]\n  weft inspect EVENTS\n  weft inspect --dot GRAPH\n\n"
      "Describes a SavedModel folder (every MetaGraphDef) or a binary GraphDef (.pb) without\n"
      "running it: signatures with their inputs and outputs (key, tensor, dtype, shape),\n"
      "placeholders, variables, the op histogram and the ops with no kernel on this machine.\n"
      "EVENTS, an events.out.tfevents.* file or a folder of them (a training's checkpoint\n"
      "folder): every record, its step, wall time, summary tags and values, graph, session log.\n\n"
      "Options:\n  -j, --json  one JSON object (schema in docs/cli.md, \"weft inspect\")\n"
      "  --dot       print GRAPH (a GraphDef .pb, or the graph in EVENTS) as Graphviz DOT, nodes\n"
      "              coloured by device and grouped by task, edges between tasks marked\n";
  bool as_json = false, dot = false;
  const char *model = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(help, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
      as_json = true;
    } else if (strcmp(argv[i], "--dot") == 0) {
      dot = true;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      fprintf(stderr, "weft: error: unknown option '%s'\nTry 'weft help inspect'.\n", argv[i]);
      return 2;
    } else if (model == NULL) {
      model = argv[i];
    } else {
      fprintf(stderr, "weft: error: unexpected argument '%s'\nTry 'weft help inspect'.\n",
              argv[i]);
      return 2;
    }
  }
  if (model == NULL) {
    fprintf(stderr, "weft: error: inspect takes a MODEL (a SavedModel folder or a GraphDef "
                    ".pb)\nTry 'weft help inspect'.\n");
    return 2;
  }
  if (dot) return weft_cli_inspect_dot(model);
  if (weft_cli_is_event_path(model)) return weft_cli_inspect_events(model);
  /* The kernel report is only as good as the plugins loaded; their warnings would clutter it. */
  if (g_getenv("WEFT_LOG_LEVEL") == NULL && g_getenv("WEFT_LOG") == NULL)
    g_setenv("WEFT_LOG_LEVEL", "error", TRUE);
  weft_plugins_load_default();
  JsonNode *root = NULL;
  weft_status_t *st = describe(model, &root);
  if (st) {
    fprintf(stderr, "weft: error: %s: inspect %s: %s\n", weft_code_name(weft_status_code(st)),
            model, weft_status_message(st));
    weft_status_free(st);
    return 1;
  }
  if (as_json) {
    char *text = json_to_string(root, TRUE);
    printf("%s\n", text);
    g_free(text);
  } else {
    print_text(json_node_get_object(root));
  }
  json_node_unref(root);
  return 0;
}

/* saved_model.c: TensorFlow SavedModels (DIR/saved_model.pb + DIR/variables/variables) loaded
 * into a graph and a local session. The GraphDef is kept decoded and nodes are imported on
 * demand, one run at a time: a SavedModel's graph usually holds nodes Weft has no op or kernel
 * for (ParseExample feeding the serving inputs, SaveV2/RestoreV2 and the string plumbing of the
 * saver), and a run that feeds past them or does not reach them must not pay for them. */
#include <string.h>

#include "../base/protobuf_internal.h"
#include "../graph/graphdef_internal.h"
#include "../plugin/plugin_internal.h"
#include "saved_model.pb-c.h"
#include "weft/weft.h"

struct weft_saved_model {
  char *dir;
  char *pb_path;
  Tensorflow__SavedModel *proto;      /* owns everything below that points into it */
  const Tensorflow__MetaGraphDef *meta;
  GHashTable *defs;                   /* node name -> const Tensorflow__NodeDef* */
  GPtrArray *sig_keys;                /* sorted, borrowed from proto */
  GHashTable *standins;               /* "node:k" -> stand-in node name (owned) */
  weft_graph_t *graph;
  weft_session_t *session;
};

/* ---------------------------------------------------------------------------------------------
 * Names */

/* "x" -> "x:0", "x:1" -> "x:1"; *node gets the node part (the caller g_free()s both). False for
 * a control input or an index that is not a number. */
static bool split_tensor_name(const char *name, char **node, int *index) {
  if (name == NULL || *name == '\0' || *name == '^') return false;
  const char *colon = strrchr(name, ':');
  if (colon == NULL) {
    *node = g_strdup(name);
    *index = 0;
    return true;
  }
  char *end = NULL;
  gint64 k = g_ascii_strtoll(colon + 1, &end, 10);
  if (colon[1] == '\0' || *end != '\0' || k < 0 || k > G_MAXINT || colon == name) return false;
  *node = g_strndup(name, (gsize)(colon - name));
  *index = (int)k;
  return true;
}

static char *canonical_tensor(const char *node, int index) {
  return g_strdup_printf("%s:%d", node, index);
}

/* "a,b" from sorted tags, repeats dropped: tag sets compare as strings. */
static char *tag_set_string(char **tags, size_t n) {
  GPtrArray *sorted = g_ptr_array_new();
  for (size_t i = 0; i < n; i++) {
    if (tags[i] != NULL && *tags[i] != '\0') g_ptr_array_add(sorted, tags[i]);
  }
  GString *s = g_string_new("");
  for (guint i = 0; i < sorted->len; i++) {
    if (i > 0 && strcmp(sorted->pdata[i], sorted->pdata[i - 1]) == 0) continue;
    if (s->len) g_string_append_c(s, ',');
    g_string_append(s, sorted->pdata[i]);
  }
  g_ptr_array_free(sorted, TRUE);
  return g_string_free(s, FALSE);
}

static gint cmp_str_ptr(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *normalise_tags(const char *tags) {
  char **parts = g_strsplit(tags != NULL && *tags != '\0' ? tags : "serve", ",", -1);
  for (char **p = parts; *p; p++) g_strstrip(*p);
  GPtrArray *v = g_ptr_array_new();
  for (char **p = parts; *p; p++) g_ptr_array_add(v, *p);
  g_ptr_array_sort(v, cmp_str_ptr);
  char *out = tag_set_string((char **)v->pdata, v->len);
  g_ptr_array_free(v, TRUE);
  g_strfreev(parts);
  return out;
}

static char *meta_tags(const Tensorflow__MetaGraphDef *m) {
  if (m->meta_info_def == NULL) return g_strdup("");
  GPtrArray *v = g_ptr_array_new();
  for (size_t i = 0; i < m->meta_info_def->n_tags; i++)
    g_ptr_array_add(v, m->meta_info_def->tags[i]);
  g_ptr_array_sort(v, cmp_str_ptr);
  char *out = tag_set_string((char **)v->pdata, v->len);
  g_ptr_array_free(v, TRUE);
  return out;
}

/* ---------------------------------------------------------------------------------------------
 * Loading */

static weft_status_t *read_proto(weft_saved_model_t *m) {
  gchar *bytes = NULL;
  gsize len = 0;
  GError *err = NULL;
  const char *kind = NULL;
  if (weft__file_is_special(m->pb_path, &kind)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s': %s is %s, not a file",
                           m->dir, m->pb_path, kind);
  }
  if (!g_file_get_contents(m->pb_path, &bytes, &len, &err)) {
    weft_code_t code = g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT) ? WEFT_NOT_FOUND
                                                                            : WEFT_UNAVAILABLE;
    weft_status_t *st = weft_status_new(code, "SavedModel '%s': cannot read %s: %s", m->dir,
                                        m->pb_path, err->message);
    g_error_free(err);
    return st;
  }
  char *what = g_strdup_printf("SavedModel '%s': %s", m->dir, m->pb_path);
  weft_status_t *deep = NULL;
  m->proto = (Tensorflow__SavedModel *)weft__pb_unpack(
      &tensorflow__saved_model__descriptor, (const uint8_t *)bytes, len, what, &deep);
  g_free(what);
  g_free(bytes);
  if (deep) return deep;
  if (m->proto == NULL) {
    return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': %s is not a valid SavedModel "
                           "protobuf (%zu bytes)", m->dir, m->pb_path, (size_t)len);
  }
  if (m->proto->n_meta_graphs == 0) {
    return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': %s holds no MetaGraphDef", m->dir,
                           m->pb_path);
  }
  return NULL;
}

static weft_status_t *pick_meta_graph(weft_saved_model_t *m, const char *tags) {
  char *want = normalise_tags(tags);
  GString *present = g_string_new("");
  for (size_t i = 0; i < m->proto->n_meta_graphs && m->meta == NULL; i++) {
    const Tensorflow__MetaGraphDef *mg = m->proto->meta_graphs[i];
    char *have = meta_tags(mg);
    if (strcmp(have, want) == 0) m->meta = mg;
    g_string_append_printf(present, "%s{%s}", present->len ? ", " : "", have);
    g_free(have);
  }
  weft_status_t *st = NULL;
  if (m->meta == NULL) {
    st = weft_status_new(WEFT_NOT_FOUND, "SavedModel '%s' has no MetaGraphDef tagged {%s}; "
                         "the tag sets present are %s", m->dir, want, present->str);
  } else if (m->meta->graph_def == NULL) {
    st = weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': the MetaGraphDef tagged {%s} in %s "
                         "has no graph", m->dir, want, m->pb_path);
  }
  g_string_free(present, TRUE);
  g_free(want);
  return st;
}

/* TF2 SavedModels keep their computation in the graph's function library: the graph is replaced
 * by its inlined form once, so that running a signature imports plain nodes like a TF1 graph's. */
static weft_status_t *inline_functions(weft_saved_model_t *m) {
  Tensorflow__MetaGraphDef *meta = (Tensorflow__MetaGraphDef *)m->meta;
  if (!weft__graphdef_has_functions(meta->graph_def)) return NULL;
  Tensorflow__GraphDef *flat = NULL;
  weft_status_t *st = weft__graphdef_inline_functions(weft__op_registry_process(),
                                                      meta->graph_def, &flat);
  if (st) return weft_status_prefix(st, "SavedModel '%s'", m->dir);
  tensorflow__graph_def__free_unpacked(meta->graph_def, NULL);
  meta->graph_def = flat;
  return NULL;
}

static weft_status_t *index_graph(weft_saved_model_t *m) {
  const Tensorflow__GraphDef *gd = m->meta->graph_def;
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (nd == NULL || nd->name == NULL || *nd->name == '\0' || nd->op == NULL) {
      return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': node #%zu of the graph in %s has "
                             "no name or op", m->dir, i, m->pb_path);
    }
    if (g_hash_table_contains(m->defs, nd->name)) {
      return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': the graph in %s has more than "
                             "one node named '%s'", m->dir, m->pb_path, nd->name);
    }
    g_hash_table_insert(m->defs, nd->name, (gpointer)nd);
  }
  for (size_t i = 0; i < m->meta->n_signature_def; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = m->meta->signature_def[i];
    if (e != NULL && e->key != NULL) g_ptr_array_add(m->sig_keys, e->key);
  }
  g_ptr_array_sort(m->sig_keys, cmp_str_ptr);
  return NULL;
}

static weft_status_t *import_nodes(weft_saved_model_t *m, const Tensorflow__NodeDef **nodes,
                                   size_t n) {
  if (n == 0) return NULL;
  Tensorflow__GraphDef gd = TENSORFLOW__GRAPH_DEF__INIT;
  gd.n_node = n;
  gd.node = (Tensorflow__NodeDef **)nodes;
  gd.versions = m->meta->graph_def->versions;
  gd.version = m->meta->graph_def->version;
  return weft__graph_import_graphdef_proto(m->graph, &gd, NULL);
}

/* Attrs holding a NodeDef's type attributes, which is all a kernel's constraints look at. */
static weft_attrs_t *type_attrs(const Tensorflow__NodeDef *nd) {
  weft_attrs_t *attrs = weft__attrs_new();
  for (size_t i = 0; i < nd->n_attr; i++) {
    const Tensorflow__AttrEntry *e = nd->attr[i];
    if (!e || !e->key || !e->value || e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE)
      continue;
    weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
    v->u.type = weft__dtype_base((int)e->value->type);
    weft__attrs_set(attrs, e->key, v);
  }
  return attrs;
}

/* Is `nd` placed with variable `var`? TensorFlow marks it with "_class: loc:@var"; ops taking
 * the variable on a ref input (Assign, Apply*) are colocated with it by the placer too. */
static bool colocated_with(const Tensorflow__NodeDef *nd, const char *var) {
  for (size_t i = 0; i < nd->n_attr; i++) {
    const Tensorflow__AttrEntry *e = nd->attr[i];
    if (!e || !e->key || strcmp(e->key, "_class") != 0 || !e->value ||
        e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !e->value->list)
      continue;
    for (size_t k = 0; k < e->value->list->n_s; k++) {
      const ProtobufCBinaryData *b = &e->value->list->s[k];
      if (b->len == strlen(var) + 5 && memcmp(b->data, "loc:@", 5) == 0 &&
          memcmp(b->data + 5, var, strlen(var)) == 0)
        return true;
    }
  }
  const weft__op_def_t *def = weft__op_registry_lookup(nd->op);
  for (size_t i = 0; def && i < nd->n_input && i < def->inputs->len; i++) {
    const weft__arg_def_t *arg = def->inputs->pdata[i];
    if (!arg->is_ref || arg->number_attr) continue;
    char *src = NULL;
    int k = 0;
    bool hit = split_tensor_name(nd->input[i], &src, &k) && k == 0 && strcmp(src, var) == 0;
    g_free(src);
    if (hit) return true;
  }
  return false;
}

/* The device a variable of no requested device should be pinned to, or NULL for the placer's
 * own choice. Variables are placed when they are restored, before the nodes colocated with them
 * (a train op's Apply*) are imported; the placer then keeps the whole group on the variable's
 * device, so that device must have kernels for the group's ops. The placer weighs every member
 * of a group that is in the graph when the group is placed (docs/c-api.md, "Placement"),
 * but this loader imports lazily, so at restore time the group's Apply* ops are only in the
 * GraphDef; hence the same rule is applied here over the GraphDef: the first device (in the
 * registry's order of preference) that has kernels for them all. */
static char *variable_device(const weft_saved_model_t *m, const Tensorflow__NodeDef *var) {
  if (var->device != NULL && *var->device != '\0') return NULL;
  GPtrArray *group = g_ptr_array_new();
  g_ptr_array_add(group, (gpointer)var);
  const Tensorflow__GraphDef *gd = m->meta->graph_def;
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    /* Ops Weft lacks (RestoreV2's Assigns are fine; SaveV2 is never colocated) say nothing. */
    if (nd != var && weft__op_registry_lookup(nd->op) && colocated_with(nd, var->name))
      g_ptr_array_add(group, (gpointer)nd);
  }
  char *pin = NULL;
  const char *first_type = NULL;
  for (int d = 0; d < weft__device_count(); d++) {
    const weft__device_t *dev = weft__device_at(d);
    if (first_type == NULL) first_type = dev->type;
    bool all = true;
    for (guint i = 0; i < group->len && all; i++) {
      const Tensorflow__NodeDef *nd = group->pdata[i];
      weft_attrs_t *attrs = type_attrs(nd);
      all = weft__kernel_exists(nd->op, dev->type, attrs);
      weft__attrs_free(attrs);
    }
    if (all) {
      if (strcmp(dev->type, first_type) != 0) pin = g_strdup_printf("/device:%s:*", dev->type);
      break;
    }
  }
  g_ptr_array_free(group, TRUE);
  return pin;
}

static const Tensorflow__AttrValue *node_attr(const Tensorflow__NodeDef *nd, const char *key) {
  for (size_t i = 0; i < nd->n_attr; i++) {
    if (nd->attr[i] && nd->attr[i]->key && strcmp(nd->attr[i]->key, key) == 0)
      return nd->attr[i]->value;
  }
  return NULL;
}

static bool has_resource_variables(const weft_saved_model_t *m) {
  const Tensorflow__GraphDef *gd = m->meta->graph_def;
  for (size_t i = 0; i < gd->n_node; i++)
    if (strcmp(gd->node[i]->op, "VarHandleOp") == 0) return true;
  return false;
}

/* The producer of input `in` past Identity nodes, and its output index; NULL when absent. */
static const Tensorflow__NodeDef *source_of(const weft_saved_model_t *m, const char *in, int *k) {
  for (int hops = 0; in != NULL && hops < 64; hops++) {
    char *node = NULL;
    if (*in == '^' || !split_tensor_name(in, &node, k)) return NULL;
    const Tensorflow__NodeDef *nd = g_hash_table_lookup(m->defs, node);
    g_free(node);
    if (nd == NULL || strcmp(nd->op, "Identity") != 0 || nd->n_input == 0) return nd;
    in = nd->input[0];
  }
  return NULL;
}

/* The checkpoint key a restore graph's AssignVariableOp writes: its value comes from output k of
 * a RestoreV2 whose tensor_names is a Const. NULL when the value comes from elsewhere. */
static const char *restored_key(const weft_saved_model_t *m, const Tensorflow__NodeDef *assign,
                                size_t *len) {
  int k = 0, kn = 0;
  const Tensorflow__NodeDef *restore = source_of(m, assign->input[1], &k);
  if (restore == NULL || strcmp(restore->op, "RestoreV2") != 0 || restore->n_input < 2) return NULL;
  const Tensorflow__NodeDef *names = source_of(m, restore->input[1], &kn);
  const Tensorflow__AttrValue *v = names ? node_attr(names, "value") : NULL;
  if (names == NULL || strcmp(names->op, "Const") != 0 || v == NULL || v->tensor == NULL ||
      k < 0 || (size_t)k >= v->tensor->n_string_val)
    return NULL;
  *len = v->tensor->string_val[k].len;
  return (const char *)v->tensor->string_val[k].data;
}

/* Resource variables (TF2 SavedModels) are restored as the saver's restore function says: each
 * of its AssignVariableOps writes a VarHandleOp's variable from a RestoreV2 output, whose key
 * ("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE") its tensor_names Const holds. The
 * values are read here and fed to the assigns, which run as one step. */
static weft_status_t *restore_resource_variables(weft_saved_model_t *m, const char *prefix) {
  const Tensorflow__SaverDef *sd = m->meta->saver_def;
  if (sd == NULL || sd->restore_op_name == NULL || *sd->restore_op_name == '\0') {
    return weft_status_new(WEFT_UNIMPLEMENTED, "SavedModel '%s': its graph has resource variables "
                           "but no saver restore op that says how to restore them", m->dir);
  }
  char *scope = g_strconcat(sd->restore_op_name, "/", NULL);
  weft_checkpoint_reader_t *reader = NULL;
  weft_status_t *st = weft_checkpoint_reader_open(prefix, &reader);
  if (st) weft_status_prefix(st, "SavedModel '%s': variables", m->dir);
  GPtrArray *feed_names = g_ptr_array_new();
  GPtrArray *feeds = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  GPtrArray *targets = g_ptr_array_new();
  const Tensorflow__GraphDef *gd = m->meta->graph_def;
  for (size_t i = 0; i < gd->n_node && !st; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (strcmp(nd->op, "AssignVariableOp") != 0 || !g_str_has_prefix(nd->name, scope) ||
        nd->n_input < 2)
      continue;
    size_t len = 0;
    const char *key_bytes = restored_key(m, nd, &len);
    if (key_bytes == NULL) continue;
    char *key = g_strndup(key_bytes, len);
    weft_tensor_t *value = NULL;
    st = weft_checkpoint_reader_read(reader, key, &value);
    if (st) {
      weft_status_prefix(st, "SavedModel '%s': restoring '%s'", m->dir, nd->name);
    } else {
      g_ptr_array_add(feed_names, nd->input[1]);
      g_ptr_array_add(feeds, value);
      g_ptr_array_add(targets, nd->name);
    }
    g_free(key);
  }
  if (!st && targets->len == 0) {
    st = weft_status_new(WEFT_UNIMPLEMENTED, "SavedModel '%s': its restore op '%s' assigns no "
                         "variable from a RestoreV2 of constant keys", m->dir,
                         sd->restore_op_name);
  }
  if (!st) {
    st = weft_saved_model_run(m, NULL, (const char *const *)feed_names->pdata,
                              (weft_tensor_t *const *)feeds->pdata, (int)feeds->len, NULL, NULL, 0,
                              (const char *const *)targets->pdata, (int)targets->len);
    if (st) weft_status_prefix(st, "SavedModel '%s': restoring variables", m->dir);
  }
  weft_checkpoint_reader_free(reader);
  g_ptr_array_free(feed_names, TRUE);
  g_ptr_array_free(feeds, TRUE);
  g_ptr_array_free(targets, TRUE);
  g_free(scope);
  return st;
}

/* Imports the variables the checkpoint holds and assigns them from it, the way TensorFlow runs
 * the saver's restore op at load. */
static weft_status_t *restore_variables(weft_saved_model_t *m) {
  char *prefix = g_build_filename(m->dir, "variables", "variables", NULL);
  char *index = g_strconcat(prefix, ".index", NULL);
  weft_status_t *st = NULL;
  if (!g_file_test(index, G_FILE_TEST_EXISTS)) {
    /* A model without variables may come without variables/; one with variables cannot run
     * without their values, and would otherwise fail later, at the first read ("uninitialized
     * value"), far from the cause. */
    const Tensorflow__GraphDef *graph = m->meta->graph_def;
    size_t n_vars = 0;
    const char *first = NULL;
    for (size_t i = 0; graph && i < graph->n_node; i++) {
      const char *op = graph->node[i]->op;
      if (strcmp(op, "VariableV2") != 0 && strcmp(op, "Variable") != 0 &&
          strcmp(op, "VarHandleOp") != 0)
        continue;
      if (!first) first = graph->node[i]->name;
      n_vars++;
    }
    if (n_vars > 0) {
      char *vars_dir = g_path_get_dirname(index);
      st = weft_status_new(WEFT_NOT_FOUND,
                           "SavedModel '%s': its graph has %zu variable%s ('%s'%s) but %s is "
                           "missing (%s), so their values cannot be restored",
                           m->dir, n_vars, n_vars == 1 ? "" : "s", first, n_vars > 1 ? ", ..." : "",
                           index,
                           g_file_test(vars_dir, G_FILE_TEST_IS_DIR)
                               ? "the variables/ folder has no variables.index"
                               : "the model has no variables/ folder");
      g_free(vars_dir);
    }
    goto out;
  }

  if (has_resource_variables(m)) {
    st = restore_resource_variables(m, prefix);
    goto out;
  }
  weft_checkpoint_reader_t *reader = NULL;
  st = weft_checkpoint_reader_open(prefix, &reader);
  if (st) {
    weft_status_prefix(st, "SavedModel '%s': variables", m->dir);
    goto out;
  }
  GPtrArray *vars = g_ptr_array_new();
  GPtrArray *names = g_ptr_array_new();
  const Tensorflow__GraphDef *gd = m->meta->graph_def;
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (strcmp(nd->op, "VariableV2") != 0 && strcmp(nd->op, "Variable") != 0) continue;
    if (!weft_checkpoint_reader_has(reader, nd->name)) continue;
    g_ptr_array_add(vars, (gpointer)nd);
    g_ptr_array_add(names, nd->name);
  }
  weft_checkpoint_reader_free(reader);
  /* Variables take no data inputs; a control input would pull in more than restoring needs. */
  Tensorflow__NodeDef *copies = g_new0(Tensorflow__NodeDef, vars->len + 1);
  const Tensorflow__NodeDef **ptrs = g_new0(const Tensorflow__NodeDef *, vars->len + 1);
  GPtrArray *pins = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < vars->len; i++) {
    copies[i] = *(const Tensorflow__NodeDef *)vars->pdata[i];
    copies[i].n_input = 0;
    copies[i].input = NULL;
    char *pin = variable_device(m, vars->pdata[i]);
    if (pin) {
      g_ptr_array_add(pins, pin);
      copies[i].device = pin;
    }
    ptrs[i] = &copies[i];
  }
  st = import_nodes(m, ptrs, vars->len);
  if (st) weft_status_prefix(st, "SavedModel '%s': importing its variables", m->dir);
  if (!st && vars->len) {
    weft_saver_t *saver = weft_saver_new(0);
    weft_saver_set_var_list(saver, (const char *const *)names->pdata, (int)names->len);
    st = weft_saver_restore(saver, m->session, m->graph, prefix);
    weft_saver_free(saver);
    if (st) weft_status_prefix(st, "SavedModel '%s': restoring variables", m->dir);
  }
  g_ptr_array_free(pins, TRUE);
  g_free(ptrs);
  g_free(copies);
  g_ptr_array_free(names, TRUE);
  g_ptr_array_free(vars, TRUE);
out:
  g_free(index);
  g_free(prefix);
  return st;
}

/* Runs the model's init op after the restore, as TensorFlow's loader does (RunInitOp): the node
 * a TF2 SavedModel names in its "__saved_model_init_op" signature's output of that key (a NoOp
 * over table initialisers and the like). TF1's main_op/legacy_init_op collections are not read:
 * Weft's MetaGraphDef keeps no collections. */
static weft_status_t *run_init_op(weft_saved_model_t *m) {
  static const char *const key = "__saved_model_init_op";
  const Tensorflow__SignatureDef *sig = NULL;
  for (size_t i = 0; i < m->meta->n_signature_def && !sig; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = m->meta->signature_def[i];
    if (e && e->key && strcmp(e->key, key) == 0) sig = e->value;
  }
  const char *name = NULL;
  for (size_t k = 0; sig && k < sig->n_outputs && !name; k++) {
    const Tensorflow__SignatureDef__OutputsEntry *o = sig->outputs[k];
    if (o && o->key && strcmp(o->key, key) == 0 && o->value && o->value->name)
      name = o->value->name;
  }
  if (name == NULL || *name == '\0') return NULL;
  /* A node, though the field holds a tensor name: "NoOp" or "init:0" alike. */
  char *node = g_strdup(name[0] == '^' ? name + 1 : name);
  char *colon = strrchr(node, ':');
  if (colon) *colon = '\0';
  weft_status_t *st = NULL;
  if (!g_hash_table_contains(m->defs, node)) {
    st = weft_status_new(WEFT_NOT_FOUND, "SavedModel '%s': its init op '%s' (signature %s) is "
                         "not a node of the graph", m->dir, node, key);
  } else {
    const char *target = node;
    st = weft_saved_model_run(m, NULL, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
    if (st) weft_status_prefix(st, "SavedModel '%s': running its init op '%s'", m->dir, node);
  }
  g_free(node);
  return st;
}

weft_status_t *weft_saved_model_load(const char *dir, const char *tags,
                                     const weft_session_options_t *opts,
                                     weft_saved_model_t **out) {
  if (out) *out = NULL;
  if (dir == NULL || *dir == '\0' || out == NULL) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_saved_model_load needs a folder and out");
  }
  weft_plugins_load_default();
  weft_saved_model_t *m = g_new0(weft_saved_model_t, 1);
  m->dir = g_strdup(dir);
  m->pb_path = g_build_filename(dir, "saved_model.pb", NULL);
  m->defs = g_hash_table_new(g_str_hash, g_str_equal);
  m->sig_keys = g_ptr_array_new();
  m->standins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  weft_status_t *st = read_proto(m);
  if (!st) st = pick_meta_graph(m, tags);
  if (!st) st = inline_functions(m);
  if (!st) st = index_graph(m);
  if (!st) {
    m->graph = weft_graph_new();
    weft_session_options_t *own = opts ? NULL : weft_session_options_new();
    m->session = weft_session_new(m->graph, opts ? opts : own, &st);
    weft_session_options_free(own);
    if (!st && m->session == NULL) {
      st = weft_status_new(WEFT_INTERNAL, "SavedModel '%s': no session", dir);
    }
  }
  if (!st) st = restore_variables(m);
  if (!st) st = run_init_op(m);
  if (st) {
    weft_saved_model_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

void weft_saved_model_free(weft_saved_model_t *m) {
  if (m == NULL) return;
  weft_session_free(m->session); /* before the graph it borrows */
  weft_graph_free(m->graph);
  g_hash_table_destroy(m->standins);
  g_ptr_array_free(m->sig_keys, TRUE);
  g_hash_table_destroy(m->defs);
  if (m->proto) tensorflow__saved_model__free_unpacked(m->proto, NULL);
  g_free(m->pb_path);
  g_free(m->dir);
  g_free(m);
}

weft_graph_t *weft_saved_model_graph(const weft_saved_model_t *m) { return m ? m->graph : NULL; }
weft_session_t *weft_saved_model_session(const weft_saved_model_t *m) {
  return m ? m->session : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Signatures */

int weft_saved_model_num_signatures(const weft_saved_model_t *m) {
  return m ? (int)m->sig_keys->len : 0;
}

const char *weft_saved_model_signature_key(const weft_saved_model_t *m, int index) {
  if (m == NULL || index < 0 || index >= (int)m->sig_keys->len) return NULL;
  return m->sig_keys->pdata[index];
}

static weft_status_t *find_signature(const weft_saved_model_t *m, const char *key,
                                     const Tensorflow__SignatureDef **out) {
  for (size_t i = 0; key && i < m->meta->n_signature_def; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = m->meta->signature_def[i];
    if (e && e->key && strcmp(e->key, key) == 0 && e->value) {
      *out = e->value;
      return NULL;
    }
  }
  GString *keys = g_string_new("");
  for (guint i = 0; i < m->sig_keys->len; i++)
    g_string_append_printf(keys, "%s'%s'", i ? ", " : "", (char *)m->sig_keys->pdata[i]);
  weft_status_t *st = weft_status_new(WEFT_NOT_FOUND, "SavedModel '%s' has no signature '%s'; "
                                      "its signatures are %s", m->dir, key ? key : "(null)",
                                      keys->len ? keys->str : "(none)");
  g_string_free(keys, TRUE);
  return st;
}

static gint cmp_input_entry(gconstpointer a, gconstpointer b) {
  const Tensorflow__SignatureDef__InputsEntry *x =
      *(Tensorflow__SignatureDef__InputsEntry *const *)a;
  const Tensorflow__SignatureDef__InputsEntry *y =
      *(Tensorflow__SignatureDef__InputsEntry *const *)b;
  return g_strcmp0(x->key, y->key);
}

static gint cmp_output_entry(gconstpointer a, gconstpointer b) {
  const Tensorflow__SignatureDef__OutputsEntry *x =
      *(Tensorflow__SignatureDef__OutputsEntry *const *)a;
  const Tensorflow__SignatureDef__OutputsEntry *y =
      *(Tensorflow__SignatureDef__OutputsEntry *const *)b;
  return g_strcmp0(x->key, y->key);
}

weft_status_t *weft_saved_model_signature(const weft_saved_model_t *m, const char *key,
                                          int *n_inputs, int *n_outputs, const char **method) {
  if (m == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no SavedModel");
  const Tensorflow__SignatureDef *sig = NULL;
  weft_status_t *st = find_signature(m, key, &sig);
  if (st) return st;
  if (n_inputs) *n_inputs = (int)sig->n_inputs;
  if (n_outputs) *n_outputs = (int)sig->n_outputs;
  if (method) *method = sig->method_name != NULL && *sig->method_name ? sig->method_name : NULL;
  return NULL;
}

static void fill_info(const char *key, const Tensorflow__TensorInfo *ti,
                      weft_saved_model_tensor_info_t *out) {
  memset(out, 0, sizeof *out);
  out->key = key;
  out->name = ti && ti->name ? ti->name : "";
  out->dtype = ti ? weft__dtype_base((int)ti->dtype) : WEFT_DT_INVALID;
  weft__shape_t shape = {.rank = -1};
  weft_status_t *st = ti && ti->tensor_shape ? weft__shape_from_proto(ti->tensor_shape, &shape)
                                             : NULL;
  /* A signature's shape is only advice: one that does not parse is reported as unknown. */
  if (st != NULL || ti == NULL || ti->tensor_shape == NULL) shape.rank = -1;
  weft_status_free(st);
  out->rank = shape.rank;
  for (int d = 0; d < shape.rank && d < WEFT_MAX_RANK; d++) out->dims[d] = shape.dims[d];
}

static weft_status_t *signature_tensor(const weft_saved_model_t *m, const char *key, int index,
                                       bool input, weft_saved_model_tensor_info_t *out) {
  if (m == NULL || out == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no SavedModel");
  const Tensorflow__SignatureDef *sig = NULL;
  weft_status_t *st = find_signature(m, key, &sig);
  if (st) return st;
  size_t n = input ? sig->n_inputs : sig->n_outputs;
  if (index < 0 || (size_t)index >= n) {
    return weft_status_new(WEFT_NOT_FOUND, "signature '%s' of SavedModel '%s' has %zu %s; "
                           "there is no #%d", key, m->dir, n, input ? "inputs" : "outputs",
                           index);
  }
  GPtrArray *v = g_ptr_array_new();
  for (size_t i = 0; i < n; i++) g_ptr_array_add(v, input ? (gpointer)sig->inputs[i]
                                                          : (gpointer)sig->outputs[i]);
  g_ptr_array_sort(v, input ? cmp_input_entry : cmp_output_entry);
  if (input) {
    const Tensorflow__SignatureDef__InputsEntry *e = v->pdata[index];
    fill_info(e->key, e->value, out);
  } else {
    const Tensorflow__SignatureDef__OutputsEntry *e = v->pdata[index];
    fill_info(e->key, e->value, out);
  }
  g_ptr_array_free(v, TRUE);
  return NULL;
}

weft_status_t *weft_saved_model_signature_input(const weft_saved_model_t *m, const char *key,
                                                int index, weft_saved_model_tensor_info_t *out) {
  return signature_tensor(m, key, index, true, out);
}

weft_status_t *weft_saved_model_signature_output(const weft_saved_model_t *m, const char *key,
                                                 int index, weft_saved_model_tensor_info_t *out) {
  return signature_tensor(m, key, index, false, out);
}

/* The TensorInfo a name stands for in signature `sig` (inputs first when `input`), or NULL. */
static const Tensorflow__TensorInfo *sig_lookup(const Tensorflow__SignatureDef *sig,
                                                const char *name, bool input) {
  if (sig == NULL) return NULL;
  for (int pass = 0; pass < 2; pass++) {
    bool ins = (pass == 0) == input;
    size_t n = ins ? sig->n_inputs : sig->n_outputs;
    for (size_t i = 0; i < n; i++) {
      const char *k = ins ? sig->inputs[i]->key : sig->outputs[i]->key;
      const Tensorflow__TensorInfo *v = ins ? sig->inputs[i]->value : sig->outputs[i]->value;
      if (k && strcmp(k, name) == 0 && v) return v;
    }
  }
  return NULL;
}

/* A feed or fetch name to a tensor of the graph: a signature key, else the name itself. NOT_FOUND
 * naming it when the graph has no such node. The caller g_free()s *node. */
static weft_status_t *resolve(const weft_saved_model_t *m, const Tensorflow__SignatureDef *sig,
                              const char *signature, const char *name, bool input, char **node,
                              int *index) {
  const Tensorflow__TensorInfo *ti = name ? sig_lookup(sig, name, input) : NULL;
  const char *tensor = ti && ti->name && *ti->name ? ti->name : name;
  if (!split_tensor_name(tensor, node, index)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s': '%s' is not a tensor name",
                           m->dir, tensor ? tensor : "(null)");
  }
  if (!g_hash_table_contains(m->defs, *node)) {
    weft_status_t *st = weft_status_new(
        WEFT_NOT_FOUND, "SavedModel '%s' has no tensor '%s'%s%s%s", m->dir, tensor,
        signature ? " (nor has signature '" : "", signature ? signature : "",
        signature ? (input ? "' such an input key)" : "' such an output key)") : "");
    g_free(*node);
    *node = NULL;
    return st;
  }
  return NULL;
}

weft_status_t *weft_saved_model_tensor_dtype(const weft_saved_model_t *m, const char *signature,
                                             const char *name, weft_dtype_t *dtype) {
  if (m == NULL || name == NULL || dtype == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_saved_model_tensor_dtype: no model/name");
  const Tensorflow__SignatureDef *sig = NULL;
  if (signature) {
    weft_status_t *st = find_signature(m, signature, &sig);
    if (st) return st;
  }
  const Tensorflow__TensorInfo *ti = sig_lookup(sig, name, true);
  if (ti && ti->dtype != 0) {
    *dtype = weft__dtype_base((int)ti->dtype);
    return NULL;
  }
  char *node = NULL;
  int index = 0;
  weft_status_t *st = resolve(m, sig, signature, name, true, &node, &index);
  if (st) return st;
  const Tensorflow__NodeDef *nd = g_hash_table_lookup(m->defs, node);
  const Tensorflow__AttrValue *a = node_attr(nd, "dtype");
  if (a == NULL || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE) a = node_attr(nd, "T");
  if (a == NULL || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s': node '%s' (%s) has no dtype or "
                         "T attribute to tell the dtype of '%s'", m->dir, node, nd->op, name);
  } else {
    *dtype = weft__dtype_base((int)a->type);
  }
  g_free(node);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Running */

typedef struct run_plan {
  weft_saved_model_t *m;
  GHashTable *fed;       /* "node:k" -> weft_tensor_t* (borrowed) */
  GHashTable *marked;    /* node name -> 1 */
  GQueue queue;          /* node names (borrowed from the proto) */
} run_plan_t;

/* A Placeholder that stands in for fed tensor `tensor` whose producer is not in the graph. */
static weft_status_t *ensure_standin(run_plan_t *p, const char *tensor, const char *node,
                                     int index) {
  if (g_hash_table_contains(p->m->standins, tensor)) return NULL;
  weft_tensor_t *value = g_hash_table_lookup(p->fed, tensor);
  char *name = g_strdup_printf("_weft_feed/%s/%d", node, index);
  weft_status_t *st = NULL;
  weft_op_builder_t *b = weft_op_new(p->m->graph, "Placeholder", name);
  weft_op_set_attr_type(b, "dtype", weft_tensor_dtype(value));
  weft_op_set_attr_shape(b, "shape", -1, NULL);
  weft_node_t *made = NULL;
  st = weft_op_finish(b, &made);
  if (st) {
    g_free(name);
    return weft_status_prefix(st, "SavedModel '%s': feeding '%s'", p->m->dir, tensor);
  }
  g_free(name);
  g_hash_table_insert(p->m->standins, g_strdup(tensor), g_strdup(weft_node_name(made)));
  return NULL;
}

static void push_node(run_plan_t *p, const char *name) {
  if (g_hash_table_contains(p->marked, name)) return;
  if (weft_graph_node(p->m->graph, name) != NULL) return; /* imported by an earlier run */
  g_hash_table_insert(p->marked, (gpointer)name, GINT_TO_POINTER(1));
  g_queue_push_tail(&p->queue, (gpointer)name);
}

/* Marks every node the run needs that is not imported yet, cutting at fed tensors. */
static weft_status_t *plan_closure(run_plan_t *p) {
  weft_status_t *st = NULL;
  while (!st && !g_queue_is_empty(&p->queue)) {
    const char *name = g_queue_pop_head(&p->queue);
    const Tensorflow__NodeDef *nd = g_hash_table_lookup(p->m->defs, name);
    if (nd == NULL) {
      return weft_status_new(WEFT_NOT_FOUND, "SavedModel '%s' has no node '%s'", p->m->dir, name);
    }
    if (weft__op_registry_lookup(nd->op) == NULL) {
      return weft_status_new(WEFT_UNIMPLEMENTED, "SavedModel '%s': node '%s' needs op '%s', "
                             "which Weft does not have (feed the tensors past it instead)",
                             p->m->dir, nd->name, nd->op);
    }
    for (size_t i = 0; i < nd->n_input && !st; i++) {
      const char *in = nd->input[i];
      if (in == NULL || *in == '\0') continue;
      if (*in == '^') {
        const char *src = in + 1;
        if (!g_hash_table_contains(p->m->defs, src)) {
          return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': node '%s' has control input "
                                 "'%s', which is not in the graph", p->m->dir, nd->name, in);
        }
        push_node(p, ((const Tensorflow__NodeDef *)g_hash_table_lookup(p->m->defs, src))->name);
        continue;
      }
      char *src = NULL;
      int k = 0;
      if (!split_tensor_name(in, &src, &k)) {
        return weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': node '%s' has a malformed input "
                               "'%s'", p->m->dir, nd->name, in);
      }
      const Tensorflow__NodeDef *sd = g_hash_table_lookup(p->m->defs, src);
      if (sd == NULL) {
        st = weft_status_new(WEFT_DATA_LOSS, "SavedModel '%s': node '%s' has input '%s', which "
                             "is not in the graph", p->m->dir, nd->name, in);
      } else {
        char *t = canonical_tensor(src, k);
        if (g_hash_table_contains(p->fed, t) && weft_graph_node(p->m->graph, src) == NULL) {
          st = ensure_standin(p, t, src, k);
        } else {
          push_node(p, sd->name);
        }
        g_free(t);
      }
      g_free(src);
    }
  }
  return st;
}

/* Copies of the marked NodeDefs in graph order, data inputs that are fed read from stand-ins. */
static weft_status_t *import_marked(run_plan_t *p) {
  const Tensorflow__GraphDef *gd = p->m->meta->graph_def;
  size_t n = g_hash_table_size(p->marked);
  Tensorflow__NodeDef *copies = g_new0(Tensorflow__NodeDef, n + 1);
  const Tensorflow__NodeDef **ptrs = g_new0(const Tensorflow__NodeDef *, n + 1);
  GPtrArray *strings = g_ptr_array_new_with_free_func(g_free);
  size_t at = 0;
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (!g_hash_table_contains(p->marked, nd->name)) continue;
    copies[at] = *nd;
    char **inputs = g_new0(char *, nd->n_input + 1);
    g_ptr_array_add(strings, inputs);
    for (size_t k = 0; k < nd->n_input; k++) {
      inputs[k] = nd->input[k];
      char *src = NULL;
      int idx = 0;
      if (!split_tensor_name(nd->input[k], &src, &idx)) continue;
      char *t = canonical_tensor(src, idx);
      const char *standin = g_hash_table_lookup(p->m->standins, t);
      if (standin && g_hash_table_contains(p->fed, t) &&
          !g_hash_table_contains(p->marked, src)) {
        inputs[k] = (char *)standin;
      }
      g_free(t);
      g_free(src);
    }
    copies[at].input = inputs;
    ptrs[at] = &copies[at];
    at++;
  }
  weft_status_t *st = import_nodes(p->m, ptrs, at);
  if (st) weft_status_prefix(st, "SavedModel '%s'", p->m->dir);
  g_ptr_array_free(strings, TRUE);
  g_free(ptrs);
  g_free(copies);
  return st;
}

weft_status_t *weft_saved_model_run(weft_saved_model_t *m, const char *signature,
                                    const char *const *feed_names, weft_tensor_t *const *feeds,
                                    int n_feeds, const char *const *fetch_names,
                                    weft_tensor_t **fetch_outputs, int n_fetches,
                                    const char *const *target_names, int n_targets) {
  if (m == NULL || n_feeds < 0 || n_fetches < 0 || n_targets < 0 ||
      (n_feeds && (!feed_names || !feeds)) || (n_fetches && (!fetch_names || !fetch_outputs)) ||
      (n_targets && !target_names)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_saved_model_run: bad arguments");
  }
  const Tensorflow__SignatureDef *sig = NULL;
  if (signature) {
    weft_status_t *st = find_signature(m, signature, &sig);
    if (st) return st;
  }
  run_plan_t p = {.m = m};
  p.fed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  p.marked = g_hash_table_new(g_str_hash, g_str_equal);
  g_queue_init(&p.queue);
  char **feed_t = g_new0(char *, n_feeds + 1);
  char **fetch_t = g_new0(char *, n_fetches + 1);
  const char **run_feed_names = g_new0(const char *, 2 * n_feeds + 1);
  weft_tensor_t **run_feeds = g_new0(weft_tensor_t *, 2 * n_feeds + 1);
  const char **run_fetch_names = g_new0(const char *, n_fetches + 1);
  int n_run_feeds = 0;
  GPtrArray *owned = g_ptr_array_new_with_free_func(g_free);
  weft_status_t *st = NULL;

  for (int i = 0; i < n_feeds && !st; i++) {
    char *node = NULL;
    int k = 0;
    if (feeds[i] == NULL) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s': feed '%s' has no tensor",
                           m->dir, feed_names[i]);
      break;
    }
    st = resolve(m, sig, signature, feed_names[i], true, &node, &k);
    if (st) break;
    feed_t[i] = canonical_tensor(node, k);
    g_hash_table_insert(p.fed, g_strdup(feed_t[i]), feeds[i]);
    g_free(node);
  }
  for (int i = 0; i < n_fetches && !st; i++) {
    char *node = NULL;
    int k = 0;
    st = resolve(m, sig, signature, fetch_names[i], false, &node, &k);
    if (st) break;
    fetch_t[i] = canonical_tensor(node, k);
    if (g_hash_table_contains(p.fed, fetch_t[i]) && weft_graph_node(m->graph, node) == NULL) {
      st = ensure_standin(&p, fetch_t[i], node, k);
    } else {
      push_node(&p, ((const Tensorflow__NodeDef *)g_hash_table_lookup(m->defs, node))->name);
    }
    g_free(node);
  }
  for (int i = 0; i < n_targets && !st; i++) {
    const char *t = target_names[i] && target_names[i][0] == '^' ? target_names[i] + 1
                                                                 : target_names[i];
    const Tensorflow__NodeDef *nd = t ? g_hash_table_lookup(m->defs, t) : NULL;
    if (nd == NULL) {
      st = weft_status_new(WEFT_NOT_FOUND, "SavedModel '%s' has no node '%s' to run as a target",
                           m->dir, t ? t : "(null)");
      break;
    }
    push_node(&p, nd->name);
  }
  if (!st) st = plan_closure(&p);
  if (!st) st = import_marked(&p);

  /* Feeds go to the stand-in and, when the real producer is in the graph, to it as well. */
  for (int i = 0; i < n_feeds && !st; i++) {
    const char *standin = g_hash_table_lookup(m->standins, feed_t[i]);
    char *node = NULL;
    int k = 0;
    split_tensor_name(feed_t[i], &node, &k);
    if (standin) {
      char *sname = g_strdup_printf("%s:0", standin);
      g_ptr_array_add(owned, sname);
      run_feed_names[n_run_feeds] = sname;
      run_feeds[n_run_feeds++] = feeds[i];
    }
    if (weft_graph_node(m->graph, node) != NULL) {
      run_feed_names[n_run_feeds] = feed_t[i];
      run_feeds[n_run_feeds++] = feeds[i];
    }
    g_free(node);
  }
  for (int i = 0; i < n_fetches && !st; i++) {
    const char *standin = g_hash_table_lookup(m->standins, fetch_t[i]);
    if (standin && g_hash_table_contains(p.fed, fetch_t[i])) {
      char *sname = g_strdup_printf("%s:0", standin);
      g_ptr_array_add(owned, sname);
      run_fetch_names[i] = sname;
    } else {
      run_fetch_names[i] = fetch_t[i];
    }
  }
  if (!st) {
    const char **targets = g_new0(const char *, n_targets + 1);
    for (int i = 0; i < n_targets; i++)
      targets[i] = target_names[i][0] == '^' ? target_names[i] + 1 : target_names[i];
    st = weft_session_run(m->session, run_feed_names, run_feeds, n_run_feeds, run_fetch_names,
                          fetch_outputs, n_fetches, targets, n_targets);
    g_free(targets);
    if (st && strstr(weft_status_message(st), "_weft_feed/") != NULL) {
      weft_status_prefix(st, "SavedModel '%s': a tensor fed in an earlier run is read through a "
                         "stand-in placeholder by the nodes imported then; feed it again", m->dir);
    }
  }

  g_ptr_array_free(owned, TRUE);
  g_free(run_fetch_names);
  g_free(run_feeds);
  g_free(run_feed_names);
  for (int i = 0; i < n_fetches; i++) g_free(fetch_t[i]);
  g_free(fetch_t);
  for (int i = 0; i < n_feeds; i++) g_free(feed_t[i]);
  g_free(feed_t);
  g_queue_clear(&p.queue);
  g_hash_table_destroy(p.marked);
  g_hash_table_destroy(p.fed);
  return st;
}

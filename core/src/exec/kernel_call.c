/* The cold halves of running a node (kernel_call.h): fetching a value to host and step stats. */
#include "kernel_call.h"

weft_status_t *weft__fetch_to_host(const weft__value_t *v, const weft_node_t *node,
                                   weft_tensor_t **out) {
  weft_tensor_t *t = NULL;
  if (v->ref) {
    g_rec_mutex_lock(&v->ref->lock);
    if (v->ref->value) t = weft_tensor_ref(v->ref->value);
    g_rec_mutex_unlock(&v->ref->lock);
    if (!t) {
      return weft_status_new(WEFT_FAILED_PRECONDITION,
                             "Attempting to use uninitialized value %s (fetched from '%s')",
                             v->ref->name, node->name);
    }
  } else {
    t = weft_tensor_ref(v->tensor);
  }
  weft_tensor_t *host = NULL;
  weft_status_t *st = weft__tensor_is_host(t) ? NULL : weft__tensor_to_device(t, NULL, &host);
  if (st) {
    weft_tensor_unref(t);
    return weft_status_prefix(st, "Fetching output of '%s'", node->name);
  }
  if (host) {
    weft_tensor_unref(t);
    t = host;
  }
  *out = t;
  return NULL;
}

void weft__record_node_stats(weft_run_metadata_t *stats, const weft_node_t *node,
                             const char *device, gint64 start_real, gint64 start_mono,
                             const weft__value_t *outs) {
  gint64 dur = g_get_monotonic_time() - start_mono;
  guint64 bytes = 0;
  for (int o = 0; o < node->n_outputs; o++)
    if (outs[o].tensor) bytes += weft_tensor_nbytes(outs[o].tensor);
  GString *inputs = g_string_new(NULL);
  for (int i = 0; i < node->n_inputs; i++) {
    const weft__edge_t *e = &node->inputs[i];
    g_string_append_printf(inputs, "%s%s:%d", inputs->len ? ", " : "", e->src->name,
                           e->src_index);
  }
  for (guint c = 0; c < node->control_inputs->len; c++) {
    const weft_node_t *src = node->control_inputs->pdata[c];
    g_string_append_printf(inputs, "%s^%s", inputs->len ? ", " : "", src->name);
  }
  /* A fused chain (exec/fuse.c) says which nodes it ran: "_FusedElementwise(a;b;c)". */
  char *op = NULL;
  const weft__attr_value_t *fused = weft__attrs_get(node->attrs, "fused_nodes");
  if (fused && fused->kind == WEFT_ATTR_STRING && strcmp(node->op_name, "_FusedElementwise") == 0)
    op = g_strdup_printf("%s(%s)", node->op_name, fused->u.s.data);
  weft_node_stats_t rec = {node->name, op ? op : node->op_name, device, inputs->str,
                           start_real, dur, bytes, (uint64_t)(uintptr_t)g_thread_self()};
  weft__run_metadata_add(stats, &rec);
  g_free(op);
  g_string_free(inputs, TRUE);
}

void weft__plan_fetch_sources(const weft__executor_params_t *p, GHashTable *index_of,
                              int **out_from_feed, int **out_source) {
  int n = p->n_fetches > 0 ? p->n_fetches : 1;
  int *from_feed = g_new(int, n), *source = g_new(int, n);
  for (int f = 0; f < p->n_fetches; f++) {
    from_feed[f] = -1;
    source[f] = -1;
    for (int d = 0; d < p->n_feeds; d++) {
      if (p->feeds[d].node == p->fetches[f].node && p->feeds[d].index == p->fetches[f].index) {
        from_feed[f] = d;
        break;
      }
    }
    if (from_feed[f] < 0)
      source[f] = GPOINTER_TO_INT(g_hash_table_lookup(index_of, p->fetches[f].node)) - 1;
  }
  *out_from_feed = from_feed;
  *out_source = source;
}

/* Traced steps across tasks: a worker sends its partition's node records in RunGraph's response
 * as a StepStats message, and the master forwards every task's records in RunStep's response. */
#include "distributed_internal.h"

Weft__StepStats *weft__step_stats_to_msg(const weft_run_metadata_t *meta) {
  Weft__StepStats *msg = g_new0(Weft__StepStats, 1);
  weft__step_stats__init(msg);
  int n = weft_run_metadata_num_node_stats(meta);
  msg->n_node = (size_t)n;
  msg->node = g_new0(Weft__NodeExecStats *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    Weft__NodeExecStats *e = g_new0(Weft__NodeExecStats, 1);
    weft__node_exec_stats__init(e);
    /* The strings stay owned by meta, which outlives the message (it is packed at once). */
    e->node_name = (char *)r->node_name;
    e->op = (char *)r->op;
    e->device = (char *)r->device;
    /* Inputs travel as one joined string in a repeated field of one element: the reader joins
     * them the same way, and a list nobody splits is not worth building. */
    e->n_input = r->inputs[0] ? 1 : 0;
    e->input = g_new0(char *, 1);
    e->input[0] = (char *)r->inputs;
    e->start_us = r->start_us;
    e->duration_us = r->duration_us;
    e->output_bytes = r->output_bytes;
    e->thread_id = r->thread_id;
    msg->node[k] = e;
  }
  return msg;
}

void weft__step_stats_msg_free(Weft__StepStats *msg) {
  if (!msg) return;
  for (size_t k = 0; k < msg->n_node; k++) {
    g_free(msg->node[k]->input);
    g_free(msg->node[k]);
  }
  g_free(msg->node);
  g_free(msg);
}

void weft__step_stats_from_msg(weft_run_metadata_t *meta, const Weft__StepStats *msg) {
  if (!meta || !msg) return;
  for (size_t k = 0; k < msg->n_node; k++) {
    const Weft__NodeExecStats *e = msg->node[k];
    if (!e) continue;
    char *inputs = NULL;
    if (e->n_input > 0) {
      GString *joined = g_string_new(NULL);
      for (size_t i = 0; i < e->n_input; i++)
        g_string_append_printf(joined, "%s%s", i ? ", " : "", e->input[i] ? e->input[i] : "");
      inputs = g_string_free(joined, FALSE);
    }
    weft_node_stats_t rec = {e->node_name, e->op, e->device, inputs ? inputs : "",
                             e->start_us, e->duration_us, e->output_bytes, e->thread_id};
    weft__run_metadata_add(meta, &rec);
    g_free(inputs);
  }
}

/* The host function table (weft_host_t) the core hands to every plugin: the graph layer's part
 * (weft__graph_host: logging, statuses, attribute getters, the shape-inference context) and the
 * kernel context's (inputs, outputs, scratch, parallel-for, variables and references), which the
 * exec layer owns and fills (exec/kernel_host.c). */
#include "plugin_internal.h"

static void (*fill_kernel_entries)(weft_host_t *table);

void weft__host_set_kernel_entries(void (*fill)(weft_host_t *table)) { fill_kernel_entries = fill; }

static weft_host_t host_table;

static gpointer fill_host_table(gpointer unused) {
  (void)unused;
  host_table = *weft__graph_host();
  if (fill_kernel_entries) fill_kernel_entries(&host_table);
  return NULL;
}

const weft_host_t *weft__host(void) {
  static GOnce once = G_ONCE_INIT;
  g_once(&once, fill_host_table, NULL);
  return &host_table;
}

/* cluster_from.h: the scheduler flags weftd and weft-train share (--cluster-from slurm|tf_config,
 * --ps, --port-base; docs/operations.md, "Launching with a scheduler"): their option entries and
 * the check that they make sense together. Header-only, as tool_help.h. */
#ifndef WEFT_CLUSTER_FROM_H
#define WEFT_CLUSTER_FROM_H

#include <glib.h>
#include <stdbool.h>
#include <string.h>

typedef struct cluster_from_flags {
  char *source;            /* NULL, "slurm" or "tf_config" */
  int ps_tasks, port_base; /* with slurm: ps tasks of the step, a node's first port */
} cluster_from_flags_t;

#define CLUSTER_FROM_DEFAULTS {.source = NULL, .ps_tasks = 1, .port_base = 2222}

#define CLUSTER_FROM_OPTION_ENTRIES(c)                                                          \
  {"cluster-from", 0, 0, G_OPTION_ARG_STRING, &(c).source,                                      \
   "the cluster and this task from a scheduler: 'slurm' (srun's environment) or 'tf_config' "   \
   "(the TF_CONFIG variable, as Kubeflow's TFJob sets it)", "SOURCE"},                          \
      {"ps", 0, 0, G_OPTION_ARG_INT, &(c).ps_tasks,                                             \
       "with --cluster-from slurm: how many of the step's tasks are ps (1); the rest are "     \
       "workers", "N"},                                                                         \
      {"port-base", 0, 0, G_OPTION_ARG_INT, &(c).port_base,                                     \
       "with --cluster-from slurm: the port of a node's first task; its next tasks take the "  \
       "next ports (2222)", "PORT"}

static inline bool cluster_from_slurm(const cluster_from_flags_t *c) {
  return c->source && strcmp(c->source, "slurm") == 0;
}

/* A usage error's message, or NULL when the flags go together. */
static inline const char *cluster_from_check(const cluster_from_flags_t *c, bool local) {
  if (c->source && !cluster_from_slurm(c) && strcmp(c->source, "tf_config") != 0)
    return "--cluster-from must be 'slurm' or 'tf_config'";
  if ((c->ps_tasks != 1 || c->port_base != 2222) && !cluster_from_slurm(c))
    return "--ps and --port-base go with --cluster-from slurm";
  if (local && c->source) return "--local goes without --cluster-from";
  return NULL;
}

#endif /* WEFT_CLUSTER_FROM_H */

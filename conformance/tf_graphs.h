/* tf_graphs.h: weft-conformance --tf-graphs, the runner of saved TensorFlow graphs with
 * TensorFlow's own answers (tf_graphs.c). */
#ifndef WEFT_CONFORMANCE_TF_GRAPHS_H
#define WEFT_CONFORMANCE_TF_GRAPHS_H

#include <glib.h>
#include <stdbool.h>

typedef struct {
  const char *dir;            /* the corpus folder: every folder below it with frozen_model.pb */
  GPtrArray *case_filter;     /* globs over "family/case" paths; NULL: all */
  const char *json;           /* one JSON record per graph, or NULL */
  const char *expect_passing; /* graphs that must pass (a regression otherwise), or NULL */
  const char *write_passing;  /* where to write the graphs that passed, or NULL */
  bool verbose;               /* a line per graph, not only the failures and errors */
} cf_tf_graphs_options_t;

/* Runs the graphs and prints the per-graph lines, the per-family table, the ops that blocked
 * graphs and the summary line. Returns the number of wrong answers plus regressions (0: all
 * good), or -1 with *error set when the folder cannot be run (missing, no graph, a --case that
 * matches nothing, an unreadable or unwritable list file). */
int cf_tf_graphs_run(const cf_tf_graphs_options_t *options, GError **error);

#endif

/* graph_helpers.c: (being written) */

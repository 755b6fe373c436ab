/* graph.c: (being written) */

/* op_def.c: (being written) */

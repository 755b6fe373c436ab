/* ops_random.c: (being written) */

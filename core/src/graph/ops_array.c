/* ops_array.c: (being written) */

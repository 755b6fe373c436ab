/* ops_math.c: (being written) */

/* attrs.c: (being written) */

/* tensor.c: (being written) */

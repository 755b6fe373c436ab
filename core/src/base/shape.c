/* shape.c: (being written) */

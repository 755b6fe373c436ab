/* weft.c: (being written) */

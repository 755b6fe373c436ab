/* status.c: (being written) */

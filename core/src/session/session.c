/* session.c: (being written) */

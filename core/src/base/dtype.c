/* dtype.c: (being written) */

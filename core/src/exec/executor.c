/* executor.c: (being written) */

/* host.c: (being written) */

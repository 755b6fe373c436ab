/* placer.c: (being written) */

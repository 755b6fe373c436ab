/* loader.c: (being written) */

/* graphdef.c: (being written) */

/* session_options.c: (being written) */

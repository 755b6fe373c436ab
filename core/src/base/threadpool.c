/* threadpool.c: (being written) */

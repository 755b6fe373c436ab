/* log.c: (being written) */

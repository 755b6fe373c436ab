/* device_spec.c: (being written) */

/* cpu_plugin.c: (being written) */

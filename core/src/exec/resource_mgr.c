/* resource_mgr.c: (being written) */

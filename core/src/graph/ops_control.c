/* ops_control.c: (being written) */

/* ops_state.c: (being written) */

/* ops_nn.c: (being written) */

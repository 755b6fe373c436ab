/* broken plugin unknown_op_kernel (being written) */
int weft_broken_placeholder_unknown_op_kernel(void); int weft_broken_placeholder_unknown_op_kernel(void) { return 0; }

/* broken plugin init_fails (being written) */
int weft_broken_placeholder_init_fails(void); int weft_broken_placeholder_init_fails(void) { return 0; }

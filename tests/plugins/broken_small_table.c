/* broken plugin small_table (being written) */
int weft_broken_placeholder_small_table(void); int weft_broken_placeholder_small_table(void) { return 0; }

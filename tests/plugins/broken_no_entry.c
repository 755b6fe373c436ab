/* broken plugin no_entry (being written) */
int weft_broken_placeholder_no_entry(void); int weft_broken_placeholder_no_entry(void) { return 0; }

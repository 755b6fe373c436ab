/* broken plugin bad_major (being written) */
int weft_broken_placeholder_bad_major(void); int weft_broken_placeholder_bad_major(void) { return 0; }

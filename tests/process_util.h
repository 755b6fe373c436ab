/* Helpers for tests that run real server processes: free loopback ports, children that die with
 * the test, and reading their output a line at a time with a deadline. */
#ifndef WEFT_TEST_PROCESS_UTIL_H
#define WEFT_TEST_PROCESS_UTIL_H

#include <glib.h>

/* A loopback TCP port that was free a moment ago. */
int free_port(void);
/* n different loopback TCP ports that were free a moment ago (all are held at once while they
 * are chosen, so none repeats). */
void free_ports(int n, int *ports);
/* A GSpawnChildSetupFunc: the child gets SIGKILL when the test process dies. */
void die_with_parent(gpointer unused);
/* One line of fd without its newline, waiting at most timeout_ms; NULL on timeout or end of
 * file. The caller g_free()s it. */
char *read_line(int fd, int timeout_ms);

#endif /* WEFT_TEST_PROCESS_UTIL_H */

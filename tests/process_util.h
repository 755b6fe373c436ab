/* Helpers for tests that run real processes: free loopback ports, children that die with the
 * test, reading their output a line at a time with a deadline, and running a program to its end. */
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

/* Waits until process pid is stopped (SIGSTOP: state T in /proc/PID/stat), at most timeout_ms;
 * false on timeout or when it is gone. A process that says it will stop itself (weft-train's
 * --pause_at_step) may not have yet: a SIGCONT sent before it stops is lost, and it stops for
 * good. */
gboolean wait_stopped(GPid pid, int timeout_ms);

/* What a program run to its end printed, and its exit code. */
typedef struct run_result {
  int exit_code;
  char *out;
  char *err;
} run_result_t;
/* Runs `path` with args (NULL-terminated) and env overrides "NAME=VALUE" (NULL-terminated, may
 * be NULL) and waits for it; asserts it was spawned and exited normally. The caller frees the
 * result with run_result_clear. */
run_result_t run_program(const char *path, const char *const *args, const char *const *env);
void run_result_clear(run_result_t *r);

#endif /* WEFT_TEST_PROCESS_UTIL_H */

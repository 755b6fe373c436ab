/* Helpers for tests that run real processes: free loopback ports, children that die with the
 * test, reading their output a line at a time with a deadline, and running a program to its end. */
#ifndef WEFT_TEST_PROCESS_UTIL_H
#define WEFT_TEST_PROCESS_UTIL_H

#include <glib.h>
#include <json-glib/json-glib.h>

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

/* A child whose stdout and stderr come through one pipe, read a line at a time into log. */
typedef struct proc {
  GPid pid;
  int out;
  GString *log;
} proc_t;
/* Starts the command line (split as a shell would, no shell run) with stderr joined to stdout,
 * killed when the test dies; asserts it started. flags: more GSpawnFlags (G_SPAWN_SEARCH_PATH).
 * The caller ends it with proc_wait_exit or its own kill and waitpid, then frees log. */
proc_t proc_spawn(const char *cmdline, GSpawnFlags flags);
/* Reads until a line containing needle (NULL: to the end of output), at most timeout_ms; returns
 * that line (g_free) or NULL. Everything read is kept in p->log. */
char *proc_read_until(proc_t *p, const char *needle, int timeout_ms);
/* Reads the rest (at most timeout_ms), waits up to 10 s more for the exit, then SIGKILL; closes
 * the pipe. Returns the exit code, or 128 + the signal that ended it. */
int proc_wait_exit(proc_t *p, int timeout_ms);
/* The last line of p->log that starts with '{' (a weft-train worker's result), parsed; the
 * test fails when there is none. The object belongs to *parser (g_object_unref it). */
JsonObject *proc_final_json(proc_t *p, JsonParser **parser);
/* How many weft shared-memory segments (memfds "weft-...") process pid holds. */
int count_shm_segments(GPid pid);

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

/* A new folder under the temporary directory named from `pattern` ("weft-x-XXXXXX"); g_free. */
char *test_tmpdir(const char *pattern);
/* Removes `path` and everything below it. */
void test_rm_rf(const char *path);

#endif /* WEFT_TEST_PROCESS_UTIL_H */

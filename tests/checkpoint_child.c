/* A child process for tests/test_faults.c: writes checkpoints of large tensors into a folder so
 * the test can kill it in the middle of a write or let it run out of disk, then check what is
 * left. Usage:
 *   checkpoint_child DIR loop MIB   writes DIR/ckpt-0, ckpt-1, ... (one MIB-MiB float tensor
 *                                   "t" each) forever, printing "writing N" before and "saved N"
 *                                   after each (once the state file names it)
 *   checkpoint_child DIR full MIB   writes DIR/ckpt-0 (1 MiB), prints "saved 0", then tries
 *                                   DIR/ckpt-1 of MIB MiB and prints "error CODE MESSAGE" or
 *                                   "saved 1". With FSIZE_LIMIT=BYTES in the environment the
 *                                   second write runs under RLIMIT_FSIZE (no tmpfs needed).
 * Element k of checkpoint N holds N * 1000003 + k (as a float bit pattern: an int32), so the
 * test can check every byte it restores. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <glib.h>

#include "weft/weft.h"

static weft_status_t *save(const char *dir, int n, int64_t mib, char ***all) {
  int64_t elements = mib * 1024 * 256;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 1, &elements);
  int32_t *v = weft_tensor_data(t);
  for (int64_t k = 0; k < elements; k++) v[k] = (int32_t)(n * 1000003 + k);
  char *prefix = g_strdup_printf("%s/ckpt-%d", dir, n);
  weft_checkpoint_writer_t *w = NULL;
  weft_status_t *st = weft_checkpoint_writer_new(prefix, &w);
  if (!st) st = weft_checkpoint_writer_add(w, "t", t);
  if (!st) st = weft_checkpoint_writer_finish(w);
  weft_checkpoint_writer_free(w);
  weft_tensor_unref(t);
  if (!st) {
    /* The state file keeps the last two, as a Saver with max_to_keep 2 would. */
    int len = (int)g_strv_length(*all);
    char **next = g_new0(char *, 3);
    int m = 0;
    if (len > 0) next[m++] = g_strdup((*all)[len - 1]);
    next[m++] = g_strdup(prefix);
    g_strfreev(*all);
    *all = next;
    st = weft_checkpoint_state_write(dir, prefix, (const char *const *)next, m);
  }
  g_free(prefix);
  return st;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: checkpoint_child DIR loop|full MIB\n");
    return 2;
  }
  const char *dir = argv[1];
  int64_t mib = g_ascii_strtoll(argv[3], NULL, 10);
  char **all = g_new0(char *, 1);
  weft_status_t *st = NULL;
  if (strcmp(argv[2], "loop") == 0) {
    for (int n = 0; !st; n++) {
      printf("writing %d\n", n);
      fflush(stdout);
      st = save(dir, n, mib, &all);
      if (!st) printf("saved %d\n", n);
      fflush(stdout);
    }
  } else {
    st = save(dir, 0, 1, &all);
    if (!st) {
      printf("saved 0\n");
      fflush(stdout);
      const char *limit = g_getenv("FSIZE_LIMIT");
      if (limit) {
        /* Past the limit write() fails with EFBIG instead of the process getting SIGXFSZ. */
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)g_ascii_strtoll(limit, NULL, 10),
                            (rlim_t)g_ascii_strtoll(limit, NULL, 10)};
        setrlimit(RLIMIT_FSIZE, &rl);
      }
      st = save(dir, 1, mib, &all);
      if (!st) printf("saved 1\n");
    }
  }
  if (st) {
    printf("error %s %s\n", weft_code_name(weft_status_code(st)), weft_status_message(st));
    weft_status_free(st);
  }
  fflush(stdout);
  g_strfreev(all);
  return 0;
}

/* Attacks from a caller who holds the cluster token (or shares the host) against real weftd
 * processes and the parsers they run (docs/security.md, "Threat model"): forged shared-memory
 * offers, hostile Master and Worker requests (unknown handles, duplicated and missing names,
 * cycles, self-sends, huge shapes), and the same hostile bytes through `weft run --graph`. Each
 * must end in the documented error, never a crash, abort or hang, and the server keeps serving. */
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/distributed_internal.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Forged shared-memory offers */

/* A memfd named the way a receiver names its segments, `size` bytes long, with `seals`. */
static int forged_segment(const char *token, off_t size, unsigned seals) {
  char *name = g_strdup_printf("weft-%s", token);
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  g_free(name);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(ftruncate(fd, size), ==, 0);
  if (seals) g_assert_cmpint(fcntl(fd, F_ADD_SEALS, seals), ==, 0);
  return fd;
}

static weft_tensor_t *filled(int64_t n) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  memset(weft_tensor_data(t), 0x3f, (size_t)n * 4);
  return t;
}

/* Runs `fn` in a child process: a SIGBUS there would otherwise end the whole test binary. The
 * child's exit status is what the parent asserts on. */
static int in_child(void (*fn)(void)) {
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  return status;
}

/* An offer whose capacity is larger than its memfd: the sender must not map (and later write)
 * past the end of the file, which raises SIGBUS. The first export fits the file; the second,
 * larger one reuses the cached mapping. */
static void capacity_beyond_file(void) {
  const char *token = "0123456789abcdef0123456789abcdef";
  int fd = forged_segment(token, 512 * 1024, F_SEAL_SHRINK);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 64u << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *small = filled(80 * 1024), *large = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  /* Refused: the bytes go in the response instead. */
  g_assert_false(weft__shm_export(&offer, small, &resp, &meta));
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, large, &resp, &meta));
  weft_tensor_unref(small);
  weft_tensor_unref(large);
  close(fd);
}

/* A receiver that shrinks its segment after the sender mapped it: the next write through the
 * cached mapping would fault. */
static void shrunk_after_mapping(void) {
  const char *token = "fedcba9876543210fedcba9876543210";
  int fd = forged_segment(token, 4 << 20, 0);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 4 << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *t = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta)); /* not sealed: refused */
  g_assert_cmpint(ftruncate(fd, 0), ==, 0);
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta));
  weft_tensor_unref(t);
  close(fd);
}

/* A segment made the way receivers make them (sealed, capacity inside the file) still works. */
static void sealed_segment(void) {
  const char *token = "00112233445566778899aabbccddeeff";
  int fd = forged_segment(token, 4 << 20, F_SEAL_SHRINK);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 4 << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *t = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  g_assert_true(weft__shm_export(&offer, t, &resp, &meta));
  g_assert_true(resp.in_shm);
  g_assert_cmpuint(meta.nbytes, ==, 4u << 20);
  weft__shm_meta_clear(&meta);
  void *map = mmap(NULL, 4 << 20, PROT_READ, MAP_SHARED, fd, 0);
  g_assert_true(map != MAP_FAILED);
  g_assert_cmpint(memcmp(map, weft_tensor_data(t), 4 << 20), ==, 0);
  munmap(map, 4 << 20);
  weft_tensor_unref(t);
  close(fd);
}

static void test_shm_forged_offers(void) {
  sealed_segment();
  int status = in_child(capacity_beyond_file);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  status = in_child(shrunk_after_mapping);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/redteam/shm_forged_offers", test_shm_forged_offers);
  return g_test_run();
}

/* The server-wide bound on memory taken by inflating compressed requests (--max_inflating_bytes,
 * docs/security.md "Compressed requests"): the budget's rule and exact refusal in process, then
 * many concurrent gzip bodies of zeros sent without a token to a weftd on default flags (but for
 * smaller limits, to keep the test's memory modest): each is inflated or refused with
 * RESOURCE_EXHAUSTED naming the flag, the server's high-water mark stays under the budget plus
 * one message, its memory comes back and a good client is served. */
#include <glib.h>
#include <grpc/grpc.h>
#include <signal.h>
#include <string.h>

#include "distributed/distributed_internal.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define MIB ((int64_t)1 << 20)

static grpc_byte_buffer *compressed_buffer(const GByteArray *gz) {
  grpc_slice s = grpc_slice_from_copied_buffer((const char *)gz->data, gz->len);
  grpc_byte_buffer *bb = grpc_raw_compressed_byte_buffer_create(&s, 1, GRPC_COMPRESS_GZIP);
  grpc_slice_unref(s);
  return bb;
}

static char *refusal(int64_t budget, guint compressed) {
  return g_strdup_printf("/weft.Master/RunStep: compressed requests being inflated at once would "
                         "take more than %" G_GINT64_FORMAT " bytes (--max_inflating_bytes); "
                         "this one (%u bytes compressed) was refused: send it again later",
                         budget, compressed);
}

/* In process: the lead passes the budget up to the message limit; others are refused while it
 * holds that much, and their memory is handed back; after release, the next one alone is the
 * lead. */
static void test_budget_rule(void) {
  weft__limits_t l;
  weft__limits_default(&l);
  l.max_message_bytes = 4 * MIB;
  weft__inflate_budget_t b;
  weft__inflate_budget_init(&b, 1 * MIB);
  GByteArray *gz = weftd_gzip_body(NULL, (uint64_t)(3 * MIB));
  const char *method = "/weft.Master/RunStep";
  int owner_a, owner_b;

  grpc_byte_buffer *a = compressed_buffer(gz);
  int64_t held_a = -1;
  g_assert_null(weft__inflate_request(&l, &b, &owner_a, method, &a, &held_a));
  g_assert_cmpuint(grpc_byte_buffer_length(a), ==, (size_t)(3 * MIB));
  g_assert_cmpint(held_a, >=, 3 * MIB);
  g_assert_cmpint(held_a, <=, 3 * MIB + 256 * 1024);
  g_assert_cmpint(b.in_use, ==, held_a);
  g_assert_true(b.lead == &owner_a);

  grpc_byte_buffer *bb = compressed_buffer(gz);
  int64_t held_b = -1;
  weft_status_t *st = weft__inflate_request(&l, &b, &owner_b, method, &bb, &held_b);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_RESOURCE_EXHAUSTED);
  char *want = refusal(1 * MIB, gz->len);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  g_assert_cmpint(held_b, ==, 0);
  g_assert_cmpint(b.in_use, ==, held_a); /* b's memory went back with its refusal */
  g_assert_cmpuint(grpc_byte_buffer_length(bb), ==, gz->len); /* left compressed */
  grpc_byte_buffer_destroy(bb);

  grpc_byte_buffer_destroy(a);
  weft__inflate_budget_release(&b, &owner_a, held_a);
  g_assert_cmpint(b.in_use, ==, 0);
  g_assert_null(b.lead);

  /* Alone now, the same body is served, and takes the lead. */
  bb = compressed_buffer(gz);
  g_assert_null(weft__inflate_request(&l, &b, &owner_b, method, &bb, &held_b));
  g_assert_true(b.lead == &owner_b);
  grpc_byte_buffer_destroy(bb);
  weft__inflate_budget_release(&b, &owner_b, held_b);
  g_assert_cmpint(b.in_use, ==, 0);

  /* Within the budget, a non-lead is served beside the lead. */
  GByteArray *small = weftd_gzip_body(NULL, (uint64_t)(MIB / 2));
  a = compressed_buffer(small);
  bb = compressed_buffer(small);
  g_assert_null(weft__inflate_request(&l, &b, &owner_a, method, &a, &held_a));
  g_assert_null(weft__inflate_request(&l, &b, &owner_b, method, &bb, &held_b));
  g_assert_true(b.lead == &owner_a);
  grpc_byte_buffer_destroy(a);
  grpc_byte_buffer_destroy(bb);
  weft__inflate_budget_release(&b, &owner_b, held_b);
  weft__inflate_budget_release(&b, &owner_a, held_a);
  g_assert_cmpint(b.in_use, ==, 0);
  g_byte_array_unref(small);
  g_byte_array_unref(gz);
  weft__inflate_budget_clear(&b);
}

#define ATTACKERS 8
#define BODY_BYTES (64 * MIB)
#define BUDGET_BYTES (96 * MIB)

typedef struct attacker {
  const char *address;
  const GByteArray *gz;
  weft_status_t *st;
} attacker_t;

static gpointer attack(gpointer data) {
  attacker_t *a = data;
  char *answer = NULL;
  size_t answer_len = 0;
  a->st = weft__rpc_raw_gzip(a->address, NULL, "/weft.Master/RunStep", a->gz->data, a->gz->len,
                             60000, &answer, &answer_len);
  g_free(answer);
  return NULL;
}

static void test_concurrent_bodies(void) {
  if (!weftd_available()) return;
  char *max_message = g_strdup_printf("%" G_GINT64_FORMAT, BODY_BYTES);
  char *budget = g_strdup_printf("%" G_GINT64_FORMAT, BUDGET_BYTES);
  const char *args[] = {"--local", "--port", "0", "--max_message_bytes", max_message,
                        "--max_inflating_bytes", budget, NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  char *address = weft__target_address(d.target);
  /* A good client first, so the server's start-up memory is all in the baseline. */
  weft_device_info_t *devices = NULL;
  int n = 0;
  g_assert_null(weft_cluster_list_devices(d.target, 10000, &devices, &n));
  weft_device_list_free(devices, n);
  int64_t hwm0 = proc_status_kib(d.pid, "VmHWM"), rss0 = proc_status_kib(d.pid, "VmRSS");

  /* Within the message limit: the lead inflates it. */
  GByteArray *gz = weftd_gzip_body(NULL, (uint64_t)BODY_BYTES);
  char *want = refusal(BUDGET_BYTES, gz->len);
  int refused = 0, inflated = 0;
  for (int round = 0; round < 3; round++) {
    attacker_t a[ATTACKERS];
    GThread *t[ATTACKERS];
    for (int k = 0; k < ATTACKERS; k++) {
      a[k] = (attacker_t){address, gz, NULL};
      t[k] = g_thread_new("attacker", attack, &a[k]);
    }
    for (int k = 0; k < ATTACKERS; k++) {
      g_thread_join(t[k]);
      g_assert_nonnull(a[k].st);
      if (weft_status_code(a[k].st) == WEFT_RESOURCE_EXHAUSTED) {
        g_assert_cmpstr(weft_status_message(a[k].st), ==, want);
        refused++;
      } else {
        /* Inflated in full: 64 MiB of zeros are no RunStep frame. */
        g_assert_cmpint(weft_status_code(a[k].st), ==, WEFT_INVALID_ARGUMENT);
        g_assert_nonnull(strstr(weft_status_message(a[k].st), "/weft.Master/RunStep"));
        inflated++;
      }
      weft_status_free(a[k].st);
    }
  }
  int64_t hwm1 = proc_status_kib(d.pid, "VmHWM");
  g_test_message("%d bodies of %" G_GINT64_FORMAT " MiB of zeros (%u bytes gzip), %d at once: "
                 "%d inflated, %d refused; VmHWM %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT
                 " KiB", 3 * ATTACKERS, BODY_BYTES / MIB, gz->len, ATTACKERS, inflated, refused,
                 hwm0, hwm1);
  /* The first body to reserve is the lead and is inflated; a round may have none, when the last
   * round's lead still holds its reservation (until its call is freed, after its answer). */
  g_assert_cmpint(inflated, >=, 1);
#if defined(__SANITIZE_ADDRESS__)
  g_test_message("AddressSanitizer build: memory is not compared (its quarantine keeps freed "
                 "memory resident)");
  (void)rss0;
#else
  /* The budget plus one message (the lead's), and a margin for allocator slack. */
  g_assert_cmpint(hwm1 - hwm0, <, (BUDGET_BYTES + BODY_BYTES + 32 * MIB) / 1024);
  int64_t rss = proc_status_kib(d.pid, "VmRSS");
  for (int k = 0; k < 100 && rss > rss0 + 16 * 1024; k++) {
    g_usleep(100000);
    rss = proc_status_kib(d.pid, "VmRSS");
  }
  g_test_message("VmRSS %" G_GINT64_FORMAT " KiB before, %" G_GINT64_FORMAT " after", rss0, rss);
  g_assert_cmpint(rss, <=, rss0 + 16 * 1024);
#endif
  /* The good client is still served. */
  g_assert_null(weft_cluster_list_devices(d.target, 10000, &devices, &n));
  g_assert_cmpint(n, >, 0);
  weft_device_list_free(devices, n);

  g_free(want);
  g_byte_array_unref(gz);
  g_free(address);
  g_free(budget);
  g_free(max_message);
  weftd_stop(&d);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  g_test_add_func("/inflate/budget_rule", test_budget_rule);
  g_test_add_func("/inflate/concurrent_bodies", test_concurrent_bodies);
  return g_test_run();
}

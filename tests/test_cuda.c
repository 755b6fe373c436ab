/* Tests for the CUDA backend plugin (plugins/cuda), through the public API, in two halves.
 *
 * Everywhere (no GPU needed): the plugin is built and loads, and where weft_devices shows no CUDA
 * device it reports zero devices with the reason ("CUDA: no CUDA driver ...") and registers no
 * kernels, /gpu:0 does not name CUDA and pinning to /device:CUDA:0 fails cleanly;
 * WEFT_CUDA_DISABLE hides the devices on purpose; every kernel registers when
 * WEFT_CUDA_KERNELS_WITHOUT_DEVICE asks for them without a device; and the caching allocator
 * (plugins/cuda/cu_alloc.c, compiled into this test over fake device regions) fits, splits,
 * merges, grows within its limit, keeps a fixed pool fixed, gives back free regions when the
 * device is full, never overlaps two allocations, and describes itself the way out-of-memory
 * errors quote it.
 *
 * With a CUDA device (skipped, and counted as skipped with the reason, where there is none):
 * every kernel pinned to /device:CUDA:0 matches the same graph on /device:CPU:0 (float32,
 * float64, int32, int64 and bool; elementwise within 1e-5 relative, reductions and products
 * within 1e-4), with broadcasting and special values; the optimizer updates and a small model
 * trained with Adam on each device; variables across runs; long chains and parallel branches
 * on the one compute stream; cross-device inputs; soft placement of what CUDA lacks; /gpu:0 and
 * unpinned ops on CUDA:0; the device properties logged at start-up; memory_fraction taken up
 * front and its out-of-memory error text (RESOURCE_EXHAUSTED naming the device, the size asked
 * and what is in use); allow_growth. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"
#include "device_compare.h"

/* The allocator is plain C with no CUDA dependency: test it here, where no GPU is needed. */
#include "../plugins/cuda/cu_alloc.c"

#define CU_DEV "/device:CUDA:0"
#define CU_FULL "/job:localhost/replica:0/task:0/device:CUDA:0"
#define CUDA_PLUGIN WEFT_BUILD_DIR "/plugins/cuda/libweft-cuda.so"

/* ---------------------------------------------------------------------------------------------
 * The plugin and its devices */

static bool plugin_built(void) { return g_file_test(CUDA_PLUGIN, G_FILE_TEST_EXISTS); }

static const weft_plugin_record_t *cuda_record(void) {
  for (int i = 0; i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->name && strcmp(r->name, "cuda") == 0) return r;
    if (r->path && g_str_has_suffix(r->path, "libweft-cuda.so") && r->error) return r;
  }
  return NULL;
}

static const weft_device_info_t *cuda_device(void) { return dc_find_device("CUDA"); }

/* The backend's "CUDA: why" line, or NULL. */
static const char *cuda_reason(void) {
  const char **reasons = NULL;
  int n = weft_backends_without_devices(&reasons);
  for (int i = 0; i < n; i++)
    if (g_str_has_prefix(reasons[i], "CUDA: ")) return reasons[i];
  return NULL;
}

/* Skips the current test (true) when there is no CUDA device, saying why. */
static bool no_cuda(void) {
  if (cuda_device()) return false;
  char *why;
  if (!plugin_built())
    why = g_strdup("no CUDA device (the CUDA plugin is not built: no CUDA toolkit at build time)");
  else if (cuda_reason())
    why = g_strdup_printf("no CUDA device (%s)", cuda_reason());
  else
    why = g_strdup("no CUDA device (the CUDA plugin did not load)");
  g_test_skip(why);
  g_free(why);
  return true;
}

static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t int_types[] = {WEFT_DT_INT32, WEFT_DT_INT64};
static const weft_dtype_t num_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                         WEFT_DT_INT64};
static const weft_dtype_t all_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                         WEFT_DT_INT64, WEFT_DT_BOOL};

/* ---------------------------------------------------------------------------------------------
 * Without a GPU: the plugin loads, and says why it has no devices */

static void test_plugin_loaded(void) {
  if (!plugin_built()) {
    g_test_skip("the CUDA plugin is not built (no CUDA toolkit at build time)");
    return;
  }
  const weft_plugin_record_t *r = cuda_record();
  g_assert_nonnull(r);
  if (r->error) g_error("the CUDA plugin did not load: %s", r->error);
  g_assert_cmpstr(r->device_types, ==, "CUDA");
  if (cuda_device() == NULL) {
    const char *why = cuda_reason();
    g_assert_nonnull(why);
    g_assert_cmpuint(strlen(why), >, strlen("CUDA: "));
    g_test_message("CUDA has no devices here: %s", why);
    for (int i = 0; i < weft_devices_count(); i++)
      g_assert_cmpstr(weft_devices_get(i)->device_type, !=, "CUDA");
    /* Kernels that could never run are not registered. */
    g_assert_cmpint(r->n_kernels, ==, 0);
  } else {
    g_assert_null(cuda_reason());
    g_assert_cmpint(r->n_kernels, >, 100);
    /* CUDA outranks every other gpu-like backend. */
    g_assert_cmpstr(weft_devices_get(0)->device_type, ==, "CUDA");
  }
}

/* Without a CUDA device, /gpu:0 names another backend's device (or none), and an op pinned to
 * CUDA:0 fails to place unless soft placement moves it. */
static void test_no_device_placement(void) {
  if (!plugin_built()) {
    g_test_skip("the CUDA plugin is not built (no CUDA toolkit at build time)");
    return;
  }
  if (cuda_device()) {
    g_test_skip("this machine has a CUDA device; /cuda/gpu_alias covers it");
    return;
  }
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, CU_DEV);
  weft_output_t a = weft_const_float(g, "a", 2.0f, &st);
  OK(st);
  weft_unary(g, "Square", "sq", a, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  if (!st) {
    const char *fetch[] = {"sq"};
    weft_tensor_t *out = NULL;
    st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
    weft_tensor_unref(out);
  }
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), !=, WEFT_OK);
  g_assert_nonnull(strstr(weft_status_message(st), "CUDA"));
  weft_status_free(st);
  weft_session_free(s);
  s = dc_soft_session(g);
  const char *fetch[] = {"sq"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out))[0], ==, 4.0f);
  g_assert_null(strstr(weft_session_node_device(s, "sq"), "CUDA"));
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

/* The CUDA plugin loaded and lists no device (a subprocess whose environment hides them); prints
 * its reason for the parent to check. */
static void expect_loaded_without_devices(void) {
  g_assert_null(cuda_device());
  const weft_plugin_record_t *r = cuda_record();
  g_assert_nonnull(r);
  g_assert_null(r->error);
  const char *why = cuda_reason();
  g_assert_nonnull(why);
  for (int i = 0; i < weft_devices_count(); i++)
    g_assert_cmpstr(weft_devices_get(i)->device_type, !=, "CUDA");
  printf("%s\n", why);
}

static void disabled_child(void) {
  /* Before anything loads the plugins. */
  g_setenv("WEFT_CUDA_DISABLE", "1", TRUE);
  expect_loaded_without_devices();
  /* /gpu:0 is some other device now, or none: soft placement runs the op anyway. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/gpu:0");
  weft_const_float(g, "a", 2.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = dc_soft_session(g);
  const char *fetch[] = {"a"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_null(strstr(weft_session_node_device(s, "a"), "CUDA"));
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_disabled(void) {
  if (!plugin_built()) {
    g_test_skip("the CUDA plugin is not built (no CUDA toolkit at build time)");
    return;
  }
  g_test_trap_subprocess("/cuda/subprocess/disabled", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stdout("CUDA: disabled by WEFT_CUDA_DISABLE*");
}

/* CUDA_VISIBLE_DEVICES="" hides every GPU of the CUDA plugin, as in TensorFlow: no CUDA device,
 * /gpu:0 is not CUDA, and the reason names the variable wherever a driver is there to ask. */
static void invisible_child(void) {
  g_setenv("CUDA_VISIBLE_DEVICES", "", TRUE);
  expect_loaded_without_devices();
}

static void test_visible_devices_empty(void) {
  if (!plugin_built()) {
    g_test_skip("the CUDA plugin is not built (no CUDA toolkit at build time)");
    return;
  }
  g_test_trap_subprocess("/cuda/subprocess/invisible", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  /* Without a driver the plugin says so before it gets to count devices (this process, which
   * left the variable alone, tells which case this machine is). */
  const char *here = cuda_reason();
  if (here != NULL && g_str_has_prefix(here, "CUDA: no CUDA driver"))
    g_test_trap_assert_stdout("CUDA: no CUDA driver*");
  else
    g_test_trap_assert_stdout("CUDA: *CUDA_VISIBLE_DEVICES=\"\"*");
}

static void registration_child(void) {
  g_setenv("WEFT_CUDA_KERNELS_WITHOUT_DEVICE", "1", TRUE);
  const weft_plugin_record_t *r = cuda_record();
  g_assert_nonnull(r);
  if (r->error) g_error("the CUDA plugin did not load: %s", r->error);
  g_assert_cmpint(r->n_kernels, >, 100);
  printf("CUDA kernels: %d\n", r->n_kernels);
}

/* Every kernel registers (op names, type attributes, host-memory arguments the core accepts),
 * checked even where there is no device to run them. */
static void test_registration(void) {
  if (!plugin_built()) {
    g_test_skip("the CUDA plugin is not built (no CUDA toolkit at build time)");
    return;
  }
  g_test_trap_subprocess("/cuda/subprocess/registration", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stdout("CUDA kernels: *");
}

/* ---------------------------------------------------------------------------------------------
 * The caching allocator over fake device regions */

typedef struct fake_device {
  uint64_t next;     /* the next region's address */
  uint64_t capacity; /* bytes the "device" has */
  uint64_t used;
  int n_reserve, n_release;
  GHashTable *sizes; /* base -> size */
} fake_device_t;

static int fake_reserve(void *ctx, size_t bytes, void **base) {
  fake_device_t *f = ctx;
  if (f->used + bytes > f->capacity) return 1;
  *base = (void *)(uintptr_t)f->next;
  g_hash_table_insert(f->sizes, *base, GSIZE_TO_POINTER(bytes));
  /* A gap between regions, so that a chunk running past its region would show as an overlap. */
  f->next += (bytes + ((uint64_t)1 << 20) + 4095) / 4096 * 4096;
  f->used += bytes;
  f->n_reserve++;
  return 0;
}

static void fake_release(void *ctx, void *base) {
  fake_device_t *f = ctx;
  gpointer size = g_hash_table_lookup(f->sizes, base);
  g_assert_nonnull(size);
  f->used -= GPOINTER_TO_SIZE(size);
  g_hash_table_remove(f->sizes, base);
  f->n_release++;
}

static weft_cu_arena_t *fake_arena(fake_device_t *f, uint64_t capacity, uint64_t limit, int grow) {
  memset(f, 0, sizeof *f);
  f->next = 0x7f0000000000ull;
  f->capacity = capacity;
  f->sizes = g_hash_table_new(g_direct_hash, g_direct_equal);
  weft_cu_arena_ops_t ops = {fake_reserve, fake_release, f};
  weft_cu_arena_t *a = weft__cu_arena_new(&ops, limit, grow);
  g_assert_nonnull(a);
  return a;
}

static void fake_done(weft_cu_arena_t *a, fake_device_t *f) {
  weft__cu_arena_destroy(a);
  g_assert_cmpuint(f->used, ==, 0); /* every region given back */
  g_assert_cmpuint(g_hash_table_size(f->sizes), ==, 0);
  g_hash_table_destroy(f->sizes);
}

#define MiB ((uint64_t)1 << 20)

static void test_arena_basics(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 1024 * MiB, 0, 1);
  void *p = NULL, *q = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 0, &p), ==, WEFT_CU_ARENA_OK);
  g_assert_null(p);
  g_assert_cmpint(f.n_reserve, ==, 0);
  g_assert_cmpint(weft__cu_arena_alloc(a, 100, &p), ==, WEFT_CU_ARENA_OK);
  g_assert_cmpuint((uintptr_t)p % WEFT_CU_ARENA_ALIGN, ==, 0);
  g_assert_cmpint(weft__cu_arena_alloc(a, 257, &q), ==, WEFT_CU_ARENA_OK);
  g_assert_cmpuint((uintptr_t)q, ==, (uintptr_t)p + 256);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.in_use, ==, 256 + 512);
  g_assert_cmpuint(st.n_live, ==, 2);
  g_assert_cmpuint(st.n_regions, ==, 1);
  g_assert_cmpuint(st.reserved, ==, 2 * MiB); /* the first region */
  g_assert_cmpint(f.n_reserve, ==, 1);
  /* Freeing what it never handed out changes nothing. */
  g_assert_cmpint(weft__cu_arena_free(a, (char *)p + 256 * 100), ==, -1);
  g_assert_cmpint(weft__cu_arena_free(a, NULL), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, -1); /* twice */
  g_assert_cmpint(weft__cu_arena_free(a, q), ==, 0);
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.in_use, ==, 0);
  g_assert_cmpuint(st.peak_in_use, ==, 768);
  g_assert_cmpuint(st.n_allocs, ==, 2);
  /* Everything merged back into one free chunk, and the hot path reserved nothing more. */
  g_assert_cmpuint(st.largest_free, ==, 2 * MiB);
  g_assert_cmpint(f.n_reserve, ==, 1);
  fake_done(a, &f);
}

static void test_arena_best_fit_and_merge(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 1024 * MiB, 0, 1);
  void *p[3];
  for (int i = 0; i < 3; i++) g_assert_cmpint(weft__cu_arena_alloc(a, 1024, &p[i]), ==, 0);
  g_assert_cmpuint((uintptr_t)p[1], ==, (uintptr_t)p[0] + 1024);
  g_assert_cmpuint((uintptr_t)p[2], ==, (uintptr_t)p[1] + 1024);
  /* The hole left by p[1] is the best fit for a smaller request... */
  g_assert_cmpint(weft__cu_arena_free(a, p[1]), ==, 0);
  void *s = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 512, &s), ==, 0);
  g_assert_true(s == p[1]);
  /* ... and the rest of it for the next. */
  void *s2 = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 300, &s2), ==, 0);
  g_assert_cmpuint((uintptr_t)s2, ==, (uintptr_t)p[1] + 512);
  /* Frees in any order merge neighbours: all of it is one chunk again. */
  g_assert_cmpint(weft__cu_arena_free(a, p[0]), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, s2), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, p[2]), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, s), ==, 0);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.largest_free, ==, 2 * MiB);
  g_assert_cmpuint(st.n_live, ==, 0);
  /* A request as large as the region takes all of it without a new reservation. */
  void *all = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 2 * MiB, &all), ==, 0);
  g_assert_cmpint(f.n_reserve, ==, 1);
  g_assert_cmpint(weft__cu_arena_free(a, all), ==, 0);
  fake_done(a, &f);
}

static void test_arena_growth(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 1024 * MiB, 0, 1);
  void *p = NULL, *q = NULL, *r = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 3 * MiB / 2, &p), ==, 0);
  g_assert_cmpint(weft__cu_arena_alloc(a, 3 * MiB / 2, &q), ==, 0);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  /* 2 MiB, then twice that. */
  g_assert_cmpuint(st.n_regions, ==, 2);
  g_assert_cmpuint(st.reserved, ==, 6 * MiB);
  /* A request larger than the next step gets a region of its own size. */
  g_assert_cmpint(weft__cu_arena_alloc(a, 100 * MiB, &r), ==, 0);
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.reserved, ==, 106 * MiB);
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, q), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, r), ==, 0);
  fake_done(a, &f);
}

static void test_arena_limit(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 1024 * MiB, MiB, 1);
  void *p = NULL, *q = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 512 * 1024, &p), ==, 0);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.reserved, ==, MiB); /* the first step, cut to the limit */
  g_assert_cmpint(weft__cu_arena_alloc(a, 600 * 1024, &q), ==, WEFT_CU_ARENA_OVER_LIMIT);
  g_assert_null(q);
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.reserved, ==, MiB);
  char text[400];
  weft__cu_arena_describe(&st, text, sizeof text);
  g_assert_nonnull(strstr(text, "524288 bytes (512.0 KiB) in use in 1 allocations"));
  g_assert_nonnull(strstr(text, "1048576 bytes (1.0 MiB) reserved"));
  g_assert_nonnull(strstr(text, "limit 1048576 bytes (1.0 MiB)"));
  g_assert_nonnull(strstr(text, "largest free block 524288 bytes (512.0 KiB)"));
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  /* Now it fits. */
  g_assert_cmpint(weft__cu_arena_alloc(a, 600 * 1024, &q), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, q), ==, 0);
  fake_done(a, &f);
}

/* memory_fraction without allow_growth: one region up front, and nothing more ever. */
static void test_arena_fixed_pool(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 1024 * MiB, 4 * MiB, 0);
  g_assert_cmpint(weft__cu_arena_reserve(a, 4 * MiB), ==, 0);
  g_assert_cmpint(f.n_reserve, ==, 1);
  g_assert_cmpuint(f.used, ==, 4 * MiB);
  void *p = NULL, *q = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, 3 * MiB, &p), ==, 0);
  g_assert_cmpint(weft__cu_arena_alloc(a, 2 * MiB, &q), ==, WEFT_CU_ARENA_OVER_LIMIT);
  g_assert_cmpint(f.n_reserve, ==, 1);
  g_assert_cmpint(weft__cu_arena_alloc(a, MiB, &q), ==, 0); /* exactly the rest */
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, q), ==, 0);
  /* Reserving past the limit is refused. */
  g_assert_cmpint(weft__cu_arena_reserve(a, MiB), ==, WEFT_CU_ARENA_OVER_LIMIT);
  fake_done(a, &f);
}

static void test_arena_device_full(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 3 * MiB, 0, 1);
  void *p = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, MiB, &p), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  /* 2.5 MiB cannot come next to the free 2 MiB region: the arena gives that back and retries. */
  g_assert_cmpint(weft__cu_arena_alloc(a, 5 * MiB / 2, &p), ==, 0);
  g_assert_cmpint(f.n_release, ==, 1);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.n_regions, ==, 1);
  g_assert_cmpuint(st.reserved, ==, 5 * MiB / 2);
  void *q = NULL;
  g_assert_cmpint(weft__cu_arena_alloc(a, MiB, &q), ==, WEFT_CU_ARENA_DEVICE_FULL);
  g_assert_null(q);
  g_assert_cmpint(weft__cu_arena_free(a, p), ==, 0);
  fake_done(a, &f);
}

typedef struct live_alloc {
  uint64_t addr, size;
} live_alloc_t;

static gint by_addr(gconstpointer pa, gconstpointer pb) {
  const live_alloc_t *a = pa, *b = pb;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Thousands of random allocations and frees: live allocations never overlap, the bookkeeping
 * adds up, and once everything is freed every region is whole again. */
static void test_arena_random(void) {
  fake_device_t f;
  weft_cu_arena_t *a = fake_arena(&f, 4096 * MiB, 0, 1);
  GArray *live = g_array_new(FALSE, FALSE, sizeof(live_alloc_t));
  for (int step = 0; step < 20000; step++) {
    bool do_free = live->len > 0 && (dc_rnd(0, 1) < 0.45 || live->len > 300);
    if (do_free) {
      guint k = (guint)dc_rnd(0, live->len);
      if (k >= live->len) k = live->len - 1;
      live_alloc_t la = g_array_index(live, live_alloc_t, k);
      g_assert_cmpint(weft__cu_arena_free(a, (void *)(uintptr_t)la.addr), ==, 0);
      g_array_remove_index_fast(live, k);
    } else {
      size_t n = dc_rnd(0, 1) < 0.1 ? (size_t)dc_rnd(1, 8 * MiB) : (size_t)dc_rnd(1, 70000);
      void *p = NULL;
      g_assert_cmpint(weft__cu_arena_alloc(a, n, &p), ==, 0);
      live_alloc_t la = {(uint64_t)(uintptr_t)p, n};
      g_array_append_val(live, la);
    }
    if (step % 997 == 0 || step == 19999) {
      g_array_sort(live, by_addr);
      uint64_t rounded = 0;
      for (guint i = 0; i < live->len; i++) {
        const live_alloc_t *x = &g_array_index(live, live_alloc_t, i);
        rounded += (x->size + WEFT_CU_ARENA_ALIGN - 1) / WEFT_CU_ARENA_ALIGN * WEFT_CU_ARENA_ALIGN;
        if (i > 0) {
          const live_alloc_t *prev = &g_array_index(live, live_alloc_t, i - 1);
          g_assert_cmpuint(prev->addr + prev->size, <=, x->addr);
        }
      }
      weft_cu_arena_stats_t st;
      weft__cu_arena_stats(a, &st);
      g_assert_cmpuint(st.in_use, ==, rounded);
      g_assert_cmpuint(st.n_live, ==, live->len);
      g_assert_cmpuint(st.reserved, ==, f.used);
    }
  }
  for (guint i = 0; i < live->len; i++)
    g_assert_cmpint(weft__cu_arena_free(a, (void *)(uintptr_t)g_array_index(live, live_alloc_t, i).addr), ==, 0);
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(a, &st);
  g_assert_cmpuint(st.in_use, ==, 0);
  g_assert_cmpuint(st.n_live, ==, 0);
  /* Each region is one free chunk: releasing the free regions gives back everything. */
  void *huge = NULL;
  f.capacity = f.used; /* the device is full: the next growth must release free regions */
  uint64_t biggest = st.largest_free;
  g_assert_cmpint(weft__cu_arena_alloc(a, (size_t)(biggest + WEFT_CU_ARENA_ALIGN), &huge), ==, 0);
  g_assert_cmpint(weft__cu_arena_free(a, huge), ==, 0);
  g_array_free(live, TRUE);
  fake_done(a, &f);
}

static void test_arena_bytes_str(void) {
  char b[48];
  g_assert_cmpstr(weft__cu_bytes_str(100, b, sizeof b), ==, "100 bytes");
  g_assert_cmpstr(weft__cu_bytes_str(1536, b, sizeof b), ==, "1536 bytes (1.5 KiB)");
  g_assert_cmpstr(weft__cu_bytes_str(16777216, b, sizeof b), ==, "16777216 bytes (16.0 MiB)");
  g_assert_cmpstr(weft__cu_bytes_str(85899345920ull, b, sizeof b), ==,
                  "85899345920 bytes (80.0 GiB)");
}

/* ---------------------------------------------------------------------------------------------
 * With a GPU: the device */

static void test_device_listed(void) {
  if (no_cuda()) return;
  const weft_device_info_t *d = cuda_device();
  g_assert_cmpstr(d->name, ==, CU_FULL);
  g_assert_true(d->gpu_like);
  g_assert_cmpuint(strlen(d->description), >, 0);
  g_assert_cmpuint(d->memory_bytes, >, 0);
  g_assert_cmpstr(weft_devices_get(0)->device_type, ==, "CUDA");
}

static void properties_child(void) {
  g_setenv("WEFT_LOG_LEVEL", "info", TRUE);
  if (!cuda_device()) return;
  /* Opening the device logs the memory options. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, CU_DEV);
  weft_const_float(g, "a", 1.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"a"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_properties_logged(void) {
  if (no_cuda()) return;
  g_test_trap_subprocess("/cuda/subprocess/properties", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*Found device 0 with properties: name: *compute capability: *"
                            "memory: *clock: *bus id: *");
  g_test_trap_assert_stderr("*CUDA:0 opened: growing on demand*");
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

static void test_unary(void) {
  if (no_cuda()) return;
  static const int64_t sizes[] = {1, 7, 1023, 100000};
  for (size_t c = 0; c < dc_n_unary_cases; c++) {
    const dc_unary_case_t *u = &dc_unary_cases[c];
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
      for (int k = 0; k < 4; k++) {
        weft_dtype_t t = num_types[k];
        if (!dc_is_float(t) && !u->ints) continue;
        weft_tensor_t *x = dc_rand_t(t, 1, &sizes[s], u->lo, u->hi);
        op_run_t r = RUN(u->op, &x, 1, NULL, NULL);
        char what[80];
        g_snprintf(what, sizeof what, "%s %s[%" G_GINT64_FORMAT "]", u->op, weft_dtype_name(t),
                   sizes[s]);
        dc_check_op(what, &r, dc_is_float(t) ? 1e-5 : 0, dc_is_float(t) ? 1e-6 : 0);
        weft_tensor_unref(x);
      }
    }
  }
  /* A 2-D input keeps its shape. */
  int64_t d2[2] = {33, 31};
  weft_tensor_t *x = dc_rand_f32(2, d2, -3, 3);
  op_run_t r = RUN("Tanh", &x, 1, NULL, NULL);
  dc_check_op("Tanh float32[33,31]", &r, 1e-5, 1e-6);
  weft_tensor_unref(x);
}

/* NaN, infinities, signed zeros, denormals and huge values go through like on the CPU. */
static void test_special_values(void) {
  if (no_cuda()) return;
  const float v[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3.0e38f, -3.0e38f, 1.0f, -1.0f,
                     100.0f, -100.0f, 1e-30f, 1e-40f, -1e-42f};
  static const char *const ops[] = {
      "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Expm1", "Sign",
      "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Tanh",
      "Sigmoid", "Erf", "Relu", "Relu6", "Elu", "Softplus", "Softsign", "Asinh",
  };
  weft_tensor_t *x = dc_vec_f32(G_N_ELEMENTS(v), v);
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    op_run_t r = RUN(ops[i], &x, 1, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", ops[i]);
    dc_check_op(what, &r, 1e-5, 1e-6);
  }
  /* Abs and Neg keep denormals exactly (no flush to zero). */
  static const char *const exact[] = {"Abs", "Neg"};
  for (size_t i = 0; i < G_N_ELEMENTS(exact); i++) {
    op_run_t r = RUN(exact[i], &x, 1, NULL, NULL);
    dc_check_op(exact[i], &r, 0, 0);
  }
  static const char *const bool_ops[] = {"IsNan", "IsInf", "IsFinite"};
  for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
    op_run_t r = RUN(bool_ops[i], &x, 1, NULL, NULL);
    dc_check_op(bool_ops[i], &r, 0, 0);
  }
  const float a[] = {NAN, 1.0f, INFINITY, -INFINITY, 0.0f, 2.0f, -2.0f, 0.0f, -0.0f, 5.0f};
  const float b[] = {1.0f, NAN, INFINITY, 2.0f, 0.0f, INFINITY, 0.5f, -3.0f, -1.0f, 0.0f};
  weft_tensor_t *ab[2] = {dc_vec_f32(10, a), dc_vec_f32(10, b)};
  static const char *const bin[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
                                    "SquaredDifference", "FloorDiv", "FloorMod", "Equal",
                                    "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"};
  for (size_t i = 0; i < G_N_ELEMENTS(bin); i++) {
    op_run_t r = RUN(bin[i], ab, 2, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", bin[i]);
    dc_check_op(what, &r, 1e-5, 0);
  }
  weft_tensor_unref(ab[0]);
  weft_tensor_unref(ab[1]);
  weft_tensor_unref(x);
}

typedef struct shape_pair {
  int ra;
  int64_t a[4];
  int rb;
  int64_t b[4];
} shape_pair_t;

static const shape_pair_t bcast_shapes[] = {
    {1, {1}, 1, {1}},           {1, {7}, 1, {7}},          {1, {1023}, 0, {0}},
    {0, {0}, 1, {7}},           {3, {3, 1, 5}, 2, {4, 1}}, {3, {2, 3, 4}, 2, {3, 1}},
    {1, {1}, 3, {5, 1, 3}},     {2, {16, 64}, 1, {64}},    {4, {2, 1, 3, 1}, 4, {1, 4, 1, 5}},
    {2, {0, 3}, 1, {3}},        {2, {300, 400}, 2, {300, 1}},
};

static void test_binary_broadcast(void) {
  if (no_cuda()) return;
  static const char *const float_ops[] = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div",
                                          "Maximum", "Minimum", "Pow", "SquaredDifference",
                                          "FloorDiv", "FloorMod"};
  static const char *const int_ops[] = {"AddV2", "Sub", "Mul", "Maximum", "Minimum",
                                        "SquaredDifference"};
  static const char *const cmp_ops[] = {"Equal", "NotEqual", "Less", "LessEqual", "Greater",
                                        "GreaterEqual"};
  for (size_t s = 0; s < G_N_ELEMENTS(bcast_shapes); s++) {
    const shape_pair_t *sp = &bcast_shapes[s];
    char what[96];
    for (size_t i = 0; i < G_N_ELEMENTS(float_ops); i++) {
      bool pow = strcmp(float_ops[i], "Pow") == 0;
      for (int k = 0; k < 2; k++) {
        weft_tensor_t *in[2] = {dc_rand_t(float_types[k], sp->ra, sp->a, pow ? 0.1 : -10, 10),
                                dc_rand_t(float_types[k], sp->rb, sp->b, pow ? -3 : -10,
                                       pow ? 3 : 10)};
        op_run_t r = RUN(float_ops[i], in, 2, NULL, NULL);
        g_snprintf(what, sizeof what, "%s %s shapes #%zu", float_ops[i],
                   weft_dtype_name(float_types[k]), s);
        dc_check_op(what, &r, 1e-5, 1e-6);
        weft_tensor_unref(in[0]);
        weft_tensor_unref(in[1]);
      }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(int_ops); i++) {
      for (int k = 0; k < 2; k++) {
        weft_tensor_t *in[2] = {dc_rand_t(int_types[k], sp->ra, sp->a, -1000, 1000),
                                dc_rand_t(int_types[k], sp->rb, sp->b, -1000, 1000)};
        op_run_t r = RUN(int_ops[i], in, 2, NULL, NULL);
        g_snprintf(what, sizeof what, "%s %s shapes #%zu", int_ops[i],
                   weft_dtype_name(int_types[k]), s);
        dc_check_op(what, &r, 0, 0);
        weft_tensor_unref(in[0]);
        weft_tensor_unref(in[1]);
      }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cmp_ops); i++) {
      for (int k = 0; k < 4; k++) {
        /* small whole numbers, so that equal pairs occur */
        weft_tensor_t *in[2] = {dc_rand_t(num_types[k], sp->ra, sp->a, -3, 3),
                                dc_rand_t(num_types[k], sp->rb, sp->b, -3, 3)};
        if (dc_is_float(num_types[k]))
          for (int j = 0; j < 2; j++)
            for (int64_t e = 0; e < weft_tensor_num_elements(in[j]); e++) {
              double v = floor(weft_tensor_get_double(in[j], e));
              if (num_types[k] == WEFT_DT_FLOAT) ((float *)weft_tensor_data(in[j]))[e] = (float)v;
              else ((double *)weft_tensor_data(in[j]))[e] = v;
            }
        op_run_t r = RUN(cmp_ops[i], in, 2, NULL, NULL);
        g_snprintf(what, sizeof what, "%s %s shapes #%zu", cmp_ops[i],
                   weft_dtype_name(num_types[k]), s);
        dc_check_op(what, &r, 0, 0);
        weft_tensor_unref(in[0]);
        weft_tensor_unref(in[1]);
      }
    }
    static const char *const bool_ops[] = {"LogicalAnd", "LogicalOr", "Equal", "NotEqual"};
    for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
      weft_tensor_t *in[2] = {dc_rand_t(WEFT_DT_BOOL, sp->ra, sp->a, 0, 1),
                              dc_rand_t(WEFT_DT_BOOL, sp->rb, sp->b, 0, 1)};
      op_run_t r = RUN(bool_ops[i], in, 2, NULL, NULL);
      g_snprintf(what, sizeof what, "%s bool shapes #%zu", bool_ops[i], s);
      dc_check_op(what, &r, 0, 0);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
  }
  /* Activation gradients. */
  int64_t dg[2] = {17, 33};
  static const char *const grads[] = {"ReluGrad", "SigmoidGrad", "TanhGrad"};
  for (size_t i = 0; i < G_N_ELEMENTS(grads); i++)
    for (int k = 0; k < 2; k++) {
      weft_tensor_t *gi[2] = {dc_rand_t(float_types[k], 2, dg, -1, 1),
                              dc_rand_t(float_types[k], 2, dg, -1, 1)};
      op_run_t r = RUN(grads[i], gi, 2, NULL, NULL);
      dc_check_op(grads[i], &r, 1e-5, 1e-6);
      weft_tensor_unref(gi[0]);
      weft_tensor_unref(gi[1]);
    }
  /* Incompatible shapes fail on CUDA with the CPU's message. */
  dc_check_incompatible_add();
}

static void test_logic_select_clip(void) {
  if (no_cuda()) return;
  int64_t d[2] = {5, 7}, d7[1] = {7}, d5[1] = {5};
  weft_tensor_t *b = dc_rand_t(WEFT_DT_BOOL, 2, d, 0, 1);
  op_run_t r = RUN("LogicalNot", &b, 1, NULL, NULL);
  dc_check_op("LogicalNot bool[5,7]", &r, 0, 0);
  weft_tensor_t *cv = dc_rand_t(WEFT_DT_BOOL, 1, d5, 0, 1);
  weft_tensor_t *c7 = dc_rand_t(WEFT_DT_BOOL, 1, d7, 0, 1);
  for (int k = 0; k < 5; k++) {
    weft_dtype_t t = all_types[k];
    weft_tensor_t *te[2] = {dc_rand_t(t, 2, d, -9, 9), dc_rand_t(t, 2, d, -9, 9)};
    weft_tensor_t *sel[3] = {b, te[0], te[1]};
    char what[64];
    op_run_t rs = RUN("Select", sel, 3, NULL, NULL);
    g_snprintf(what, sizeof what, "Select %s same shapes", weft_dtype_name(t));
    dc_check_op(what, &rs, 0, 0);
    weft_tensor_t *sel_v[3] = {cv, te[0], te[1]};
    op_run_t rsv = RUN("Select", sel_v, 3, NULL, NULL);
    g_snprintf(what, sizeof what, "Select %s vector condition", weft_dtype_name(t));
    dc_check_op(what, &rsv, 0, 0);
    weft_tensor_t *scalar = dc_rand_t(t, 0, NULL, -9, 9);
    weft_tensor_t *sel2[3] = {c7, te[0], scalar};
    op_run_t rs2 = RUN("SelectV2", sel2, 3, NULL, NULL);
    g_snprintf(what, sizeof what, "SelectV2 %s broadcast", weft_dtype_name(t));
    dc_check_op(what, &rs2, 0, 0);
    if (t != WEFT_DT_BOOL) {
      weft_tensor_t *clip[3] = {te[0], dc_rand_t(t, 0, NULL, -3, -1), dc_rand_t(t, 2, d, 1, 4)};
      op_run_t rc = RUN("ClipByValue", clip, 3, NULL, NULL);
      g_snprintf(what, sizeof what, "ClipByValue %s", weft_dtype_name(t));
      dc_check_op(what, &rc, 0, 0);
      weft_tensor_t *addn[3] = {te[0], te[1], clip[2]};
      op_run_t ra = RUN("AddN", addn, 3, NULL, NULL);
      ra.list_len = 3;
      g_snprintf(what, sizeof what, "AddN %s", weft_dtype_name(t));
      dc_check_op(what, &ra, 1e-6, 1e-6);
      weft_tensor_unref(clip[1]);
      weft_tensor_unref(clip[2]);
    }
    weft_tensor_unref(scalar);
    weft_tensor_unref(te[0]);
    weft_tensor_unref(te[1]);
  }
  weft_tensor_unref(b);
  weft_tensor_unref(cv);
  weft_tensor_unref(c7);
}

static void test_cast(void) {
  if (no_cuda()) return;
  /* Every pair of the five dtypes, with the edge cases of each source. */
  const double edge[] = {0.0, -0.0, 1.5, -1.5, 2.9, -2.9, 1e10, -1e10, NAN, INFINITY, -INFINITY,
                         2147483520.0, -2147483648.0, 0.25, 16777217.0, 1e19, -1e19};
  for (int s = 0; s < 5; s++) {
    weft_dtype_t src = all_types[s];
    int64_t n = G_N_ELEMENTS(edge) + 200;
    weft_tensor_t *x = dc_rand_t(src, 1, &n, -100, 100);
    for (size_t i = 0; i < G_N_ELEMENTS(edge) && dc_is_float(src); i++) {
      if (src == WEFT_DT_FLOAT) ((float *)weft_tensor_data(x))[i] = (float)edge[i];
      else ((double *)weft_tensor_data(x))[i] = edge[i];
    }
    if (src == WEFT_DT_INT64) {
      ((int64_t *)weft_tensor_data(x))[0] = INT64_MAX;
      ((int64_t *)weft_tensor_data(x))[1] = INT64_MIN;
      ((int64_t *)weft_tensor_data(x))[2] = 4294967297LL;
    }
    if (src == WEFT_DT_INT32) {
      ((int32_t *)weft_tensor_data(x))[0] = INT32_MAX;
      ((int32_t *)weft_tensor_data(x))[1] = INT32_MIN;
    }
    for (int d = 0; d < 5; d++) {
      weft_dtype_t dst = all_types[d];
      op_run_t r = RUN("Cast", &x, 1, dc_set_dst_t, &dst);
      char what[64];
      g_snprintf(what, sizeof what, "Cast %s to %s", weft_dtype_name(src), weft_dtype_name(dst));
      dc_check_op(what, &r, 0, 0);
    }
    weft_tensor_unref(x);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Products, reductions, NN */

typedef struct mm_case {
  int64_t m, k, n;
} mm_case_t;

static void test_matmul(void) {
  if (no_cuda()) return;
  static const mm_case_t cases[] = {
      {1, 1, 1}, {7, 7, 7}, {1, 1023, 1}, {3, 5, 1023}, {33, 65, 17}, {256, 256, 256},
      {70, 1, 130}, {4, 0, 5},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    for (int k = 0; k < 2; k++) {
      for (int t = 0; t < 4; t++) {
        bool tr[2] = {(t & 1) != 0, (t & 2) != 0};
        int64_t da[2] = {tr[0] ? cases[c].k : cases[c].m, tr[0] ? cases[c].m : cases[c].k};
        int64_t db[2] = {tr[1] ? cases[c].n : cases[c].k, tr[1] ? cases[c].k : cases[c].n};
        weft_tensor_t *in[2] = {dc_rand_t(float_types[k], 2, da, -1, 1),
                                dc_rand_t(float_types[k], 2, db, -1, 1)};
        op_run_t r = RUN("MatMul", in, 2, dc_set_transposes, tr);
        char what[96];
        g_snprintf(what, sizeof what,
                   "MatMul %s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                   " ta=%d tb=%d",
                   weft_dtype_name(float_types[k]), cases[c].m, cases[c].k, cases[c].n, tr[0],
                   tr[1]);
        dc_check_op(what, &r, 1e-4, 1e-4);
        weft_tensor_unref(in[0]);
        weft_tensor_unref(in[1]);
      }
    }
  }
  /* Batched: the batch broadcast from one side, from both sides over two dims, adj_x. */
  static const int64_t bx[][4] = {{4, 9, 11, 0}, {2, 1, 3, 4}, {5, 6, 7, 0}, {3, 2, 4, 0}};
  static const int64_t by[][4] = {{1, 11, 6, 0}, {1, 3, 4, 5}, {6, 8, 0, 0}, {3, 5, 4, 0}};
  static const int brx[] = {3, 4, 3, 3}, bry[] = {3, 4, 2, 3};
  static const char *const adj[][4] = {{"adj_x", "0", "adj_y", "0"}, {"adj_x", "0", "adj_y", "0"},
                                       {"adj_x", "1", "adj_y", "0"}, {"adj_x", "0", "adj_y", "1"}};
  for (size_t c = 0; c < G_N_ELEMENTS(bx); c++) {
    int64_t dx[4], dy[4];
    memcpy(dx, bx[c], sizeof dx);
    memcpy(dy, by[c], sizeof dy);
    weft_tensor_t *in[2] = {dc_rand_f32(brx[c], dx, -1, 1), dc_rand_f32(bry[c], dy, -1, 1)};
    op_run_t r = RUN("BatchMatMulV2", in, 2, dc_set_adj, adj[c]);
    char what[64];
    g_snprintf(what, sizeof what, "BatchMatMulV2 case #%zu", c);
    dc_check_op(what, &r, 1e-4, 1e-4);
    weft_tensor_unref(in[0]);
    weft_tensor_unref(in[1]);
  }
  /* Shape errors are the CPU's. */
  int64_t d23[2] = {2, 3};
  weft_tensor_t *bad[2] = {dc_rand_f32(2, d23, -1, 1), dc_rand_f32(2, d23, -1, 1)};
  op_run_t rb = RUN("MatMul", bad, 2, NULL, NULL);
  dc_check_error("MatMul [2,3]x[2,3]", &rb, "Matrix size-incompatible");
  weft_tensor_unref(bad[0]);
  weft_tensor_unref(bad[1]);
}

typedef struct red_case {
  int rank;
  int64_t dims[4];
  int n_axes;
  int32_t axes[4];
} red_case_t;

static const weft_dtype_t i64 = WEFT_DT_INT64, i32 = WEFT_DT_INT32;

static void test_reductions(void) {
  if (no_cuda()) return;
  static const red_case_t cases[] = {
      {1, {1}, 1, {0}},           {1, {7}, 1, {0}},           {1, {1023}, 1, {0}},
      {2, {7, 1023}, 1, {1}},     {2, {7, 1023}, 1, {0}},     {2, {7, 1023}, 2, {0, 1}},
      {2, {1023, 3}, 1, {0}},     {2, {300, 20}, 1, {1}},     {3, {3, 4, 5}, 2, {0, 2}},
      {3, {3, 4, 5}, 1, {1}},     {3, {3, 4, 5}, 1, {-1}},    {3, {3, 4, 5}, 0, {0}},
      {4, {2, 3, 4, 5}, 2, {1, 3}}, {3, {3, 1, 5}, 1, {1}},   {2, {0, 4}, 1, {0}},
      {3, {2, 2000, 3}, 1, {1}},  {2, {3, 100000}, 1, {1}},   {2, {50000, 2}, 1, {0}},
  };
  static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    const red_case_t *rc = &cases[c];
    for (int keep = 0; keep < 2; keep++) {
      bool kd = keep != 0;
      weft_tensor_t *axes = dc_vec_i32(rc->n_axes, rc->axes);
      for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        bool prod = strcmp(ops[o], "Prod") == 0;
        for (int k = 0; k < 4; k++) {
          weft_dtype_t t = num_types[k];
          weft_tensor_t *x = dc_is_float(t) ? dc_rand_t(t, rc->rank, rc->dims, prod ? 0.99 : -10,
                                                  prod ? 1.01 : 10)
                                         : dc_rand_t(t, rc->rank, rc->dims, prod ? -2 : -1000,
                                                  prod ? 2 : 1000);
          weft_tensor_t *in[2] = {x, axes};
          op_run_t r = RUN(ops[o], in, 2, dc_set_keep_dims, &kd);
          char what[96];
          g_snprintf(what, sizeof what, "%s %s case #%zu keep_dims=%d", ops[o],
                     weft_dtype_name(t), c, keep);
          dc_check_op(what, &r, dc_is_float(t) ? 1e-4 : 0, dc_is_float(t) ? 1e-4 : 0);
          weft_tensor_unref(x);
        }
      }
      static const char *const bool_ops[] = {"All", "Any"};
      for (size_t o = 0; o < G_N_ELEMENTS(bool_ops); o++) {
        weft_tensor_t *xb = dc_rand_t(WEFT_DT_BOOL, rc->rank, rc->dims, 0, 1);
        weft_tensor_t *in[2] = {xb, axes};
        op_run_t r = RUN(bool_ops[o], in, 2, dc_set_keep_dims, &kd);
        char what[96];
        g_snprintf(what, sizeof what, "%s bool case #%zu keep_dims=%d", bool_ops[o], c, keep);
        dc_check_op(what, &r, 0, 0);
        weft_tensor_unref(xb);
      }
      weft_tensor_unref(axes);
    }
  }
  /* ArgMax / ArgMin along every axis, int64 and int32 indices, NaN winning, ties to the first;
   * a long innermost axis takes the block-per-row kernel. */
  int64_t da[2] = {7, 1023}, dl[2] = {3, 5000};
  weft_tensor_t *xs[4] = {dc_rand_f32(2, da, -10, 10), dc_rand_t(WEFT_DT_INT32, 2, da, -5, 5),
                          dc_rand_t(WEFT_DT_DOUBLE, 2, dl, -10, 10), dc_rand_t(WEFT_DT_INT64, 2, dl, -3, 3)};
  ((float *)weft_tensor_data(xs[0]))[5 * 1023 + 17] = NAN;
  ((double *)weft_tensor_data(xs[2]))[2 * 5000 + 4000] = NAN;
  static const char *const arg_ops[] = {"ArgMax", "ArgMin"};
  for (size_t o = 0; o < G_N_ELEMENTS(arg_ops); o++) {
    for (int axis = -1; axis < 2; axis++) {
      weft_tensor_t *dim = weft_tensor_new_scalar_int32(axis);
      for (int k = 0; k < 4; k++) {
        weft_tensor_t *in[2] = {xs[k], dim};
        op_run_t r = RUN(arg_ops[o], in, 2, dc_set_output_type, k % 2 == 0 ? &i64 : &i32);
        char what[64];
        g_snprintf(what, sizeof what, "%s %s axis %d", arg_ops[o], dc_dtype_of(in[0]), axis);
        dc_check_op(what, &r, 0, 0);
      }
      weft_tensor_unref(dim);
    }
  }
  for (int k = 0; k < 4; k++) weft_tensor_unref(xs[k]);
  for (int k = 0; k < 2; k++) {
    weft_tensor_t *xl = dc_rand_t(float_types[k], 2, da, -1, 1);
    op_run_t rl2 = RUN("L2Loss", &xl, 1, NULL, NULL);
    dc_check_op("L2Loss", &rl2, 1e-5, 0);
    weft_tensor_unref(xl);
  }
  /* Large full sums stay accurate (double accumulators, two passes). */
  int64_t big[1] = {1 << 22};
  weft_tensor_t *x = dc_rand_f32(1, big, 0, 1);
  int32_t zero = 0;
  weft_tensor_t *axes = dc_vec_i32(1, &zero);
  weft_tensor_t *in[2] = {x, axes};
  bool kd = false;
  op_run_t r = RUN("Sum", in, 2, dc_set_keep_dims, &kd);
  dc_check_op("Sum float32[4194304]", &r, 1e-6, 0);
  op_run_t rm = RUN("Mean", in, 2, dc_set_keep_dims, &kd);
  dc_check_op("Mean float32[4194304]", &rm, 1e-6, 0);
  weft_tensor_unref(x);
  weft_tensor_unref(axes);
}

static void test_nn(void) {
  if (no_cuda()) return;
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 7, 0}, {5, 1023, 0}, {3, 4, 5}, {2000, 10, 0},
                                      {2, 70000, 0}};
  static const int ranks[] = {2, 2, 2, 3, 2, 2};
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
    for (int k = 0; k < 2; k++) {
      weft_tensor_t *x = dc_rand_t(float_types[k], ranks[s], shapes[s], -20, 20);
      op_run_t r = RUN("Softmax", &x, 1, NULL, NULL);
      char what[64];
      g_snprintf(what, sizeof what, "Softmax %s shape #%zu", dc_dtype_of(x), s);
      dc_check_op(what, &r, 1e-4, 1e-6);
      op_run_t rl = RUN("LogSoftmax", &x, 1, NULL, NULL);
      g_snprintf(what, sizeof what, "LogSoftmax %s shape #%zu", dc_dtype_of(x), s);
      dc_check_op(what, &rl, 1e-4, 1e-5);
      weft_tensor_unref(x);
    }
  }
  int64_t dx[4] = {2, 3, 4, 5}, dc[1] = {5}, dn[1] = {3};
  for (int k = 0; k < 4; k++) {
    weft_dtype_t t = num_types[k];
    weft_tensor_t *nhwc[2] = {dc_rand_t(t, 4, dx, -9, 9), dc_rand_t(t, 1, dc, -9, 9)};
    op_run_t r = RUN("BiasAdd", nhwc, 2, NULL, NULL);
    dc_check_op("BiasAdd NHWC", &r, 1e-6, 1e-6);
    weft_tensor_t *nchw[2] = {nhwc[0], dc_rand_t(t, 1, dn, -9, 9)};
    static const char *const fmt[] = {"data_format", "NCHW"};
    op_run_t rn = RUN("BiasAdd", nchw, 2, dc_set_string, fmt);
    dc_check_op("BiasAdd NCHW", &rn, 1e-6, 1e-6);
    op_run_t rg = RUN("BiasAddGrad", nhwc, 1, NULL, NULL);
    dc_check_op("BiasAddGrad NHWC", &rg, 1e-4, 1e-5);
    op_run_t rgn = RUN("BiasAddGrad", nchw, 1, dc_set_string, fmt);
    dc_check_op("BiasAddGrad NCHW", &rgn, 1e-4, 1e-5);
    weft_tensor_unref(nhwc[0]);
    weft_tensor_unref(nhwc[1]);
    weft_tensor_unref(nchw[1]);
  }
  /* Cross-entropy losses: dense labels (one row broadcast too) and sparse labels; both
   * outputs. */
  int64_t dl[2] = {64, 10}, d1[2] = {1, 10}, ds[1] = {64};
  for (int k = 0; k < 2; k++) {
    weft_tensor_t *logits = dc_rand_t(float_types[k], 2, dl, -5, 5);
    weft_tensor_t *probs = dc_rand_t(float_types[k], 2, dl, 0, 1);
    weft_tensor_t *one_row = dc_rand_t(float_types[k], 2, d1, 0, 1);
    weft_tensor_t *labels = dc_rand_t(WEFT_DT_INT32, 1, ds, 0, 9);
    weft_tensor_t *labels64 = dc_rand_t(WEFT_DT_INT64, 1, ds, 0, 9);
    for (int out = 0; out < 2; out++) {
      weft_tensor_t *in[2] = {logits, probs};
      op_run_t r = RUN("SoftmaxCrossEntropyWithLogits", in, 2, NULL, NULL);
      r.fetch_index = out;
      dc_check_op("SoftmaxCrossEntropyWithLogits", &r, 1e-5, 1e-6);
      weft_tensor_t *inb[2] = {logits, one_row};
      op_run_t rb = RUN("SoftmaxCrossEntropyWithLogits", inb, 2, NULL, NULL);
      rb.fetch_index = out;
      dc_check_op("SoftmaxCrossEntropyWithLogits broadcast labels", &rb, 1e-5, 1e-6);
      weft_tensor_t *ins[2] = {logits, labels};
      op_run_t rs = RUN("SparseSoftmaxCrossEntropyWithLogits", ins, 2, NULL, NULL);
      rs.fetch_index = out;
      dc_check_op("SparseSoftmaxCrossEntropyWithLogits int32", &rs, 1e-5, 1e-6);
      weft_tensor_t *ins64[2] = {logits, labels64};
      op_run_t rs64 = RUN("SparseSoftmaxCrossEntropyWithLogits", ins64, 2, NULL, NULL);
      rs64.fetch_index = out;
      dc_check_op("SparseSoftmaxCrossEntropyWithLogits int64", &rs64, 1e-5, 1e-6);
    }
    /* A label out of range is the CPU's error, found before anything runs. */
    ((int32_t *)weft_tensor_data(labels))[9] = 10;
    weft_tensor_t *ins[2] = {logits, labels};
    op_run_t rbad = RUN("SparseSoftmaxCrossEntropyWithLogits", ins, 2, NULL, NULL);
    dc_check_error("sparse label 10 of 10 classes", &rbad,
                "Received a label value of 10 which is outside the valid range of [0, 10)");
    weft_tensor_unref(logits);
    weft_tensor_unref(probs);
    weft_tensor_unref(one_row);
    weft_tensor_unref(labels);
    weft_tensor_unref(labels64);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Shapes and data movement, every dtype */

static void test_shapes_and_movement(void) {
  if (no_cuda()) return;
  int64_t d[3] = {3, 4, 5};
  const int32_t perms[][3] = {{2, 0, 1}, {1, 0, 2}, {0, 1, 2}, {2, 1, 0}};
  const int32_t begin[] = {1, 0, 2}, size[] = {2, -1, 3}, mult[] = {2, 1, 3};
  const int32_t pads[] = {1, 0, 0, 2, 3, 1};
  int64_t dp[2] = {3, 2};
  weft_tensor_t *bv = dc_vec_i32(3, begin), *sv = dc_vec_i32(3, size), *mv = dc_vec_i32(3, mult);
  weft_tensor_t *pv = weft_tensor_new_from_data(WEFT_DT_INT32, 2, dp, pads, sizeof pads, NULL);
  for (int k = 0; k < 5; k++) {
    weft_dtype_t t = all_types[k];
    weft_tensor_t *x = dc_rand_t(t, 3, d, -100, 100);
    char what[64];
    for (size_t p = 0; p < G_N_ELEMENTS(perms); p++) {
      weft_tensor_t *perm = dc_vec_i32(3, perms[p]);
      weft_tensor_t *in[2] = {x, perm};
      op_run_t r = RUN("Transpose", in, 2, NULL, NULL);
      g_snprintf(what, sizeof what, "Transpose %s perm #%zu", dc_dtype_of(x), p);
      dc_check_op(what, &r, 0, 0);
      weft_tensor_unref(perm);
    }
    const int32_t shape[] = {5, -1};
    weft_tensor_t *shv = dc_vec_i32(2, shape);
    weft_tensor_t *rin[2] = {x, shv};
    op_run_t rr = RUN("Reshape", rin, 2, NULL, NULL);
    dc_check_op("Reshape", &rr, 0, 0);
    weft_tensor_unref(shv);
    weft_tensor_t *dim = weft_tensor_new_scalar_int32(-1);
    weft_tensor_t *ein[2] = {x, dim};
    op_run_t re = RUN("ExpandDims", ein, 2, NULL, NULL);
    dc_check_op("ExpandDims", &re, 0, 0);
    weft_tensor_unref(dim);
    static const char *const simple[] = {"Identity", "ZerosLike", "OnesLike", "Shape", "Size",
                                         "Rank"};
    for (size_t i = 0; i < G_N_ELEMENTS(simple); i++) {
      op_run_t ri = RUN(simple[i], &x, 1, NULL, NULL);
      g_snprintf(what, sizeof what, "%s %s", simple[i], dc_dtype_of(x));
      dc_check_op(what, &ri, 0, 0);
    }
    weft_tensor_t *sl[3] = {x, bv, sv};
    op_run_t r1 = RUN("Slice", sl, 3, NULL, NULL);
    dc_check_op("Slice", &r1, 0, 0);
    weft_tensor_t *ti[2] = {x, mv};
    op_run_t r2 = RUN("Tile", ti, 2, NULL, NULL);
    dc_check_op("Tile", &r2, 0, 0);
    weft_tensor_t *pa[2] = {x, pv};
    op_run_t r6 = RUN("Pad", pa, 2, NULL, NULL);
    dc_check_op("Pad", &r6, 0, 0);
    /* BroadcastTo and Fill. */
    int64_t d31[2] = {3, 1};
    weft_tensor_t *small = dc_rand_t(t, 2, d31, -9, 9);
    const int32_t target[] = {2, 3, 4};
    weft_tensor_t *tv = dc_vec_i32(3, target);
    weft_tensor_t *bin[2] = {small, tv};
    op_run_t rb = RUN("BroadcastTo", bin, 2, NULL, NULL);
    dc_check_op("BroadcastTo", &rb, 0, 0);
    weft_tensor_t *value = dc_rand_t(t, 0, NULL, -9, 9);
    weft_tensor_t *fin[2] = {tv, value};
    op_run_t rf = RUN("Fill", fin, 2, NULL, NULL);
    g_snprintf(what, sizeof what, "Fill %s", dc_dtype_of(value));
    dc_check_op(what, &rf, 0, 0);
    weft_tensor_unref(value);
    weft_tensor_unref(small);
    weft_tensor_unref(tv);
    /* Split into 2 along axis 1, SplitV [1, -1, 2] along axis 2, Unpack along axis 0. */
    weft_tensor_t *one = weft_tensor_new_scalar_int32(1), *two = weft_tensor_new_scalar_int32(2);
    weft_tensor_t *sp[2] = {one, x};
    const int32_t parts[] = {1, -1, 2};
    weft_tensor_t *pv3 = dc_vec_i32(3, parts);
    weft_tensor_t *spv[3] = {x, pv3, two};
    for (int out = 0; out < 3; out++) {
      op_run_t r7 = RUN("Split", sp, 2, dc_set_num_split, (const int[]){2});
      r7.fetch_index = out < 2 ? out : 1;
      dc_check_op("Split", &r7, 0, 0);
      op_run_t r8 = RUN("SplitV", spv, 3, dc_set_num_split, (const int[]){3});
      r8.fetch_index = out;
      dc_check_op("SplitV", &r8, 0, 0);
      op_run_t r9 = RUN("Unpack", &x, 1, dc_set_num, (const int[]){3});
      r9.fetch_index = out;
      dc_check_op("Unpack", &r9, 0, 0);
    }
    weft_tensor_unref(one);
    weft_tensor_unref(two);
    weft_tensor_unref(pv3);
    int64_t d2[3] = {3, 2, 5};
    weft_tensor_t *other = dc_rand_t(t, 3, d2, -9, 9);
    weft_tensor_t *axis = weft_tensor_new_scalar_int32(1);
    weft_tensor_t *cc[4] = {x, other, x, axis};
    op_run_t r4 = RUN("ConcatV2", cc, 4, NULL, NULL);
    r4.list_len = 3;
    dc_check_op("ConcatV2 axis 1", &r4, 0, 0);
    weft_tensor_unref(axis);
    weft_tensor_unref(other);
    weft_tensor_t *pk[3] = {x, x, x};
    for (int ax = -1; ax <= 3; ax++) {
      op_run_t r5 = RUN("Pack", pk, 3, dc_set_axis, &ax);
      r5.list_len = 3;
      g_snprintf(what, sizeof what, "Pack %s axis %d", dc_dtype_of(x), ax);
      dc_check_op(what, &r5, 0, 0);
    }
    weft_tensor_unref(x);
  }
  int64_t ds[4] = {3, 1, 5, 1};
  weft_tensor_t *sq = dc_rand_f32(4, ds, -1, 1);
  op_run_t rs = RUN("Squeeze", &sq, 1, NULL, NULL);
  dc_check_op("Squeeze", &rs, 0, 0);
  weft_tensor_unref(sq);
  /* A large transpose (the 64-bit-free fast path and many blocks). */
  int64_t dbig[2] = {1000, 3000};
  weft_tensor_t *xb = dc_rand_f32(2, dbig, -1, 1);
  const int32_t p10[] = {1, 0};
  weft_tensor_t *perm = dc_vec_i32(2, p10);
  weft_tensor_t *tin[2] = {xb, perm};
  op_run_t rt = RUN("Transpose", tin, 2, NULL, NULL);
  dc_check_op("Transpose float32[1000,3000]", &rt, 0, 0);
  weft_tensor_unref(perm);
  weft_tensor_unref(xb);
  weft_tensor_unref(bv);
  weft_tensor_unref(sv);
  weft_tensor_unref(mv);
  weft_tensor_unref(pv);
}

/* ---------------------------------------------------------------------------------------------
 * Variables and training */

static void test_variables(void) {
  if (no_cuda()) return;
  dc_check_float_variable();
}

static void set_nesterov(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_bool(b, "use_nesterov", *(const bool *)arg);
}

/* One Apply* op updating variables on `device` for `steps` runs; returns the variable and slot
 * values after the last. */
static void run_apply(const char *device, const char *op, weft_dtype_t t, bool nesterov,
                      int steps, weft_tensor_t **outs, int n_refs) {
  int64_t d[2] = {31, 17};
  dc_seed(0x1234567ull); /* the same values on both devices */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, device);
  weft_output_t refs[3];
  char name[16];
  for (int r = 0; r < n_refs; r++) {
    weft_tensor_t *v0 = dc_rand_t(t, 2, d, r == 0 ? -1 : 0.1, 1);
    g_snprintf(name, sizeof name, "init%d", r);
    weft_output_t c = weft_const(g, name, v0, &st);
    OK(st);
    weft_tensor_unref(v0);
    g_snprintf(name, sizeof name, "var%d", r);
    weft_variable(g, name, c, &st);
    OK(st);
    refs[r] = (weft_output_t){weft_graph_node(g, name), 0};
  }
  weft_tensor_t *grad_t = dc_rand_t(t, 2, d, -1, 1);
  weft_output_t grad = weft_const(g, "grad", grad_t, &st);
  OK(st);
  weft_tensor_unref(grad_t);
  /* Scalars, each op's in its input order after the refs. */
  static const double sgd[] = {0.1}, mom[] = {0.05}, ada[] = {0.2},
                      adam[] = {0.9 * 0.9, 0.999 * 0.999, 0.01, 0.9, 0.999, 1e-7},
                      rms[] = {0.01, 0.9, 0.5, 1e-6};
  const double *sc = sgd;
  int n_sc = 1;
  if (strcmp(op, "ApplyMomentum") == 0) sc = mom;
  if (strcmp(op, "ApplyAdagrad") == 0) sc = ada;
  if (strcmp(op, "ApplyAdam") == 0) {
    sc = adam;
    n_sc = 6;
  }
  if (strcmp(op, "ApplyRMSProp") == 0) {
    sc = rms;
    n_sc = 4;
  }
  weft_output_t scalars[6];
  for (int k = 0; k < n_sc; k++) {
    weft_tensor_t *v = weft_tensor_new(t, 0, NULL);
    if (t == WEFT_DT_FLOAT) ((float *)weft_tensor_data(v))[0] = (float)sc[k];
    else ((double *)weft_tensor_data(v))[0] = sc[k];
    g_snprintf(name, sizeof name, "s%d", k);
    scalars[k] = weft_const(g, name, v, &st);
    OK(st);
    weft_tensor_unref(v);
  }
  weft_op_builder_t *b = weft_op_new(g, op, "apply");
  for (int r = 0; r < n_refs; r++) weft_op_add_input(b, refs[r]);
  if (strcmp(op, "ApplyMomentum") == 0) {
    weft_op_add_input(b, scalars[0]);
    weft_op_add_input(b, grad);
    weft_tensor_t *mv = weft_tensor_new(t, 0, NULL);
    if (t == WEFT_DT_FLOAT) ((float *)weft_tensor_data(mv))[0] = 0.9f;
    else ((double *)weft_tensor_data(mv))[0] = 0.9;
    weft_op_add_input(b, weft_const(g, "mom", mv, &st));
    weft_tensor_unref(mv);
    set_nesterov(b, &nesterov);
  } else {
    for (int k = 0; k < n_sc; k++) weft_op_add_input(b, scalars[k]);
    weft_op_add_input(b, grad);
    if (strcmp(op, "ApplyAdam") == 0) set_nesterov(b, &nesterov);
  }
  OK(weft_op_finish(b, NULL));
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *init[] = {"init"}, *apply[] = {"apply"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1));
  for (int k = 0; k < steps; k++) OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, apply, 1));
  char reads[3][16];
  const char *fetch[3];
  for (int r = 0; r < n_refs; r++) {
    g_snprintf(reads[r], sizeof reads[r], "var%d/read", r);
    fetch[r] = reads[r];
  }
  OK(weft_session_run(s, NULL, NULL, 0, fetch, outs, n_refs, NULL, 0));
  if (strcmp(device, CU_DEV) == 0) g_assert_cmpstr(weft_session_node_device(s, "apply"), ==, CU_FULL);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_apply_ops(void) {
  if (no_cuda()) return;
  static const struct {
    const char *op;
    int n_refs;
  } ops[] = {{"ApplyGradientDescent", 1}, {"ApplyMomentum", 2}, {"ApplyAdagrad", 2},
             {"ApplyAdam", 3},            {"ApplyRMSProp", 3}};
  for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
    for (int k = 0; k < 2; k++)
      for (int nest = 0; nest < 2; nest++) {
        bool nesterov = nest != 0;
        if (nesterov && strcmp(ops[o].op, "ApplyMomentum") != 0 &&
            strcmp(ops[o].op, "ApplyAdam") != 0)
          continue;
        weft_tensor_t *got[3] = {NULL, NULL, NULL}, *want[3] = {NULL, NULL, NULL};
        run_apply(CU_DEV, ops[o].op, float_types[k], nesterov, 5, got, ops[o].n_refs);
        run_apply(CPU_DEV, ops[o].op, float_types[k], nesterov, 5, want, ops[o].n_refs);
        for (int r = 0; r < ops[o].n_refs; r++) {
          char what[96];
          g_snprintf(what, sizeof what, "%s %s nesterov=%d ref %d", ops[o].op,
                     weft_dtype_name(float_types[k]), nest, r);
          dc_same_values(what, got[r], want[r], 1e-5, 1e-6);
          weft_tensor_unref(got[r]);
          weft_tensor_unref(want[r]);
        }
      }
}

/* A two-layer classifier trained with Adam for 20 steps on CUDA and on the CPU: the forward and
 * backward kernels (MatMul both ways, BiasAdd, Relu, ReluGrad, BiasAddGrad, the sparse
 * cross-entropy, Sum/Mean, Reshape, ...) and the updates agree. */
static void train_model(const char *device, weft_tensor_t **w_out) {
  dc_seed(0xfeedbeefull);
  int64_t dx[2] = {64, 20}, dy[1] = {64}, dw1[2] = {20, 32}, db1[1] = {32}, dw2[2] = {32, 5},
          db2[1] = {5};
  weft_tensor_t *xt = dc_rand_f32(2, dx, -1, 1), *yt = dc_rand_t(WEFT_DT_INT32, 1, dy, 0, 4);
  weft_tensor_t *w1t = dc_rand_f32(2, dw1, -0.3, 0.3), *b1t = dc_rand_f32(1, db1, -0.1, 0.1);
  weft_tensor_t *w2t = dc_rand_f32(2, dw2, -0.3, 0.3), *b2t = dc_rand_f32(1, db2, -0.1, 0.1);
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, device);
  weft_output_t x = weft_const(g, "x", xt, &st);
  weft_output_t y = weft_const(g, "y", yt, &st);
  weft_output_t w1 = weft_variable(g, "w1", weft_const(g, "w1_0", w1t, &st), &st);
  weft_output_t b1 = weft_variable(g, "b1", weft_const(g, "b1_0", b1t, &st), &st);
  weft_output_t w2 = weft_variable(g, "w2", weft_const(g, "w2_0", w2t, &st), &st);
  weft_output_t b2 = weft_variable(g, "b2", weft_const(g, "b2_0", b2t, &st), &st);
  OK(st);
  weft_output_t h = weft_matmul(g, "h", x, w1, false, false, &st);
  h = weft_binary(g, "BiasAdd", "hb", h, b1, &st);
  h = weft_unary(g, "Relu", "relu", h, &st);
  weft_output_t logits = weft_matmul(g, "logits", h, w2, false, false, &st);
  logits = weft_binary(g, "BiasAdd", "logits_b", logits, b2, &st);
  OK(st);
  weft_output_t loss = weft_sparse_softmax_cross_entropy(g, y, logits, &st);
  OK(st);
  weft_optimizer_spec_t spec = weft_optimizer_spec_default(WEFT_OPTIMIZER_ADAM, 0.01);
  weft_node_t *train = NULL;
  OK(weft_minimize(g, loss, &spec, NULL, 0, NULL, &train));
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = dc_soft_session(g); /* anything CUDA lacks */
  const char *init[] = {"init"}, *step[] = {weft_node_name(train)};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1));
  for (int k = 0; k < 20; k++) OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, step, 1));
  const char *fetch[] = {"w1/read", "b1/read", "w2/read", "b2/read"};
  OK(weft_session_run(s, NULL, NULL, 0, fetch, w_out, 4, NULL, 0));
  if (strcmp(device, CU_DEV) == 0) {
    g_assert_cmpstr(weft_session_node_device(s, "logits"), ==, CU_FULL);
    g_assert_cmpstr(weft_session_node_device(s, "w1"), ==, CU_FULL);
  }
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(xt);
  weft_tensor_unref(yt);
  weft_tensor_unref(w1t);
  weft_tensor_unref(b1t);
  weft_tensor_unref(w2t);
  weft_tensor_unref(b2t);
}

static void test_training(void) {
  if (no_cuda()) return;
  weft_tensor_t *got[4] = {NULL}, *want[4] = {NULL};
  train_model(CU_DEV, got);
  train_model(CPU_DEV, want);
  static const char *const names[] = {"w1", "b1", "w2", "b2"};
  for (int i = 0; i < 4; i++) {
    char what[64];
    g_snprintf(what, sizeof what, "%s after 20 Adam steps", names[i]);
    dc_same_values(what, got[i], want[i], 1e-3, 1e-4);
    weft_tensor_unref(got[i]);
    weft_tensor_unref(want[i]);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Execution: streams, threads, cross-device edges, placement */

static void test_long_chain_and_parallel(void) {
  if (no_cuda()) return;
  /* Queued on the one compute stream. */
  dc_check_long_chain_and_parallel(100000, 5);
}

static void test_cross_device(void) {
  if (no_cuda()) return;
  dc_check_cross_device_matmul(400, 300, 200);
  /* A tensor larger than the staging buffers (4 x 4 MiB) goes up and down intact. */
  int64_t dbig[1] = {12 << 20};
  weft_tensor_t *big = dc_rand_f32(1, dbig, -1, 1);
  op_run_t rn = RUN("Neg", &big, 1, NULL, NULL);
  rn.input_device = CPU_DEV;
  dc_check_op("Neg of 48 MiB from the host", &rn, 0, 0);
  weft_tensor_unref(big);
}

static void test_soft_placement(void) {
  if (no_cuda()) return;
  /* CUDA has no int8 kernels. */
  int64_t d[1] = {3};
  weft_tensor_t *i8 = weft_tensor_new(WEFT_DT_INT8, 1, d);
  for (int i = 0; i < 3; i++) ((int8_t *)weft_tensor_data(i8))[i] = (int8_t)(10 + i);
  dc_check_soft_placement(i8, 24, "CUDA");
  weft_tensor_unref(i8);
}

/* /gpu:0 is CUDA:0, above any Vulkan device; unpinned ops prefer it too. */
static void test_gpu_alias(void) {
  if (no_cuda()) return;
  dc_check_gpu_alias(false);
}

/* ---------------------------------------------------------------------------------------------
 * Memory options, in subprocesses: they are fixed when the device first opens */

/* Runs Fill of `floats` float32 elements on CUDA:0 under the options; prints the error if any. */
static weft_status_t *fill_under(double fraction, bool growth, int32_t floats) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, CU_DEV);
  weft_tensor_t *dims = dc_vec_i32(1, &floats);
  weft_output_t dv = weft_const(g, "dims", dims, &st);
  OK(st);
  weft_output_t v = weft_const_float(g, "v", 1.0f, &st);
  OK(st);
  weft_output_t big = weft_binary(g, "Fill", "big", dv, v, &st);
  OK(st);
  int32_t zero = 0;
  weft_tensor_t *axes = dc_vec_i32(1, &zero);
  weft_binary(g, "Sum", "total", big, weft_const(g, "axes", axes, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_gpu_memory_fraction(o, fraction);
  weft_session_options_set_gpu_allow_growth(o, growth);
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  const char *fetch[] = {"total"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  if (!st) g_assert_cmpfloat(((float *)weft_tensor_data(out))[0], ==, (float)floats);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weft_tensor_unref(dims);
  weft_tensor_unref(axes);
  return st;
}

static void memory_cap_child(void) {
  g_setenv("WEFT_LOG_LEVEL", "info", TRUE);
  const weft_device_info_t *d = cuda_device();
  if (!d) return;
  /* 8 MiB up front, far below the 16 MiB the fill needs. */
  weft_status_t *st = fill_under((8.0 * 1024 * 1024) / (double)d->memory_bytes, false, 1 << 22);
  if (weft_status_code(st) != WEFT_RESOURCE_EXHAUSTED)
    g_error("got %s", st ? weft_status_message(st) : "success");
  printf("%s\n", weft_status_message(st));
  weft_status_free(st);
  /* What fits still runs on the same device. */
  OK(fill_under(0.5, true, 1 << 18));
}

static void test_memory_fraction(void) {
  if (no_cuda()) return;
  g_test_trap_subprocess("/cuda/subprocess/memory_cap", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stdout("*CUDA:0*out of device memory allocating 16777216 bytes (16.0 MiB)*"
                            "in use in*allocations*reserved*limit*memory_fraction*"
                            "reserved up front*");
  /* The share was taken once, up front. */
  g_test_trap_assert_stderr("*CUDA:0 opened: memory_fraction *reserved up front*");
}

static void growth_child(void) {
  g_setenv("WEFT_LOG_LEVEL", "info", TRUE);
  if (!cuda_device()) return;
  /* allow_growth with a half share: 64 MiB come on demand. */
  OK(fill_under(0.5, true, 1 << 24));
}

static void test_allow_growth(void) {
  if (no_cuda()) return;
  g_test_trap_subprocess("/cuda/subprocess/growth", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*CUDA:0 opened: memory_fraction 0.5 of *allow_growth*");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dc_set_device("CUDA");
  dc_seed(0x2545f4914f6cdd1dull);
  /* Plugins load on first use, so that a subprocess test can set its environment first. */
  g_test_add_func("/cuda/plugin_loaded", test_plugin_loaded);
  g_test_add_func("/cuda/no_device_placement", test_no_device_placement);
  g_test_add_func("/cuda/disabled", test_disabled);
  g_test_add_func("/cuda/visible_devices_empty", test_visible_devices_empty);
  g_test_add_func("/cuda/registration", test_registration);
  g_test_add_func("/cuda/arena/basics", test_arena_basics);
  g_test_add_func("/cuda/arena/best_fit_and_merge", test_arena_best_fit_and_merge);
  g_test_add_func("/cuda/arena/growth", test_arena_growth);
  g_test_add_func("/cuda/arena/limit", test_arena_limit);
  g_test_add_func("/cuda/arena/fixed_pool", test_arena_fixed_pool);
  g_test_add_func("/cuda/arena/device_full", test_arena_device_full);
  g_test_add_func("/cuda/arena/random", test_arena_random);
  g_test_add_func("/cuda/arena/bytes_str", test_arena_bytes_str);
  g_test_add_func("/cuda/device_listed", test_device_listed);
  g_test_add_func("/cuda/properties_logged", test_properties_logged);
  g_test_add_func("/cuda/unary", test_unary);
  g_test_add_func("/cuda/special_values", test_special_values);
  g_test_add_func("/cuda/binary_broadcast", test_binary_broadcast);
  g_test_add_func("/cuda/logic_select_clip", test_logic_select_clip);
  g_test_add_func("/cuda/cast", test_cast);
  g_test_add_func("/cuda/matmul", test_matmul);
  g_test_add_func("/cuda/reductions", test_reductions);
  g_test_add_func("/cuda/nn", test_nn);
  g_test_add_func("/cuda/shapes_and_movement", test_shapes_and_movement);
  g_test_add_func("/cuda/variables", test_variables);
  g_test_add_func("/cuda/apply_ops", test_apply_ops);
  g_test_add_func("/cuda/training", test_training);
  g_test_add_func("/cuda/long_chain_and_parallel", test_long_chain_and_parallel);
  g_test_add_func("/cuda/cross_device", test_cross_device);
  g_test_add_func("/cuda/soft_placement", test_soft_placement);
  g_test_add_func("/cuda/gpu_alias", test_gpu_alias);
  g_test_add_func("/cuda/memory_fraction", test_memory_fraction);
  g_test_add_func("/cuda/allow_growth", test_allow_growth);
  g_test_add_func("/cuda/subprocess/disabled", disabled_child);
  g_test_add_func("/cuda/subprocess/invisible", invisible_child);
  g_test_add_func("/cuda/subprocess/registration", registration_child);
  g_test_add_func("/cuda/subprocess/properties", properties_child);
  g_test_add_func("/cuda/subprocess/memory_cap", memory_cap_child);
  g_test_add_func("/cuda/subprocess/growth", growth_child);
  return g_test_run();
}

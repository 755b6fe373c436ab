/* Tests for core/src/placement: device spec parsing, merging, printing and matching, and the
 * placer (device scopes, device functions, colocation, kernel availability, soft placement,
 * already-placed nodes) over hand-made device lists and the real kernel registry with the CPU
 * plugin loaded, and colocation groups placed whole by local sessions on the real VULKAN device
 * (lavapipe) when the Vulkan plugin finds one. */
#include <string.h>

#include "../core/src/placement/placement_internal.h"
#include "../core/src/plugin/plugin_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Device specs */

typedef struct spec_case {
  const char *text;
  const char *job;
  int replica;
  int task;
  const char *type;
  int id;
  const char *canonical;
} spec_case_t;

static void test_spec_parse_forms(void) {
  static const spec_case_t cases[] = {
      {"/job:ps/replica:0/task:1/device:GPU:0", "ps", 0, 1, "GPU", 0,
       "/job:ps/replica:0/task:1/device:GPU:0"},
      {"/job:ps/task:0/cpu:0", "ps", -1, 0, "CPU", 0, "/job:ps/task:0/device:CPU:0"},
      {"/job:worker", "worker", -1, -1, NULL, -1, "/job:worker"},
      {"/gpu:1", NULL, -1, -1, "GPU", 1, "/device:GPU:1"},
      {"/cpu:0", NULL, -1, -1, "CPU", 0, "/device:CPU:0"},
      {"/GPU:2", NULL, -1, -1, "GPU", 2, "/device:GPU:2"},
      {"/device:VULKAN:0", NULL, -1, -1, "VULKAN", 0, "/device:VULKAN:0"},
      {"/device:CPU:*", NULL, -1, -1, "CPU", -1, "/device:CPU:*"},
      {"/device:gpu:3", NULL, -1, -1, "GPU", 3, "/device:GPU:3"},
      {"/device:CUDA", NULL, -1, -1, "CUDA", -1, "/device:CUDA:*"},
      {"CPU:0", NULL, -1, -1, "CPU", 0, "/device:CPU:0"},
      {"cpu:0", NULL, -1, -1, "CPU", 0, "/device:CPU:0"},
      {"vulkan:1", NULL, -1, -1, "VULKAN", 1, "/device:VULKAN:1"},
      {"", NULL, -1, -1, NULL, -1, ""},
      {"/job:*/replica:*/task:*", NULL, -1, -1, NULL, -1, ""},
      {"job:ps/task:3", "ps", -1, 3, NULL, -1, "/job:ps/task:3"},
      {"/job:localhost/replica:0/task:0/device:CPU:0", "localhost", 0, 0, "CPU", 0,
       "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"/job:my_job2/replica:12/task:345/device:CUDA:7", "my_job2", 12, 345, "CUDA", 7,
       "/job:my_job2/replica:12/task:345/device:CUDA:7"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const spec_case_t *c = &cases[i];
    weft__device_spec_t spec;
    weft_status_t *st = weft__device_spec_parse(c->text, &spec);
    if (st != NULL) g_test_message("'%s': %s", c->text, weft_status_message(st));
    g_assert_null(st);
    g_assert_cmpstr(spec.job, ==, c->job);
    g_assert_cmpint(spec.replica, ==, c->replica);
    g_assert_cmpint(spec.task, ==, c->task);
    g_assert_cmpstr(spec.type, ==, c->type);
    g_assert_cmpint(spec.id, ==, c->id);
    char *s = weft__device_spec_to_string(&spec);
    g_assert_cmpstr(s, ==, c->canonical);
    /* The canonical form reads back as the same spec. */
    weft__device_spec_t again;
    g_assert_null(weft__device_spec_parse(s, &again));
    char *s2 = weft__device_spec_to_string(&again);
    g_assert_cmpstr(s2, ==, s);
    g_free(s2);
    g_free(s);
    weft__device_spec_clear(&again);
    weft__device_spec_clear(&spec);
  }
}

static void test_spec_parse_null(void) {
  weft__device_spec_t spec;
  g_assert_null(weft__device_spec_parse(NULL, &spec));
  g_assert_null(spec.job);
  g_assert_null(spec.type);
  g_assert_cmpint(spec.id, ==, -1);
}

static void test_spec_parse_malformed(void) {
  static const struct {
    const char *text;
    const char *bad_part;
  } cases[] = {
      {"/job:ps/tusk:0", "tusk:0"},
      {"/job:ps/task:x", "task:x"},
      {"/replica:-1", "replica:-1"},
      {"/task:99999999999", "task:99999999999"},
      {"/device:GPU:0:1", "device:GPU:0:1"},
      {"/device:1GPU:0", "device:1GPU:0"},
      {"/device:GPU:", "device:GPU:"},
      {"/job:", "job:"},
      {"/job:p-s", "job:p-s"},
      {"/job:ps//task:0", ""},
      {"gpu", "gpu"},
      {"/cpu", "cpu"},
      {"/tpu:0", "tpu:0"},
      {"GPU:x", "GPU:x"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    weft__device_spec_t spec;
    weft_status_t *st = weft__device_spec_parse(cases[i].text, &spec);
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    char *want = g_strdup_printf("Malformed device specification '%s': cannot parse '%s'",
                                 cases[i].text, cases[i].bad_part);
    g_assert_cmpstr(weft_status_message(st), ==, want);
    g_free(want);
    weft_status_free(st);
    /* A failed parse leaves nothing to free. */
    g_assert_null(spec.job);
    g_assert_null(spec.type);
  }
}

static char *merged_string(const char *outer, const char *inner) {
  weft__device_spec_t a, b;
  g_assert_null(weft__device_spec_parse(outer, &a));
  g_assert_null(weft__device_spec_parse(inner, &b));
  weft__device_spec_merge(&a, &b);
  char *s = weft__device_spec_to_string(&a);
  weft__device_spec_clear(&a);
  weft__device_spec_clear(&b);
  return s;
}

static void test_spec_merge(void) {
  static const char *const cases[][3] = {
      {"/job:ps/task:0/device:CPU:0", "/gpu:1", "/job:ps/task:0/device:GPU:1"},
      {"/job:ps/task:0", "/job:worker", "/job:worker/task:0"},
      {"/job:ps", "/task:2", "/job:ps/task:2"},
      {"/job:ps/replica:1", "/replica:0", "/job:ps/replica:0"},
      {"/gpu:1", "/device:CPU:*", "/device:CPU:1"},
      {"/job:ps/task:1/cpu:0", "", "/job:ps/task:1/device:CPU:0"},
      {"", "/job:worker/cpu:0", "/job:worker/device:CPU:0"},
      {"", "", ""},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *s = merged_string(cases[i][0], cases[i][1]);
    g_assert_cmpstr(s, ==, cases[i][2]);
    g_free(s);
  }

  /* Merging into itself and copying keep every field. */
  weft__device_spec_t a, b;
  g_assert_null(weft__device_spec_parse("/job:ps/replica:2/task:3/device:VULKAN:4", &a));
  weft__device_spec_merge(&a, &a);
  weft__device_spec_init(&b);
  weft__device_spec_copy(&b, &a);
  weft__device_spec_copy(&b, &b);
  char *s = weft__device_spec_to_string(&b);
  g_assert_cmpstr(s, ==, "/job:ps/replica:2/task:3/device:VULKAN:4");
  g_free(s);
  weft__device_spec_clear(&a);
  weft__device_spec_clear(&b);
  g_assert_null(b.job);
  g_assert_cmpint(b.task, ==, -1);
}

static void test_spec_to_string_partial(void) {
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  spec.id = 3;
  char *s = weft__device_spec_to_string(&spec);
  g_assert_cmpstr(s, ==, "/device:*:3");
  g_free(s);
  spec.task = 2;
  s = weft__device_spec_to_string(&spec);
  g_assert_cmpstr(s, ==, "/task:2/device:*:3");
  g_free(s);
}

static bool compatible(const char *a, const char *b) {
  weft__device_spec_t sa, sb;
  g_assert_null(weft__device_spec_parse(a, &sa));
  g_assert_null(weft__device_spec_parse(b, &sb));
  bool r = weft__device_spec_compatible(&sa, &sb);
  g_assert_true(r == weft__device_spec_compatible(&sb, &sa));
  weft__device_spec_clear(&sa);
  weft__device_spec_clear(&sb);
  return r;
}

static void test_spec_compatible(void) {
  g_assert_false(compatible("/job:ps", "/job:worker"));
  g_assert_true(compatible("/job:ps", "/gpu:0"));
  g_assert_false(compatible("/gpu:0", "/gpu:1"));
  g_assert_true(compatible("/gpu:0", "/device:gpu:0"));
  g_assert_true(compatible("/device:CPU:*", "/cpu:3"));
  g_assert_false(compatible("/cpu:0", "/gpu:0"));
  g_assert_false(compatible("/job:ps/task:0", "/job:ps/task:1"));
  g_assert_false(compatible("/replica:0", "/replica:1"));
  g_assert_true(compatible("", "/job:ps/replica:0/task:0/device:CPU:0"));
}

#define LOCAL "/job:localhost/replica:0/task:0/device:"

static const weft__place_device_t kCpu0 = {LOCAL "CPU:0", "localhost", 0, 0, "CPU", 0, false, 0, false};
static const weft__place_device_t kCpu1 = {LOCAL "CPU:1", "localhost", 0, 0, "CPU", 1, false, 0, false};
static const weft__place_device_t kCuda0 = {LOCAL "FAKEGPU:0", "localhost", 0, 0, "FAKEGPU", 0, true,
                                            100, false};
static const weft__place_device_t kCuda1 = {LOCAL "FAKEGPU:1", "localhost", 0, 0, "FAKEGPU", 1, true,
                                            100, false};
static const weft__place_device_t kVulkan0 = {LOCAL "VULKAN:0", "localhost", 0, 0, "VULKAN", 0,
                                              true, 50, false};
static const weft__place_device_t kPs0 = {"/job:ps/replica:0/task:0/device:CPU:0", "ps", 0, 0,
                                          "CPU", 0, false, 0, false};
static const weft__place_device_t kPs1 = {"/job:ps/replica:0/task:1/device:CPU:0", "ps", 0, 1,
                                          "CPU", 0, false, 0, false};
static const weft__place_device_t kWorker0 = {"/job:worker/replica:0/task:0/device:CPU:0",
                                              "worker", 0, 0, "CPU", 0, false, 0, false};
static const weft__place_device_t kWorker1 = {"/job:worker/replica:0/task:1/device:CPU:0",
                                              "worker", 0, 1, "CPU", 0, false, 0, false};

static bool matches(const char *text, const weft__place_device_t *device, const char *gpu_type) {
  weft__device_spec_t spec;
  g_assert_null(weft__device_spec_parse(text, &spec));
  bool r = weft__device_spec_matches(&spec, device, gpu_type);
  weft__device_spec_clear(&spec);
  return r;
}

static void test_spec_matches(void) {
  g_assert_true(matches("/gpu:0", &kCuda0, "FAKEGPU"));
  g_assert_false(matches("/gpu:0", &kCuda1, "FAKEGPU"));
  g_assert_true(matches("/gpu:1", &kCuda1, "FAKEGPU"));
  g_assert_false(matches("/gpu:0", &kCuda0, NULL));
  g_assert_false(matches("/gpu:0", &kVulkan0, "FAKEGPU"));
  g_assert_true(matches("/gpu:0", &kVulkan0, "VULKAN"));
  g_assert_true(matches("/device:FAKEGPU:0", &kCuda0, "FAKEGPU"));
  g_assert_true(matches("/device:fakegpu:0", &kCuda0, NULL));
  g_assert_true(matches("/cpu:0", &kCpu0, "FAKEGPU"));
  g_assert_false(matches("/cpu:0", &kCuda0, "FAKEGPU"));
  g_assert_false(matches("/cpu:0", &kCpu1, "FAKEGPU"));
  g_assert_true(matches("/device:CPU:*", &kCpu0, NULL));
  g_assert_true(matches("/device:CPU:*", &kCpu1, NULL));
  g_assert_false(matches("/job:ps", &kCpu0, NULL));
  g_assert_true(matches("/job:ps", &kPs1, NULL));
  g_assert_false(matches("/job:ps/task:0", &kPs1, NULL));
  g_assert_false(matches("/job:localhost/task:1", &kCpu0, NULL));
  g_assert_false(matches("/replica:1", &kCpu0, NULL));
  g_assert_true(matches("", &kCuda1, NULL));
  g_assert_true(matches("/job:localhost/replica:0/task:0/device:CPU:0", &kCpu0, NULL));
}

/* ---------------------------------------------------------------------------------------------
 * The placer */

static const weft__placer_options_t kStrict = {false, "localhost", 0, 0};
static const weft__placer_options_t kSoft = {true, "localhost", 0, 0};

static GHashTable *new_placement(void) {
  return weft__placement_new();
}

static GPtrArray *all_nodes(weft_graph_t *g) {
  GPtrArray *nodes = g_ptr_array_new();
  for (int i = 0; i < weft_graph_num_nodes(g); i++)
    g_ptr_array_add(nodes, weft_graph_node_at(g, i));
  return nodes;
}

/* Places every node of g; asserts success. */
static void place_all(weft_graph_t *g, const weft__place_device_t *devices, int n,
                      const weft__placer_options_t *opts, GHashTable *placement) {
  GPtrArray *nodes = all_nodes(g);
  weft_status_t *st = weft__place(nodes, devices, n, opts, placement);
  if (st != NULL) g_test_message("placement failed: %s", weft_status_message(st));
  g_assert_null(st);
  g_ptr_array_free(nodes, TRUE);
}

static weft_status_t *place_all_status(weft_graph_t *g, const weft__place_device_t *devices,
                                       int n, const weft__placer_options_t *opts,
                                       GHashTable *placement) {
  GPtrArray *nodes = all_nodes(g);
  weft_status_t *st = weft__place(nodes, devices, n, opts, placement);
  g_ptr_array_free(nodes, TRUE);
  return st;
}

static weft_node_t *placeholder(weft_graph_t *g, const char *name, weft_dtype_t dtype) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_placeholder(g, name, dtype, 0, NULL, &st);
  g_assert_null(st);
  return o.node;
}

static weft_node_t *identity(weft_graph_t *g, const char *name, weft_node_t *x,
                             const char *device) {
  weft_op_builder_t *b = weft_op_new(g, "Identity", name);
  weft_op_add_input(b, weft_out(x, 0));
  if (device != NULL) weft_op_set_device(b, device);
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st != NULL) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  return node;
}

static weft_node_t *const_int32(weft_graph_t *g, const char *name, int32_t value) {
  int64_t dims[1] = {2};
  int32_t data[2] = {value, value + 1};
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, 1, dims, data, sizeof data, &st);
  g_assert_null(st);
  g_assert_nonnull(t);
  weft_output_t o = weft_const(g, name, t, &st);
  weft_tensor_unref(t);
  g_assert_null(st);
  return o.node;
}

static weft_node_t *variable(weft_graph_t *g, const char *name, weft_node_t *init) {
  weft_status_t *st = NULL;
  weft_output_t read = weft_variable(g, name, weft_out(init, 0), &st);
  if (st != NULL) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  return read.node;
}

#define assert_placed(placement, node, device) \
  g_assert_cmpstr(g_hash_table_lookup((placement), (node)), ==, (device))

static void test_place_unpinned_goes_to_cpu_without_gpu_kernels(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, NULL);
  /* FAKEGPU ranks first but has no kernels at all: no plugin registers that device type (a made-up
   * one, so the test means the same on machines where the CUDA plugin has kernels). */
  const weft__place_device_t devices[] = {kCpu0, kCuda0};
  GHashTable *placement = new_placement();
  place_all(g, devices, 2, &kStrict, placement);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 2);
  assert_placed(placement, "x", LOCAL "CPU:0");
  assert_placed(placement, "y", LOCAL "CPU:0");
  /* Values are interned: one string per device, not per node. */
  g_assert_true(g_hash_table_lookup(placement, "x") == g_intern_string(LOCAL "CPU:0"));
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

/* A device that emulates a GPU on the host's CPU (lavapipe) ranks below the CPU: unpinned ops,
 * "/gpu:0" and "/device:CPU:*" never reach it; a spec naming its own type and ordinal does. The
 * emulated entry is of type CPU (so that it has the CPU plugin's kernels), gpu-like, of a higher
 * priority and listed first, so that only its being emulated decides. */
static void test_place_emulated_below_cpu(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, NULL);
  identity(g, "any_cpu", x, "/device:CPU:*");
  identity(g, "pinned", x, "/device:CPU:1");
  identity(g, "gpu", x, "/gpu:0");
  const weft__place_device_t emulated = {LOCAL "CPU:1", "localhost", 0, 0, "CPU", 1, true, 10, true};
  const weft__place_device_t devices[] = {emulated, kCpu0};
  GHashTable *placement = new_placement();
  place_all(g, devices, 2, &kSoft, placement);
  assert_placed(placement, "x", LOCAL "CPU:0");
  assert_placed(placement, "y", LOCAL "CPU:0");
  assert_placed(placement, "any_cpu", LOCAL "CPU:0");
  assert_placed(placement, "pinned", LOCAL "CPU:1");
  /* No real GPU: with soft placement "/gpu:0" falls back to the CPU, not to the emulation. */
  assert_placed(placement, "gpu", LOCAL "CPU:0");
  g_hash_table_destroy(placement);

  /* Without soft placement "/gpu:0" is an error that says there is no GPU. */
  placement = new_placement();
  weft_status_t *st = place_all_status(g, devices, 2, &kStrict, placement);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_test_message("%s", weft_status_message(st));
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Cannot assign a device for operation 'gpu': Could not satisfy explicit device "
                  "specification '/device:GPU:0' because no devices match '/device:GPU:0'. "
                  "Available devices: [" LOCAL "CPU:1, " LOCAL "CPU:0] (emulated on the CPU, so "
                  "chosen only when pinned by type, as in '/device:TYPE:N': CPU:1)");
  weft_status_free(st);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
  g_assert_true(matches("/device:CPU:1", &emulated, NULL));
  g_assert_false(matches("/gpu:0", &emulated, "CPU"));
  g_assert_false(matches("", &emulated, NULL));
  g_assert_false(matches("/job:localhost", &emulated, NULL));
}

static void test_place_prefers_gpu_like(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, NULL);
  identity(g, "z", x, "/cpu:0");
  identity(g, "w", x, "/device:CPU:*");
  /* A gpu-like entry of type CPU: kernels are registered by type, so this one has the CPU
   * plugin's kernels, which lets the test see the preference for gpu-like devices. Listed
   * after CPU:0 so that the order of the list is not what decides. */
  const weft__place_device_t fake_gpu = {LOCAL "CPU:1", "localhost", 0, 0, "CPU", 1, true, 10,
                                             false};
  const weft__place_device_t devices[] = {kCpu0, fake_gpu};
  GHashTable *placement = new_placement();
  place_all(g, devices, 2, &kStrict, placement);
  assert_placed(placement, "x", LOCAL "CPU:1");
  assert_placed(placement, "y", LOCAL "CPU:1");
  assert_placed(placement, "z", LOCAL "CPU:0");
  assert_placed(placement, "w", LOCAL "CPU:1");
  g_hash_table_destroy(placement);

  /* Among cpu-like devices of one backend the lowest ordinal wins, whatever the list order. */
  const weft__place_device_t cpus[] = {kCpu1, kCpu0};
  placement = new_placement();
  place_all(g, cpus, 2, &kStrict, placement);
  assert_placed(placement, "y", LOCAL "CPU:0");
  assert_placed(placement, "w", LOCAL "CPU:0");
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_nested_device_scopes(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/job:ps");
  weft_graph_push_device(g, "/task:1");
  weft_node_t *a = placeholder(g, "a", WEFT_DT_FLOAT);
  weft_graph_push_device(g, "/cpu:0");
  weft_node_t *b = identity(g, "b", a, NULL);
  weft_graph_pop_device(g);
  weft_node_t *c = identity(g, "c", a, "/job:worker");
  weft_graph_push_device(g, "");
  weft_node_t *d = identity(g, "d", a, NULL);
  weft_graph_pop_device(g);
  weft_graph_pop_device(g);
  weft_node_t *e = identity(g, "e", a, NULL);
  weft_graph_pop_device(g);
  weft_node_t *f = identity(g, "f", a, NULL);

  g_assert_cmpstr(weft_node_requested_device(a), ==, "/job:ps/task:1");
  g_assert_cmpstr(weft_node_requested_device(b), ==, "/job:ps/task:1/device:CPU:0");
  g_assert_cmpstr(weft_node_requested_device(c), ==, "/job:worker/task:1");
  g_assert_cmpstr(weft_node_requested_device(d), ==, "");
  g_assert_cmpstr(weft_node_requested_device(e), ==, "/job:ps");
  g_assert_cmpstr(weft_node_requested_device(f), ==, "");

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1, kWorker0, kWorker1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "a", kPs1.name);
  assert_placed(placement, "b", kPs1.name);
  assert_placed(placement, "c", kWorker1.name);
  assert_placed(placement, "d", kCpu0.name);
  /* "/job:ps" leaves the task open: the first ps device listed. */
  assert_placed(placement, "e", kPs0.name);
  assert_placed(placement, "f", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_default_task(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, "/cpu:0");
  identity(g, "z", x, "/job:worker");
  identity(g, "p", x, "/job:ps");
  /* A worker's session: unqualified means /job:worker/replica:0/task:1. */
  const weft__placer_options_t opts = {false, "worker", 0, 1};
  const weft__place_device_t devices[] = {kPs0, kPs1, kWorker0, kWorker1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &opts, placement);
  assert_placed(placement, "x", kWorker1.name);
  assert_placed(placement, "y", kWorker1.name);
  assert_placed(placement, "z", kWorker1.name);
  assert_placed(placement, "p", kPs0.name);
  g_hash_table_destroy(placement);

  /* When the session's own job has no device listed, unqualified specs fall back to any. */
  const weft__place_device_t remote[] = {kWorker0};
  placement = new_placement();
  GPtrArray *just_x = g_ptr_array_new();
  g_ptr_array_add(just_x, x);
  g_assert_null(weft__place(just_x, remote, 1, &kStrict, placement));
  g_ptr_array_free(just_x, TRUE);
  assert_placed(placement, "x", kWorker0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

/* Pins variables to the ps task, says nothing about anything else. */
static const char *ps_for_variables(void *user_data, const char *op, const char *node_name) {
  (void)node_name;
  return strcmp(op, "VariableV2") == 0 ? (const char *)user_data : NULL;
}

static void test_place_device_function_and_variable_colocation(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *init = const_int32(g, "init", 3);
  weft_graph_push_device_fn(g, ps_for_variables, (void *)"/job:ps/task:1");
  weft_node_t *read = variable(g, "v", init);
  weft_graph_pop_device(g);
  weft_node_t *use = identity(g, "use", read, NULL);
  (void)use;

  g_assert_cmpstr(weft_node_requested_device(weft_graph_node(g, "v")), ==, "/job:ps/task:1");
  g_assert_cmpstr(weft_node_requested_device(weft_graph_node(g, "v/Assign")), ==, "");
  g_assert_cmpstr(weft_node_requested_device(read), ==, "");

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "init", kCpu0.name);
  assert_placed(placement, "v", kPs1.name);
  assert_placed(placement, "v/Assign", kPs1.name);
  assert_placed(placement, "v/read", kPs1.name);
  assert_placed(placement, "use", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_ref_edge_colocates(void) {
  /* No colocate scope: the ref input alone ties the Assign to its variable. */
  weft_graph_t *g = weft_graph_new();
  weft_op_builder_t *b = weft_op_new(g, "VariableV2", "w");
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_shape(b, "shape", 0, NULL);
  weft_op_set_device(b, "/job:ps/task:0");
  weft_node_t *w = NULL;
  g_assert_null(weft_op_finish(b, &w));
  weft_status_t *st = NULL;
  weft_output_t value = weft_const_float(g, "value", 1.5f, &st);
  g_assert_null(st);
  b = weft_op_new(g, "Assign", "set_w");
  weft_op_add_input(b, weft_out(w, 0));
  weft_op_add_input(b, value);
  weft_node_t *assign = NULL;
  g_assert_null(weft_op_finish(b, &assign));
  g_assert_null(assign->colocation_group);

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "w", kPs0.name);
  assert_placed(placement, "set_w", kPs0.name);
  assert_placed(placement, "value", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_colocate_scope(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_node_t *pinned = identity(g, "pinned", x, "/job:ps/task:1");
  weft_graph_push_colocate(g, pinned);
  weft_node_t *y = identity(g, "y", x, NULL);
  weft_node_t *z = identity(g, "z", y, "/job:ps");
  weft_graph_pop_colocate(g);
  g_assert_cmpstr(y->colocation_group, ==, "pinned");
  g_assert_cmpstr(z->colocation_group, ==, "pinned");

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "x", kCpu0.name);
  assert_placed(placement, "pinned", kPs1.name);
  assert_placed(placement, "y", kPs1.name);
  /* "/job:ps" alone would pick task 0; the group's merged spec says task 1. */
  assert_placed(placement, "z", kPs1.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_soft_int32_variable_on_gpu(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *init = const_int32(g, "init", 7);
  weft_graph_push_device(g, "/gpu:0");
  variable(g, "v", init);
  weft_graph_pop_device(g);
  g_assert_cmpstr(weft_node_requested_device(weft_graph_node(g, "v")), ==, "/device:GPU:0");

  const weft__place_device_t devices[] = {kCpu0, kCuda0};
  GHashTable *placement = new_placement();
  place_all(g, devices, 2, &kSoft, placement);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 4);
  assert_placed(placement, "init", kCpu0.name);
  assert_placed(placement, "v", kCpu0.name);
  assert_placed(placement, "v/Assign", kCpu0.name);
  assert_placed(placement, "v/read", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_strict_int32_variable_on_gpu_fails(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *init = const_int32(g, "init", 7);
  weft_graph_push_device(g, "/gpu:0");
  variable(g, "v", init);
  weft_graph_pop_device(g);

  const weft__place_device_t devices[] = {kCpu0, kCuda0};
  GHashTable *placement = new_placement();
  weft_status_t *st = place_all_status(g, devices, 2, &kStrict, placement);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_test_message("%s", weft_status_message(st));
  /* The tail is the kernel registry's own sentence about VariableV2. */
  char *kernels = weft__kernel_describe_available("VariableV2");
  g_assert_nonnull(kernels);
  g_assert_nonnull(strstr(kernels, "CPU"));
  char *want = g_strdup_printf(
      "Cannot assign a device for operation 'v': Could not satisfy explicit device "
      "specification '/device:GPU:0' because no supported kernel for GPU devices is available "
      "(op VariableV2, dtype int32). Registered devices: [CPU, FAKEGPU]. Registered kernels: %s",
      kernels);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  g_free(kernels);
  weft_status_free(st);
  /* Nothing is placed when the call fails, not even the Const that could have been. */
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);
  g_hash_table_destroy(placement);

  /* With no gpu-like device at all the message says that no device matches. */
  placement = new_placement();
  st = place_all_status(g, &kCpu0, 1, &kStrict, placement);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Cannot assign a device for operation 'v': Could not satisfy explicit device "
                  "specification '/device:GPU:0' because no devices match '/device:GPU:0'. "
                  "Available devices: [/job:localhost/replica:0/task:0/device:CPU:0]");
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_soft_unknown_device(void) {
  /* /gpu:3 on a machine with two: soft placement keeps the job and lets the type and id go. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, "/job:ps/task:1/gpu:3");
  const weft__place_device_t devices[] = {kCpu0, kCuda0, kCuda1, kPs0, kPs1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kSoft, placement);
  assert_placed(placement, "y", kPs1.name);
  assert_placed(placement, "x", kCpu0.name);
  g_hash_table_destroy(placement);

  placement = new_placement();
  weft_status_t *st = place_all_status(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st),
                          "Cannot assign a device for operation 'y': Could not satisfy explicit "
                          "device specification '/job:ps/task:1/device:GPU:3' because no "
                          "devices match '/job:ps/task:1/device:GPU:3'. Available devices: [" LOCAL
                          "CPU:0, " LOCAL "FAKEGPU:0, "));
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_soft_drops_everything(void) {
  /* Neither the task nor the job exists here: soft placement ends up on the default device. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "y", x, "/job:ps/task:0/device:CPU:0");
  GHashTable *placement = new_placement();
  place_all(g, &kCpu0, 1, &kSoft, placement);
  assert_placed(placement, "y", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_no_kernel_anywhere(void) {
  /* Only a device type without kernels: even an unpinned Placeholder has nowhere to go. */
  weft_graph_t *g = weft_graph_new();
  placeholder(g, "x", WEFT_DT_FLOAT);
  GHashTable *placement = new_placement();
  weft_status_t *st = place_all_status(g, &kCuda0, 1, &kSoft, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_true(g_str_has_prefix(weft_status_message(st),
                                 "Cannot assign a device for operation 'x': no supported kernel "
                                 "for any device is available (op Placeholder, dtype float32). "
                                 "Registered devices: [FAKEGPU]. Registered kernels: "));
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

/* The placer remembers kernel answers per op and device type within a call: many L2Loss nodes
 * of float32 (CPU has kernels) must not make it forget that float16 has none. */
static void test_place_kernel_answers_follow_dtype(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t dims[1] = {3};
  weft_status_t *st = NULL;
  weft_node_t *x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, dims, &st).node;
  g_assert_null(st);
  weft_node_t *h = weft_placeholder(g, "h", WEFT_DT_HALF, 1, dims, &st).node;
  g_assert_null(st);
  GPtrArray *floats = g_ptr_array_new();
  g_ptr_array_add(floats, x);
  for (int k = 0; k < 40; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "s%d", k);
    weft_output_t y = weft_unary(g, "L2Loss", name, weft_out(k == 20 ? h : x, 0), &st);
    g_assert_null(st);
    if (k != 20) g_ptr_array_add(floats, y.node);
  }
  const weft__place_device_t devices[] = {kCuda0, kCpu0};
  GHashTable *placement = new_placement();
  st = place_all_status(g, devices, 2, &kStrict, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_true(g_str_has_prefix(weft_status_message(st),
                                 "Cannot assign a device for operation 's20': no supported kernel "
                                 "for any device is available (op L2Loss, dtype float16)"));
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);

  g_assert_null(weft__place(floats, devices, 2, &kStrict, placement));
  g_assert_cmpuint(g_hash_table_size(placement), ==, 40);
  assert_placed(placement, "s0", kCpu0.name);
  assert_placed(placement, "s39", kCpu0.name);
  g_ptr_array_free(floats, TRUE);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_incompatible_colocation(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_node_t *a = identity(g, "a", x, "/job:ps/task:0");
  weft_graph_push_colocate(g, a);
  identity(g, "b", x, "/job:ps/task:1");
  weft_graph_pop_colocate(g);

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  weft_status_t *st = place_all_status(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Cannot colocate nodes 'a' and 'b': incompatible device specifications: 'a' "
                  "(op Identity) requests '/job:ps/task:0' and 'b' (op Identity) requests "
                  "'/job:ps/task:1'");
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);

  /* Soft placement keeps the group's first request. */
  place_all(g, devices, G_N_ELEMENTS(devices), &kSoft, placement);
  assert_placed(placement, "a", kPs0.name);
  assert_placed(placement, "b", kPs0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_gpu_alias_inside_group(void) {
  /* "/gpu:0" and "/device:FAKEGPU:0" name the same device when FAKEGPU is the first gpu-like type,
   * so they do not conflict; the group then fails only for want of FAKEGPU kernels. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_node_t *a = identity(g, "a", x, "/gpu:0");
  weft_graph_push_colocate(g, a);
  identity(g, "b", x, "/device:FAKEGPU:0");
  weft_graph_pop_colocate(g);
  const weft__place_device_t devices[] = {kCpu0, kCuda0};
  GHashTable *placement = new_placement();
  weft_status_t *st = place_all_status(g, devices, 2, &kStrict, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_true(g_str_has_prefix(weft_status_message(st),
                                 "Cannot assign a device for operation 'a': Could not satisfy "
                                 "explicit device specification "));
  g_assert_nonnull(strstr(weft_status_message(st), "(op Identity, dtype float32)"));
  g_assert_null(strstr(weft_status_message(st), "Cannot colocate"));
  weft_status_free(st);
  place_all(g, devices, 2, &kSoft, placement);
  assert_placed(placement, "a", kCpu0.name);
  assert_placed(placement, "b", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_keeps_already_placed(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_graph_push_colocate(g, x);
  weft_node_t *y = identity(g, "y", x, NULL);
  weft_graph_pop_colocate(g);
  identity(g, "z", x, NULL);

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  /* Placed by an earlier run somewhere no rule would put it now. */
  g_hash_table_insert(placement, "x", (gpointer)g_intern_string(kPs1.name));
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "x", kPs1.name);
  assert_placed(placement, "y", kPs1.name);
  assert_placed(placement, "z", kCpu0.name);
  g_hash_table_destroy(placement);

  /* Only y is placed in this call; x, outside the subset but placed, still pins it. */
  placement = new_placement();
  g_hash_table_insert(placement, "x", (gpointer)g_intern_string(kPs0.name));
  GPtrArray *subset = g_ptr_array_new();
  g_ptr_array_add(subset, y);
  g_assert_null(weft__place(subset, devices, G_N_ELEMENTS(devices), &kStrict, placement));
  g_assert_cmpuint(g_hash_table_size(placement), ==, 2);
  assert_placed(placement, "y", kPs0.name);
  g_ptr_array_free(subset, TRUE);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_incrementally(void) {
  /* A session places the initializer first and the reads in a later run: the variable's group
   * stays together across the two calls. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *init = const_int32(g, "init", 1);
  weft_graph_push_device(g, "/job:ps/task:1");
  variable(g, "v", init);
  weft_graph_pop_device(g);
  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};

  GHashTable *placement = new_placement();
  GPtrArray *first = g_ptr_array_new();
  g_ptr_array_add(first, init);
  g_ptr_array_add(first, weft_graph_node(g, "v"));
  g_ptr_array_add(first, weft_graph_node(g, "v/Assign"));
  g_assert_null(weft__place(first, devices, G_N_ELEMENTS(devices), &kStrict, placement));
  g_ptr_array_free(first, TRUE);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 3);
  assert_placed(placement, "v", kPs1.name);
  g_assert_null(g_hash_table_lookup(placement, "v/read"));

  weft_node_t *use = identity(g, "use", weft_graph_node(g, "v/read"), NULL);
  GPtrArray *second = g_ptr_array_new();
  g_ptr_array_add(second, weft_graph_node(g, "v/read"));
  g_ptr_array_add(second, use);
  g_assert_null(weft__place(second, devices, G_N_ELEMENTS(devices), &kStrict, placement));
  g_ptr_array_free(second, TRUE);
  assert_placed(placement, "v/read", kPs1.name);
  assert_placed(placement, "use", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

/* A graph big enough for the placer's large-graph paths (members found by node id, the open
 * devices ordered once): 400 variables alternating over two ps tasks, each with an Assign (ref
 * edge) and an Identity in its colocation scope, and 400 unconstrained constants. Placed in two
 * calls: the first 1600 nodes, then the rest (a small share: the hash table path) next to them. */
static void test_place_large_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  for (int k = 0; k < 400; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "w%d", k);
    weft_op_builder_t *b = weft_op_new(g, "VariableV2", name);
    weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
    weft_op_set_attr_shape(b, "shape", 0, NULL);
    weft_op_set_device(b, k % 2 ? "/job:ps/task:1" : "/job:ps/task:0");
    weft_node_t *w = NULL;
    g_assert_null(weft_op_finish(b, &w));
    g_snprintf(name, sizeof name, "c%d", k);
    weft_output_t value = weft_const_float(g, name, (float)k, &st);
    g_assert_null(st);
    g_snprintf(name, sizeof name, "set%d", k);
    b = weft_op_new(g, "Assign", name);
    weft_op_add_input(b, weft_out(w, 0));
    weft_op_add_input(b, value);
    g_assert_null(weft_op_finish(b, NULL));
    weft_graph_push_colocate(g, w);
    g_snprintf(name, sizeof name, "read%d", k);
    identity(g, name, w, NULL);
    weft_graph_pop_colocate(g);
  }
  int n = weft_graph_num_nodes(g);
  g_assert_cmpint(n, ==, 1600);
  identity(g, "late", weft_graph_node(g, "c7"), NULL);
  weft_op_builder_t *b = weft_op_new(g, "Assign", "late_set");
  weft_op_add_input(b, weft_out(weft_graph_node(g, "w3"), 0));
  weft_op_add_input(b, weft_out(weft_graph_node(g, "c3"), 0));
  g_assert_null(weft_op_finish(b, NULL));

  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  GPtrArray *first = g_ptr_array_new();
  for (int i = 0; i < n; i++) g_ptr_array_add(first, weft_graph_node_at(g, i));
  g_assert_null(weft__place(first, devices, G_N_ELEMENTS(devices), &kStrict, placement));
  g_ptr_array_free(first, TRUE);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 1600);
  for (int k = 0; k < 400; k++) {
    const char *ps = k % 2 ? kPs1.name : kPs0.name;
    char name[32];
    g_snprintf(name, sizeof name, "w%d", k);
    assert_placed(placement, name, ps);
    g_snprintf(name, sizeof name, "set%d", k);
    assert_placed(placement, name, ps);
    g_snprintf(name, sizeof name, "read%d", k);
    assert_placed(placement, name, ps);
    g_snprintf(name, sizeof name, "c%d", k);
    assert_placed(placement, name, kCpu0.name);
  }
  GPtrArray *rest = g_ptr_array_new();
  for (int i = n; i < weft_graph_num_nodes(g); i++) g_ptr_array_add(rest, weft_graph_node_at(g, i));
  g_assert_null(weft__place(rest, devices, G_N_ELEMENTS(devices), &kStrict, placement));
  g_ptr_array_free(rest, TRUE);
  assert_placed(placement, "late", kCpu0.name);
  assert_placed(placement, "late_set", kPs1.name); /* follows w3, already placed */
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_pinned_conflicts_with_request(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_graph_push_colocate(g, x);
  identity(g, "y", x, "/job:ps/task:0");
  weft_graph_pop_colocate(g);
  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  g_hash_table_insert(placement, "x", (gpointer)g_intern_string(kPs1.name));
  weft_status_t *st = place_all_status(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Cannot assign a device for operation 'y': Could not satisfy explicit device "
                  "specification '/job:ps/task:0' because it is colocated with 'x', which is "
                  "already placed on '/job:ps/replica:0/task:1/device:CPU:0'");
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 1);
  /* Soft placement follows the placed node. */
  place_all(g, devices, G_N_ELEMENTS(devices), &kSoft, placement);
  assert_placed(placement, "y", kPs1.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_unknown_colocation_target(void) {
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_op_builder_t *b = weft_op_new(g, "Identity", "y");
  weft_op_add_input(b, weft_out(x, 0));
  const char *cls[] = {"loc:@nowhere"};
  weft_op_set_attr_string_list(b, "_class", cls, 1);
  g_assert_null(weft_op_finish(b, NULL));
  GHashTable *placement = new_placement();
  weft_status_t *st = place_all_status(g, &kCpu0, 1, &kStrict, placement);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Node 'y' (op Identity) expects to be colocated with unknown node 'nowhere'");
  weft_status_free(st);
  g_assert_cmpuint(g_hash_table_size(placement), ==, 0);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static void test_place_class_string_list_joins_groups(void) {
  /* _class may name several nodes; all of them end up together. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  identity(g, "a", x, "/job:ps/task:1");
  identity(g, "b", x, NULL);
  weft_op_builder_t *bld = weft_op_new(g, "Identity", "c");
  weft_op_add_input(bld, weft_out(x, 0));
  const char *cls[] = {"loc:@b", "loc:@a"};
  weft_op_set_attr_string_list(bld, "_class", cls, 2);
  g_assert_null(weft_op_finish(bld, NULL));
  const weft__place_device_t devices[] = {kCpu0, kPs0, kPs1};
  GHashTable *placement = new_placement();
  place_all(g, devices, G_N_ELEMENTS(devices), &kStrict, placement);
  assert_placed(placement, "a", kPs1.name);
  assert_placed(placement, "b", kPs1.name);
  assert_placed(placement, "c", kPs1.name);
  assert_placed(placement, "x", kCpu0.name);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

static bool closure_has(GPtrArray *closure, const char *name) {
  for (guint i = 0; i < closure->len; i++)
    if (strcmp(((weft_node_t *)closure->pdata[i])->name, name) == 0) return true;
  return false;
}

static void test_closure_follows_every_class_entry(void) {
  /* c ties a and b together through its second _class entry; a step needing only a must still
   * place b's group with it, and nothing outside the group. */
  weft_graph_t *g = weft_graph_new();
  weft_node_t *x = placeholder(g, "x", WEFT_DT_FLOAT);
  weft_node_t *a = identity(g, "a", x, NULL);
  identity(g, "b", x, NULL);
  weft_op_builder_t *bld = weft_op_new(g, "Identity", "c");
  weft_op_add_input(bld, weft_out(x, 0));
  const char *cls[] = {"loc:@b", "loc:@a"};
  weft_op_set_attr_string_list(bld, "_class", cls, 2);
  g_assert_null(weft_op_finish(bld, NULL));
  identity(g, "d", x, NULL);
  GPtrArray *needed = g_ptr_array_new();
  g_ptr_array_add(needed, a);
  GHashTable *placement = new_placement();
  GPtrArray *closure = weft__colocation_closure(g, needed, placement);
  g_assert_cmpuint(closure->len, ==, 3);
  g_assert_true(closure_has(closure, "a"));
  g_assert_true(closure_has(closure, "b"));
  g_assert_true(closure_has(closure, "c"));
  g_ptr_array_free(closure, TRUE);

  /* Members already placed are not placed again. */
  g_hash_table_insert(placement, "b", (gpointer)g_intern_string(kCpu0.name));
  closure = weft__colocation_closure(g, needed, placement);
  g_assert_cmpuint(closure->len, ==, 2);
  g_assert_false(closure_has(closure, "b"));
  g_ptr_array_free(closure, TRUE);
  g_ptr_array_free(needed, TRUE);
  g_hash_table_destroy(placement);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Colocation groups in a local session with the Vulkan plugin: the group is placed whole at
 * the first step that touches any member, on a device with kernels for every member. */

/* The name of the first VULKAN device, or NULL (and the test skipped) when there is none. */
static const char *vulkan_device_or_skip(void) {
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (d->device_type != NULL && strcmp(d->device_type, "VULKAN") == 0) return d->name;
  }
  g_test_skip("no VULKAN device: the Vulkan plugin is not built or finds no Vulkan driver");
  return NULL;
}

/* Whether the VULKAN device is an emulation on the CPU (lavapipe): then it takes only what is
 * pinned to it, and the unpinned groups below go to the CPU. */
static bool vulkan_is_emulated(void) {
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (d->device_type != NULL && strcmp(d->device_type, "VULKAN") == 0) return d->emulated;
  }
  return false;
}

static weft_node_t *const_f32(weft_graph_t *g, const char *name, float a, float b) {
  int64_t dims[1] = {2};
  float data[2] = {a, b};
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, data, sizeof data, &st);
  g_assert_null(st);
  weft_output_t o = weft_const(g, name, t, &st);
  weft_tensor_unref(t);
  g_assert_null(st);
  return o.node;
}

static weft_node_t *scalar_f32(weft_graph_t *g, const char *name, float v) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_const_float(g, name, v, &st);
  g_assert_null(st);
  return o.node;
}

/* rmsprop = ApplyRMSProp(w, ms, mom, lr 0.5, rho 0, momentum 0, epsilon 0, grad [2, 2]) on the
 * float variables w = [1, 2], ms = mom = [0, 0]: w becomes w - 0.5 * 2 / sqrt(4) = w - 0.5. */
static weft_op_builder_t *rmsprop_builder(weft_graph_t *g, const char *name) {
  weft_op_builder_t *b = weft_op_new(g, "ApplyRMSProp", name);
  weft_op_add_input(b, weft_out(weft_graph_node(g, "w"), 0));
  weft_op_add_input(b, weft_out(weft_graph_node(g, "ms"), 0));
  weft_op_add_input(b, weft_out(weft_graph_node(g, "mom"), 0));
  weft_op_add_input(b, weft_out(scalar_f32(g, "lr", 0.5f), 0));
  weft_op_add_input(b, weft_out(scalar_f32(g, "rho", 0.0f), 0));
  weft_op_add_input(b, weft_out(scalar_f32(g, "momentum", 0.0f), 0));
  weft_op_add_input(b, weft_out(scalar_f32(g, "epsilon", 0.0f), 0));
  weft_op_add_input(b, weft_out(const_f32(g, "grad", 2.0f, 2.0f), 0));
  return b;
}

static void rmsprop_variables(weft_graph_t *g, const char *w_device) {
  if (w_device != NULL) weft_graph_push_device(g, w_device);
  variable(g, "w", const_f32(g, "w_init", 1.0f, 2.0f));
  if (w_device != NULL) weft_graph_pop_device(g);
  variable(g, "ms", const_f32(g, "ms_init", 0.0f, 0.0f));
  variable(g, "mom", const_f32(g, "mom_init", 0.0f, 0.0f));
}

static weft_status_t *run_targets(weft_session_t *s, const char *a, const char *b) {
  const char *targets[2] = {a, b};
  return weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, b != NULL ? 2 : 1);
}

static void test_session_group_avoids_device_without_update_kernel(void) {
  const char *vulkan = vulkan_device_or_skip();
  if (vulkan == NULL) return;
  weft_graph_t *g = weft_graph_new();
  rmsprop_variables(g, NULL);
  weft_op_builder_t *b = rmsprop_builder(g, "rmsprop");
  g_assert_null(weft_op_finish(b, NULL));
  /* A variable nothing but its initializer touches: VULKAN has both kernels, so it goes there,
   * unless VULKAN is an emulation (lavapipe), which only pinned ops reach. */
  variable(g, "v", const_f32(g, "v_init", 3.0f, 4.0f));
  const char *v_device = vulkan_is_emulated() ? "/job:localhost/replica:0/task:0/device:CPU:0" : vulkan;
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);

  /* The first step needs only w's initializer, yet w is placed for ApplyRMSProp too. */
  st = run_targets(s, "w/Assign", "v/Assign");
  if (st != NULL) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  const char *cpu = "/job:localhost/replica:0/task:0/device:CPU:0";
  g_assert_cmpstr(weft_session_node_device(s, "w"), ==, cpu);
  g_assert_cmpstr(weft_session_node_device(s, "w/Assign"), ==, cpu);
  g_assert_cmpstr(weft_session_node_device(s, "rmsprop"), ==, cpu);
  g_assert_cmpstr(weft_session_node_device(s, "v"), ==, v_device);
  g_assert_cmpstr(weft_session_node_device(s, "v/Assign"), ==, v_device);

  g_assert_null(run_targets(s, "ms/Assign", "mom/Assign"));
  const char *fetch[1] = {"rmsprop"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  if (st != NULL) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  const float *w = weft_tensor_data(out);
  g_assert_cmpfloat_with_epsilon(w[0], 0.5f, 1e-6f);
  g_assert_cmpfloat_with_epsilon(w[1], 1.5f, 1e-6f);
  weft_tensor_unref(out);
  g_assert_cmpstr(weft_session_node_device(s, "ms"), ==, cpu);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_session_explicit_vulkan_variable_with_unsupported_update(void) {
  const char *vulkan = vulkan_device_or_skip();
  if (vulkan == NULL) return;
  weft_graph_t *g = weft_graph_new();
  rmsprop_variables(g, "/device:VULKAN:0");
  weft_op_builder_t *b = rmsprop_builder(g, "rmsprop");
  g_assert_null(weft_op_finish(b, NULL));
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);
  /* The initializer alone fails already: TensorFlow places the whole group at once. */
  st = run_targets(s, "w/Assign", NULL);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_test_message("%s", weft_status_message(st));
  g_assert_true(g_str_has_prefix(
      weft_status_message(st),
      "Cannot assign a device for operation 'rmsprop': Could not satisfy explicit device "
      "specification '/device:VULKAN:0' (requested by 'w', which it is colocated with) because "
      "no supported kernel for VULKAN devices is available (op ApplyRMSProp, dtype float32). "
      "Registered devices: ["));
  weft_status_free(st);
  g_assert_cmpstr(weft_session_node_device(s, "w"), ==, "");
  weft_session_free(s);

  /* Soft placement moves the whole group to the CPU. */
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, true);
  s = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  g_assert_null(st);
  g_assert_null(run_targets(s, "w/Assign", NULL));
  g_assert_cmpstr(weft_session_node_device(s, "w"), ==,
                  "/job:localhost/replica:0/task:0/device:CPU:0");
  g_assert_cmpstr(weft_session_node_device(s, "rmsprop"), ==,
                  "/job:localhost/replica:0/task:0/device:CPU:0");
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_session_node_added_to_placed_group_fails(void) {
  const char *vulkan = vulkan_device_or_skip();
  if (vulkan == NULL) return;
  weft_graph_t *g = weft_graph_new();
  /* An emulated VULKAN device takes w only when w is pinned to it. */
  rmsprop_variables(g, vulkan_is_emulated() ? "/device:VULKAN:0" : NULL);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);
  g_assert_null(run_targets(s, "w/Assign", NULL));
  g_assert_cmpstr(weft_session_node_device(s, "w"), ==, vulkan);

  /* Added after w was placed: like TensorFlow, the group does not move. */
  weft_op_builder_t *b = rmsprop_builder(g, "rmsprop");
  g_assert_null(weft_op_finish(b, NULL));
  st = run_targets(s, "rmsprop", NULL);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  char *want = g_strdup_printf("Cannot assign a device for operation 'rmsprop': it is colocated "
                               "with 'w', which is already placed on '%s', but no supported "
                               "kernel for VULKAN devices is available (op ApplyRMSProp, dtype "
                               "float32). ",
                               vulkan);
  g_test_message("%s", weft_status_message(st));
  g_assert_true(g_str_has_prefix(weft_status_message(st), want));
  g_free(want);
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();

  g_test_add_func("/placement/spec/parse_forms", test_spec_parse_forms);
  g_test_add_func("/placement/spec/parse_null", test_spec_parse_null);
  g_test_add_func("/placement/spec/parse_malformed", test_spec_parse_malformed);
  g_test_add_func("/placement/spec/merge", test_spec_merge);
  g_test_add_func("/placement/spec/to_string_partial", test_spec_to_string_partial);
  g_test_add_func("/placement/spec/compatible", test_spec_compatible);
  g_test_add_func("/placement/spec/matches", test_spec_matches);
  g_test_add_func("/placement/place/unpinned_cpu",
                  test_place_unpinned_goes_to_cpu_without_gpu_kernels);
  g_test_add_func("/placement/place/prefers_gpu_like", test_place_prefers_gpu_like);
  g_test_add_func("/placement/place/emulated_below_cpu", test_place_emulated_below_cpu);
  g_test_add_func("/placement/place/nested_device_scopes", test_place_nested_device_scopes);
  g_test_add_func("/placement/place/default_task", test_place_default_task);
  g_test_add_func("/placement/place/device_function_variable",
                  test_place_device_function_and_variable_colocation);
  g_test_add_func("/placement/place/ref_edge", test_place_ref_edge_colocates);
  g_test_add_func("/placement/place/colocate_scope", test_place_colocate_scope);
  g_test_add_func("/placement/place/soft_int32_variable", test_place_soft_int32_variable_on_gpu);
  g_test_add_func("/placement/place/strict_int32_variable",
                  test_place_strict_int32_variable_on_gpu_fails);
  g_test_add_func("/placement/place/soft_unknown_device", test_place_soft_unknown_device);
  g_test_add_func("/placement/place/soft_drops_everything", test_place_soft_drops_everything);
  g_test_add_func("/placement/place/no_kernel_anywhere", test_place_no_kernel_anywhere);
  g_test_add_func("/placement/place/kernel_answers_follow_dtype",
                  test_place_kernel_answers_follow_dtype);
  g_test_add_func("/placement/place/incompatible_colocation", test_place_incompatible_colocation);
  g_test_add_func("/placement/place/gpu_alias_in_group", test_place_gpu_alias_inside_group);
  g_test_add_func("/placement/place/keeps_placed", test_place_keeps_already_placed);
  g_test_add_func("/placement/place/incremental", test_place_incrementally);
  g_test_add_func("/placement/place/large_graph", test_place_large_graph);
  g_test_add_func("/placement/place/pinned_conflict", test_place_pinned_conflicts_with_request);
  g_test_add_func("/placement/place/unknown_colocation", test_place_unknown_colocation_target);
  g_test_add_func("/placement/place/class_list", test_place_class_string_list_joins_groups);
  g_test_add_func("/placement/closure/every_class_entry", test_closure_follows_every_class_entry);
  g_test_add_func("/placement/session/group_avoids_device_without_kernel",
                  test_session_group_avoids_device_without_update_kernel);
  g_test_add_func("/placement/session/explicit_vulkan_unsupported_update",
                  test_session_explicit_vulkan_variable_with_unsupported_update);
  g_test_add_func("/placement/session/node_added_to_placed_group",
                  test_session_node_added_to_placed_group_fails);
  return g_test_run();
}

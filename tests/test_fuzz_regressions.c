/* Replays every input under fuzz/regressions/<target>/ (inputs that once crashed a fuzz target,
 * docs/fuzzing.md) and the committed seeds under fuzz/seeds/<target>/ through the same entry
 * points the libFuzzer binaries use (fuzz/targets.c, fuzz/target_onnx.c), in the normal build and
 * under the sanitizer build of scripts/test.sh. Passing means: no crash, no sanitizer report, no
 * leak, no GLib critical. */
#include <glib.h>
#include <string.h>

#include "fuzz_targets.h"

typedef struct {
  const char *name;
  int (*fn)(const uint8_t *, size_t);
} target_t;

static const target_t targets[] = {
    {"graphdef", weft_fuzz_graphdef},       {"tensor_proto", weft_fuzz_tensor_proto},
    {"checkpoint", weft_fuzz_checkpoint},   {"cluster_spec", weft_fuzz_cluster_spec},
    {"rpc_request", weft_fuzz_rpc_request}, {"onnx", weft_fuzz_onnx},
    {"npy", weft_fuzz_npy},                 {"slurm", weft_fuzz_slurm},
    {"event", weft_fuzz_event},
};

/* Runs every file of DIR/<target>; returns how many. */
static int replay_dir(const target_t *t, const char *dir) {
  char *path = g_build_filename(WEFT_SOURCE_DIR, "fuzz", dir, t->name, NULL);
  GDir *d = g_dir_open(path, 0, NULL);
  int n = 0;
  if (d) {
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) g_ptr_array_add(names, g_strdup(name));
    g_dir_close(d);
    for (guint i = 0; i < names->len; i++) {
      char *file = g_build_filename(path, names->pdata[i], NULL);
      char *bytes = NULL;
      gsize len = 0;
      g_assert_true(g_file_get_contents(file, &bytes, &len, NULL));
      g_test_message("%s: %s", t->name, file);
      g_assert_cmpint(t->fn((const uint8_t *)bytes, len), ==, 0);
      g_free(bytes);
      g_free(file);
      n++;
    }
    g_ptr_array_free(names, TRUE);
  }
  g_free(path);
  return n;
}

static void replay_file(const target_t *t, const char *file) {
  char *bytes = NULL;
  gsize len = 0;
  if (!g_file_get_contents(file, &bytes, &len, NULL)) return;
  if (g_str_equal(t->name, "checkpoint")) {
    /* The checkpoint target's first byte picks its mode: 0 takes the rest as the index file. */
    char *raw = g_malloc(len + 1);
    raw[0] = 0;
    memcpy(raw + 1, bytes, len);
    g_free(bytes);
    bytes = raw;
    len++;
  }
  g_assert_cmpint(t->fn((const uint8_t *)bytes, len), ==, 0);
  g_free(bytes);
}

/* Real files of the shared corpus the target parses whole (the other targets' seeds are built
 * from them by fuzz/make_seeds.py): every tf/graphdef .pb file, every checkpoint index and the
 * first ONNX models. Returns how many; 0 when the corpus is absent. */
static int replay_corpus(const target_t *t) {
  const char *env = g_getenv("WEFT_CORPUS");
  char *corpus =
      env ? g_strdup(env) : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", NULL);
  const char *sub = NULL, *suffix = NULL, *inner = NULL;
  int limit = 1000;
  if (g_str_equal(t->name, "graphdef")) sub = "tf/graphdef", suffix = ".pb";
  else if (g_str_equal(t->name, "checkpoint")) sub = "tf/checkpoint", inner = "model.index";
  else if (g_str_equal(t->name, "onnx")) sub = "onnx-node", inner = "model.onnx", limit = 25;
  int n = 0;
  char *dir = sub ? g_build_filename(corpus, sub, NULL) : NULL;
  GDir *d = dir ? g_dir_open(dir, 0, NULL) : NULL;
  const char *name;
  while (d && n < limit && (name = g_dir_read_name(d)) != NULL) {
    char *file = inner ? g_build_filename(dir, name, inner, NULL)
                       : g_str_has_suffix(name, suffix) ? g_build_filename(dir, name, NULL)
                                                        : NULL;
    if (file && g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
      replay_file(t, file);
      n++;
    }
    g_free(file);
  }
  if (d) g_dir_close(d);
  g_free(dir);
  g_free(corpus);
  return n;
}

static void test_replay(gconstpointer data) {
  const target_t *t = data;
  int seeds = replay_dir(t, "seeds") + replay_corpus(t);
  int regressions = replay_dir(t, "regressions");
  /* The empty input and a few degenerate ones every parser must refuse calmly. */
  static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x00};
  for (size_t k = 0; k <= sizeof junk; k++) g_assert_cmpint(t->fn(junk, k), ==, 0);
  g_test_message("%s: %d seeds, %d regression inputs replayed", t->name, seeds, regressions);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_fuzz_init();
  for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
    char *path = g_strdup_printf("/fuzz/replay/%s", targets[i].name);
    g_test_add_data_func(path, &targets[i], test_replay);
    g_free(path);
  }
  return g_test_run();
}

/* Tests of the SDK (issue 7), done the way a stranger would use it:
 *  - `meson install --destdir` of this build, then the installed layout and pkg-config files;
 *  - the two examples in sdk/examples built from their own folders with their own meson builds,
 *    once against the installed SDK (PKG_CONFIG_PATH into the install, PKG_CONFIG_SYSROOT_DIR at
 *    the destdir) and once against the build tree (build/meson-uninstalled);
 *  - the FusedSwish kernel set loaded through WEFT_PLUGIN_PATH and run in graphs (CPU, and
 *    VULKAN when a Vulkan device is listed: its shader must run on the Vulkan backend's own device
 *    through the "weft.vulkan.2" services, no VkDevice of its own), its gradient program against the analytic
 *    derivative, its conformance cases through weft-conformance --plugin (the build tree's tool
 *    and the installed one);
 *  - the SIMACC backend: placement onto /device:SIMACC:0, soft placement of what it lacks, its
 *    client demo built against weft.pc, its conformance report;
 *  - the ABI rules: a plugin built against the frozen 1.0 header loads and runs, a newer minor
 *    and another major are refused naming both versions, every 1.0 field keeps its offset, and a
 *    bad gradient program or conformance case fails its plugin at load time;
 *  - the gradient-program parser's error messages, and docs/sdk.md's code, which must be the
 *    examples' code word for word;
 *  - the install as a Debian user gets it (issue 17): the installed tools run from the destdir
 *    with no LD_LIBRARY_PATH or WEFT_PLUGIN_PATH, find their own plugins and data relative to
 *    themselves and print no "skipping plugin" warning; libweft.so.0 exports exactly the
 *    functions weft.h declares. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "plugin/plugin_internal.h"
#include "plugins/sdk/abi_v1_0.h"
#include "weft/vulkan.h"
#include "weft/weft.h"

#ifndef WEFT_BUILD_DIR
#define WEFT_BUILD_DIR "build"
#endif
#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif
#ifndef WEFT_TEST_PYTHON
#define WEFT_TEST_PYTHON ""
#endif
#ifndef WEFT_SANITIZE
#define WEFT_SANITIZE 0
#endif

/* ---------------------------------------------------------------------------------------------
 * The ABI layout: every field of 1.0 at the same offset in the current header, structs only
 * grown. Checked at compile time; a failure here means an ABI break. */

/* clang-format off */
#define SAME_OFFSET(cur, old, field)                                                        \
  _Static_assert(offsetof(cur, field) == offsetof(old, field), #cur "." #field " moved");
#define GREW(cur, old) _Static_assert(sizeof(cur) >= sizeof(old), #cur " shrank");

#define TENSOR_VIEW_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, dtype) X(c, o, rank) X(c, o, dims) X(c, o, num_elements) \
  X(c, o, data) X(c, o, nbytes)
#define DEVICE_PROPS_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, description) X(c, o, memory_bytes) X(c, o, compute_capability) \
  X(c, o, bus_id) X(c, o, host_accessible)
#define DEVICE_OPTIONS_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, memory_fraction) X(c, o, allow_growth)
#define BACKEND_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, device_type) X(c, o, device_class) X(c, o, priority) \
  X(c, o, backend_state) X(c, o, device_count) X(c, o, device_properties) X(c, o, device_open) \
  X(c, o, device_close) X(c, o, alloc) X(c, o, free) X(c, o, copy_to_device) \
  X(c, o, copy_from_device) X(c, o, copy_device_to_device) X(c, o, synchronize) \
  X(c, o, memory_usage) X(c, o, backend_shutdown)
#define OP_DEF_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, name) X(c, o, inputs) X(c, o, outputs) X(c, o, attrs) \
  X(c, o, is_stateful) X(c, o, shape_fn)
#define TYPE_CONSTRAINT_FIELDS(X, c, o) X(c, o, attr) X(c, o, dtypes) X(c, o, n_dtypes)
#define KERNEL_DEF_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, op) X(c, o, device_type) X(c, o, constraints) \
  X(c, o, n_constraints) X(c, o, host_memory_args) X(c, o, priority) X(c, o, create) \
  X(c, o, compute) X(c, o, destroy) X(c, o, user_data)
#define REGISTRAR_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, ctx) X(c, o, register_backend) X(c, o, register_op) \
  X(c, o, register_kernel)
#define HOST_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, abi_major) X(c, o, abi_minor) X(c, o, log) X(c, o, status_new) \
  X(c, o, status_code) X(c, o, status_message) X(c, o, status_free) X(c, o, attr_has) \
  X(c, o, attr_int) X(c, o, attr_float) X(c, o, attr_bool) X(c, o, attr_type) \
  X(c, o, attr_string) X(c, o, attr_int_list) X(c, o, attr_float_list) X(c, o, attr_type_list) \
  X(c, o, attr_shape) X(c, o, attr_tensor) X(c, o, kernel_attrs) X(c, o, kernel_node_name) \
  X(c, o, kernel_num_inputs) X(c, o, kernel_num_outputs) X(c, o, kernel_input) \
  X(c, o, kernel_allocate_output) X(c, o, kernel_forward_input) X(c, o, kernel_scratch) \
  X(c, o, kernel_device) X(c, o, kernel_device_ordinal) X(c, o, parallel_for) \
  X(c, o, kernel_num_threads) X(c, o, string_assign) X(c, o, kernel_output_from_attr) \
  X(c, o, kernel_variable) X(c, o, kernel_ref_input) X(c, o, kernel_ref_assign) \
  X(c, o, kernel_forward_ref) X(c, o, kernel_lock_ref) X(c, o, kernel_unlock_ref) \
  X(c, o, shape_attrs) X(c, o, shape_node_name) X(c, o, shape_num_inputs) X(c, o, shape_input) \
  X(c, o, shape_input_dtype) X(c, o, shape_input_const) X(c, o, shape_set_output)
#define PLUGIN_INFO_FIELDS(X, c, o) \
  X(c, o, struct_size) X(c, o, abi_major) X(c, o, abi_minor) X(c, o, name) X(c, o, version) \
  X(c, o, init) X(c, o, shutdown)

TENSOR_VIEW_FIELDS(SAME_OFFSET, weft_tensor_view_t, weft10_tensor_view_t)
DEVICE_PROPS_FIELDS(SAME_OFFSET, weft_device_props_t, weft10_device_props_t)
DEVICE_OPTIONS_FIELDS(SAME_OFFSET, weft_device_options_t, weft10_device_options_t)
BACKEND_FIELDS(SAME_OFFSET, weft_backend_t, weft10_backend_t)
OP_DEF_FIELDS(SAME_OFFSET, weft_op_def_t, weft10_op_def_t)
TYPE_CONSTRAINT_FIELDS(SAME_OFFSET, weft_type_constraint_t, weft10_type_constraint_t)
KERNEL_DEF_FIELDS(SAME_OFFSET, weft_kernel_def_t, weft10_kernel_def_t)
REGISTRAR_FIELDS(SAME_OFFSET, weft_registrar_t, weft10_registrar_t)
HOST_FIELDS(SAME_OFFSET, weft_host_t, weft10_host_t)
PLUGIN_INFO_FIELDS(SAME_OFFSET, weft_plugin_info_t, weft10_plugin_info_t)
GREW(weft_tensor_view_t, weft10_tensor_view_t)
GREW(weft_device_props_t, weft10_device_props_t)
GREW(weft_backend_t, weft10_backend_t)
GREW(weft_op_def_t, weft10_op_def_t)
GREW(weft_kernel_def_t, weft10_kernel_def_t)
GREW(weft_registrar_t, weft10_registrar_t)
GREW(weft_host_t, weft10_host_t)
GREW(weft_plugin_info_t, weft10_plugin_info_t)
/* An element of a kernel's constraint array has no struct_size: it can never change. */
_Static_assert(sizeof(weft_type_constraint_t) == sizeof(weft10_type_constraint_t),
               "weft_type_constraint_t changed size");
_Static_assert(WEFT_ABI_MAJOR == WEFT10_ABI_MAJOR, "a new ABI major needs a new frozen header");

/* clang-format on */

/* ---------------------------------------------------------------------------------------------
 * Running programs */

typedef struct proc {
  int status; /* exit status, -1 when it did not exit normally */
  char *out, *err;
} proc_t;

static void proc_clear(proc_t *p) {
  g_free(p->out);
  g_free(p->err);
  memset(p, 0, sizeof *p);
}

/* Runs argv (NULL-terminated) with envp (NULL: ours) in cwd (NULL: ours). */
static proc_t run(const char *const *argv, char **envp, const char *cwd) {
  proc_t p = {0};
  GError *error = NULL;
  int wait_status = 0;
  if (!g_spawn_sync(cwd, (char **)argv, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &p.out, &p.err,
                    &wait_status, &error)) {
    p.status = -1;
    p.err = g_strdup(error->message);
    g_error_free(error);
    return p;
  }
  p.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return p;
}

static void show_failure(const char *what, const proc_t *p) {
  g_test_message("%s exited %d\nstdout:\n%s\nstderr:\n%s", what, p->status, p->out ? p->out : "",
                 p->err ? p->err : "");
}

/* ---------------------------------------------------------------------------------------------
 * The fixture: built once in main, before any plugin is loaded in this process. */

typedef struct setup {
  bool ok;
  bool installed; /* meson install worked (the install tests need no example builds) */
  char *why_not; /* why the builds could not be done (a skip reason) */
  char *tmp;
  char *destdir;    /* meson install --destdir */
  char *prefix_dir; /* destdir + prefix */
  char *libdir;     /* destdir + prefix/libdir */
  char *bindir;
  char *pcdir;          /* installed .pc files */
  char *plugindir;      /* installed plugins */
  char *uninstalled_pc; /* build/meson-uninstalled */
  /* The examples' build folders: [0] against the install, [1] against the build tree. */
  char *swish[2];
  char *simacc[2];
  char *swish_so[2];
  char *simacc_so[2];
} setup_t;

static setup_t S;

/* An environment for building against the installed SDK (installed = true) or the build tree. */
static char **build_env(bool installed) {
  char **env = g_get_environ();
  env = g_environ_unsetenv(env, "WEFT_PLUGIN_PATH");
  env = g_environ_unsetenv(env, "PKG_CONFIG_LIBDIR");
  if (installed) {
    env = g_environ_setenv(env, "PKG_CONFIG_PATH", S.pcdir, TRUE);
    env = g_environ_setenv(env, "PKG_CONFIG_SYSROOT_DIR", S.destdir, TRUE);
  } else {
    env = g_environ_setenv(env, "PKG_CONFIG_PATH", S.uninstalled_pc, TRUE);
    env = g_environ_unsetenv(env, "PKG_CONFIG_SYSROOT_DIR");
  }
  return env;
}

/* An environment for running the installed programs from the destdir. */
static char **installed_run_env(const char *plugin_path) {
  char **env = g_get_environ();
  env = g_environ_setenv(env, "LD_LIBRARY_PATH", S.libdir, TRUE);
  env = g_environ_setenv(env, "WEFT_PLUGIN_PATH", plugin_path, TRUE);
  return env;
}

static char *find_file(const char *dir, const char *name) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return NULL;
  char *found = NULL;
  const char *e;
  while (!found && (e = g_dir_read_name(d))) {
    char *full = g_build_filename(dir, e, NULL);
    if (strcmp(e, name) == 0)
      found = g_strdup(full);
    else if (g_file_test(full, G_FILE_TEST_IS_DIR) && !g_file_test(full, G_FILE_TEST_IS_SYMLINK))
      found = find_file(full, name);
    g_free(full);
  }
  g_dir_close(d);
  return found;
}

static bool build_example(const char *example, const char *build_dir, bool installed) {
  char *src = g_build_filename(WEFT_SOURCE_DIR, "sdk", "examples", example, NULL);
  char **env = build_env(installed);
  /* A sanitized libweft needs sanitized programs (and plugins that accept its runtime). */
  const char *setup_argv[] = {"meson",
                              "setup",
                              build_dir,
                              src,
                              WEFT_SANITIZE ? "-Db_sanitize=address,undefined" : NULL,
                              "-Db_lundef=false",
                              NULL};
  proc_t p = run(setup_argv, env, NULL);
  bool ok = p.status == 0;
  if (!ok) {
    show_failure("meson setup", &p);
    S.why_not = g_strdup_printf("meson setup of %s (%s) failed: %s", example,
                                installed ? "installed SDK" : "build tree", p.err ? p.err : "");
  }
  proc_clear(&p);
  if (ok) {
    const char *ninja_argv[] = {"ninja", "-C", build_dir, NULL};
    p = run(ninja_argv, env, NULL);
    ok = p.status == 0;
    if (!ok) {
      show_failure("ninja", &p);
      S.why_not = g_strdup_printf("building %s (%s) failed: %s", example,
                                  installed ? "installed SDK" : "build tree", p.out ? p.out : "");
    }
    proc_clear(&p);
  }
  g_strfreev(env);
  g_free(src);
  return ok;
}

static void prepare(void) {
  const char *tools[] = {"meson", "ninja", "pkg-config"};
  for (size_t i = 0; i < G_N_ELEMENTS(tools); i++) {
    char *found = g_find_program_in_path(tools[i]);
    bool on_path = found != NULL;
    g_free(found);
    if (!on_path) {
      S.why_not = g_strdup_printf("%s is not on PATH", tools[i]);
      return;
    }
  }
  GError *error = NULL;
  S.tmp = g_dir_make_tmp("weft-sdk-XXXXXX", &error);
  if (!S.tmp) {
    S.why_not = g_strdup_printf("no temporary folder: %s", error->message);
    g_error_free(error);
    return;
  }
  S.destdir = g_build_filename(S.tmp, "dest", NULL);
  const char *install_argv[] = {"meson",        "install",   "-C",
                                WEFT_BUILD_DIR, "--destdir", S.destdir,
                                "--no-rebuild", "--quiet",   NULL};
  proc_t p = run(install_argv, NULL, NULL);
  if (p.status != 0) {
    show_failure("meson install", &p);
    S.why_not = g_strdup_printf("meson install failed: %s", p.err ? p.err : "");
    proc_clear(&p);
    return;
  }
  proc_clear(&p);
  char *pc = find_file(S.destdir, "weft-sdk.pc");
  char *weft = find_file(S.destdir, "weft-conformance");
  if (!pc || !weft) {
    S.why_not = g_strdup("the install has no weft-sdk.pc or no weft-conformance");
    g_free(pc);
    g_free(weft);
    return;
  }
  S.pcdir = g_path_get_dirname(pc);
  S.libdir = g_path_get_dirname(S.pcdir);
  S.bindir = g_path_get_dirname(weft);
  S.prefix_dir = g_path_get_dirname(S.bindir);
  S.plugindir = g_build_filename(S.libdir, "weft", "plugins", NULL);
  S.uninstalled_pc = g_build_filename(WEFT_BUILD_DIR, "meson-uninstalled", NULL);
  S.installed = true;
  g_free(pc);
  g_free(weft);
  for (int k = 0; k < 2; k++) {
    const char *how = k == 0 ? "installed" : "tree";
    S.swish[k] = g_strdup_printf("%s/custom-kernel-%s", S.tmp, how);
    S.simacc[k] = g_strdup_printf("%s/vendor-backend-%s", S.tmp, how);
    S.swish_so[k] = g_build_filename(S.swish[k], "libweft-swish.so", NULL);
    S.simacc_so[k] = g_build_filename(S.simacc[k], "libweft-simacc.so", NULL);
    if (!build_example("custom-kernel", S.swish[k], k == 0)) return;
    if (!build_example("vendor-backend", S.simacc[k], k == 0)) return;
  }
  S.ok = true;
}

static bool need_setup(void) {
  if (S.ok) return true;
  g_test_skip(S.why_not ? S.why_not : "the SDK fixture was not built");
  return false;
}

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *e;
    while ((e = g_dir_read_name(d))) {
      char *full = g_build_filename(path, e, NULL);
      if (g_file_test(full, G_FILE_TEST_IS_DIR) && !g_file_test(full, G_FILE_TEST_IS_SYMLINK))
        remove_tree(full);
      else
        g_unlink(full);
      g_free(full);
    }
    g_dir_close(d);
  }
  g_rmdir(path);
}

/* ---------------------------------------------------------------------------------------------
 * Install and pkg-config */

static void test_install_layout(void) {
  if (!need_setup()) return;
  const char *in_bin[] = {"weft", "weftd", "weft-conformance"};
  for (size_t i = 0; i < G_N_ELEMENTS(in_bin); i++) {
    char *f = g_build_filename(S.bindir, in_bin[i], NULL);
    g_assert_true(g_file_test(f, G_FILE_TEST_IS_EXECUTABLE));
    g_free(f);
  }
  const char *in_lib[] = {"libweft.so", "libweft.so.0", "pkgconfig/weft.pc",
                          "pkgconfig/weft-sdk.pc", "weft/plugins/libweft-cpu.so"};
  for (size_t i = 0; i < G_N_ELEMENTS(in_lib); i++) {
    char *f = g_build_filename(S.libdir, in_lib[i], NULL);
    if (!g_file_test(f, G_FILE_TEST_EXISTS)) g_test_message("missing %s", f);
    g_assert_true(g_file_test(f, G_FILE_TEST_EXISTS));
    g_free(f);
  }
  const char *headers[] = {"weft.h", "plugin.h", "types.h", "vulkan.h"};
  for (size_t i = 0; i < G_N_ELEMENTS(headers); i++) {
    char *f = g_build_filename(S.prefix_dir, "include", "weft", headers[i], NULL);
    g_assert_true(g_file_test(f, G_FILE_TEST_EXISTS));
    g_free(f);
  }
  /* The installed tools run from the install, with the installed plugins. */
  char **env = installed_run_env(S.plugindir);
  char *weft = g_build_filename(S.bindir, "weft", NULL);
  const char *argv[] = {weft, "plugins", NULL};
  proc_t p = run(argv, env, NULL);
  if (p.status != 0) show_failure("installed weft plugins", &p);
  g_assert_cmpint(p.status, ==, 0);
  g_assert_nonnull(strstr(p.out, "libweft-cpu.so"));
  g_assert_nonnull(strstr(p.out, "ABI 1."));
  proc_clear(&p);
  g_free(weft);
  g_strfreev(env);
}

/* The environment of a user who installed Weft: none of the variables that would point the
 * installed programs at libweft or at plugins. */
static char **clean_run_env(void) {
  char **env = g_get_environ();
  const char *drop[] = {"LD_LIBRARY_PATH", "LD_PRELOAD", "WEFT_PLUGIN_PATH", "WEFT_LOG_LEVEL",
                        "WEFT_CONFORMANCE_EXPECTED"};
  for (size_t i = 0; i < G_N_ELEMENTS(drop); i++) env = g_environ_unsetenv(env, drop[i]);
  return env;
}

/* The installed weft, with a clean environment, from another folder: libweft.so.0 through its
 * RUNPATH (weftd), the plugins of the install it belongs to (the destdir, not the configured
 * prefix), and not a warning on stderr: the build tree beside it is not searched. */
static void test_install_relocated(void) {
  if (!S.installed) {
    g_test_skip(S.why_not ? S.why_not : "meson install failed");
    return;
  }
  char **env = clean_run_env();
  char *weft = g_build_filename(S.bindir, "weft", NULL);
  const char *argv[] = {weft, "devices", NULL};
  proc_t p = run(argv, env, S.tmp);
  if (p.status != 0 || strstr(p.err, "skipping plugin")) show_failure("installed weft devices", &p);
  g_assert_cmpint(p.status, ==, 0);
  g_assert_nonnull(strstr(p.out, "/device:CPU:0"));
  g_assert_null(strstr(p.err, "skipping plugin"));
  g_assert_null(strstr(p.err, "warning"));
  proc_clear(&p);
  const char *plugins_argv[] = {weft, "plugins", NULL};
  p = run(plugins_argv, env, S.tmp);
  g_assert_cmpint(p.status, ==, 0);
  /* The plugin came from the destdir's plugin folder, found next to the program. */
  char *cpu = g_build_filename(S.plugindir, "libweft-cpu.so", NULL);
  if (!strstr(p.out, cpu)) show_failure("installed weft plugins", &p);
  g_assert_nonnull(strstr(p.out, cpu));
  g_free(cpu);
  proc_clear(&p);
  g_free(weft);
  /* weftd links libweft.so.0 and finds it through RUNPATH $ORIGIN/../<libdir>. */
  char *weftd = g_build_filename(S.bindir, "weftd", NULL);
  const char *weftd_argv[] = {weftd, "--help", NULL};
  p = run(weftd_argv, env, S.tmp);
  if (p.status != 0) show_failure("installed weftd --help", &p);
  g_assert_cmpint(p.status, ==, 0);
  proc_clear(&p);
  g_free(weftd);
  g_strfreev(env);
}

/* The installed Python package (docs/python.md, "From a meson install"), imported from the
 * destdir with only PYTHONPATH set: the extension finds the destdir's libweft.so.0 through its
 * $ORIGIN RUNPATH (no LD_LIBRARY_PATH), libweft the destdir's CPU plugin, and a session runs. */
static void test_install_python(void) {
  if (!S.installed) {
    g_test_skip(S.why_not ? S.why_not : "meson install failed");
    return;
  }
  if (!*WEFT_TEST_PYTHON) {
    g_test_skip("this build has no Python package (docs/python.md)");
    return;
  }
  if (WEFT_SANITIZE) {
    g_test_skip("a sanitized libweft.so.0 does not load into an uninstrumented interpreter");
    return;
  }
  /* weft/errors.py is in the package alone; its folder's parent is the site folder. */
  char *errors_py = find_file(S.prefix_dir, "errors.py");
  g_assert_nonnull(errors_py);
  char *pkg = g_path_get_dirname(errors_py);
  char *site = g_path_get_dirname(pkg);
  char *want_site = g_build_filename(S.prefix_dir, "lib", "python3", "dist-packages", NULL);
  if (g_file_test(want_site, G_FILE_TEST_IS_DIR)) /* Debian's interpreter: its deb_system scheme */
    g_assert_cmpstr(site, ==, want_site);
  char **env = clean_run_env();
  env = g_environ_setenv(env, "PYTHONPATH", site, TRUE);
  static const char script[] =
      "import sys\n"
      "import weft.compat.v1 as tf\n"
      "assert tf.__file__.startswith(sys.argv[1]), tf.__file__\n"
      "print(tf.Session().run(tf.constant(1.0) + 2.0))\n"
      "libs = sorted({p for p in open('/proc/self/maps').read().split() if 'libweft' in p})\n"
      "print('\\n'.join(libs))\n";
  const char *argv[] = {WEFT_TEST_PYTHON, "-c", script, S.destdir, NULL};
  proc_t p = run(argv, env, S.tmp);
  if (p.status != 0) show_failure("the installed Python package", &p);
  g_assert_cmpint(p.status, ==, 0);
  g_assert_true(g_str_has_prefix(p.out, "3.0\n"));
  char *lib = g_build_filename(S.libdir, "libweft.so.0", NULL);
  char *cpu = g_build_filename(S.plugindir, "libweft-cpu.so", NULL);
  if (!strstr(p.out, lib) || !strstr(p.out, cpu)) show_failure("the installed Python package", &p);
  g_assert_nonnull(strstr(p.out, lib)); /* libweft.so.0 -> libweft.so.0.1.0 */
  g_assert_nonnull(strstr(p.out, cpu));
  proc_clear(&p);
  g_free(cpu);
  g_free(lib);
  g_strfreev(env);
  g_free(want_site);
  g_free(site);
  g_free(pkg);
  g_free(errors_py);
}

/* The installed weft-conformance reads the expected-failure lists installed into
 * <datadir>/weft/expected_failures (found relative to itself): an entry added to the installed
 * CPU list turns the passes it names into "unexpectedly passed". */
static void test_install_conformance_lists(void) {
  if (!S.installed) {
    g_test_skip(S.why_not ? S.why_not : "meson install failed");
    return;
  }
  char *list = g_build_filename(S.prefix_dir, "share", "weft", "expected_failures", "CPU.txt",
                                NULL);
  char *text = NULL;
  if (!g_file_get_contents(list, &text, NULL, NULL)) g_test_message("missing %s", list);
  g_assert_nonnull(text);
  char *marked = g_strdup_printf("%s\nAdd float32 n7 marked by test_sdk\n", text);
  g_assert_true(g_file_set_contents(list, marked, -1, NULL));
  char **env = clean_run_env();
  char *tool = g_build_filename(S.bindir, "weft-conformance", NULL);
  const char *argv[] = {tool, "--op", "Add", "--device", "CPU", "--case", "n7", NULL};
  proc_t p = run(argv, env, S.tmp);
  g_assert_true(g_file_set_contents(list, text, -1, NULL));
  if (!strstr(p.out, " 1 unexpectedly passed")) show_failure("installed weft-conformance", &p);
  g_assert_nonnull(strstr(p.out, " 1 unexpectedly passed"));
  g_assert_null(strstr(p.err, "skipping plugin"));
  proc_clear(&p);
  g_free(tool);
  g_strfreev(env);
  g_free(marked);
  g_free(text);
  g_free(list);
}

/* libweft.so.0 exports the functions weft.h declares and nothing else: no weft__ internals, no
 * protobuf-c code (tensorflow__*, which would clash with a program's own), each declaration
 * marked WEFT_API. */
static void test_install_exports(void) {
  if (!S.installed) {
    g_test_skip(S.why_not ? S.why_not : "meson install failed");
    return;
  }
  char *nm = g_find_program_in_path("nm");
  if (!nm) {
    g_test_skip("nm (binutils) is not on PATH");
    return;
  }
  g_free(nm);
  char *lib = g_build_filename(S.libdir, "libweft.so.0", NULL);
  const char *argv[] = {"nm", "-D", "--defined-only", lib, NULL};
  proc_t p = run(argv, NULL, NULL);
  g_assert_cmpint(p.status, ==, 0);
  GHashTable *exported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char **lines = g_strsplit(p.out, "\n", -1);
  for (char **l = lines; *l; l++) {
    char **f = g_strsplit_set(g_strstrip(*l), " \t", -1);
    int n = (int)g_strv_length(f);
    if (n >= 2) {
      const char *sym = f[n - 1];
      if (!g_str_has_prefix(sym, "weft_") || g_str_has_prefix(sym, "weft__"))
        g_test_message("libweft.so.0 exports %s", sym);
      g_assert_true(g_str_has_prefix(sym, "weft_") && !g_str_has_prefix(sym, "weft__"));
      g_hash_table_add(exported, g_strdup(sym));
    }
    g_strfreev(f);
  }
  g_strfreev(lines);
  proc_clear(&p);
  /* Every function weft.h declares (a line at column 0 naming weft_*( that is not a typedef)
   * carries WEFT_API and is exported. */
  char *header = g_build_filename(WEFT_SOURCE_DIR, "core", "include", "weft", "weft.h", NULL);
  char *text = NULL;
  g_assert_true(g_file_get_contents(header, &text, NULL, NULL));
  GRegex *decl = g_regex_new("^(?!typedef|#|/\\*| )[^(\\n]*?\\b(weft_[a-z0-9_]+)\\(",
                             G_REGEX_MULTILINE, 0, NULL);
  g_assert_nonnull(decl);
  GMatchInfo *m = NULL;
  int declared = 0;
  for (g_regex_match(decl, text, 0, &m); g_match_info_matches(m); g_match_info_next(m, NULL)) {
    char *line = g_match_info_fetch(m, 0);
    char *name = g_match_info_fetch(m, 1);
    if (!g_str_has_prefix(line, "WEFT_API ") || !g_hash_table_contains(exported, name))
      g_test_message("weft.h declares %s without WEFT_API, or it is not exported", name);
    g_assert_true(g_str_has_prefix(line, "WEFT_API "));
    g_assert_true(g_hash_table_contains(exported, name));
    declared++;
    g_free(name);
    g_free(line);
  }
  g_match_info_free(m);
  g_regex_unref(decl);
  g_assert_cmpint(declared, >, 200);
  g_test_message("weft.h declares %d functions; libweft.so.0 exports %u symbols", declared,
                 g_hash_table_size(exported));
  g_free(text);
  g_free(header);
  g_hash_table_unref(exported);
  g_free(lib);
}

static char *pkg_config(bool installed, const char *const *args) {
  char **env = build_env(installed);
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer) "pkg-config");
  for (const char *const *a = args; *a; a++) g_ptr_array_add(argv, (gpointer)*a);
  g_ptr_array_add(argv, NULL);
  proc_t p = run((const char *const *)argv->pdata, env, NULL);
  g_ptr_array_free(argv, TRUE);
  g_strfreev(env);
  if (p.status != 0) show_failure("pkg-config", &p);
  g_assert_cmpint(p.status, ==, 0);
  char *out = g_strdup(g_strstrip(p.out));
  proc_clear(&p);
  return out;
}

static void test_pkgconfig(void) {
  if (!need_setup()) return;
  /* Installed: headers under the install's include folder, the plugin folder, the ABI. */
  char *cflags = pkg_config(true, (const char *const[]){"--cflags", "weft-sdk", NULL});
  char *want = g_strdup_printf("-I%s/include", S.prefix_dir);
  g_assert_nonnull(strstr(cflags, want));
  g_free(want);
  g_free(cflags);
  char *plugindir =
      pkg_config(true, (const char *const[]){"--variable=plugindir", "weft-sdk", NULL});
  g_assert_true(g_str_has_suffix(plugindir, "/weft/plugins"));
  g_free(plugindir);
  char *minor = pkg_config(true, (const char *const[]){"--variable=abi_minor", "weft-sdk", NULL});
  g_assert_cmpint(atoi(minor), ==, WEFT_ABI_MINOR);
  g_free(minor);
  /* The SDK needs no library; the client package does. */
  char *libs = pkg_config(true, (const char *const[]){"--libs", "weft-sdk", NULL});
  g_assert_null(strstr(libs, "-lweft"));
  g_free(libs);
  libs = pkg_config(true, (const char *const[]){"--libs", "weft", NULL});
  g_assert_nonnull(strstr(libs, "-lweft"));
  g_free(libs);
  /* Uninstalled: the source tree's headers and the build tree's plugin folder. */
  cflags = pkg_config(false, (const char *const[]){"--cflags", "weft-sdk", NULL});
  g_assert_nonnull(strstr(cflags, "sdk/include"));
  g_free(cflags);
  plugindir = pkg_config(false, (const char *const[]){"--variable=plugindir", "weft-sdk", NULL});
  g_assert_true(g_file_test(plugindir, G_FILE_TEST_IS_DIR));
  g_free(plugindir);
}

/* ---------------------------------------------------------------------------------------------
 * The custom-kernel example in graphs */

static const weft_plugin_record_t *record_named(const char *name) {
  for (int i = 0; i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->name && strcmp(r->name, name) == 0) return r;
  }
  return NULL;
}

static bool has_device(const char *type) {
  for (int i = 0; i < weft_devices_count(); i++)
    if (strcmp(weft_devices_get(i)->device_type, type) == 0) return true;
  return false;
}

/* Runs FusedSwish(beta) on device over values; returns the output (caller unrefs). */
static weft_tensor_t *run_swish(const char *device, weft_dtype_t dtype, float beta,
                                const double *values, int64_t n, char **placed) {
  weft_status_t *st = NULL;
  weft_graph_t *g = weft_graph_new();
  /* Inputs pinned to the CPU: with SIMACC loaded and no GPU, unpinned nodes would go there. */
  weft_graph_push_device(g, "/device:CPU:0");
  weft_output_t x = weft_placeholder(g, "x", dtype, 1, &n, &st);
  weft_graph_pop_device(g);
  g_assert_null(st);
  weft_graph_push_device(g, device);
  weft_op_builder_t *b = weft_op_new(g, "FusedSwish", "swish");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "beta", beta);
  weft_node_t *node = NULL;
  st = weft_op_finish(b, &node);
  weft_graph_pop_device(g);
  g_assert_null(st);
  int64_t dims[WEFT_MAX_RANK];
  g_assert_cmpint(weft_node_output_shape(node, 0, dims), ==, 1); /* the shape function ran */
  g_assert_cmpint(dims[0], ==, n);
  weft_tensor_t *tx = weft_tensor_new(dtype, 1, &n);
  for (int64_t i = 0; i < n; i++) {
    if (dtype == WEFT_DT_FLOAT)
      ((float *)weft_tensor_data(tx))[i] = (float)values[i];
    else
      ((double *)weft_tensor_data(tx))[i] = values[i];
  }
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, false);
  weft_session_t *s = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  g_assert_null(st);
  const char *feed = "x", *fetch = "swish";
  weft_tensor_t *y = NULL;
  st = weft_session_run(s, &feed, &tx, 1, &fetch, &y, 1, NULL, 0);
  if (st) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  *placed = g_strdup(weft_session_node_device(s, "swish"));
  weft_session_free(s);
  weft_tensor_unref(tx);
  weft_graph_free(g);
  return y;
}

static void check_swish(const char *device, weft_dtype_t dtype, double tol) {
  double values[9] = {-7.5, -2, -1, -0.25, 0, 0.5, 1, 3, 12};
  const float beta = 1.5f;
  char *placed = NULL;
  weft_tensor_t *y = run_swish(device, dtype, beta, values, 9, &placed);
  g_assert_true(g_str_has_suffix(placed, device));
  for (int i = 0; i < 9; i++) {
    double want = values[i] / (1 + exp(-(double)beta * values[i]));
    double got = weft_tensor_get_double(y, i);
    if (fabs(got - want) > tol * (1 + fabs(want)))
      g_test_message("%s %s: swish(%g) = %.9g, want %.9g", device, weft_dtype_name(dtype),
                     values[i], got, want);
    g_assert_cmpfloat(fabs(got - want), <=, tol * (1 + fabs(want)));
  }
  weft_tensor_unref(y);
  g_free(placed);
}

static void test_custom_kernel_graph(void) {
  if (!need_setup()) return;
  const weft_plugin_record_t *r = record_named("swish");
  g_assert_nonnull(r);
  g_assert_null(r->error);
  g_assert_cmpint(r->abi_minor, ==, WEFT_ABI_MINOR); /* built against this build's SDK */
  g_assert_cmpint(r->n_ops, ==, 1);
  g_assert_true(g_str_has_prefix(r->path, S.swish[0])); /* the one built against the install */
  check_swish("/device:CPU:0", WEFT_DT_FLOAT, 1e-6);
  check_swish("/device:CPU:0", WEFT_DT_DOUBLE, 1e-14);
  if (!has_device("VULKAN")) {
    g_test_message("no VULKAN device: the Vulkan kernel was not run");
  } else if (r->n_kernels < 2) {
    g_test_message("the example was built without Vulkan (no headers or glslc)");
  } else {
    /* The kernel records its shader through the backend's services: their dispatch count moves
     * by one per run, and the plugin has no VkDevice (nor any Vulkan entry point) of its own. */
    weft__device_t *d = weft__device_find("/job:localhost/replica:0/task:0/device:VULKAN:0");
    g_assert_nonnull(d);
    g_assert_null(weft__device_open(d, NULL));
    const weft_vulkan_services_t *vk =
        d->backend->table.device_services(d->handle, WEFT_VULKAN_SERVICES_2);
    g_assert_nonnull(vk);
    uint64_t before = vk->dispatch_count(vk);
    check_swish("/device:VULKAN:0", WEFT_DT_FLOAT, 1e-5);
    g_assert_cmpuint(vk->dispatch_count(vk), ==, before + 1);
    for (int k = 0; k < 2; k++) {
      char *so = NULL;
      gsize len = 0;
      g_assert_true(g_file_get_contents(S.swish_so[k], &so, &len, NULL));
      g_assert_null(g_strstr_len(so, (gssize)len, "vkCreateDevice"));
      g_assert_null(g_strstr_len(so, (gssize)len, "vkQueueSubmit"));
      g_free(so);
    }
  }
}

/* The gradient program against the analytic derivative s + beta x s (1 - s), with dy != 1. */
static void test_custom_kernel_gradient(void) {
  if (!need_setup()) return;
  const weft__grad_program_t *prog = weft__gradient_lookup("FusedSwish");
  g_assert_nonnull(prog);
  g_assert_nonnull(strstr(weft__grad_program_text(prog), "Sigmoid"));
  const char *devices[] = {"/device:CPU:0", "/device:VULKAN:0"};
  for (int d = 0; d < 2; d++) {
    if (d == 1 && (!has_device("VULKAN") || record_named("swish")->n_kernels < 2)) continue;
    weft_status_t *st = NULL;
    weft_graph_t *g = weft_graph_new();
    int64_t n = 6;
    double xs[6] = {-3, -1, -0.5, 0, 0.75, 2.5}, dys[6] = {1, 2, -1, 0.5, 3, -2};
    weft_graph_push_device(g, "/device:CPU:0");
    weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, &n, &st);
    weft_output_t dy = weft_placeholder(g, "dy", WEFT_DT_FLOAT, 1, &n, &st);
    weft_graph_pop_device(g);
    g_assert_null(st);
    weft_graph_push_device(g, devices[d]);
    weft_op_builder_t *b = weft_op_new(g, "FusedSwish", "swish");
    weft_op_add_input(b, x);
    weft_op_set_attr_float(b, "beta", 0.75f);
    weft_node_t *node = NULL;
    g_assert_null(weft_op_finish(b, &node));
    weft_output_t dx[1];
    weft_graph_push_name_scope(g, "gradients");
    st = weft__gradient_build(g, node, &dy, dx);
    weft_graph_pop_name_scope(g);
    weft_graph_pop_device(g);
    if (st) g_test_message("%s", weft_status_message(st));
    g_assert_null(st);
    g_assert_nonnull(dx[0].node);
    g_assert_true(g_str_has_prefix(weft_node_name(dx[0].node), "gradients/"));
    weft_tensor_t *feeds[2] = {weft_tensor_new(WEFT_DT_FLOAT, 1, &n),
                               weft_tensor_new(WEFT_DT_FLOAT, 1, &n)};
    for (int i = 0; i < 6; i++) {
      ((float *)weft_tensor_data(feeds[0]))[i] = (float)xs[i];
      ((float *)weft_tensor_data(feeds[1]))[i] = (float)dys[i];
    }
    weft_session_options_t *opts = weft_session_options_new();
    weft_session_options_set_allow_soft_placement(opts, false);
    weft_session_t *s = weft_session_new(g, opts, &st);
    weft_session_options_free(opts);
    const char *feed_names[2] = {"x", "dy"};
    char *fetch = g_strdup_printf("%s:%d", weft_node_name(dx[0].node), dx[0].index);
    weft_tensor_t *got = NULL;
    st = weft_session_run(s, feed_names, feeds, 2, (const char *const *)&fetch, &got, 1, NULL, 0);
    if (st) g_test_message("%s", weft_status_message(st));
    g_assert_null(st);
    for (int i = 0; i < 6; i++) {
      double z = 0.75 * xs[i], sg = 1 / (1 + exp(-z));
      double want = dys[i] * (sg + 0.75 * xs[i] * sg * (1 - sg));
      g_assert_cmpfloat(fabs(weft_tensor_get_double(got, i) - want), <=, 1e-5 * (1 + fabs(want)));
    }
    g_free(fetch);
    weft_tensor_unref(got);
    weft_tensor_unref(feeds[0]);
    weft_tensor_unref(feeds[1]);
    weft_session_free(s);
    weft_graph_free(g);
  }
}

/* ---------------------------------------------------------------------------------------------
 * weft-conformance --plugin */

static JsonObject *load_json(const char *path, JsonParser **parser) {
  *parser = json_parser_new();
  GError *error = NULL;
  if (!json_parser_load_from_file(*parser, path, &error)) g_error("%s: %s", path, error->message);
  return json_node_get_object(json_parser_get_root(*parser));
}

static int64_t cases_summary(JsonObject *report, const char *key) {
  JsonObject *summary = json_object_get_object_member(report, "summary");
  return json_object_get_int_member(json_object_get_object_member(summary, "cases"), key);
}

/* Records of op on devices of type `device_type` (prefix of "TYPE:N") with this status. */
static int count_records(JsonObject *report, const char *op, const char *device_type,
                         const char *status, const char *case_suffix) {
  JsonArray *results = json_object_get_array_member(report, "results");
  int n = 0;
  for (guint i = 0; i < json_array_get_length(results); i++) {
    JsonObject *r = json_array_get_object_element(results, i);
    if (op && strcmp(json_object_get_string_member(r, "op"), op) != 0) continue;
    if (device_type && !g_str_has_prefix(json_object_get_string_member(r, "device"), device_type))
      continue;
    if (strcmp(json_object_get_string_member(r, "status"), status) != 0) continue;
    if (case_suffix && !g_str_has_suffix(json_object_get_string_member(r, "case"), case_suffix))
      continue;
    n++;
  }
  return n;
}

/* Runs a weft-conformance (the build tree's or the installed one) and returns its JSON report. */
static JsonObject *conformance(bool installed, const char *const *args, JsonParser **parser,
                               char **markdown_out) {
  char *json = g_strdup_printf("%s/report-%d.json", S.tmp, g_random_int_range(0, 1 << 30));
  char *md = g_strdup_printf("%s/report-%d.md", S.tmp, g_random_int_range(0, 1 << 30));
  char *prog = installed
                   ? g_build_filename(S.bindir, "weft-conformance", NULL)
                   : g_build_filename(WEFT_BUILD_DIR, "conformance", "weft-conformance", NULL);
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, prog);
  for (const char *const *a = args; *a; a++) g_ptr_array_add(argv, (gpointer)*a);
  g_ptr_array_add(argv, (gpointer) "--json");
  g_ptr_array_add(argv, json);
  g_ptr_array_add(argv, (gpointer) "--markdown");
  g_ptr_array_add(argv, md);
  g_ptr_array_add(argv, NULL);
  char **env = installed ? installed_run_env(S.plugindir)
                         : g_environ_unsetenv(g_get_environ(), "WEFT_PLUGIN_PATH");
  proc_t p = run((const char *const *)argv->pdata, env, NULL);
  if (p.status != 0) show_failure("weft-conformance", &p);
  g_assert_cmpint(p.status, ==, 0);
  JsonObject *report = load_json(json, parser);
  if (markdown_out) g_file_get_contents(md, markdown_out, NULL, NULL);
  proc_clear(&p);
  g_strfreev(env);
  g_ptr_array_free(argv, TRUE);
  g_free(prog);
  g_free(json);
  g_free(md);
  return report;
}

static void check_swish_report(JsonObject *report) {
  g_assert_cmpint(cases_summary(report, "failed"), ==, 0);
  /* 7 cases x 2 dtypes on CPU, 3 of them with a gradient check each. */
  g_assert_cmpint(count_records(report, "FusedSwish", "CPU:", "passed", NULL), ==, 20);
  g_assert_cmpint(count_records(report, "FusedSwish", "CPU:", "passed", ".gradient"), ==, 6);
  if (count_records(report, "FusedSwish", "VULKAN:", "passed", NULL) > 0) {
    g_assert_cmpint(count_records(report, "FusedSwish", "VULKAN:", "passed", NULL), ==, 10);
    /* float64 has no Vulkan kernel: reported once, not failed. */
    g_assert_cmpint(count_records(report, "FusedSwish", "VULKAN:", "unsupported", NULL), ==, 1);
  }
}

static void test_custom_kernel_conformance(void) {
  if (!need_setup()) return;
  /* The build tree's tool with the plugin built against the build tree. */
  JsonParser *parser = NULL;
  const char *args[] = {"--plugin", S.swish_so[1], "--op", "FusedSwish", NULL};
  JsonObject *report = conformance(false, args, &parser, NULL);
  check_swish_report(report);
  g_object_unref(parser);
  /* The installed tool with the plugin built against the installed SDK. */
  const char *args2[] = {"--plugin", S.swish_so[0], "--op", "FusedSwish", NULL};
  report = conformance(true, args2, &parser, NULL);
  check_swish_report(report);
  g_object_unref(parser);
  /* VULKAN:0 alone, the way docs/sdk.md runs it: every float case passes on the shared device. */
  if (has_device("VULKAN") && record_named("swish")->n_kernels >= 2) {
    const char *args3[] = {"--plugin", S.swish_so[1], "--op", "FusedSwish", "--device", "VULKAN:0",
                           NULL};
    report = conformance(false, args3, &parser, NULL);
    g_assert_cmpint(cases_summary(report, "failed"), ==, 0);
    g_assert_cmpint(count_records(report, "FusedSwish", "VULKAN:", "passed", NULL), ==, 10);
    g_assert_cmpint(count_records(report, "FusedSwish", "CPU:", "passed", NULL), ==, 0);
    g_object_unref(parser);
  }
}

/* ---------------------------------------------------------------------------------------------
 * The vendor-backend example */

static void test_vendor_placement(void) {
  if (!need_setup()) return;
  const weft_plugin_record_t *r = record_named("simacc");
  g_assert_nonnull(r);
  g_assert_cmpstr(r->device_types, ==, "SIMACC");
  bool found = false;
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (strcmp(d->device_type, "SIMACC") != 0) continue;
    found = true;
    g_assert_true(d->gpu_like);
    g_assert_cmpuint(d->memory_bytes, ==, 512ull << 20);
  }
  g_assert_true(found);

  for (int soft = 0; soft < 2; soft++) {
    weft_status_t *st = NULL;
    weft_graph_t *g = weft_graph_new();
    int64_t d2[2] = {2, 2};
    float av[4] = {1, -2, 3, 0.5f}, bv[4] = {0.5f, 1, -1, 2};
    weft_tensor_t *ta = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, d2, av, sizeof av, &st);
    weft_tensor_t *tb = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, d2, bv, sizeof bv, &st);
    weft_graph_push_device(g, "/device:CPU:0");
    weft_output_t a = weft_const(g, "a", ta, &st); /* on the CPU: a real copy to SIMACC */
    weft_graph_pop_device(g);
    weft_graph_push_device(g, "/device:SIMACC:0");
    weft_output_t b = weft_const(g, "b", tb, &st);
    weft_output_t mm = weft_matmul(g, "mm", a, b, false, true, &st);
    weft_output_t sum = weft_binary(g, "AddV2", "sum", mm, a, &st);
    weft_output_t relu = weft_unary(g, "Relu", "relu", sum, &st);
    weft_output_t sm = weft_unary(g, "Softmax", "softmax", relu, &st); /* no SIMACC kernel */
    weft_graph_pop_device(g);
    (void)sm;
    g_assert_null(st);
    weft_session_options_t *opts = weft_session_options_new();
    weft_session_options_set_allow_soft_placement(opts, soft);
    weft_session_t *s = weft_session_new(g, opts, &st);
    weft_session_options_free(opts);
    const char *fetches[2] = {"relu", "softmax"};
    weft_tensor_t *out[2] = {NULL, NULL};
    if (!st) st = weft_session_run(s, NULL, NULL, 0, fetches, out, 2, NULL, 0);
    if (!soft) {
      /* Pinned to a device without a kernel: refused, naming the op and the device. */
      g_assert_nonnull(st);
      g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
      g_assert_nonnull(strstr(weft_status_message(st), "Softmax"));
      g_assert_nonnull(strstr(weft_status_message(st), "SIMACC"));
      weft_status_free(st);
    } else {
      if (st) g_test_message("%s", weft_status_message(st));
      g_assert_null(st);
      const char *on_simacc[] = {"b", "mm", "sum", "relu"};
      for (size_t i = 0; i < G_N_ELEMENTS(on_simacc); i++)
        g_assert_true(
            g_str_has_suffix(weft_session_node_device(s, on_simacc[i]), "/device:SIMACC:0"));
      g_assert_null(strstr(weft_session_node_device(s, "softmax"), "SIMACC"));
      g_assert_nonnull(strstr(weft_session_node_device(s, "softmax"), "/device:"));
      /* relu(a b^T + a), in double. */
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          double v = av[i * 2 + j];
          for (int k = 0; k < 2; k++) v += (double)av[i * 2 + k] * bv[j * 2 + k];
          v = v > 0 ? v : 0;
          g_assert_cmpfloat(fabs(weft_tensor_get_double(out[0], i * 2 + j) - v), <=, 1e-6);
        }
      double row = weft_tensor_get_double(out[1], 0) + weft_tensor_get_double(out[1], 1);
      g_assert_cmpfloat(fabs(row - 1), <=, 1e-6);
    }
    weft_tensor_unref(out[0]);
    weft_tensor_unref(out[1]);
    weft_tensor_unref(ta);
    weft_tensor_unref(tb);
    if (s) weft_session_free(s);
    weft_graph_free(g);
  }
}

static void test_vendor_demo(void) {
  if (!need_setup()) return;
  /* Built against the installed weft.pc, run against the installed libweft and plugins. */
  char *demo = g_build_filename(S.simacc[0], "simacc-demo", NULL);
  if (!g_file_test(demo, G_FILE_TEST_IS_EXECUTABLE)) {
    g_free(demo);
    g_test_skip("simacc-demo was not built (no weft.pc client dependency found)");
    return;
  }
  char *path = g_strdup_printf("%s:%s", S.plugindir, S.simacc[0]);
  char **env = installed_run_env(path);
  const char *argv[] = {demo, NULL};
  proc_t p = run(argv, env, NULL);
  if (p.status != 0) show_failure("simacc-demo", &p);
  g_assert_cmpint(p.status, ==, 0);
  g_assert_nonnull(
      strstr(p.out, "placement matmul /job:localhost/replica:0/task:0/device:SIMACC:0"));
  g_assert_nonnull(strstr(p.out, "placement relu /job:localhost/replica:0/task:0/device:SIMACC:0"));
  g_assert_null(strstr(p.out, "placement softmax /job:localhost/replica:0/task:0/device:SIMACC"));
  g_assert_nonnull(strstr(p.out, "\nOK\n"));
  /* log_device_placement, TensorFlow's format. */
  g_assert_nonnull(strstr(p.err, "relu: (Relu): /job:localhost/replica:0/task:0/device:SIMACC:0"));
  proc_clear(&p);
  g_strfreev(env);
  g_free(path);
  g_free(demo);
}

static void test_vendor_conformance(void) {
  if (!need_setup()) return;
  JsonParser *parser = NULL;
  char *md = NULL;
  const char *args[] = {"--plugin", S.simacc_so[1], "--device", "SIMACC:0", NULL};
  JsonObject *report = conformance(false, args, &parser, &md);
  g_assert_cmpint(cases_summary(report, "failed"), ==, 0);
  const char *ops[] = {"Const", "Identity", "VariableV2", "Assign", "AddV2",
                       "Sub",   "Mul",      "MatMul",     "Relu"};
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    int passed = count_records(report, ops[i], "SIMACC:", "passed", NULL);
    if (passed < 5) g_test_message("%s: %d cases passed on SIMACC:0", ops[i], passed);
    g_assert_cmpint(passed, >=, 5);
  }
  /* What SIMACC lacks is unsupported, never failed. */
  g_assert_cmpint(count_records(report, "Softmax", "SIMACC:", "unsupported", NULL), >=, 1);
  g_assert_nonnull(md);
  g_assert_nonnull(strstr(md, "SIMACC:0"));
  g_free(md);
  g_object_unref(parser);
}

/* ---------------------------------------------------------------------------------------------
 * ABI rules */

static char *sdk_test_plugin(const char *name) {
  return g_strdup_printf("%s/tests/plugins/sdk/libweft-sdk-%s.so", WEFT_BUILD_DIR, name);
}

static void test_abi_old_minor(void) {
  char *path = sdk_test_plugin("old-minor");
  weft_status_t *st = weft_plugins_load_file(path);
  if (st) g_test_message("%s", weft_status_message(st));
  g_assert_null(st);
  const weft_plugin_record_t *r = record_named("old-minor");
  g_assert_nonnull(r);
  g_assert_cmpint(r->abi_major, ==, 1);
  g_assert_cmpint(r->abi_minor, ==, 0);
  g_assert_cmpint(r->n_ops, ==, 1);
  g_assert_cmpint(r->n_kernels, ==, 2);
  g_assert_cmpstr(r->device_types, ==, "OLDDEV");
  /* Its op has no gradient program (the 1.0 struct has no such field). */
  g_assert_null(weft__gradient_lookup("OldMinorScale"));
  const char *devices[] = {"/device:CPU:0", "/device:OLDDEV:0"};
  for (int d = 0; d < 2; d++) {
    weft_graph_t *g = weft_graph_new();
    int64_t n = 4;
    float xv[4] = {1, -2, 0.5f, 8};
    weft_tensor_t *tx = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, &n, xv, sizeof xv, &st);
    weft_graph_push_device(g, "/device:CPU:0");
    weft_output_t x = weft_const(g, "x", tx, &st);
    weft_graph_pop_device(g);
    g_assert_null(st);
    weft_graph_push_device(g, devices[d]);
    weft_op_builder_t *b = weft_op_new(g, "OldMinorScale", "scale");
    weft_op_add_input(b, x);
    if (d == 1) weft_op_set_attr_float(b, "factor", -3);
    g_assert_null(weft_op_finish(b, NULL));
    weft_graph_pop_device(g);
    weft_session_options_t *opts = weft_session_options_new();
    weft_session_options_set_allow_soft_placement(opts, false);
    weft_session_t *s = weft_session_new(g, opts, &st);
    weft_session_options_free(opts);
    const char *fetch = "scale";
    weft_tensor_t *y = NULL;
    st = weft_session_run(s, NULL, NULL, 0, &fetch, &y, 1, NULL, 0);
    if (st) g_test_message("%s", weft_status_message(st));
    g_assert_null(st);
    g_assert_true(g_str_has_suffix(weft_session_node_device(s, "scale"), devices[d]));
    for (int i = 0; i < 4; i++)
      g_assert_cmpfloat(weft_tensor_get_double(y, i), ==, (d ? -3.0 : 2.0) * xv[i]);
    weft_tensor_unref(y);
    weft_tensor_unref(tx);
    weft_session_free(s);
    weft_graph_free(g);
  }
  g_free(path);
}

static void test_abi_refused(void) {
  /* A newer minor: it may call host entries this core lacks. */
  char *path = sdk_test_plugin("future-minor");
  weft_status_t *st = weft_plugins_load_file(path);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  char *needs = g_strdup_printf("needs ABI %d.%d", WEFT_ABI_MAJOR, WEFT_ABI_MINOR + 1);
  char *have = g_strdup_printf("provides only ABI %d.%d", WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
  g_assert_nonnull(strstr(weft_status_message(st), needs));
  g_assert_nonnull(strstr(weft_status_message(st), have));
  g_assert_nonnull(strstr(weft_status_message(st), path));
  g_free(needs);
  g_free(have);
  weft_status_free(st);
  g_free(path);
  /* Another major (tests/plugins/broken_bad_major.c). */
  path = g_strdup_printf("%s/tests/plugins/libweft-broken-bad-major.so", WEFT_BUILD_DIR);
  st = weft_plugins_load_file(path);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  char *theirs = g_strdup_printf("ABI %d.0", WEFT_ABI_MAJOR + 1);
  char *ours = g_strdup_printf("ABI %d.%d", WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
  g_assert_nonnull(strstr(weft_status_message(st), theirs));
  g_assert_nonnull(strstr(weft_status_message(st), ours));
  g_assert_nonnull(strstr(weft_status_message(st), "major versions must match"));
  g_free(theirs);
  g_free(ours);
  weft_status_free(st);
  g_free(path);
}

static void test_abi_registration_errors(void) {
  char *path = sdk_test_plugin("bad-gradient");
  weft_status_t *st = weft_plugins_load_file(path);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  const char *msg = weft_status_message(st);
  g_assert_nonnull(strstr(msg, "plugin 'sdk-bad-gradient'"));
  g_assert_nonnull(strstr(msg, "gradient of op BadGradientOp, line 2"));
  g_assert_nonnull(strstr(msg, "op 'NoSuchOp' is not registered"));
  weft_status_free(st);
  g_assert_null(weft__gradient_lookup("BadGradientOp"));
  g_free(path);

  path = sdk_test_plugin("bad-case");
  st = weft_plugins_load_file(path);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  msg = weft_status_message(st);
  g_assert_nonnull(strstr(msg, "conformance case 'with_alpha' of op Relu"));
  g_assert_nonnull(strstr(msg, "op Relu has no attr 'alpha'"));
  weft_status_free(st);
  g_assert_null(weft__plugin_case_find("Relu", "with_alpha"));
  g_free(path);
}

/* The copy of the host table a 1.0 plugin sees is the prefix of this one. */
static void test_abi_host_table(void) {
  const weft_host_t *h = weft__host();
  g_assert_cmpuint(h->struct_size, ==, sizeof(weft_host_t));
  g_assert_cmpuint(h->abi_major, ==, WEFT_ABI_MAJOR);
  g_assert_cmpuint(h->abi_minor, ==, WEFT_ABI_MINOR);
  g_assert_cmpuint(h->struct_size, >, sizeof(weft10_host_t));
  g_assert_nonnull(h->kernel_copy_to_host);
  g_assert_nonnull(h->kernel_copy_from_host);
  g_assert_nonnull(h->kernel_device_services);
  g_assert_nonnull(h->kernel_device_type);
}

/* ---------------------------------------------------------------------------------------------
 * The gradient-program parser */

static const weft__op_def_t *lookup_registry(const char *op, void *arg) {
  (void)arg;
  return weft__op_registry_lookup(op);
}

static void test_gradient_parser(void) {
  weft_plugins_load_default();
  static const char *const inputs[] = {"x: T", "y: T", NULL};
  static const char *const outputs[] = {"z: T", NULL};
  static const char *const attrs[] = {"T: {float, double}", "alpha: float = 1.0",
                                      "label: string = 'a'", NULL};
  weft_op_def_t spec = {sizeof spec, "GradParserProbe", inputs, outputs, attrs, 0, NULL, NULL};
  weft__op_def_t *def = NULL;
  g_assert_null(weft__op_def_parse(&spec, "test", &def));
  struct {
    const char *program;
    const char *error; /* NULL: parses */
  } cases[] = {
      {"dx = Mul(dz, $alpha)\ndy = Neg(dz)", NULL},
      {"# comment\n t = Mul(x, y) ; dx = Mul(dz, y)\n\ndy = Mul(dz, t:0)", NULL},
      {"dx = Identity(dz){T=float}", NULL},
      {"dx = Mul(dz, q)", "'q' is not an input or output of GradParserProbe"},
      {"dx = Frobnicate(dz)", "op 'Frobnicate' is not registered"},
      {"c = 2\ndx = Mul(dz, c)", "'c' is a bare constant"},
      {"dx = Mul(1, $alpha)", "has only constant arguments"},
      {"t = Neg(dz)", "no statement defines the gradient of an input"},
      {"dx = Mul(dz, $beta)", "'$beta' is not an attribute of GradParserProbe"},
      {"dx = Mul(dz, $label)", "only int, float and bool attributes make constants"},
      {"dx = Identity(dz){T=notatype}", "'notatype' is not a valid type value"},
      {"dx = Identity(dz){nope=1}", "op Identity has no attr 'nope'"},
      {"dx = Neg(dz", "expected ')' closing Neg("},
      {"x = Neg(dz)", "'x' is already defined"},
      {"dx = Neg(dz:1)", "'dz' is one tensor"},
      {"dx Neg(dz)", "expected 'name = expression'"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    weft__grad_program_t *prog = NULL;
    weft_status_t *st =
        weft__grad_program_parse(def, cases[i].program, lookup_registry, NULL, &prog);
    if (!cases[i].error) {
      if (st) g_test_message("'%s': %s", cases[i].program, weft_status_message(st));
      g_assert_null(st);
      g_assert_nonnull(prog);
      weft__grad_program_free(prog);
    } else {
      g_assert_nonnull(st);
      g_assert_null(prog);
      g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
      if (!strstr(weft_status_message(st), cases[i].error))
        g_test_message("'%s': %s", cases[i].program, weft_status_message(st));
      g_assert_nonnull(strstr(weft_status_message(st), cases[i].error));
      g_assert_nonnull(strstr(weft_status_message(st), "gradient of op GradParserProbe"));
      weft_status_free(st);
    }
  }
  weft__op_def_free(def);
}

/* ---------------------------------------------------------------------------------------------
 * docs/sdk.md: every code block marked <!-- from PATH --> is PATH's text, word for word, so the
 * tutorial is exactly what the tests build. */

static void test_docs(void) {
  char *doc_path = g_build_filename(WEFT_SOURCE_DIR, "docs", "sdk.md", NULL);
  char *doc = NULL;
  g_assert_true(g_file_get_contents(doc_path, &doc, NULL, NULL));
  int checked = 0;
  const char *at = doc;
  const char *marker = "<!-- from ";
  while ((at = strstr(at, marker)) != NULL) {
    at += strlen(marker);
    const char *end = strstr(at, " -->");
    g_assert_nonnull(end);
    char *rel = g_strndup(at, (gsize)(end - at));
    const char *fence = strstr(end, "```");
    g_assert_nonnull(fence);
    const char *body = strchr(fence, '\n');
    g_assert_nonnull(body);
    body++;
    const char *close = strstr(body, "\n```");
    g_assert_nonnull(close);
    char *block = g_strndup(body, (gsize)(close - body + 1));
    char *file_path = g_build_filename(WEFT_SOURCE_DIR, rel, NULL);
    char *text = NULL;
    if (!g_file_get_contents(file_path, &text, NULL, NULL))
      g_test_message("docs/sdk.md cites %s", rel);
    g_assert_nonnull(text);
    if (!strstr(text, block))
      g_test_message("docs/sdk.md's block from %s is not in the file:\n%s", rel, block);
    g_assert_nonnull(strstr(text, block));
    checked++;
    g_free(text);
    g_free(file_path);
    g_free(block);
    g_free(rel);
    at = close;
  }
  g_assert_cmpint(checked, >=, 6);
  /* Every host and registrar entry is documented in the reference. */
  const char *entries[] = {"register_backend",       "register_op",
                           "register_kernel",        "register_conformance_case",
                           "kernel_copy_to_host",    "kernel_copy_from_host",
                           "kernel_device_services", "kernel_device_type",
                           "parallel_for",           "kernel_ref_assign",
                           "shape_input_const",      "attr_tensor",
                           "string_assign"};
  for (size_t i = 0; i < G_N_ELEMENTS(entries); i++) {
    char *code = g_strdup_printf("`%s", entries[i]);
    if (!strstr(doc, code)) g_test_message("docs/sdk.md does not document %s", entries[i]);
    g_assert_nonnull(strstr(doc, code));
    g_free(code);
  }
  g_free(doc);
  g_free(doc_path);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  prepare();
  if (S.ok) {
    /* The plugins built against the installed SDK, loaded the way users load them. */
    char *path = g_strdup_printf("%s:%s", S.swish[0], S.simacc[0]);
    g_setenv("WEFT_PLUGIN_PATH", path, TRUE);
    g_free(path);
  } else {
    g_test_message("SDK builds skipped: %s", S.why_not ? S.why_not : "?");
  }
  g_test_add_func("/sdk/install/layout", test_install_layout);
  g_test_add_func("/sdk/install/pkgconfig", test_pkgconfig);
  g_test_add_func("/sdk/install/relocated", test_install_relocated);
  g_test_add_func("/sdk/install/conformance-lists", test_install_conformance_lists);
  g_test_add_func("/sdk/install/exports", test_install_exports);
  g_test_add_func("/sdk/install/python", test_install_python);
  g_test_add_func("/sdk/custom-kernel/graph", test_custom_kernel_graph);
  g_test_add_func("/sdk/custom-kernel/gradient", test_custom_kernel_gradient);
  g_test_add_func("/sdk/custom-kernel/conformance", test_custom_kernel_conformance);
  g_test_add_func("/sdk/vendor-backend/placement", test_vendor_placement);
  g_test_add_func("/sdk/vendor-backend/demo", test_vendor_demo);
  g_test_add_func("/sdk/vendor-backend/conformance", test_vendor_conformance);
  g_test_add_func("/sdk/abi/host-table", test_abi_host_table);
  g_test_add_func("/sdk/abi/old-minor", test_abi_old_minor);
  g_test_add_func("/sdk/abi/refused", test_abi_refused);
  g_test_add_func("/sdk/abi/registration-errors", test_abi_registration_errors);
  g_test_add_func("/sdk/gradient/parser", test_gradient_parser);
  g_test_add_func("/sdk/docs", test_docs);
  int rc = g_test_run();
  if (S.tmp && !g_getenv("WEFT_KEEP_SDK_TMP")) remove_tree(S.tmp);
  return rc;
}

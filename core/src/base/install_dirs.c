/* install_dirs.c: finds the build tree or the installed prefix this copy of the core's code
 * belongs to, from the file the dynamic linker loaded it from (install_dirs.h). */
#include "install_dirs.h"

#include <dlfcn.h>
#include <glib.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/* Set by core/meson.build. The *_TO_PREFIX paths climb from bindir or libdir to the prefix
 * ("..", "../.."); they are empty when that folder is not inside the prefix, and then only the
 * absolute WEFT_INSTALL_* paths are used. */
#ifndef WEFT_BUILD_ROOT
#define WEFT_BUILD_ROOT ""
#endif
#ifndef WEFT_BINDIR_TO_PREFIX
#define WEFT_BINDIR_TO_PREFIX ""
#endif
#ifndef WEFT_LIBDIR_TO_PREFIX
#define WEFT_LIBDIR_TO_PREFIX ""
#endif
#ifndef WEFT_PLUGIN_DIR_REL
#define WEFT_PLUGIN_DIR_REL "lib/weft/plugins"
#endif
#ifndef WEFT_DATA_DIR_REL
#define WEFT_DATA_DIR_REL "share/weft"
#endif
#ifndef WEFT_INSTALL_PLUGIN_DIR
#define WEFT_INSTALL_PLUGIN_DIR ""
#endif
#ifndef WEFT_INSTALL_DATA_DIR
#define WEFT_INSTALL_DATA_DIR ""
#endif

/* The real path of the file holding this function, and whether it is the main program (the
 * core linked into a tool) rather than a shared library (libweft.so.0). For the main program
 * the dynamic linker only knows argv[0], which may be a bare name found on PATH, so its path
 * comes from /proc/self/exe. NULL when neither can be resolved. */
static char *own_file(bool *is_program) {
  Dl_info info;
  struct link_map *map = NULL;
  if (!dladdr1((void *)own_file, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return NULL;
  *is_program = map->l_name == NULL || map->l_name[0] == '\0';
  const char *path = *is_program ? "/proc/self/exe" : map->l_name;
  char real[PATH_MAX];
  return realpath(path, real) ? g_strdup(real) : NULL;
}

bool weft__running_from_build_tree(void) {
  if (!*WEFT_BUILD_ROOT) return false;
  bool is_program = false;
  char *self = own_file(&is_program);
  char real_build[PATH_MAX];
  bool inside = self && realpath(WEFT_BUILD_ROOT, real_build) &&
                g_str_has_prefix(self, real_build) && self[strlen(real_build)] == '/';
  g_free(self);
  return inside;
}

char *weft__install_dir(weft__install_dir_t which) {
  const char *rel = which == WEFT__DIR_PLUGINS ? WEFT_PLUGIN_DIR_REL : WEFT_DATA_DIR_REL;
  const char *configured =
      which == WEFT__DIR_PLUGINS ? WEFT_INSTALL_PLUGIN_DIR : WEFT_INSTALL_DATA_DIR;
  bool is_program = false;
  char *self = own_file(&is_program);
  const char *up = is_program ? WEFT_BINDIR_TO_PREFIX : WEFT_LIBDIR_TO_PREFIX;
  char *found = NULL;
  if (self && *up) {
    char *dir = g_path_get_dirname(self);
    char *prefix = g_build_filename(dir, up, NULL);
    char real_prefix[PATH_MAX];
    /* The relocated folder is only trusted when it is really there: a library copied out of its
     * prefix on its own falls back to the configured path. */
    if (realpath(prefix, real_prefix)) {
      char *candidate = g_build_filename(real_prefix, rel, NULL);
      if (g_file_test(candidate, G_FILE_TEST_IS_DIR))
        found = candidate;
      else
        g_free(candidate);
    }
    g_free(prefix);
    g_free(dir);
  }
  g_free(self);
  return found ? found : g_strdup(configured);
}

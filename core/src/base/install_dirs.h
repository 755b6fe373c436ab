/* Where this copy of Weft's core finds the rest of its install (plugins, data files): next to
 * itself, so that an installed prefix can be moved or unpacked anywhere (a .deb extracted with
 * dpkg -x, a tarball, a meson install --destdir) and still finds its own plugins and nothing
 * else. The core's code is either in libweft.so.0 or linked into a program (weft,
 * weft-conformance, the tests); either way it asks the dynamic linker which file holds it.
 * docs/architecture.md, "The installed layout", says why. Never installed. */
#ifndef WEFT_INSTALL_DIRS_H
#define WEFT_INSTALL_DIRS_H

#include <stdbool.h>

/* True when the core's code runs from the build tree it was built in (a test, a tool under
 * build/): that copy uses the build's plugins and the source tree's data, never an install's. */
bool weft__running_from_build_tree(void);

typedef enum weft__install_dir {
  WEFT__DIR_PLUGINS, /* <libdir>/weft/plugins */
  WEFT__DIR_DATA,    /* <datadir>/weft */
} weft__install_dir_t;

/* The absolute folder of the install this copy belongs to, found relative to the file holding
 * the core's code (libweft.so.0 in <libdir>, or a program in <bindir>); the path configured at
 * build time when that cannot be worked out (a libdir outside the prefix, a file that moved on
 * its own). The caller frees it with g_free. The folder may not exist. */
char *weft__install_dir(weft__install_dir_t which);

#endif /* WEFT_INSTALL_DIRS_H */

/* Whether a path that a reader is about to read whole is a regular file. A SavedModel folder,
 * checkpoint or GraphDef given by someone else may hold a FIFO (the read blocks forever) or a
 * link to /dev/zero (the read grows until memory runs out and GLib aborts); readers refuse them
 * with an error naming the file instead. */
#include "base_internal.h"

#include <sys/stat.h>

bool weft__file_is_special(const char *path, const char **kind) {
  struct stat sb;
  /* stat follows links and never blocks, even on a FIFO; a missing file is the reader's own
   * error to report. */
  if (!path || stat(path, &sb) != 0 || S_ISREG(sb.st_mode)) return false;
  if (kind) {
    *kind = S_ISFIFO(sb.st_mode)  ? "a FIFO"
            : S_ISCHR(sb.st_mode) ? "a character device"
            : S_ISBLK(sb.st_mode) ? "a block device"
            : S_ISDIR(sb.st_mode) ? "a directory"
            : S_ISSOCK(sb.st_mode) ? "a socket"
                                   : "not a regular file";
  }
  return true;
}

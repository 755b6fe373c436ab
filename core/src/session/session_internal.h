/* Internal declarations of core/src/session: the options struct and helpers shared with the
 * distributed runtime, which runs the same plans on its workers. */
#ifndef WEFT_SESSION_INTERNAL_H
#define WEFT_SESSION_INTERNAL_H

#include "../exec/exec_internal.h"

struct weft_session_options {
  char *target;
  bool log_device_placement;
  bool allow_soft_placement;
  int inter_op_threads;
  int intra_op_threads;
  bool use_per_session_threads;
  double gpu_memory_fraction;
  bool gpu_allow_growth;
};

weft_session_options_t *weft__session_options_copy(const weft_session_options_t *src);

#endif /* WEFT_SESSION_INTERNAL_H */

/* Whether a tensor's memory is reachable only through the caller's reference: bindings (the
 * Python package) hand such a tensor's host buffer to their own array type without a copy, and
 * copy one that a variable or another holder still shares, whose bytes may change under them. */
#include "base_internal.h"

bool weft_tensor_is_exclusive(const weft_tensor_t *tensor) {
  if (tensor == NULL || tensor->buffer == NULL) return false;
  return g_atomic_int_get(&tensor->refcount) == 1 &&
         g_atomic_int_get(&tensor->buffer->refcount) == 1;
}

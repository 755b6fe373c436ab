/* device_match.c: whether a (possibly partial) device spec selects one concrete device the placer
 * may choose, with TensorFlow's "GPU" alias and the rule that emulated devices are chosen only by
 * name. Parsing and merging specs is the graph's (graph/device_spec.c). */
#include <string.h>

#include "placement_internal.h"

bool weft__device_spec_matches(const weft__device_spec_t *spec, const weft__place_device_t *device,
                               const char *gpu_type) {
  if (spec->job != NULL && (device->job == NULL || strcmp(spec->job, device->job) != 0))
    return false;
  if (spec->replica >= 0 && spec->replica != device->replica) return false;
  if (spec->task >= 0 && spec->task != device->task) return false;
  if (device->emulated &&
      (spec->type == NULL || device->type == NULL || g_ascii_strcasecmp(spec->type, device->type) != 0))
    return false;
  if (spec->type != NULL) {
    if (device->type == NULL) return false;
    if (g_ascii_strcasecmp(spec->type, "GPU") == 0) {
      /* "GPU" names whichever gpu-like backend ranks first; a backend that happens to be called
       * "GPU" is still matched by its own name. */
      bool by_alias = gpu_type != NULL && g_ascii_strcasecmp(device->type, gpu_type) == 0;
      bool by_name = g_ascii_strcasecmp(device->type, "GPU") == 0;
      if (!by_alias && !by_name) return false;
    } else if (g_ascii_strcasecmp(spec->type, device->type) != 0) {
      return false;
    }
  }
  if (spec->id >= 0 && spec->id != device->id) return false;
  return true;
}

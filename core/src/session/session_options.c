/* Session options: TensorFlow's ConfigProto fields that Weft honours (placement logging, soft
 * placement, thread pools, GPU memory), plus the target a session talks to and, for a server, the TLS files and token to reach it
 * with. */
#include "session_internal.h"

#include <string.h>

weft_session_options_t *weft_session_options_new(void) {
  weft_session_options_t *o = g_new0(weft_session_options_t, 1);
  o->target = g_strdup("");
  return o;
}

weft_session_options_t *weft__session_options_copy(const weft_session_options_t *src) {
  weft_session_options_t *o = g_new0(weft_session_options_t, 1);
  if (src) *o = *src;
  o->target = g_strdup(src && src->target ? src->target : "");
  o->tls_cert = g_strdup(src ? src->tls_cert : NULL);
  o->tls_key = g_strdup(src ? src->tls_key : NULL);
  o->tls_ca = g_strdup(src ? src->tls_ca : NULL);
  o->auth_token_file = g_strdup(src ? src->auth_token_file : NULL);
  o->device_filters = src ? g_strdupv(src->device_filters) : NULL;
  o->device_counts = src ? g_strdupv(src->device_counts) : NULL;
  o->visible_gpus = g_strdup(src ? src->visible_gpus : NULL);
  return o;
}

void weft_session_options_free(weft_session_options_t *o) {
  if (!o) return;
  g_free(o->target);
  g_free(o->tls_cert);
  g_free(o->tls_key);
  g_free(o->tls_ca);
  g_free(o->auth_token_file);
  g_strfreev(o->device_filters);
  g_strfreev(o->device_counts);
  g_free(o->visible_gpus);
  g_free(o);
}

void weft_session_options_set_target(weft_session_options_t *o, const char *target) {
  g_free(o->target);
  o->target = g_strdup(target ? target : "");
}

void weft_session_options_set_log_device_placement(weft_session_options_t *o, bool on) {
  o->log_device_placement = on;
}

void weft_session_options_set_allow_soft_placement(weft_session_options_t *o, bool on) {
  o->allow_soft_placement = on;
}

void weft_session_options_set_inter_op_threads(weft_session_options_t *o, int n) {
  o->inter_op_threads = n < 0 ? 0 : n;
}

void weft_session_options_set_intra_op_threads(weft_session_options_t *o, int n) {
  o->intra_op_threads = n < 0 ? 0 : n;
}

void weft_session_options_set_use_per_session_threads(weft_session_options_t *o, bool on) {
  o->use_per_session_threads = on;
}

void weft_session_options_set_gpu_memory_fraction(weft_session_options_t *o, double f) {
  o->gpu_memory_fraction = f < 0 ? 0 : (f > 1 ? 1 : f);
}

void weft_session_options_set_gpu_allow_growth(weft_session_options_t *o, bool on) {
  o->gpu_allow_growth = on;
}

void weft_session_options_set_operation_timeout_ms(weft_session_options_t *o, int64_t ms) {
  o->operation_timeout_ms = ms < 0 ? 0 : ms;
}

static void set_path(char **field, const char *path) {
  g_free(*field);
  *field = path && *path ? g_strdup(path) : NULL;
}

void weft_session_options_set_tls(weft_session_options_t *o, const char *cert_file,
                                  const char *key_file, const char *ca_file) {
  set_path(&o->tls_cert, cert_file);
  set_path(&o->tls_key, key_file);
  set_path(&o->tls_ca, ca_file);
}

void weft_session_options_set_auth_token_file(weft_session_options_t *o, const char *path) {
  set_path(&o->auth_token_file, path);
}

void weft_session_options_set_device_filters(weft_session_options_t *o,
                                             const char *const *filters, int n) {
  g_strfreev(o->device_filters);
  o->device_filters = NULL;
  if (!filters || n <= 0) return;
  o->device_filters = g_new0(char *, n + 1);
  for (int i = 0; i < n; i++) o->device_filters[i] = g_strdup(filters[i]);
}

void weft_session_options_set_device_count(weft_session_options_t *o, const char *device_type,
                                           int n) {
  if (!o || !device_type || !*device_type) return;
  GPtrArray *kept = g_ptr_array_new();
  size_t len = strlen(device_type);
  for (char **e = o->device_counts; e && *e; e++) {
    if (strncmp(*e, device_type, len) == 0 && (*e)[len] == '=') g_free(*e);
    else g_ptr_array_add(kept, *e);
  }
  if (n >= 0) g_ptr_array_add(kept, g_strdup_printf("%s=%d", device_type, n));
  g_ptr_array_add(kept, NULL);
  g_free(o->device_counts);
  o->device_counts = (char **)g_ptr_array_free(kept, FALSE);
}

void weft_session_options_set_visible_gpus(weft_session_options_t *o, const char *list) {
  if (!o) return;
  g_free(o->visible_gpus);
  o->visible_gpus = list && *list ? g_strdup(list) : NULL;
}

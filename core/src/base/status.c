/* status.c: the status object every fallible Weft function returns (NULL means success), with a
 * gRPC/TensorFlow code and a message naming what failed. */
#include <stdarg.h>
#include <stdio.h>

#include "base_internal.h"

weft_status_t *weft__status_vnew(weft_code_t code, const char *fmt, va_list ap) {
  /* WEFT_OK is represented by NULL everywhere, so a caller building a status from a computed
   * code never has to special-case success. */
  if (code == WEFT_OK) return NULL;
  weft_status_t *status = g_new0(weft_status_t, 1);
  status->code = code;
  status->message = fmt != NULL ? g_strdup_vprintf(fmt, ap) : g_strdup("");
  return status;
}

weft_status_t *weft_status_new(weft_code_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  weft_status_t *status = weft__status_vnew(code, fmt, ap);
  va_end(ap);
  return status;
}

weft_status_t *weft__status_take(weft_status_t **src) {
  if (src == NULL) return NULL;
  weft_status_t *status = *src;
  *src = NULL;
  return status;
}

weft_code_t weft_status_code(const weft_status_t *status) {
  return status != NULL ? status->code : WEFT_OK;
}

const char *weft_status_message(const weft_status_t *status) {
  return status != NULL && status->message != NULL ? status->message : "";
}

const char *weft_code_name(weft_code_t code) {
  switch (code) {
    case WEFT_OK: return "OK";
    case WEFT_CANCELLED: return "CANCELLED";
    case WEFT_UNKNOWN: return "UNKNOWN";
    case WEFT_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case WEFT_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case WEFT_NOT_FOUND: return "NOT_FOUND";
    case WEFT_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case WEFT_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case WEFT_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case WEFT_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case WEFT_ABORTED: return "ABORTED";
    case WEFT_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case WEFT_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case WEFT_INTERNAL: return "INTERNAL";
    case WEFT_UNAVAILABLE: return "UNAVAILABLE";
    case WEFT_DATA_LOSS: return "DATA_LOSS";
    case WEFT_UNAUTHENTICATED: return "UNAUTHENTICATED";
  }
  /* A code from the wire or a plugin may be outside the enum. */
  return "UNKNOWN_CODE";
}

void weft_status_free(weft_status_t *status) {
  if (status == NULL) return;
  g_free(status->message);
  g_free(status);
}

weft_status_t *weft_status_prefix(weft_status_t *status, const char *fmt, ...) {
  if (status == NULL || fmt == NULL) return status;
  va_list ap;
  va_start(ap, fmt);
  char *prefix = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *message = g_strdup_printf("%s: %s", prefix, weft_status_message(status));
  g_free(prefix);
  g_free(status->message);
  status->message = message;
  return status;
}

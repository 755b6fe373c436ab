/* status.c: the status object every fallible Weft function returns (NULL means success), with a
 * gRPC/TensorFlow code and a message naming what failed; and the code-only statuses, constants
 * that cost no allocation, for the paths where memory has run out. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "base_internal.h"

/* One constant per code, indexed by code: reporting that memory ran out must not need memory.
 * Read-only, so shared by every thread; free and prefix leave them alone (code_only below). */
#define CODE_ONLY(name, text) [WEFT_##name] = {.code = WEFT_##name, .message = (char *)(text)}
#define NO_MESSAGE(name) CODE_ONLY(name, #name " (no memory for the message)")
static const weft_status_t code_only_table[] = {
    NO_MESSAGE(CANCELLED),
    NO_MESSAGE(UNKNOWN),
    NO_MESSAGE(INVALID_ARGUMENT),
    NO_MESSAGE(DEADLINE_EXCEEDED),
    NO_MESSAGE(NOT_FOUND),
    NO_MESSAGE(ALREADY_EXISTS),
    NO_MESSAGE(PERMISSION_DENIED),
    CODE_ONLY(RESOURCE_EXHAUSTED, "out of memory"),
    NO_MESSAGE(FAILED_PRECONDITION),
    NO_MESSAGE(ABORTED),
    NO_MESSAGE(OUT_OF_RANGE),
    NO_MESSAGE(UNIMPLEMENTED),
    NO_MESSAGE(INTERNAL),
    NO_MESSAGE(UNAVAILABLE),
    NO_MESSAGE(DATA_LOSS),
    NO_MESSAGE(UNAUTHENTICATED),
};
#undef NO_MESSAGE
#undef CODE_ONLY

static bool code_only(const weft_status_t *status) {
  uintptr_t at = (uintptr_t)status, first = (uintptr_t)code_only_table;
  return at >= first && at < first + sizeof code_only_table;
}

weft_status_t *weft_status_from_code(weft_code_t code) {
  if (code == WEFT_OK) return NULL;
  /* A code from the wire or a plugin may be outside the enum; the table has no slot for it. */
  if ((unsigned)code >= G_N_ELEMENTS(code_only_table)) code = WEFT_UNKNOWN;
  return (weft_status_t *)&code_only_table[code];
}

weft_status_t *weft__status_vnew(weft_code_t code, const char *fmt, va_list ap) {
  /* WEFT_OK is represented by NULL everywhere, so a caller building a status from a computed
   * code never has to special-case success. */
  if (code == WEFT_OK) return NULL;
  /* Allocation failures come back as the code-only status rather than aborting: the failure
   * being reported is often that memory ran out. */
  weft_status_t *status = g_try_new0(weft_status_t, 1);
  if (status == NULL) return weft_status_from_code(code);
  status->code = code;
  if (fmt == NULL) fmt = "";
  va_list measure;
  va_copy(measure, ap);
  int len = vsnprintf(NULL, 0, fmt, measure);
  va_end(measure);
  if (len < 0) return status; /* an unprintable format: no message, as before */
  status->message = g_try_malloc((size_t)len + 1);
  if (status->message == NULL) {
    g_free(status);
    return weft_status_from_code(code);
  }
  vsnprintf(status->message, (size_t)len + 1, fmt, ap);
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
  if (status == NULL || code_only(status)) return;
  g_free(status->message);
  g_free(status);
}

weft_status_t *weft_status_prefix(weft_status_t *status, const char *fmt, ...) {
  /* A code-only status keeps its fixed message: it is shared, and callers may ignore the
   * result, so a different status cannot be handed back in its place. */
  if (status == NULL || fmt == NULL || code_only(status)) return status;
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

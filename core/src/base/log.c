/* log.c: Weft's logging, through GLib's g_log in the "weft" domain.
 *
 * The environment variable WEFT_LOG_LEVEL chooses what is printed: "error", "warning" (the
 * default), "info" or "debug" (case-insensitive; a number 0-3 works too). WEFT_LOG is read when
 * WEFT_LOG_LEVEL is unset, and G_MESSAGES_DEBUG naming "weft" or "all" turns on debug, so the
 * usual GLib switch works as well. Lines go to stderr as "weft: I who: message" where the letter
 * is E, W, I or D.
 *
 * Weft errors and warnings are passed to GLib as G_LOG_LEVEL_MESSAGE, never as WARNING/CRITICAL:
 * GLib makes those fatal under g_test_init() and G_DEBUG=fatal-criticals, and a library reporting
 * a broken plugin must not abort its host. */
#include <stdio.h>
#include <string.h>

#include "base_internal.h"

static weft_log_level_t log_threshold = WEFT_LOG_WARNING;

static bool parse_level(const char *text, weft_log_level_t *out) {
  if (text == NULL || *text == '\0') return false;
  static const struct {
    const char *name;
    weft_log_level_t level;
  } names[] = {
      {"error", WEFT_LOG_ERROR}, {"warning", WEFT_LOG_WARNING}, {"warn", WEFT_LOG_WARNING},
      {"info", WEFT_LOG_INFO},   {"debug", WEFT_LOG_DEBUG},     {"0", WEFT_LOG_ERROR},
      {"1", WEFT_LOG_WARNING},   {"2", WEFT_LOG_INFO},          {"3", WEFT_LOG_DEBUG},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
    if (g_ascii_strcasecmp(text, names[i].name) == 0) {
      *out = names[i].level;
      return true;
    }
  }
  return false;
}

static char level_letter(weft_log_level_t level) {
  switch (level) {
    case WEFT_LOG_ERROR: return 'E';
    case WEFT_LOG_WARNING: return 'W';
    case WEFT_LOG_INFO: return 'I';
    case WEFT_LOG_DEBUG: return 'D';
  }
  return '?';
}

static void weft_log_handler(const gchar *domain, GLogLevelFlags flags, const gchar *message,
                             gpointer user_data) {
  /* Messages from weft__vlog were already filtered; this filter is for code that calls
   * g_info/g_debug in the "weft" domain directly. */
  if ((flags & G_LOG_LEVEL_DEBUG) && log_threshold < WEFT_LOG_DEBUG) return;
  if ((flags & G_LOG_LEVEL_INFO) && log_threshold < WEFT_LOG_INFO) return;
  fprintf(stderr, "%s: %s\n", domain != NULL ? domain : WEFT_LOG_DOMAIN, message);
  fflush(stderr);
}

static void log_init(void) {
  static gsize once = 0;
  if (!g_once_init_enter(&once)) return;
  weft_log_level_t level = WEFT_LOG_WARNING;
  const char *env = g_getenv("WEFT_LOG_LEVEL");
  if (env == NULL || *env == '\0') env = g_getenv("WEFT_LOG");
  if (!parse_level(env, &level)) {
    const char *gdebug = g_getenv("G_MESSAGES_DEBUG");
    if (gdebug != NULL && (strstr(gdebug, "all") != NULL || strstr(gdebug, "weft") != NULL))
      level = WEFT_LOG_DEBUG;
  }
  log_threshold = level;
  g_log_set_handler(WEFT_LOG_DOMAIN, G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION,
                    weft_log_handler, NULL);
  g_once_init_leave(&once, 1);
}

void weft__vlog(weft_log_level_t level, const char *who, const char *fmt, va_list ap) {
  log_init();
  if (level > log_threshold || fmt == NULL) return;
  GLogLevelFlags flags = level == WEFT_LOG_DEBUG  ? G_LOG_LEVEL_DEBUG
                         : level == WEFT_LOG_INFO ? G_LOG_LEVEL_INFO
                                                  : G_LOG_LEVEL_MESSAGE;
  char *text = g_strdup_vprintf(fmt, ap);
  if (who != NULL && *who != '\0')
    g_log(WEFT_LOG_DOMAIN, flags, "%c %s: %s", level_letter(level), who, text);
  else
    g_log(WEFT_LOG_DOMAIN, flags, "%c %s", level_letter(level), text);
  g_free(text);
}

void weft__log(weft_log_level_t level, const char *who, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  weft__vlog(level, who, fmt, ap);
  va_end(ap);
}

/* device_spec.c: TensorFlow-style device specifications ("/job:ps/replica:0/task:1/device:GPU:0"
 * and the legacy "/gpu:0", "CPU:0" forms): parsing, merging nested scopes and printing. They live
 * with the graph because device scopes are merged as nodes are built; matching a spec against a
 * concrete device is the placer's (placement/device_match.c). */
#include <string.h>

#include "graph_internal.h"

void weft__device_spec_init(weft__device_spec_t *spec) {
  spec->job = NULL;
  spec->replica = -1;
  spec->task = -1;
  spec->type = NULL;
  spec->id = -1;
}

void weft__device_spec_clear(weft__device_spec_t *spec) {
  g_free(spec->job);
  g_free(spec->type);
  weft__device_spec_init(spec);
}

void weft__device_spec_copy(weft__device_spec_t *dst, const weft__device_spec_t *src) {
  /* dst may alias src's strings only if dst == src; copy first so that case stays valid. */
  char *job = g_strdup(src->job);
  char *type = g_strdup(src->type);
  int replica = src->replica, task = src->task, id = src->id;
  weft__device_spec_clear(dst);
  dst->job = job;
  dst->type = type;
  dst->replica = replica;
  dst->task = task;
  dst->id = id;
}

/* A non-negative decimal number that fits an int, or "*" (unset, -1). */
static bool parse_number_or_star(const char *s, int *out) {
  if (strcmp(s, "*") == 0) {
    *out = -1;
    return true;
  }
  if (*s == '\0') return false;
  int64_t value = 0;
  for (const char *p = s; *p != '\0'; p++) {
    if (!g_ascii_isdigit(*p)) return false;
    value = value * 10 + (*p - '0');
    if (value > G_MAXINT) return false;
  }
  *out = (int)value;
  return true;
}

/* Job names and device types: a letter, then letters, digits and '_' (TensorFlow's rule). */
static bool is_identifier(const char *s) {
  if (!g_ascii_isalpha(*s)) return false;
  for (const char *p = s + 1; *p != '\0'; p++)
    if (!g_ascii_isalnum(*p) && *p != '_') return false;
  return true;
}

static void set_type(weft__device_spec_t *spec, const char *type) {
  g_free(spec->type);
  spec->type = g_ascii_strup(type, -1);
}

/* "TYPE:ID" or "TYPE" or "TYPE:*" (also "*:ID", type left unset); the part after "device:". */
static bool parse_device_part(const char *s, weft__device_spec_t *spec) {
  const char *colon = strchr(s, ':');
  char *type = colon != NULL ? g_strndup(s, (gsize)(colon - s)) : g_strdup(s);
  bool ok = true;
  int id = -1;
  if (strcmp(type, "*") != 0 && !is_identifier(type)) ok = false;
  if (ok && colon != NULL && !parse_number_or_star(colon + 1, &id)) ok = false;
  if (ok) {
    if (strcmp(type, "*") == 0) {
      g_free(spec->type);
      spec->type = NULL;
    } else {
      set_type(spec, type);
    }
    spec->id = id;
  }
  g_free(type);
  return ok;
}

/* One '/'-separated part of a full name. */
static bool parse_part(const char *part, weft__device_spec_t *spec) {
  if (g_str_has_prefix(part, "job:")) {
    const char *job = part + 4;
    if (strcmp(job, "*") == 0) {
      g_free(spec->job);
      spec->job = NULL;
      return true;
    }
    if (!is_identifier(job)) return false;
    g_free(spec->job);
    spec->job = g_strdup(job);
    return true;
  }
  if (g_str_has_prefix(part, "replica:")) return parse_number_or_star(part + 8, &spec->replica);
  if (g_str_has_prefix(part, "task:")) return parse_number_or_star(part + 5, &spec->task);
  if (g_str_has_prefix(part, "device:")) return parse_device_part(part + 7, spec);
  /* The legacy "/cpu:0" and "/gpu:0" spellings, in either case. */
  if (g_ascii_strncasecmp(part, "cpu:", 4) == 0 || g_ascii_strncasecmp(part, "gpu:", 4) == 0)
    return parse_device_part(part, spec);
  return false;
}

static weft_status_t *malformed(const char *text, const char *part) {
  return weft_status_new(WEFT_INVALID_ARGUMENT,
                         "Malformed device specification '%s': cannot parse '%s'", text, part);
}

weft_status_t *weft__device_spec_parse(const char *text, weft__device_spec_t *out) {
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  weft__device_spec_init(out);
  if (text == NULL || *text == '\0' || strcmp(text, "/") == 0) return NULL;

  /* Without a leading '/', a single "TYPE:ID" is TensorFlow's local name ("CPU:0", "vulkan:1");
   * anything else is read as a full name whose leading '/' was left out. */
  if (text[0] != '/' && strchr(text, '/') == NULL) {
    const char *colon = strchr(text, ':');
    bool keyword = g_str_has_prefix(text, "job:") || g_str_has_prefix(text, "replica:") ||
                   g_str_has_prefix(text, "task:") || g_str_has_prefix(text, "device:");
    if (colon != NULL && !keyword) {
      if (!parse_device_part(text, &spec)) return malformed(text, text);
      *out = spec;
      return NULL;
    }
  }

  const char *body = text[0] == '/' ? text + 1 : text;
  char **parts = g_strsplit(body, "/", -1);
  weft_status_t *status = NULL;
  for (int i = 0; parts[i] != NULL; i++) {
    /* A trailing '/' is harmless; an empty part in the middle ("//") is a typo. */
    if (parts[i][0] == '\0' && parts[i + 1] == NULL && i > 0) break;
    if (!parse_part(parts[i], &spec)) {
      status = malformed(text, parts[i]);
      break;
    }
  }
  g_strfreev(parts);
  if (status != NULL) {
    weft__device_spec_clear(&spec);
    return status;
  }
  *out = spec;
  return NULL;
}

void weft__device_spec_merge(weft__device_spec_t *base, const weft__device_spec_t *inner) {
  if (inner->job != NULL) {
    char *job = g_strdup(inner->job);
    g_free(base->job);
    base->job = job;
  }
  if (inner->replica >= 0) base->replica = inner->replica;
  if (inner->task >= 0) base->task = inner->task;
  if (inner->type != NULL) {
    char *type = g_strdup(inner->type);
    g_free(base->type);
    base->type = type;
  }
  /* Each field on its own, as TensorFlow's DeviceSpec merges: "/device:CPU:*" inside "/gpu:1"
   * keeps the outer id. */
  if (inner->id >= 0) base->id = inner->id;
}

char *weft__device_spec_to_string(const weft__device_spec_t *spec) {
  GString *s = g_string_new("");
  if (spec->job != NULL) g_string_append_printf(s, "/job:%s", spec->job);
  if (spec->replica >= 0) g_string_append_printf(s, "/replica:%d", spec->replica);
  if (spec->task >= 0) g_string_append_printf(s, "/task:%d", spec->task);
  if (spec->type != NULL || spec->id >= 0) {
    g_string_append_printf(s, "/device:%s", spec->type != NULL ? spec->type : "*");
    if (spec->id >= 0)
      g_string_append_printf(s, ":%d", spec->id);
    else
      g_string_append(s, ":*");
  }
  return g_string_free(s, FALSE);
}

bool weft__device_spec_compatible(const weft__device_spec_t *a, const weft__device_spec_t *b) {
  if (a->job != NULL && b->job != NULL && strcmp(a->job, b->job) != 0) return false;
  if (a->replica >= 0 && b->replica >= 0 && a->replica != b->replica) return false;
  if (a->task >= 0 && b->task >= 0 && a->task != b->task) return false;
  if (a->type != NULL && b->type != NULL && g_ascii_strcasecmp(a->type, b->type) != 0)
    return false;
  if (a->id >= 0 && b->id >= 0 && a->id != b->id) return false;
  return true;
}

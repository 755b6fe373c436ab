/* The cluster of a Slurm job step (TensorFlow's SlurmClusterResolver): Slurm's compressed host
 * lists ("node[01-04,07]"), its tasks-per-node lists ("2(x3),1"), and the spec they make: every
 * node's tasks listen on port_base, port_base + 1, ... in the order Slurm numbers them
 * (SLURM_PROCID), and the jobs take those tasks in order, ps first, the rest workers. Every value
 * comes from the environment, untrusted: errors name the variable and quote the text. */
#include "distributed_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* More hosts than any Slurm job has; it bounds what a hostile host list can make us allocate. */
#define MAX_HOSTS 65536

/* A decimal number of at most 9 digits from [p, end); false otherwise. */
static bool parse_small_uint(const char *p, const char *end, long *value) {
  size_t n = (size_t)(end - p);
  if (n == 0 || n > 9) return false;
  long v = 0;
  for (; p < end; p++) {
    if (!g_ascii_isdigit(*p)) return false;
    v = v * 10 + (*p - '0');
  }
  *value = v;
  return true;
}

/* Expands one bracket group's ranges ("01-04,07") into `out` (strings, zero-padded to the width
 * of each range's first number when it has leading zeros, as Slurm writes them). */
static weft_status_t *expand_ranges(const char *text, const char *p, const char *end,
                                    GPtrArray *out) {
  while (p <= end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    const char *dash = memchr(p, '-', (size_t)(stop - p));
    const char *lo_end = dash ? dash : stop;
    long lo = 0, hi = 0;
    char *range = g_strndup(p, (gsize)(stop - p));
    if (!parse_small_uint(p, lo_end, &lo) || (dash && !parse_small_uint(dash + 1, stop, &hi))) {
      weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "invalid host list '%s': '%s' in brackets is not a "
                                          "number or a range N-M",
                                          text, range);
      g_free(range);
      return st;
    }
    if (!dash) hi = lo;
    if (hi < lo) {
      weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "invalid host list '%s': range '%s' goes down", text,
                                          range);
      g_free(range);
      return st;
    }
    g_free(range);
    if (hi - lo >= MAX_HOSTS || out->len + (guint)(hi - lo + 1) > MAX_HOSTS) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "invalid host list '%s': more than %d hosts", text, MAX_HOSTS);
    }
    int width = (lo_end - p > 1 && *p == '0') ? (int)(lo_end - p) : 0;
    for (long v = lo; v <= hi; v++) g_ptr_array_add(out, g_strdup_printf("%0*ld", width, v));
    if (!comma) break;
    p = comma + 1;
  }
  return NULL;
}

/* One host pattern ("a[1-2]b[3,5]"): literal text and bracket groups, the product of the groups
 * in order, the first group varying slowest. Appends to `hosts`. */
static weft_status_t *expand_pattern(const char *text, const char *p, const char *end,
                                     GPtrArray *hosts) {
  if (p == end) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '%s': an empty host name",
                           text);
  }
  GPtrArray *partial = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(partial, g_strdup(""));
  weft_status_t *st = NULL;
  while (p < end && !st) {
    const char *open = memchr(p, '[', (size_t)(end - p));
    const char *lit_end = open ? open : end;
    if (memchr(p, ']', (size_t)(lit_end - p))) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '%s': ']' without '['",
                           text);
      break;
    }
    for (guint k = 0; k < partial->len; k++) {
      char *joined = g_strdup_printf("%s%.*s", (char *)partial->pdata[k], (int)(lit_end - p), p);
      g_free(partial->pdata[k]);
      partial->pdata[k] = joined;
    }
    if (!open) break;
    const char *close = memchr(open, ']', (size_t)(end - open));
    if (!close) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '%s': '[' without ']'",
                           text);
      break;
    }
    if (memchr(open + 1, '[', (size_t)(close - open - 1))) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '%s': nested '['", text);
      break;
    }
    GPtrArray *values = g_ptr_array_new_with_free_func(g_free);
    st = expand_ranges(text, open + 1, close, values);
    if (!st && (guint64)partial->len * values->len + hosts->len > MAX_HOSTS) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '%s': more than %d hosts",
                           text, MAX_HOSTS);
    }
    if (!st) {
      GPtrArray *next = g_ptr_array_new_with_free_func(g_free);
      for (guint a = 0; a < partial->len; a++)
        for (guint b = 0; b < values->len; b++)
          g_ptr_array_add(next, g_strconcat(partial->pdata[a], values->pdata[b], NULL));
      g_ptr_array_free(partial, TRUE);
      partial = next;
    }
    g_ptr_array_free(values, TRUE);
    p = close + 1;
  }
  if (!st) {
    for (guint k = 0; k < partial->len; k++) {
      g_ptr_array_add(hosts, partial->pdata[k]);
      partial->pdata[k] = NULL;
    }
  }
  g_ptr_array_free(partial, TRUE);
  return st;
}

weft_status_t *weft_slurm_hostlist_expand(const char *text, char ***hosts, int *n) {
  *hosts = NULL;
  if (n) *n = 0;
  if (!text || !*text)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "invalid host list '': it is empty");
  GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
  weft_status_t *st = NULL;
  const char *p = text;
  for (;;) {
    /* The pattern ends at the first comma outside brackets. */
    const char *q = p;
    int depth = 0;
    while (*q && (depth > 0 || *q != ',')) {
      if (*q == '[') depth++;
      else if (*q == ']') depth--;
      q++;
    }
    for (const char *c = p; c < q && !st; c++) {
      if (!g_ascii_isalnum(*c) && !strchr("-_.[],", *c)) {
        st = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "invalid host list '%s': character '%c' is not allowed", text, *c);
      }
    }
    if (!st) st = expand_pattern(text, p, q, out);
    if (st || !*q) break;
    p = q + 1;
  }
  if (st) {
    g_ptr_array_free(out, TRUE);
    return st;
  }
  if (n) *n = (int)out->len;
  g_ptr_array_add(out, NULL);
  *hosts = (char **)g_ptr_array_free(out, FALSE);
  return NULL;
}

/* "2(x3),1" -> 2, 2, 2, 1. */
static weft_status_t *expand_tasks_per_node(const char *text, GArray *counts) {
  char **items = g_strsplit(text, ",", -1);
  weft_status_t *st = NULL;
  for (char **item = items; *item && !st; item++) {
    const char *paren = strchr(*item, '(');
    const char *end = *item + strlen(*item);
    long count = 0, times = 1;
    bool ok = parse_small_uint(*item, paren ? paren : end, &count) && count > 0;
    if (ok && paren) {
      ok = g_str_has_prefix(paren, "(x") && end[-1] == ')' &&
           parse_small_uint(paren + 2, end - 1, &times) && times > 0;
    }
    if (ok && counts->len + (guint64)times > MAX_HOSTS) ok = false;
    if (!ok) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "'%s' is not a task count N or N(xM) with N, M from 1 (in '%s'; "
                           "at most %d nodes)",
                           *item, text, MAX_HOSTS);
      break;
    }
    for (long k = 0; k < times; k++) {
      int c = (int)count;
      g_array_append_val(counts, c);
    }
  }
  g_strfreev(items);
  return st;
}

/* The first of `names` that is set and not empty; *which is its name. */
static const char *lookup_first(weft_env_lookup_t lookup, void *user, const char *const *names,
                                const char **which) {
  for (const char *const *name = names; *name; name++) {
    const char *value = lookup(*name, user);
    if (value && *value) {
      *which = *name;
      return value;
    }
  }
  *which = names[0];
  return NULL;
}

static const char *lookup_env(const char *name, void *user) {
  (void)user;
  return g_getenv(name);
}

static weft_status_t *missing(const char *const *names) {
  GString *all = g_string_new(names[0]);
  for (int k = 1; names[k]; k++) g_string_append_printf(all, " or %s", names[k]);
  weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                      "%s is not set: not inside a Slurm job step (run the task "
                                      "with srun)",
                                      all->str);
  g_string_free(all, TRUE);
  return st;
}

/* A non-negative count from variable `name`. */
static weft_status_t *env_count(const char *name, const char *value, long *out) {
  if (!parse_small_uint(value, value + strlen(value), out)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s='%s' is not a non-negative integer", name,
                           value);
  }
  return NULL;
}

weft_status_t *weft_cluster_spec_from_slurm(weft_env_lookup_t lookup, void *user_data,
                                            int ps_tasks, int port_base,
                                            weft_cluster_spec_t **out, char **job, int *task) {
  *out = NULL;
  if (job) *job = NULL;
  if (task) *task = -1;
  if (!lookup) lookup = lookup_env;
  static const char *const procid_vars[] = {"SLURM_PROCID", NULL};
  static const char *const ntasks_vars[] = {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", NULL};
  static const char *const nodes_vars[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", NULL};
  static const char *const tpn_vars[] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                                         NULL};
  if (port_base < 1 || port_base > 65535) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "The port base %d is not from 1 to 65535",
                           port_base);
  }
  const char *procid_var, *ntasks_var, *nodes_var, *tpn_var;
  const char *procid_text = lookup_first(lookup, user_data, procid_vars, &procid_var);
  if (!procid_text) return missing(procid_vars);
  const char *ntasks_text = lookup_first(lookup, user_data, ntasks_vars, &ntasks_var);
  if (!ntasks_text) return missing(ntasks_vars);
  const char *nodes_text = lookup_first(lookup, user_data, nodes_vars, &nodes_var);
  if (!nodes_text) return missing(nodes_vars);
  const char *tpn_text = lookup_first(lookup, user_data, tpn_vars, &tpn_var);
  if (!tpn_text) return missing(tpn_vars);

  long procid = 0, ntasks = 0;
  WEFT_RETURN_IF_ERROR(env_count(procid_var, procid_text, &procid));
  WEFT_RETURN_IF_ERROR(env_count(ntasks_var, ntasks_text, &ntasks));
  if (ntasks < 1)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s='%s': a step has at least one task",
                           ntasks_var, ntasks_text);
  if (procid >= ntasks) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s=%ld is not below %s=%ld", procid_var,
                           procid, ntasks_var, ntasks);
  }
  if (ps_tasks < 0 || ps_tasks >= ntasks) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "--ps %d leaves no worker: the step has %ld tasks (%s), so --ps is "
                           "from 0 to %ld",
                           ps_tasks, ntasks, ntasks_var, ntasks - 1);
  }

  char **hosts = NULL;
  int n_hosts = 0;
  weft_status_t *st = weft_slurm_hostlist_expand(nodes_text, &hosts, &n_hosts);
  if (st) return weft_status_prefix(st, "%s", nodes_var);
  GArray *counts = g_array_new(FALSE, FALSE, sizeof(int));
  st = expand_tasks_per_node(tpn_text, counts);
  if (st) weft_status_prefix(st, "%s", tpn_var);
  long total = 0;
  int most = 0;
  for (guint k = 0; !st && k < counts->len; k++) {
    total += g_array_index(counts, int, k);
    most = MAX(most, g_array_index(counts, int, k));
  }
  if (!st && (int)counts->len != n_hosts) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "%s='%s' gives %u nodes' task counts but %s='%s' has %d nodes", tpn_var,
                         tpn_text, counts->len, nodes_var, nodes_text, n_hosts);
  } else if (!st && total != ntasks) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s='%s' adds up to %ld tasks but %s=%ld",
                         tpn_var, tpn_text, total, ntasks_var, ntasks);
  } else if (!st && port_base + most - 1 > 65535) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "The port base %d with %d tasks on a node (%s) goes past port 65535",
                         port_base, most, tpn_var);
  }

  weft_cluster_spec_t *spec = st ? NULL : weft_cluster_spec_new();
  long rank = 0;
  for (int h = 0; spec && !st && h < n_hosts; h++) {
    for (int local = 0; !st && local < g_array_index(counts, int, h); local++, rank++) {
      char *address = g_strdup_printf("%s:%d", hosts[h], port_base + local);
      bool is_ps = rank < ps_tasks;
      st = weft_cluster_spec_add_task(spec, is_ps ? "ps" : "worker",
                                      (int)(is_ps ? rank : rank - ps_tasks), address);
      g_free(address);
    }
    if (st) weft_status_prefix(st, "The cluster of Slurm's %s", nodes_var);
  }
  if (st) {
    weft_cluster_spec_free(spec);
    spec = NULL;
  }
  g_strfreev(hosts);
  g_array_free(counts, TRUE);
  if (st) return st;
  *out = spec;
  if (job) *job = g_strdup(procid < ps_tasks ? "ps" : "worker");
  if (task) *task = (int)(procid < ps_tasks ? procid : procid - ps_tasks);
  return NULL;
}

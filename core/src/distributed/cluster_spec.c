/* Cluster specs (TensorFlow's ClusterSpec): jobs, each an ordered list of task addresses, built
 * in code, from the `--cluster 'ps=h:p;worker=h:p'` syntax, from TensorFlow's example-trainer
 * flags (--ps_hosts, --worker_hosts) or from the TF_CONFIG JSON. Every way in is validated the
 * same way, so a bad spec fails with one message style naming the job, task or address. */
#include "distributed_internal.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#include "../placement/placement_internal.h"

typedef struct job {
  char *name;
  GPtrArray *addresses; /* char*, index = task; NULL for a task index left out */
} job_t;

struct weft_cluster_spec {
  GPtrArray *jobs; /* job_t*, in the order they were added */
};

static void job_free(job_t *job) {
  g_free(job->name);
  g_ptr_array_free(job->addresses, TRUE);
  g_free(job);
}

weft_cluster_spec_t *weft_cluster_spec_new(void) {
  weft_cluster_spec_t *spec = g_new0(weft_cluster_spec_t, 1);
  spec->jobs = g_ptr_array_new_with_free_func((GDestroyNotify)job_free);
  return spec;
}

void weft_cluster_spec_free(weft_cluster_spec_t *spec) {
  if (!spec) return;
  g_ptr_array_free(spec->jobs, TRUE);
  g_free(spec);
}

static job_t *find_job(const weft_cluster_spec_t *spec, const char *name) {
  for (guint k = 0; k < spec->jobs->len; k++) {
    job_t *job = spec->jobs->pdata[k];
    if (strcmp(job->name, name) == 0) return job;
  }
  return NULL;
}

char *weft__task_name(const char *job, int task) {
  return g_strdup_printf("/job:%s/replica:0/task:%d", job, task);
}

static bool valid_job_name(const char *name) {
  if (!name || !g_ascii_isalpha(name[0])) return false;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_') return false;
  return true;
}

bool weft__address_split(const char *address, char **host, int *port) {
  if (!address) return false;
  const char *colon = NULL;
  const char *host_start = address, *host_end = NULL;
  if (address[0] == '[') {
    const char *close = strchr(address, ']');
    if (!close || close[1] != ':') return false;
    host_start = address + 1;
    host_end = close;
    colon = close + 1;
  } else {
    colon = strrchr(address, ':');
    if (!colon || memchr(address, ':', (size_t)(colon - address))) return false;
    host_end = colon;
  }
  if (host_end == host_start) return false;
  for (const char *p = host_start; p < host_end; p++) {
    if (!g_ascii_isalnum(*p) && !strchr(".-_:", *p)) return false;
    if (*p == ':' && address[0] != '[') return false;
  }
  const char *digits = colon + 1;
  size_t nd = strlen(digits);
  if (nd == 0 || nd > 5) return false;
  for (size_t k = 0; k < nd; k++)
    if (!g_ascii_isdigit(digits[k])) return false;
  int value = atoi(digits);
  if (value > 65535) return false;
  if (host) *host = g_strndup(host_start, (gsize)(host_end - host_start));
  if (port) *port = value;
  return true;
}

/* Task name and address of whoever already uses `address`, or NULL. */
static char *owner_of(const weft_cluster_spec_t *spec, const char *address) {
  for (guint j = 0; j < spec->jobs->len; j++) {
    const job_t *job = spec->jobs->pdata[j];
    for (guint t = 0; t < job->addresses->len; t++) {
      const char *a = job->addresses->pdata[t];
      if (a && strcmp(a, address) == 0) return g_strdup_printf("/job:%s/task:%u", job->name, t);
    }
  }
  return NULL;
}

static weft_status_t *add_task(weft_cluster_spec_t *spec, const char *job_name, int index,
                               const char *address, bool allow_port_zero) {
  if (!spec) return weft_status_new(WEFT_INVALID_ARGUMENT, "No cluster spec given");
  if (!valid_job_name(job_name)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Invalid job name '%s' in cluster spec: a job name is a letter "
                           "followed by letters, digits or '_'",
                           job_name ? job_name : "");
  }
  job_t *job = find_job(spec, job_name);
  int task = index >= 0 ? index : (job ? (int)job->addresses->len : 0);
  int port = -1;
  if (!address || !*address) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Task /job:%s/task:%d has an empty address in the cluster spec",
                           job_name, task);
  }
  if (!weft__address_split(address, NULL, &port) || (port == 0 && !allow_port_zero)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Invalid address '%s' for /job:%s/task:%d in the cluster spec: "
                           "expected HOST:PORT with a port from 1 to 65535",
                           address, job_name, task);
  }
  if (job && task < (int)job->addresses->len && job->addresses->pdata[task]) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Task /job:%s/task:%d is already in the cluster spec (at %s)",
                           job_name, task, (const char *)job->addresses->pdata[task]);
  }
  char *owner = port != 0 ? owner_of(spec, address) : NULL;
  if (owner) {
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                        "Address '%s' is used by both %s and /job:%s/task:%d in "
                                        "the cluster spec",
                                        address, owner, job_name, task);
    g_free(owner);
    return st;
  }
  if (!job) {
    job = g_new0(job_t, 1);
    job->name = g_strdup(job_name);
    job->addresses = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(spec->jobs, job);
  }
  if ((int)job->addresses->len <= task) g_ptr_array_set_size(job->addresses, task + 1);
  job->addresses->pdata[task] = g_strdup(address);
  return NULL;
}

weft_status_t *weft_cluster_spec_add_task(weft_cluster_spec_t *spec, const char *job, int index,
                                          const char *address) {
  /* Port 0 ("pick one") only makes sense for a server's own task, which then reports its port. */
  return add_task(spec, job, index, address, true);
}

/* "h:p,h:p" as the tasks of `job`, in order. */
static weft_status_t *add_host_list(weft_cluster_spec_t *spec, const char *job, const char *list) {
  char **hosts = g_strsplit(list, ",", -1);
  weft_status_t *st = NULL;
  for (int k = 0; hosts[k] && !st; k++) {
    char *address = g_strstrip(hosts[k]);
    st = add_task(spec, job, k, address, false);
  }
  g_strfreev(hosts);
  return st;
}

weft_status_t *weft_cluster_spec_parse(const char *text, weft_cluster_spec_t **out) {
  *out = NULL;
  char *copy = g_strstrip(g_strdup(text ? text : ""));
  if (!*copy) {
    g_free(copy);
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Cluster spec is empty (expected JOB=HOST:PORT,...;JOB=...)");
  }
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  char **entries = g_strsplit(copy, ";", -1);
  weft_status_t *st = NULL;
  for (int k = 0; entries[k] && !st; k++) {
    char *entry = g_strstrip(entries[k]);
    if (!*entry && entries[k + 1] == NULL && k > 0) break; /* a trailing ';' */
    char *eq = strchr(entry, '=');
    if (!eq) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed cluster spec entry '%s': expected "
                           "JOB=HOST:PORT[,HOST:PORT...]",
                           entry);
      break;
    }
    *eq = '\0';
    char *job = g_strstrip(entry);
    char *hosts = g_strstrip(eq + 1);
    if (valid_job_name(job) && find_job(spec, job)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Job '%s' appears twice in the cluster spec",
                           job);
    } else if (!*hosts) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Job '%s' has no tasks in the cluster spec",
                           job);
    } else {
      st = add_host_list(spec, job, hosts);
    }
  }
  g_strfreev(entries);
  g_free(copy);
  if (st) {
    weft_cluster_spec_free(spec);
    return st;
  }
  *out = spec;
  return NULL;
}

weft_status_t *weft_cluster_spec_from_hosts(const char *ps_hosts, const char *worker_hosts,
                                            weft_cluster_spec_t **out) {
  *out = NULL;
  bool have_ps = ps_hosts && *ps_hosts, have_workers = worker_hosts && *worker_hosts;
  if (!have_ps && !have_workers) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "No cluster given: --ps_hosts and --worker_hosts are both empty");
  }
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  weft_status_t *st = NULL;
  if (have_ps) st = add_host_list(spec, "ps", ps_hosts);
  if (!st && have_workers) st = add_host_list(spec, "worker", worker_hosts);
  if (st) {
    weft_cluster_spec_free(spec);
    return st;
  }
  *out = spec;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * TF_CONFIG */

static weft_status_t *tf_config_cluster(JsonObject *cluster, weft_cluster_spec_t *spec) {
  GList *members = json_object_get_members(cluster);
  weft_status_t *st = NULL;
  for (GList *m = members; m && !st; m = m->next) {
    const char *job = m->data;
    JsonNode *node = json_object_get_member(cluster, job);
    JsonArray *list = JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
    bool ok = list != NULL && json_array_get_length(list) > 0;
    for (guint k = 0; ok && k < json_array_get_length(list); k++) {
      JsonNode *item = json_array_get_element(list, k);
      ok = JSON_NODE_HOLDS_VALUE(item) && json_node_get_value_type(item) == G_TYPE_STRING;
    }
    if (!ok) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TF_CONFIG: cluster job '%s' must be a non-empty list of "
                           "\"host:port\" strings",
                           job);
      break;
    }
    for (guint k = 0; k < json_array_get_length(list) && !st; k++)
      st = add_task(spec, job, (int)k, json_array_get_string_element(list, k), false);
  }
  g_list_free(members);
  if (!st && spec->jobs->len == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "TF_CONFIG: \"cluster\" has no jobs");
  return st;
}

static weft_status_t *tf_config_task(JsonObject *root, char **job, int *task) {
  if (!json_object_has_member(root, "task")) return NULL;
  JsonNode *tn = json_object_get_member(root, "task");
  if (!JSON_NODE_HOLDS_OBJECT(tn)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TF_CONFIG: \"task\" must be an object with \"type\" and \"index\"");
  }
  JsonObject *t = json_node_get_object(tn);
  JsonNode *type = json_object_get_member(t, "type");
  if (!type || !JSON_NODE_HOLDS_VALUE(type) || json_node_get_value_type(type) != G_TYPE_STRING) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "TF_CONFIG: \"task\" has no \"type\" string");
  }
  int64_t index = 0;
  JsonNode *in = json_object_get_member(t, "index");
  if (in) {
    if (!JSON_NODE_HOLDS_VALUE(in) || json_node_get_value_type(in) != G_TYPE_INT64 ||
        json_node_get_int(in) < 0 || json_node_get_int(in) > G_MAXINT) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "TF_CONFIG: \"task\" \"index\" must be a non-negative integer");
    }
    index = json_node_get_int(in);
  }
  *job = g_strdup(json_node_get_string(type));
  *task = (int)index;
  return NULL;
}

weft_status_t *weft_cluster_spec_from_tf_config(const char *json, weft_cluster_spec_t **out,
                                                char **job_out, int *task_out) {
  *out = NULL;
  if (job_out) *job_out = NULL;
  if (task_out) *task_out = -1;
  if (!json || !*json) return weft_status_new(WEFT_INVALID_ARGUMENT, "TF_CONFIG is empty");
  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  weft_status_t *st = NULL;
  if (!json_parser_load_from_data(parser, json, -1, &error)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "TF_CONFIG is not valid JSON: %s", error->message);
    g_error_free(error);
    g_object_unref(parser);
    return st;
  }
  JsonNode *root = json_parser_get_root(parser);
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  char *job = NULL;
  int task = -1;
  if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "TF_CONFIG must be a JSON object with \"cluster\" and \"task\"");
  } else {
    JsonObject *obj = json_node_get_object(root);
    JsonNode *cluster = json_object_get_member(obj, "cluster");
    if (!cluster || !JSON_NODE_HOLDS_OBJECT(cluster)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "TF_CONFIG has no \"cluster\" object");
    } else {
      st = tf_config_cluster(json_node_get_object(cluster), spec);
    }
    if (!st) st = tf_config_task(obj, &job, &task);
    if (!st && job) {
      st = weft_cluster_spec_check_task(spec, job, task);
      if (st) weft_status_prefix(st, "TF_CONFIG");
    }
  }
  g_object_unref(parser);
  if (st) {
    weft_cluster_spec_free(spec);
    g_free(job);
    return st;
  }
  *out = spec;
  if (job_out) *job_out = job ? strdup(job) : NULL;
  if (task_out) *task_out = task;
  g_free(job);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Queries */

int weft_cluster_spec_num_jobs(const weft_cluster_spec_t *spec) {
  return spec ? (int)spec->jobs->len : 0;
}

const char *weft_cluster_spec_job_name(const weft_cluster_spec_t *spec, int index) {
  if (!spec || index < 0 || index >= (int)spec->jobs->len) return NULL;
  return ((job_t *)spec->jobs->pdata[index])->name;
}

int weft_cluster_spec_num_tasks(const weft_cluster_spec_t *spec, const char *job) {
  const job_t *j = spec && job ? find_job(spec, job) : NULL;
  return j ? (int)j->addresses->len : 0;
}

const char *weft_cluster_spec_task_address(const weft_cluster_spec_t *spec, const char *job,
                                           int task) {
  const job_t *j = spec && job ? find_job(spec, job) : NULL;
  if (!j || task < 0 || task >= (int)j->addresses->len) return NULL;
  return j->addresses->pdata[task];
}

/* The host part of an address; the loopback names are one host. NULL when malformed. */
static char *host_key(const char *address) {
  char *host = NULL;
  if (!address || !weft__address_split(address, &host, NULL)) return NULL;
  if (strcmp(host, "localhost") == 0 || g_str_has_prefix(host, "127.") || strcmp(host, "::1") == 0) {
    g_free(host);
    return g_strdup("localhost");
  }
  return host;
}

int weft_cluster_spec_tasks_on_host(const weft_cluster_spec_t *spec, const char *job, int task) {
  char *mine = host_key(weft_cluster_spec_task_address(spec, job, task));
  if (!mine) return 0;
  int count = 0;
  for (guint k = 0; k < spec->jobs->len; k++) {
    const job_t *j = spec->jobs->pdata[k];
    for (guint t = 0; t < j->addresses->len; t++) {
      char *host = host_key(j->addresses->pdata[t]);
      if (host && strcmp(host, mine) == 0) count++;
      g_free(host);
    }
  }
  g_free(mine);
  return count;
}

weft_status_t *weft_cluster_spec_check_task(const weft_cluster_spec_t *spec, const char *job,
                                            int task) {
  if (!spec) return weft_status_new(WEFT_INVALID_ARGUMENT, "No cluster spec given");
  if (!job || !*job) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "No job name given for the task (--job_name)");
  }
  const job_t *j = find_job(spec, job);
  if (!j) {
    GString *jobs = g_string_new(NULL);
    for (guint k = 0; k < spec->jobs->len; k++)
      g_string_append_printf(jobs, "%s%s", k ? ", " : "", ((job_t *)spec->jobs->pdata[k])->name);
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                        "Job '%s' is not in the cluster spec (its jobs: %s)", job,
                                        jobs->str);
    g_string_free(jobs, TRUE);
    return st;
  }
  if (task < 0 || task >= (int)j->addresses->len || !j->addresses->pdata[task]) {
    int n = (int)j->addresses->len;
    if (n == 1) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Task /job:%s/task:%d is not in the cluster spec: job '%s' has only "
                             "task 0", job, task, job);
    }
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Task /job:%s/task:%d is not in the cluster spec: job '%s' has tasks "
                           "0 to %d", job, task, job, n - 1);
  }
  return NULL;
}

char *weft_cluster_spec_to_string(const weft_cluster_spec_t *spec) {
  GString *s = g_string_new(NULL);
  for (guint k = 0; spec && k < spec->jobs->len; k++) {
    const job_t *j = spec->jobs->pdata[k];
    g_string_append_printf(s, "%s%s=", k ? ";" : "", j->name);
    bool first = true;
    for (guint t = 0; t < j->addresses->len; t++) {
      if (!j->addresses->pdata[t]) continue;
      g_string_append_printf(s, "%s%s", first ? "" : ",", (const char *)j->addresses->pdata[t]);
      first = false;
    }
  }
  char *out = strdup(s->str);
  g_string_free(s, TRUE);
  return out;
}

/* ---------------------------------------------------------------------------------------------
 * Internal helpers */

weft_cluster_spec_t *weft__cluster_spec_copy(const weft_cluster_spec_t *spec) {
  weft_cluster_spec_t *copy = weft_cluster_spec_new();
  for (guint k = 0; spec && k < spec->jobs->len; k++) {
    const job_t *j = spec->jobs->pdata[k];
    job_t *c = g_new0(job_t, 1);
    c->name = g_strdup(j->name);
    c->addresses = g_ptr_array_new_with_free_func(g_free);
    for (guint t = 0; t < j->addresses->len; t++)
      g_ptr_array_add(c->addresses, g_strdup(j->addresses->pdata[t]));
    g_ptr_array_add(copy->jobs, c);
  }
  return copy;
}

static void task_ref_free(weft__task_ref_t *t) {
  g_free(t->name);
  g_free(t->job);
  g_free(t->address);
  g_free(t);
}

GPtrArray *weft__cluster_spec_tasks(const weft_cluster_spec_t *spec) {
  GPtrArray *tasks = g_ptr_array_new_with_free_func((GDestroyNotify)task_ref_free);
  for (guint k = 0; k < spec->jobs->len; k++) {
    const job_t *j = spec->jobs->pdata[k];
    for (guint t = 0; t < j->addresses->len; t++) {
      if (!j->addresses->pdata[t]) continue;
      weft__task_ref_t *ref = g_new0(weft__task_ref_t, 1);
      ref->name = weft__task_name(j->name, (int)t);
      ref->job = g_strdup(j->name);
      ref->task = (int)t;
      ref->address = g_strdup(j->addresses->pdata[t]);
      g_ptr_array_add(tasks, ref);
    }
  }
  return tasks;
}

void weft__cluster_spec_set_address(weft_cluster_spec_t *spec, const char *job, int task,
                                    const char *address) {
  job_t *j = find_job(spec, job);
  if (!j || task < 0 || task >= (int)j->addresses->len) return;
  g_free(j->addresses->pdata[task]);
  j->addresses->pdata[task] = g_strdup(address);
}

char *weft__task_of_device(const char *device_name) {
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  char *task = NULL;
  weft_status_t *st = weft__device_spec_parse(device_name, &spec);
  if (!st && spec.job && spec.task >= 0)
    task = g_strdup_printf("/job:%s/replica:%d/task:%d", spec.job,
                           spec.replica >= 0 ? spec.replica : 0, spec.task);
  weft_status_free(st);
  weft__device_spec_clear(&spec);
  return task;
}

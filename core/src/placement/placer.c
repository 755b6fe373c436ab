/* placer.c: assigns nodes to devices the way TensorFlow's placer does: nodes that must share a
 * device (colocation attributes, ref edges) form groups; a group's requested specs are merged and
 * matched against the devices; kernel availability narrows the choice; unpinned groups prefer the
 * first gpu-like device; soft placement relaxes what cannot be satisfied. */
#include <string.h>

#include "placement_internal.h"

/* A node taking part in this call: one of `nodes`, or one reached through a colocation link. */
typedef struct member {
  weft_node_t *node;
  /* Its device if it was placed before this call (borrowed from the table); for a member to
   * place, the device chosen once its group is placed (borrowed from the device list or the
   * table), which goes into the table when every group has one. */
  const char *placed;
  /* Read off the node while linking, so that placing a group that requests nothing does not
   * go back to the node (a big graph's nodes no longer fit any cache by then). */
  const char *name;
  int parent;         /* union-find */
  int kernel_class;   /* see kernel_class_t; -1: none */
  bool to_place;      /* in `nodes` and not yet in the placement */
  bool requests;      /* its requested device is not empty */
} member_t;

/* Nodes that kernels cannot tell apart (same op, attrs that look the same to type constraints)
 * form a class; whether a class has a kernel on a device is asked once per call: a big graph
 * asks the same few questions for every node, and each registry lookup takes its lock. */
typedef struct kernel_class {
  const weft_node_t *node; /* its first member's node: its op and attrs speak for the class */
  signed char *on_device;  /* per device: -1 not asked yet, else 0 or 1 */
} kernel_class_t;

typedef struct placer {
  const weft__place_device_t *devices;
  int n_devices;
  const weft__placer_options_t *opts;
  const weft__kernel_catalog_t *kernels;
  GHashTable *placement;
  const char *gpu_type;
  GArray *members;    /* member_t */
  /* node -> member index + 1: by node id for nodes of `graph` (set when this call places a good
   * share of one graph's nodes, so the array is not mostly empty), else hashed */
  weft_graph_t *graph;
  GArray *by_id;      /* int */
  GHashTable *index;  /* weft_node_t* -> member index + 1 */
  /* The devices a group that requests nothing may go to (the empty spec with the defaults), best
   * first; computed at the first such group (most groups of a big graph). */
  int *open_order;
  int n_open;
  bool open_ready;
  GArray *classes;    /* kernel_class_t */
  bool united;        /* some group has more than one member */
  /* The classes made most recently, where a new member's is looked for, replaced round robin. */
  int recent[16];
  int n_recent, recent_next;
} placer_t;

/* ---------------------------------------------------------------------------------------------
 * Colocation groups */

static int find_root(placer_t *p, int i) {
  member_t *m = &g_array_index(p->members, member_t, 0);
  while (m[i].parent != i) {
    m[i].parent = m[m[i].parent].parent; /* path halving keeps the trees flat */
    i = m[i].parent;
  }
  return i;
}

static void unite(placer_t *p, int a, int b) {
  int ra = find_root(p, a), rb = find_root(p, b);
  if (ra == rb) return;
  /* The lower index stays root so that a group's representative is its earliest member. */
  member_t *m = &g_array_index(p->members, member_t, 0);
  p->united = true;
  if (ra < rb)
    m[rb].parent = ra;
  else
    m[ra].parent = rb;
}

static int member_of(placer_t *p, weft_node_t *node, bool to_place) {
  bool by_id = p->graph != NULL && node->graph == p->graph && node->id >= 0;
  if (by_id) {
    if ((guint)node->id >= p->by_id->len) g_array_set_size(p->by_id, (guint)node->id + 1);
    int found = g_array_index(p->by_id, int, node->id);
    if (found != 0) return found - 1;
  } else {
    gpointer found = g_hash_table_lookup(p->index, node);
    if (found != NULL) return GPOINTER_TO_INT(found) - 1;
  }
  member_t m = {0};
  m.node = node;
  m.name = node->name;
  m.kernel_class = -1;
  /* A table nothing was placed in yet (a first placement) needs no lookup. */
  m.placed = g_hash_table_size(p->placement) ? g_hash_table_lookup(p->placement, node->name) : NULL;
  m.to_place = to_place && m.placed == NULL;
  m.parent = (int)p->members->len;
  g_array_append_val(p->members, m);
  if (by_id) g_array_index(p->by_id, int, node->id) = m.parent + 1;
  else g_hash_table_insert(p->index, node, GINT_TO_POINTER(m.parent + 1));
  return m.parent;
}

/* Looks the name up through the graph's lock, so the caller must not hold graph->lock while it
 * places (another thread may be adding nodes meanwhile). */
static weft_status_t *link_by_name(placer_t *p, int i, const char *name) {
  weft_node_t *node = g_array_index(p->members, member_t, i).node;
  weft_node_t *other = node->graph != NULL ? weft_graph_node(node->graph, name) : NULL;
  if (other == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (op %s) expects to be colocated with unknown node '%s'",
                           node->name, node->op_name, name);
  int j = member_of(p, other, false);
  unite(p, i, j);
  return NULL;
}

static weft_status_t *link_class_entry(placer_t *p, int i, const char *entry) {
  /* Other _class values (TensorFlow uses none today) carry no colocation meaning. */
  if (entry == NULL || !g_str_has_prefix(entry, "loc:@")) return NULL;
  return link_by_name(p, i, entry + 5);
}

/* Do two attr sets look the same to a kernel's type constraints? Those read a named attr's
 * dtype (or dtypes) and fail on any other kind, so the names, kinds and dtypes decide. */
static bool same_for_kernels(const weft_attrs_t *a, const weft_attrs_t *b) {
  if (a == b) return true;
  if (a == NULL || b == NULL || a->n != b->n) return false;
  for (int k = 0; k < a->n; k++) {
    const weft__attr_value_t *va = a->entries[k].value, *vb = b->entries[k].value;
    const char *na = a->entries[k].name, *nb = b->entries[k].name;
    if (va->kind != vb->kind || (na != nb && strcmp(na, nb) != 0)) return false;
    if (va->kind == WEFT_ATTR_TYPE && va->u.type != vb->u.type) return false;
    if (va->kind == WEFT_ATTR_LIST_TYPE &&
        (va->u.list.n != vb->u.list.n ||
         (va->u.list.n > 0 &&
          memcmp(va->u.list.type, vb->u.list.type, sizeof(weft_dtype_t) * va->u.list.n) != 0)))
      return false;
  }
  return true;
}

/* The kernel class of a node: one of the recent classes when kernels cannot tell them apart,
 * else a new one. */
static int kernel_class_of(placer_t *p, const weft_node_t *node) {
  if (node->def == NULL) return -1;
  for (int k = 0; k < p->n_recent; k++) {
    int index = p->recent[(p->recent_next - 1 - k + 2 * (int)G_N_ELEMENTS(p->recent)) %
                          (int)G_N_ELEMENTS(p->recent)];
    const kernel_class_t *c = &g_array_index(p->classes, kernel_class_t, index);
    if (c->node->def == node->def && same_for_kernels(c->node->attrs, node->attrs)) return index;
  }
  kernel_class_t c = {node, g_new(signed char, p->n_devices > 0 ? p->n_devices : 1)};
  memset(c.on_device, -1, (size_t)(p->n_devices > 0 ? p->n_devices : 1));
  g_array_append_val(p->classes, c);
  int index = (int)p->classes->len - 1;
  p->recent[p->recent_next] = index;
  p->recent_next = (p->recent_next + 1) % (int)G_N_ELEMENTS(p->recent);
  if (p->n_recent < (int)G_N_ELEMENTS(p->recent)) p->n_recent++;
  return index;
}

static weft_status_t *link_member(placer_t *p, int i) {
  weft_node_t *node = g_array_index(p->members, member_t, i).node;
  weft_status_t *status = NULL;

  const weft__attr_value_t *cls = node->attrs != NULL ? weft__attrs_get(node->attrs, "_class")
                                                      : NULL;
  if (cls != NULL && cls->kind == WEFT_ATTR_LIST_STRING) {
    for (size_t k = 0; k < cls->u.list.n && status == NULL; k++)
      status = link_class_entry(p, i, cls->u.list.s[k].data);
  } else if (cls != NULL && cls->kind == WEFT_ATTR_STRING) {
    status = link_class_entry(p, i, cls->u.s.data);
  }
  if (status == NULL && node->colocation_group != NULL && node->colocation_group[0] != '\0')
    status = link_by_name(p, i, node->colocation_group);

  /* An op that writes through a ref, or uses a resource variable's handle, must run where the
   * variable lives. */
  for (int k = 0; k < node->n_inputs && status == NULL; k++) {
    bool ref = node->input_types != NULL && (int)node->input_types[k] >= WEFT_DT_REF_OFFSET;
    if (!ref && !weft__input_is_resource_handle(node, k)) continue;
    weft_node_t *src = node->inputs[k].src;
    if (src == NULL) continue;
    int j = member_of(p, src, false);
    unite(p, i, j);
  }
  /* member_of may have grown the array: the member is looked up again. */
  member_t *m = &g_array_index(p->members, member_t, i);
  m->requests = node->requested_device != NULL && node->requested_device[0] != '\0';
  m->name = node->name;
  m->kernel_class = kernel_class_of(p, node);
  return status;
}

/* ---------------------------------------------------------------------------------------------
 * Helpers for specs, devices and messages */

/* "GPU" stands for the first gpu-like backend's type; comparisons inside a group see through it. */
static void normalize(weft__device_spec_t *spec, const char *gpu_type) {
  if (spec->type != NULL && gpu_type != NULL && g_ascii_strcasecmp(spec->type, "GPU") == 0) {
    g_free(spec->type);
    spec->type = g_ascii_strup(gpu_type, -1);
  }
}

static bool specs_compatible(const weft__device_spec_t *a, const weft__device_spec_t *b,
                             const char *gpu_type) {
  weft__device_spec_t na, nb;
  weft__device_spec_init(&na);
  weft__device_spec_init(&nb);
  weft__device_spec_copy(&na, a);
  weft__device_spec_copy(&nb, b);
  normalize(&na, gpu_type);
  normalize(&nb, gpu_type);
  bool ok = weft__device_spec_compatible(&na, &nb);
  weft__device_spec_clear(&na);
  weft__device_spec_clear(&nb);
  return ok;
}

static bool spec_is_empty(const weft__device_spec_t *spec) {
  return spec->job == NULL && spec->replica < 0 && spec->task < 0 && spec->type == NULL &&
         spec->id < 0;
}

/* Unqualified job/replica/task mean the session's own task; a spec naming another job keeps
 * its replica and task open. Returns true if anything was filled in. */
static bool apply_defaults(weft__device_spec_t *spec, const weft__placer_options_t *opts) {
  if (opts == NULL || opts->default_job == NULL) return false;
  if (spec->job != NULL && strcmp(spec->job, opts->default_job) != 0) return false;
  bool changed = false;
  if (spec->job == NULL) {
    spec->job = g_strdup(opts->default_job);
    changed = true;
  }
  if (spec->replica < 0 && opts->default_replica >= 0) {
    spec->replica = opts->default_replica;
    changed = true;
  }
  if (spec->task < 0 && opts->default_task >= 0) {
    spec->task = opts->default_task;
    changed = true;
  }
  return changed;
}

static const char *highest_gpu_type(const weft__place_device_t *devices, int n) {
  const weft__place_device_t *best = NULL;
  for (int i = 0; i < n; i++) {
    if (!devices[i].gpu_like || devices[i].emulated || devices[i].type == NULL) continue;
    if (best == NULL || devices[i].priority > best->priority) best = &devices[i];
  }
  return best != NULL ? best->type : NULL;
}

/* Is a better than b for an op that may run on either? A real gpu-like device first, then
 * cpu-like, then emulated ones; then backend priority, then the lowest ordinal, then the order
 * the caller listed them in. */
static bool prefer(const weft__place_device_t *a, int ia, const weft__place_device_t *b, int ib) {
  if (a->emulated != b->emulated) return b->emulated;
  if (a->gpu_like != b->gpu_like) return a->gpu_like;
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->id != b->id) return a->id < b->id;
  return ia < ib;
}

/* Whether the member's node has a kernel on the device (one of the call's devices, or one it
 * was not told about). */
static bool member_has_kernel(placer_t *p, const member_t *m, const weft__place_device_t *device) {
  if (device->type == NULL) return false;
  ptrdiff_t d = device - p->devices;
  if (m->kernel_class < 0 || d < 0 || d >= p->n_devices)
    return p->kernels->exists(m->node->op_name, device->type, m->node->attrs);
  kernel_class_t *c = &g_array_index(p->classes, kernel_class_t, m->kernel_class);
  if (c->on_device[d] < 0)
    c->on_device[d] = p->kernels->exists(c->node->op_name, device->type, c->node->attrs);
  return c->on_device[d] != 0;
}

static const member_t *group_at(placer_t *p, GArray *group, guint k) {
  return &g_array_index(p->members, member_t, g_array_index(group, int, k));
}

/* Only called for a group none of whose members is placed yet. Members outside this call count
 * too: they will have to follow the device chosen now, so it must have their kernels as well. */
static bool group_has_kernels(placer_t *p, GArray *group, const weft__place_device_t *device) {
  for (guint k = 0; k < group->len; k++) {
    const member_t *m = group_at(p, group, k);
    if (!member_has_kernel(p, m, device)) return false;
  }
  return true;
}

/* Best device matching spec with kernels for every member; -1 if none. *n_matching
 * counts the devices the spec selects at all. */
static int choose(placer_t *p, GArray *group, const weft__device_spec_t *spec, int *n_matching) {
  int best = -1;
  *n_matching = 0;
  for (int i = 0; i < p->n_devices; i++) {
    const weft__place_device_t *d = &p->devices[i];
    if (!weft__device_spec_matches(spec, d, p->gpu_type)) continue;
    (*n_matching)++;
    if (!group_has_kernels(p, group, d)) continue;
    if (best < 0 || prefer(d, i, &p->devices[best], best)) best = i;
  }
  return best;
}

/* Tries spec with the session's defaults, then (only if the defaults left no device at all)
 * without them. */
static int choose_with_defaults(placer_t *p, GArray *group, const weft__device_spec_t *spec,
                                int *n_matching) {
  weft__device_spec_t with;
  weft__device_spec_init(&with);
  weft__device_spec_copy(&with, spec);
  bool changed = apply_defaults(&with, p->opts);
  int best = choose(p, group, &with, n_matching);
  weft__device_spec_clear(&with);
  if (best < 0 && *n_matching == 0 && changed) best = choose(p, group, spec, n_matching);
  return best;
}

static char *device_types_list(placer_t *p) {
  GString *s = g_string_new("[");
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = 0; i < p->n_devices; i++) {
    const char *type = p->devices[i].type;
    if (type == NULL || g_hash_table_contains(seen, type)) continue;
    g_hash_table_add(seen, (gpointer)type);
    if (s->len > 1) g_string_append(s, ", ");
    g_string_append(s, type);
  }
  g_hash_table_destroy(seen);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static char *device_names_list(placer_t *p) {
  GString *s = g_string_new("[");
  for (int i = 0; i < p->n_devices; i++) {
    if (i > 0) g_string_append(s, ", ");
    g_string_append(s, p->devices[i].name != NULL ? p->devices[i].name : "?");
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* Says which devices are emulations that a spec must name by type, so that a user whose
 * "/gpu:0" matched nothing learns why the Vulkan device they see was not taken. "" if none. */
static char *emulated_note(placer_t *p) {
  GString *s = g_string_new("");
  for (int i = 0; i < p->n_devices; i++) {
    const weft__place_device_t *d = &p->devices[i];
    if (!d->emulated || d->type == NULL) continue;
    g_string_append_printf(s, "%s%s:%d", s->len == 0 ? "" : ", ", d->type, d->id);
  }
  if (s->len == 0) return g_string_free(s, FALSE);
  g_string_prepend(s, " (emulated on the CPU, so chosen only when pinned by type, as in "
                      "'/device:TYPE:N': ");
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

/* "op VariableV2, dtype int32" (dtype from T or dtype when the node has one). */
static char *op_and_dtype(const weft_node_t *node) {
  const weft__attr_value_t *t = NULL;
  if (node->attrs != NULL) {
    t = weft__attrs_get(node->attrs, "T");
    if (t == NULL || t->kind != WEFT_ATTR_TYPE) t = weft__attrs_get(node->attrs, "dtype");
  }
  if (t != NULL && t->kind == WEFT_ATTR_TYPE)
    return g_strdup_printf("op %s, dtype %s", node->op_name, weft_dtype_name(t->u.type));
  return g_strdup_printf("op %s", node->op_name);
}

/* The "because ... no supported kernel" tail shared by the kernel errors. */
static weft_status_t *kernel_error(placer_t *p, const member_t *culprit, const char *prefix,
                                   const char *which_devices) {
  char *what = op_and_dtype(culprit->node);
  char *types = device_types_list(p);
  char *kernels = p->kernels->describe_available(culprit->node->op_name);
  weft_status_t *status = weft_status_new(
      WEFT_INVALID_ARGUMENT,
      "Cannot assign a device for operation '%s': %sno supported kernel for %s is available "
      "(%s). Registered devices: %s. Registered kernels: %s",
      culprit->node->name, prefix, which_devices, what, types,
      kernels != NULL ? kernels : "none");
  g_free(what);
  g_free(types);
  g_free(kernels);
  return status;
}

/* ---------------------------------------------------------------------------------------------
 * Placing one group */

static void assign_group(placer_t *p, GArray *group, const char *device) {
  for (guint k = 0; k < group->len; k++) {
    member_t *m = &g_array_index(p->members, member_t, g_array_index(group, int, k));
    if (m->to_place) m->placed = device;
  }
}

/* Merges the members' requested specs into *merged. *requester is the first member that asked
 * for anything (NULL if none did). */
static weft_status_t *merge_requests(placer_t *p, GArray *group, weft__device_spec_t *merged,
                                     const member_t **requester) {
  *requester = NULL;
  /* The specs kept so far, to name the member a conflicting request clashes with; made at the
   * first request (most groups of a big graph have none). */
  GArray *kept = NULL;
  GPtrArray *kept_by = NULL;
  weft_status_t *status = NULL;

  for (guint k = 0; k < group->len && status == NULL; k++) {
    const member_t *m = group_at(p, group, k);
    if (!m->requests) continue;
    const char *req = m->node->requested_device;
    if (kept == NULL) {
      kept = g_array_new(FALSE, TRUE, sizeof(weft__device_spec_t));
      kept_by = g_ptr_array_new();
    }
    weft__device_spec_t spec;
    status = weft__device_spec_parse(req, &spec);
    if (status != NULL) {
      status = weft_status_prefix(status, "Node '%s' (op %s)", m->node->name, m->node->op_name);
      break;
    }
    if (spec_is_empty(&spec)) {
      weft__device_spec_clear(&spec);
      continue;
    }
    if (!specs_compatible(merged, &spec, p->gpu_type)) {
      if (p->opts != NULL && p->opts->allow_soft_placement) {
        /* TensorFlow keeps the group's first request and lets the rest go. */
        weft__device_spec_clear(&spec);
        continue;
      }
      const member_t *other = NULL;
      for (guint j = 0; j < kept->len && other == NULL; j++)
        if (!specs_compatible(&g_array_index(kept, weft__device_spec_t, j), &spec, p->gpu_type))
          other = g_ptr_array_index(kept_by, j);
      if (other == NULL) other = *requester;
      status = weft_status_new(
          WEFT_INVALID_ARGUMENT,
          "Cannot colocate nodes '%s' and '%s': incompatible device specifications: '%s' (op %s) "
          "requests '%s' and '%s' (op %s) requests '%s'",
          other->node->name, m->node->name, other->node->name, other->node->op_name,
          other->node->requested_device, m->node->name, m->node->op_name, req);
      weft__device_spec_clear(&spec);
      break;
    }
    if (*requester == NULL) *requester = m;
    weft__device_spec_merge(merged, &spec);
    g_array_append_val(kept, spec); /* kept owns the strings now */
    g_ptr_array_add(kept_by, (gpointer)m);
  }

  if (kept != NULL) {
    for (guint j = 0; j < kept->len; j++)
      weft__device_spec_clear(&g_array_index(kept, weft__device_spec_t, j));
    g_array_free(kept, TRUE);
    g_ptr_array_free(kept_by, TRUE);
  }
  return status;
}

/* The group already has a placed member: everything else follows it. */
static weft_status_t *place_pinned(placer_t *p, GArray *group, const member_t *anchor,
                                   const weft__device_spec_t *merged) {
  const weft__place_device_t *device = NULL;
  for (int i = 0; i < p->n_devices && device == NULL; i++)
    if (p->devices[i].name != NULL && strcmp(p->devices[i].name, anchor->placed) == 0)
      device = &p->devices[i];

  if (device != NULL) {
    bool soft = p->opts != NULL && p->opts->allow_soft_placement;
    if (!soft && !weft__device_spec_matches(merged, device, p->gpu_type)) {
      char *want = weft__device_spec_to_string(merged);
      const member_t *first = NULL;
      for (guint k = 0; k < group->len && first == NULL; k++)
        if (group_at(p, group, k)->to_place) first = group_at(p, group, k);
      weft_status_t *status = weft_status_new(
          WEFT_INVALID_ARGUMENT,
          "Cannot assign a device for operation '%s': Could not satisfy explicit device "
          "specification '%s' because it is colocated with '%s', which is already placed on '%s'",
          first->node->name, want, anchor->node->name, anchor->placed);
      g_free(want);
      return status;
    }
    for (guint k = 0; k < group->len; k++) {
      const member_t *m = group_at(p, group, k);
      if (!m->to_place || member_has_kernel(p, m, device)) continue;
      char *prefix = g_strdup_printf("it is colocated with '%s', which is already placed on '%s', "
                                     "but ", anchor->node->name, anchor->placed);
      char *which = g_strdup_printf("%s devices", device->type);
      weft_status_t *status = kernel_error(p, m, prefix, which);
      g_free(prefix);
      g_free(which);
      return status;
    }
  }
  /* A device this call was not told about (a remote task's, say) is taken on trust. */
  assign_group(p, group, anchor->placed);
  return NULL;
}

/* The error for a group no device could take, spec being what was asked. */
static weft_status_t *no_device_error(placer_t *p, GArray *group, const weft__device_spec_t *spec,
                                      const member_t *requester, int n_matching) {
  char *want = weft__device_spec_to_string(spec);
  bool explicit_request = !spec_is_empty(spec);
  weft_status_t *status = NULL;

  /* The member to blame: the first one no matching device has a kernel for. */
  const member_t *culprit = NULL;
  for (guint k = 0; k < group->len && culprit == NULL; k++) {
    const member_t *m = group_at(p, group, k);
    bool any = false;
    for (int i = 0; i < p->n_devices && !any; i++)
      any = weft__device_spec_matches(spec, &p->devices[i], p->gpu_type) &&
            member_has_kernel(p, m, &p->devices[i]);
    if (!any) culprit = m;
  }
  /* When nothing matches at all, the node that asked is the one to name. */
  const member_t *named = n_matching == 0 && requester != NULL && requester->to_place ? requester
                                                                                     : culprit;
  for (guint k = 0; k < group->len && named == NULL; k++)
    if (group_at(p, group, k)->to_place) named = group_at(p, group, k);

  if (explicit_request && n_matching == 0) {
    char *names = device_names_list(p);
    char *emulated = emulated_note(p);
    status = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Cannot assign a device for operation '%s': Could not satisfy "
                             "explicit device specification '%s' because no devices match '%s'. "
                             "Available devices: %s%s",
                             named->node->name, want, want, names, emulated);
    g_free(emulated);
    g_free(names);
  } else if (culprit != NULL) {
    /* The request may come from another member (a variable pinned by the user, the culprit an
     * update op colocated with it): name both, or the user sees a request they never wrote. */
    char *by = requester != NULL && requester != culprit
                   ? g_strdup_printf(" (requested by '%s', which it is colocated with)",
                                     requester->node->name)
                   : g_strdup("");
    char *prefix = explicit_request
                       ? g_strdup_printf("Could not satisfy explicit device specification '%s'%s "
                                         "because ", want, by)
                       : g_strdup("");
    g_free(by);
    char *which = spec->type != NULL ? g_strdup_printf("%s devices", spec->type)
                  : explicit_request ? g_strdup_printf("devices matching '%s'", want)
                                     : g_strdup("any device");
    status = kernel_error(p, culprit, prefix, which);
    g_free(prefix);
    g_free(which);
  } else {
    /* Every member runs somewhere, but no single device runs them all. */
    GString *names = g_string_new("");
    for (guint k = 0; k < group->len; k++) {
      const member_t *m = group_at(p, group, k);
      g_string_append_printf(names, "%s'%s' (op %s)", k > 0 ? ", " : "", m->node->name,
                             m->node->op_name);
    }
    status = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Cannot assign a device for operation '%s': no device%s%s%s has "
                             "kernels for every node of its colocation group: %s",
                             named->node->name, explicit_request ? " matching '" : "",
                             explicit_request ? want : "", explicit_request ? "'" : "",
                             names->str);
    g_string_free(names, TRUE);
  }
  g_free(want);
  return status;
}

static void compute_open_order(placer_t *p) {
  p->open_ready = true;
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  apply_defaults(&spec, p->opts);
  p->open_order = g_new(int, p->n_devices > 0 ? p->n_devices : 1);
  for (int i = 0; i < p->n_devices; i++) {
    if (!weft__device_spec_matches(&spec, &p->devices[i], p->gpu_type)) continue;
    int at = p->n_open++;
    /* Insertion sort by preference: there are a handful of devices. */
    while (at > 0 && prefer(&p->devices[i], i, &p->devices[p->open_order[at - 1]],
                            p->open_order[at - 1])) {
      p->open_order[at] = p->open_order[at - 1];
      at--;
    }
    p->open_order[at] = i;
  }
  weft__device_spec_clear(&spec);
}

/* A group that requests nothing: the best open device with every member's kernels, or -1 (then
 * the general path decides, with its soft placement and its messages). */
static int choose_open(placer_t *p, GArray *group) {
  if (!p->open_ready) compute_open_order(p);
  for (int k = 0; k < p->n_open; k++)
    if (group_has_kernels(p, group, &p->devices[p->open_order[k]])) return p->open_order[k];
  return -1;
}

static weft_status_t *place_group(placer_t *p, GArray *group) {
  bool any_to_place = false;
  for (guint k = 0; k < group->len && !any_to_place; k++)
    any_to_place = group_at(p, group, k)->to_place;
  /* A group with nothing new keeps whatever it has, even an old disagreement. */
  if (!any_to_place) return NULL;

  const member_t *anchor = NULL;
  for (guint k = 0; k < group->len; k++) {
    const member_t *m = group_at(p, group, k);
    if (m->placed == NULL) continue;
    if (anchor == NULL) {
      anchor = m;
    } else if (strcmp(anchor->placed, m->placed) != 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Cannot colocate nodes '%s' and '%s': they are already placed on "
                             "different devices ('%s' and '%s')",
                             anchor->node->name, m->node->name, anchor->placed, m->placed);
    }
  }

  weft__device_spec_t merged;
  weft__device_spec_init(&merged);
  const member_t *requester = NULL;
  weft_status_t *status = merge_requests(p, group, &merged, &requester);
  if (status != NULL) {
    weft__device_spec_clear(&merged);
    return status;
  }
  if (anchor != NULL) {
    status = place_pinned(p, group, anchor, &merged);
    weft__device_spec_clear(&merged);
    return status;
  }

  int n_matching = 0;
  int best = spec_is_empty(&merged) ? choose_open(p, group) : -1;
  if (best >= 0) {
    weft__device_spec_clear(&merged);
    assign_group(p, group, p->devices[best].name);
    return NULL;
  }
  best = choose_with_defaults(p, group, &merged, &n_matching);
  if (best < 0 && p->opts != NULL && p->opts->allow_soft_placement) {
    /* Soft placement: keep where (job, replica, task), forget what (type, id); then anything. */
    weft__device_spec_t relaxed;
    weft__device_spec_init(&relaxed);
    weft__device_spec_copy(&relaxed, &merged);
    g_free(relaxed.type);
    relaxed.type = NULL;
    relaxed.id = -1;
    int ignored = 0;
    best = choose_with_defaults(p, group, &relaxed, &ignored);
    weft__device_spec_clear(&relaxed); /* now the empty spec */
    if (best < 0) best = choose_with_defaults(p, group, &relaxed, &ignored);
  }
  if (best < 0) {
    /* Report against the spec as the user wrote it, but count the matches the first attempt
     * saw. */
    status = no_device_error(p, group, &merged, requester, n_matching);
    weft__device_spec_clear(&merged);
    return status;
  }
  weft__device_spec_clear(&merged);
  assign_group(p, group, p->devices[best].name);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Entry point */

/* The placer walks the nodes (to index and to link them), and each node is a few cache lines
 * (its block: struct, arrays, packed attrs, name; see alloc_node in graph.c) somewhere in memory
 * the size of the graph: a big graph waited on memory at every node. Asking for a node some
 * steps ahead hides most of that wait. */
enum { AHEAD = 16, NODE_LINES = 5 };

static void prefetch_node(const weft_node_t *node) {
  for (int k = 0; k < NODE_LINES; k++) __builtin_prefetch((const char *)node + 64 * k);
}

static void prefetch_member(placer_t *p, guint i) {
  if (i < p->members->len) prefetch_node(g_array_index(p->members, member_t, i).node);
}

GHashTable *weft__placement_new(void) {
  return g_hash_table_new(g_str_hash, g_str_equal);
}

weft_status_t *weft__place_with(GPtrArray *nodes, const weft__place_device_t *devices,
                                int n_devices, const weft__placer_options_t *opts,
                                const weft__kernel_catalog_t *kernels, GHashTable *placement) {
  if (nodes == NULL || placement == NULL || (devices == NULL && n_devices > 0) || n_devices < 0 ||
      kernels == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__place: missing nodes, devices or "
                                                  "placement table");
  placer_t p = {0};
  p.devices = devices;
  p.n_devices = n_devices;
  p.opts = opts;
  p.kernels = kernels;
  p.placement = placement;
  p.gpu_type = highest_gpu_type(devices, n_devices);
  /* Sized for `nodes` up front: growing by doubling copied a big graph's arrays over and over. */
  p.members = g_array_sized_new(FALSE, TRUE, sizeof(member_t), nodes->len);
  p.index = g_hash_table_new(g_direct_hash, g_direct_equal);
  p.by_id = g_array_new(FALSE, TRUE, sizeof(int));
  p.classes = g_array_new(FALSE, FALSE, sizeof(kernel_class_t));
  weft_node_t *first = nodes->len ? g_ptr_array_index(nodes, 0) : NULL;
  int graph_nodes = first != NULL && first->graph != NULL ? weft_graph_num_nodes(first->graph) : 0;
  if (nodes->len >= 1024 && (int64_t)nodes->len * 4 >= graph_nodes) {
    p.graph = first->graph;
    g_array_set_size(p.by_id, (guint)graph_nodes);
  }

  weft_status_t *status = NULL;
  for (guint i = 0; i < nodes->len; i++) {
    weft_node_t *node = g_ptr_array_index(nodes, i);
    if (i + 2 * AHEAD < nodes->len && g_ptr_array_index(nodes, i + 2 * AHEAD) != NULL)
      __builtin_prefetch(g_ptr_array_index(nodes, i + 2 * AHEAD));
    if (node != NULL) member_of(&p, node, true);
  }
  /* members grows while links pull in nodes outside `nodes`; their links count too, so a chain
   * through an outside node still joins the group. */
  for (guint i = 0; i < p.members->len && status == NULL; i++) {
    prefetch_member(&p, i + AHEAD);
    status = link_member(&p, (int)i);
  }

  if (status == NULL) {
    /* Groups in the order of their first member, each member list in member order. A root is
     * its group's earliest member (see unite), so walking the members in order meets every
     * root before the rest of its group; the members of each group are chained through
     * next[], and one scratch array holds the group being placed. Without a single union
     * (no colocation anywhere) every group is one member and there is nothing to chain. */
    int n = (int)p.members->len;
    int *next = NULL;
    if (p.united) {
      next = g_new(int, n > 0 ? n : 1);
      int *last = g_new(int, n > 0 ? n : 1);
      for (int i = 0; i < n; i++) {
        next[i] = -1;
        int root = find_root(&p, i);
        if (root != i) next[last[root]] = i;
        last[root] = i;
      }
      g_free(last);
    }
    GArray *group = g_array_new(FALSE, FALSE, sizeof(int));
    for (int i = 0; i < n && status == NULL; i++) {
      if (next != NULL && find_root(&p, i) != i) continue;
      g_array_set_size(group, 0);
      for (int m = i; m >= 0; m = next != NULL ? next[m] : -1) g_array_append_val(group, m);
      status = place_group(&p, group);
    }
    g_array_free(group, TRUE);
    g_free(next);
  }

  if (status == NULL) {
    /* Devices come in runs of one: intern once per run. */
    const char *source = NULL, *interned = NULL;
    for (guint i = 0; i < p.members->len; i++) {
      const member_t *m = &g_array_index(p.members, member_t, i);
      if (i + AHEAD < p.members->len)
        __builtin_prefetch(g_array_index(p.members, member_t, i + AHEAD).name);
      if (!m->to_place) continue;
      if (m->placed != source) interned = g_intern_string(source = m->placed);
      g_hash_table_insert(placement, (gpointer)m->name, (gpointer)interned);
    }
  }
  g_free(p.open_order);
  g_array_free(p.by_id, TRUE);
  for (guint i = 0; i < p.classes->len; i++)
    g_free(g_array_index(p.classes, kernel_class_t, i).on_device);
  g_array_free(p.classes, TRUE);
  g_hash_table_destroy(p.index);
  g_array_free(p.members, TRUE);
  return status;
}

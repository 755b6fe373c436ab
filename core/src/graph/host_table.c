/* host_table.c: the part of the host function table (weft_host_t) that needs nothing above the
 * graph: logging, statuses, attribute getters and the shape-inference context. The standard ops'
 * shape functions use it as plugins do; plugin/host.c adds the kernel context's entries for the
 * table plugins get. */
#include "graph_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Logging and statuses */

static void host_log(weft_log_level_t level, const char *plugin, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  weft__vlog(level, plugin, fmt, ap);
  va_end(ap);
}

static weft_status_t *host_status_new(weft_code_t code, const char *fmt, ...) {
  if (code == WEFT_OK) return NULL;
  va_list ap;
  va_start(ap, fmt);
  weft_status_t *st = weft__status_vnew(code, fmt, ap);
  va_end(ap);
  return st;
}

static weft_code_t host_status_code(const weft_status_t *st) { return weft_status_code(st); }
static const char *host_status_message(const weft_status_t *st) { return weft_status_message(st); }
static void host_status_free(weft_status_t *st) { weft_status_free(st); }

/* ---------------------------------------------------------------------------------------------
 * Attributes */

static weft_status_t *get_attr(const weft_attrs_t *attrs, const char *name, weft__attr_kind_t kind,
                               const char *kind_name, const weft__attr_value_t **out) {
  const weft__attr_value_t *v = weft__attrs_get(attrs, name);
  if (!v) return weft_status_new(WEFT_NOT_FOUND, "No attr named '%s'", name);
  if (v->kind == WEFT_ATTR_LIST_EMPTY && kind >= WEFT_ATTR_LIST_INT) {
    *out = v;
    return NULL;
  }
  if (v->kind != kind) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Attr '%s' is not of type %s", name, kind_name);
  }
  *out = v;
  return NULL;
}

static int host_attr_has(const weft_attrs_t *attrs, const char *name) {
  return weft__attrs_get(attrs, name) != NULL;
}

static weft_status_t *host_attr_int(const weft_attrs_t *attrs, const char *name, int64_t *out) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_INT, "int", &v);
  if (!st) *out = v->u.i;
  return st;
}

static weft_status_t *host_attr_float(const weft_attrs_t *attrs, const char *name, float *out) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_FLOAT, "float", &v);
  if (!st) *out = v->u.f;
  return st;
}

static weft_status_t *host_attr_bool(const weft_attrs_t *attrs, const char *name, int *out) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_BOOL, "bool", &v);
  if (!st) *out = v->u.b ? 1 : 0;
  return st;
}

static weft_status_t *host_attr_type(const weft_attrs_t *attrs, const char *name,
                                     weft_dtype_t *out) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_TYPE, "type", &v);
  if (!st) *out = v->u.type;
  return st;
}

static weft_status_t *host_attr_string(const weft_attrs_t *attrs, const char *name,
                                       const char **out, size_t *len) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_STRING, "string", &v);
  if (!st) {
    *out = v->u.s.data;
    if (len) *len = v->u.s.len;
  }
  return st;
}

static weft_status_t *host_attr_int_list(const weft_attrs_t *attrs, const char *name,
                                         const int64_t **out, size_t *n) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_LIST_INT, "list(int)", &v);
  if (!st) {
    *out = v->u.list.i;
    *n = v->kind == WEFT_ATTR_LIST_EMPTY ? 0 : v->u.list.n;
  }
  return st;
}

static weft_status_t *host_attr_float_list(const weft_attrs_t *attrs, const char *name,
                                           const float **out, size_t *n) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_LIST_FLOAT, "list(float)", &v);
  if (!st) {
    *out = v->u.list.f;
    *n = v->kind == WEFT_ATTR_LIST_EMPTY ? 0 : v->u.list.n;
  }
  return st;
}

static weft_status_t *host_attr_type_list(const weft_attrs_t *attrs, const char *name,
                                          const weft_dtype_t **out, size_t *n) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_LIST_TYPE, "list(type)", &v);
  if (!st) {
    *out = v->u.list.type;
    *n = v->kind == WEFT_ATTR_LIST_EMPTY ? 0 : v->u.list.n;
  }
  return st;
}

static weft_status_t *host_attr_string_list(const weft_attrs_t *attrs, const char *name,
                                            const weft_string_t **out, size_t *n) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_LIST_STRING, "list(string)", &v);
  if (!st) {
    *out = v->u.list.s;
    *n = v->kind == WEFT_ATTR_LIST_EMPTY ? 0 : v->u.list.n;
  }
  return st;
}

static weft_status_t *host_attr_shape(const weft_attrs_t *attrs, const char *name, int *rank,
                                      int64_t dims[WEFT_MAX_RANK]) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_SHAPE, "shape", &v);
  if (!st) {
    *rank = v->u.shape.rank;
    for (int k = 0; k < v->u.shape.rank; k++) dims[k] = v->u.shape.dims[k];
  }
  return st;
}

static weft_status_t *host_attr_tensor(const weft_attrs_t *attrs, const char *name,
                                       weft_tensor_view_t *out) {
  const weft__attr_value_t *v = NULL;
  weft_status_t *st = get_attr(attrs, name, WEFT_ATTR_TENSOR, "tensor", &v);
  if (!st) weft__tensor_fill_view(v->u.tensor, out);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * The table */

static const weft_host_t graph_host = {
    .struct_size = sizeof(weft_host_t),
    .abi_major = WEFT_ABI_MAJOR,
    .abi_minor = WEFT_ABI_MINOR,
    .log = host_log,
    .status_new = host_status_new,
    .status_code = host_status_code,
    .status_message = host_status_message,
    .status_free = host_status_free,
    .attr_has = host_attr_has,
    .attr_int = host_attr_int,
    .attr_float = host_attr_float,
    .attr_bool = host_attr_bool,
    .attr_type = host_attr_type,
    .attr_string = host_attr_string,
    .attr_int_list = host_attr_int_list,
    .attr_float_list = host_attr_float_list,
    .attr_type_list = host_attr_type_list,
    .attr_shape = host_attr_shape,
    .attr_tensor = host_attr_tensor,
    .shape_attrs = weft__shape_attrs,
    .shape_node_name = weft__shape_node_name,
    .shape_num_inputs = weft__shape_num_inputs,
    .shape_input = weft__shape_input,
    .shape_input_dtype = weft__shape_input_dtype,
    .shape_input_const = weft__shape_input_const,
    .shape_set_output = weft__shape_set_output,
    .attr_string_list = host_attr_string_list,
};

const weft_host_t *weft__graph_host(void) { return &graph_host; }

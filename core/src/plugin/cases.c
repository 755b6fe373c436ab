/* The registry of conformance cases plugins ship (ABI 1.1, registrar->register_conformance_case).
 * A case is checked and copied when it is registered (its op, attrs, dtypes and inputs must make
 * sense for the op's definition, so a broken case fails its plugin at load time with a message
 * naming it) and kept for the life of the process; weft-conformance reads the list and runs each
 * case beside its built-in ones (conformance/cases_plugin.c). */
#include "plugin_internal.h"

#include <math.h>
#include <string.h>

static GMutex cases_lock;
static GPtrArray *cases; /* weft__plugin_case_t*, in registration order */

void weft__plugin_case_free(weft__plugin_case_t *c) {
  if (!c) return;
  g_free(c->op);
  g_free(c->name);
  g_free(c->type_attr);
  g_free(c->plugin_path);
  g_free(c->dtypes);
  g_free(c->inputs);
  if (c->attrs) weft__attrs_free(c->attrs);
  g_free(c->expect_message);
  g_free(c);
}

static bool valid_case_name(const char *name) {
  if (!name || !*name) return false;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_' && *p != '.' && *p != '-') return false;
  return true;
}

static bool dtype_allowed(const weft__attr_def_t *attr, weft_dtype_t t) {
  if (!attr->allowed_types) return true;
  for (size_t k = 0; k < attr->n_allowed_types; k++)
    if (attr->allowed_types[k] == t) return true;
  return false;
}

static bool finite_nonneg(double v) { return isfinite(v) && v >= 0; }

#define CASE_MIN_SIZE                                  \
  (offsetof(weft_conformance_case_t, expect_message) + \
   sizeof(((weft_conformance_case_t *)0)->expect_message))
#define INPUT_MIN_SIZE \
  (offsetof(weft_case_input_t, is_const) + sizeof(((weft_case_input_t *)0)->is_const))

/* Parses "name=value" against def into attrs. */
static weft_status_t *parse_assignment(const weft__op_def_t *def, const char *text,
                                       weft_attrs_t *attrs) {
  const char *eq = text ? strchr(text, '=') : NULL;
  if (!eq)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "attr '%s' is not name=value",
                           text ? text : "(null)");
  char *name = g_strstrip(g_strndup(text, (gsize)(eq - text)));
  char *value = g_strstrip(g_strdup(eq + 1));
  weft__attr_value_t *v = NULL;
  weft_status_t *st = weft__attr_parse_value(def, name, value, &v);
  if (!st) weft__attrs_set(attrs, name, v);
  g_free(name);
  g_free(value);
  return st;
}

static weft_status_t *check_and_copy(const weft_conformance_case_t *c, const weft__op_def_t *def,
                                     weft__plugin_case_t *pc) {
  if (def->inputs->len != c->n_inputs) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "op %s has %u input(s); the case gives %zu",
                           def->name, def->inputs->len, c->n_inputs);
  }
  for (guint k = 0; k < def->inputs->len; k++) {
    const weft__arg_def_t *a = def->inputs->pdata[k];
    if (a->number_attr || a->type_list_attr || a->is_ref) {
      return weft_status_new(WEFT_UNIMPLEMENTED,
                             "input '%s' of %s is a list or a reference; plugin cases take ops "
                             "whose inputs are single tensors",
                             a->name, def->name);
    }
  }
  pc->type_attr = g_strdup(c->type_attr ? c->type_attr : "T");
  if (c->n_dtypes > 0) {
    if (!c->dtypes)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "n_dtypes is %zu but dtypes is NULL",
                             c->n_dtypes);
    const weft__attr_def_t *ta = weft__op_def_find_attr(def, pc->type_attr);
    if (!ta || strcmp(ta->type, "type") != 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "op %s has no type attr '%s'", def->name,
                             pc->type_attr);
    }
    for (size_t k = 0; k < c->n_dtypes; k++) {
      if (!weft__dtype_is_valid(c->dtypes[k]) || !dtype_allowed(ta, c->dtypes[k])) {
        return weft_status_new(
            WEFT_INVALID_ARGUMENT, "dtype %s (%d) is not allowed for attr '%s' of %s",
            weft_dtype_name(c->dtypes[k]), (int)c->dtypes[k], pc->type_attr, def->name);
      }
    }
    pc->dtypes = g_memdup2(c->dtypes, sizeof(weft_dtype_t) * c->n_dtypes);
    pc->n_dtypes = c->n_dtypes;
  }
  pc->attrs = weft__attrs_new();
  for (const char *const *a = c->attrs; a && *a; a++) {
    weft_status_t *st = parse_assignment(def, *a, pc->attrs);
    if (st) return st;
    if (c->n_dtypes > 0 && weft__attrs_get(pc->attrs, pc->type_attr)) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "attr '%s' is set per dtype; leave it out of attrs", pc->type_attr);
    }
  }
  if (c->n_inputs > 0) {
    if (!c->inputs)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "n_inputs is %zu but inputs is NULL",
                             c->n_inputs);
    size_t stride = c->inputs[0].struct_size;
    if (stride < INPUT_MIN_SIZE) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "inputs[0].struct_size %zu is below %zu",
                             stride, (size_t)INPUT_MIN_SIZE);
    }
    pc->inputs = g_new0(weft_case_input_t, c->n_inputs);
    pc->n_inputs = c->n_inputs;
    for (size_t k = 0; k < c->n_inputs; k++) {
      const weft_case_input_t *in =
          (const weft_case_input_t *)((const char *)c->inputs + k * stride);
      weft_case_input_t *dst = &pc->inputs[k];
      memcpy(dst, in, MIN(stride, sizeof *dst));
      dst->struct_size = sizeof *dst;
      const char *arg = ((const weft__arg_def_t *)def->inputs->pdata[k])->name;
      if (in->struct_size != stride) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "input %zu ('%s'): struct_size %zu differs from inputs[0]'s %zu", k,
                               arg, in->struct_size, stride);
      }
      if (dst->dtype == WEFT_DT_INVALID ? c->n_dtypes == 0 : !weft__dtype_is_valid(dst->dtype)) {
        return weft_status_new(WEFT_INVALID_ARGUMENT, "input %zu ('%s'): %s", k, arg,
                               dst->dtype == WEFT_DT_INVALID
                                   ? "no dtype, and the case has no dtypes to take it from"
                                   : "invalid dtype");
      }
      if (dst->rank < 0 || dst->rank > WEFT_MAX_RANK) {
        return weft_status_new(WEFT_INVALID_ARGUMENT, "input %zu ('%s'): rank %d is not in 0..%d",
                               k, arg, dst->rank, WEFT_MAX_RANK);
      }
      int64_t n = 1;
      for (int d = 0; d < dst->rank; d++) {
        if (dst->dims[d] < 0 || (dst->dims[d] > 0 && n > (INT64_C(1) << 28) / dst->dims[d])) {
          return weft_status_new(WEFT_INVALID_ARGUMENT,
                                 "input %zu ('%s'): dimension %d is %" G_GINT64_FORMAT
                                 " (negative, or the input exceeds 2^28 elements)",
                                 k, arg, d, dst->dims[d]);
        }
        n *= dst->dims[d];
      }
      if ((int)dst->gen < WEFT_CASE_GEN_UNIFORM || dst->gen > WEFT_CASE_GEN_BOOL) {
        return weft_status_new(WEFT_INVALID_ARGUMENT, "input %zu ('%s'): unknown generator %d", k,
                               arg, (int)dst->gen);
      }
      if (!isfinite(dst->lo) || !isfinite(dst->hi) || dst->lo > dst->hi) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "input %zu ('%s'): range [%g, %g] is empty or not finite", k, arg,
                               dst->lo, dst->hi);
      }
    }
  }
  if (!c->reference && c->expect_code == WEFT_OK) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "no reference function (required unless the case expects an error)");
  }
  if (!finite_nonneg(c->rtol) || !finite_nonneg(c->atol) || !finite_nonneg(c->max_nmse) ||
      !finite_nonneg(c->tol_scale)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "tolerances must be finite and >= 0");
  }
  if ((int)c->expect_code < 0 || c->expect_code > WEFT_UNAUTHENTICATED) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "expect_code %d is not a status code",
                           (int)c->expect_code);
  }
  pc->reference = c->reference;
  pc->user_data = c->user_data;
  pc->rtol = c->rtol;
  pc->atol = c->atol;
  pc->max_nmse = c->max_nmse;
  pc->tol_scale = c->tol_scale;
  pc->check_gradient = c->check_gradient != 0;
  pc->expect_code = c->expect_code;
  pc->expect_message = g_strdup(c->expect_message);
  return NULL;
}

weft_status_t *weft__plugin_case_copy(const weft_conformance_case_t *c, weft__op_lookup_fn lookup,
                                      void *lookup_arg, const char *plugin_path,
                                      weft__plugin_case_t **out) {
  *out = NULL;
  if (!c || c->struct_size < CASE_MIN_SIZE) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "conformance case table too small (struct_size %zu, need at least %zu)",
                           c ? c->struct_size : 0, (size_t)CASE_MIN_SIZE);
  }
  const char *op = c->op ? c->op : "(null)";
  if (!valid_case_name(c->name)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "conformance case '%s' of op %s: a case name is "
                           "letters, digits, '_', '.' and '-'",
                           c->name ? c->name : "(null)", op);
  }
  const weft__op_def_t *def = c->op ? lookup(c->op, lookup_arg) : NULL;
  if (!def) {
    return weft_status_new(WEFT_NOT_FOUND, "conformance case '%s': op %s is not registered",
                           c->name, op);
  }
  if (weft__plugin_case_find(c->op, c->name)) {
    return weft_status_new(WEFT_ALREADY_EXISTS,
                           "conformance case '%s' of op %s is already registered", c->name, c->op);
  }
  weft__plugin_case_t *pc = g_new0(weft__plugin_case_t, 1);
  pc->op = g_strdup(c->op);
  pc->name = g_strdup(c->name);
  pc->plugin_path = g_strdup(plugin_path);
  weft_status_t *st = check_and_copy(c, def, pc);
  if (st) {
    weft__plugin_case_free(pc);
    return weft_status_prefix(st, "conformance case '%s' of op %s", c->name, c->op);
  }
  *out = pc;
  return NULL;
}

void weft__plugin_cases_add(weft__plugin_case_t *c) {
  g_mutex_lock(&cases_lock);
  if (!cases) cases = g_ptr_array_new();
  g_ptr_array_add(cases, c);
  g_mutex_unlock(&cases_lock);
}

int weft__plugin_case_count(void) {
  g_mutex_lock(&cases_lock);
  int n = cases ? (int)cases->len : 0;
  g_mutex_unlock(&cases_lock);
  return n;
}

const weft__plugin_case_t *weft__plugin_case_at(int index) {
  g_mutex_lock(&cases_lock);
  const weft__plugin_case_t *c =
      (cases && index >= 0 && index < (int)cases->len) ? cases->pdata[index] : NULL;
  g_mutex_unlock(&cases_lock);
  return c;
}

const weft__plugin_case_t *weft__plugin_case_find(const char *op, const char *name) {
  g_mutex_lock(&cases_lock);
  const weft__plugin_case_t *found = NULL;
  for (guint k = 0; cases && k < cases->len && !found; k++) {
    const weft__plugin_case_t *c = cases->pdata[k];
    if (strcmp(c->op, op) == 0 && strcmp(c->name, name) == 0) found = c;
  }
  g_mutex_unlock(&cases_lock);
  return found;
}

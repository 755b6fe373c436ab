/* shape.c: shape arithmetic shared by shape inference and kernels' callers: element counts,
 * printing, and TensorFlow's (numpy's) broadcasting rules with unknown dimensions. */
#include "base_internal.h"

int64_t weft__shape_num_elements(int rank, const int64_t *dims) {
  if (rank < 0) return -1;
  bool has_zero = false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] == 0) has_zero = true;
  }
  if (has_zero) return 0;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    /* A count past int64 cannot be allocated or indexed; report it like an unknown one. (The
     * builtin, not a division: this runs for every kernel output, and a 64-bit divide per
     * dimension showed in a small step's profile.) */
    if (__builtin_mul_overflow(n, dims[i], &n)) return -1;
  }
  return n;
}

char *weft__shape_to_string(int rank, const int64_t *dims) {
  if (rank < 0) return g_strdup("<unknown>");
  GString *s = g_string_new("[");
  for (int i = 0; i < rank; i++) {
    if (i > 0) g_string_append_c(s, ',');
    if (dims[i] < 0)
      g_string_append_c(s, '?');
    else
      g_string_append_printf(s, "%" G_GINT64_FORMAT, dims[i]);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static weft_status_t *incompatible(const weft__shape_t *a, const weft__shape_t *b) {
  char *sa = weft__shape_to_string(a->rank, a->dims);
  char *sb = weft__shape_to_string(b->rank, b->dims);
  weft_status_t *status =
      weft_status_new(WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", sa, sb);
  g_free(sa);
  g_free(sb);
  return status;
}

weft_status_t *weft__broadcast_shapes(const weft__shape_t *a, const weft__shape_t *b,
                                      weft__shape_t *out) {
  if (a == NULL || b == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__broadcast_shapes: NULL shape");
  if (a->rank > WEFT_MAX_RANK || b->rank > WEFT_MAX_RANK)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "broadcast: rank %d exceeds the maximum %d",
                           a->rank > b->rank ? a->rank : b->rank, WEFT_MAX_RANK);
  /* Built in a local so that out may alias a or b. */
  weft__shape_t result = {.rank = -1};
  if (a->rank < 0 || b->rank < 0) {
    *out = result;
    return NULL;
  }
  result.rank = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < result.rank; i++) {
    /* Align from the right; missing leading dims act as 1. */
    int ia = a->rank - result.rank + i;
    int ib = b->rank - result.rank + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;
    if (da < 0 && db < 0) {
      d = WEFT_DIM_UNKNOWN;
    } else if (da < 0 || db < 0) {
      /* An unknown dim against a known one > 1 must be 1 or equal to it: either way the result
       * is the known one. Against 1 (or 0) the unknown dim decides, so it stays unknown. */
      int64_t known = da < 0 ? db : da;
      d = known > 1 ? known : WEFT_DIM_UNKNOWN;
    } else if (da == db) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else {
      return incompatible(a, b);
    }
    result.dims[i] = d;
  }
  *out = result;
  return NULL;
}

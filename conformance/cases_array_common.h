/* cases_array_common.h: the helpers cases_array.c and cases_array_extra.c both build their
 * cases with: distinct input values, exact-match cases and integer index inputs. */
#ifndef WEFT_CONFORMANCE_CASES_ARRAY_COMMON_H
#define WEFT_CONFORMANCE_CASES_ARRAY_COMMON_H

#include "reference.h"

/* Distinct values (0, 1, 2, ... wrapped to the dtype), random bools, indexed strings. */
static inline cf_array_t *data(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE, 0, 0};
  return cf_gen_array(rng, dt, rank, dims, g);
}

/* A case whose outputs must match exactly. */
static inline cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt,
                                  cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  c->tol = (cf_tol_t){0, 0, 0};
  return c;
}

static inline cf_array_t *ints(weft_dtype_t dt, int n, const int64_t *v) {
  return cf_array_ints(dt, n, v);
}

static inline cf_array_t *int_scalar(weft_dtype_t dt, int64_t v) {
  cf_array_t *a = cf_array_ints(dt, 1, &v);
  a->rank = 0;
  return a;
}

#endif

/* reference_special.h: the references of the special-math ops of ops_special.c (Zeta, Polygamma,
 * Erfinv, Ndtri, BesselI0e, BesselI1e, Xdivy, Xlogy, Xlog1py, MulNoNan, NextAfter,
 * ApproximateEqual, CumulativeLogsumexp) that cases_special.c checks, computed in long double by
 * other algorithms than the CPU kernel's (reference_special.c). */
#ifndef WEFT_CONFORMANCE_REFERENCE_SPECIAL_H
#define WEFT_CONFORMANCE_REFERENCE_SPECIAL_H

#include "reference.h"

/* The elementwise reference of a unary op by name (Erfinv, Ndtri, BesselI0e, BesselI1e), or
 * NULL. */
cf_unary_fn cf_ref_special_unary_fn(const char *op);
/* The elementwise reference of a binary op by name (Zeta, Polygamma, Xdivy, Xlogy, Xlog1py,
 * MulNoNan, NextAfter), or NULL. */
cf_binary_fn cf_ref_special_binary_fn(const char *op);
/* ApproximateEqual: |x - y| < tolerance in x's dtype, x and y of one shape; a bool array. */
cf_array_t *cf_ref_approximate_equal(const cf_array_t *x, const cf_array_t *y, double tolerance);
/* CumulativeLogsumexp along axis (canonical), each output a max-shifted log of a sum of exps. */
cf_array_t *cf_ref_cumulative_logsumexp(const cf_array_t *x, int axis, bool exclusive,
                                        bool reverse);

#endif /* WEFT_CONFORMANCE_REFERENCE_SPECIAL_H */

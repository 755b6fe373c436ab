/* reference_bits.h: the references of the bit-level and counting ops (reference_bits.c) that
 * cases_bits.c checks: Bitcast, the bitwise ops, PopulationCount, CompareAndBitpack, Cumprod,
 * Bincount, HistogramFixedWidth and the special functions. Integer references run on the
 * values' two's complement bits in 64-bit integers (exact for the values cases use, which are
 * within +-2^53 or powers of two); each returns a new array the caller frees. */
#ifndef WEFT_CONFORMANCE_REFERENCE_BITS_H
#define WEFT_CONFORMANCE_REFERENCE_BITS_H

#include "reference.h"

/* Bitcast: the bytes of x (little-endian storage) read as dtype `to`, with TensorFlow's shape
 * rule; NULL when the shape does not allow it. */
cf_array_t *cf_ref_bitcast(const cf_array_t *x, weft_dtype_t to);

/* Elementwise integer functions for cf_ref_map1/cf_ref_map2 by op name (BitwiseAnd, BitwiseOr,
 * BitwiseXor, LeftShift, RightShift, Invert, PopulationCount, DivNoNan, TruncateDiv,
 * TruncateMod, Rint, Lgamma, Digamma, Igamma, Igammac), or NULL. */
cf_binary_fn cf_ref_bits_binary_fn(const char *op);
cf_unary_fn cf_ref_bits_unary_fn(const char *op);

/* CompareAndBitpack: bits of x > threshold (bool: x itself), first element in the top bit. */
cf_array_t *cf_ref_compare_and_bitpack(const cf_array_t *x, double threshold);
cf_array_t *cf_ref_cumprod(const cf_array_t *x, int axis, bool exclusive, bool reverse);
/* Bincount: weights NULL or empty counts. */
cf_array_t *cf_ref_bincount(const cf_array_t *arr, int64_t size, const cf_array_t *weights,
                            weft_dtype_t dtype);
cf_array_t *cf_ref_histogram(const cf_array_t *values, double lo, double hi, int64_t nbins,
                             weft_dtype_t out_dtype);
/* Betainc with scalars broadcast against the common shape. */
cf_array_t *cf_ref_betainc(const cf_array_t *a, const cf_array_t *b, const cf_array_t *x);

#endif /* WEFT_CONFORMANCE_REFERENCE_BITS_H */

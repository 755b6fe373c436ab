/* reference_array.c: references of the data-movement ops (Transpose, ConcatV2, Pack, Unpack,
 * strided slicing, Tile, Pad with its constant/reflect/symmetric modes, GatherV2, Split, OneHot,
 * BroadcastTo) and of Cast. Data movement works on numbers and strings alike: each output element
 * names the input element it copies. */
#include <math.h>
#include <string.h>

#include "reference.h"

/* Coordinates of flat index i in a shape. */
static void unravel(int64_t i, int rank, const int64_t *dims, int64_t *coord) {
  for (int d = rank - 1; d >= 0; d--) {
    coord[d] = dims[d] ? i % dims[d] : 0;
    i = dims[d] ? i / dims[d] : 0;
  }
}

static int64_t ravel(int rank, const int64_t *dims, const int64_t *coord) {
  int64_t off = 0;
  for (int d = 0; d < rank; d++) off = off * dims[d] + coord[d];
  return off;
}

cf_array_t *cf_ref_transpose(const cf_array_t *x, const int64_t *perm) {
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0; d < x->rank; d++) dims[d] = x->dims[perm[d]];
  cf_array_t *y = cf_array_new(x->dtype, x->rank, dims);
  int64_t oc[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, dims, oc);
    for (int d = 0; d < x->rank; d++) ic[perm[d]] = oc[d];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, ic));
  }
  return y;
}

cf_array_t *cf_ref_concat(cf_array_t *const *xs, int n, int axis) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = xs[0]->rank;
  memcpy(dims, xs[0]->dims, sizeof(int64_t) * (size_t)rank);
  dims[axis] = 0;
  for (int k = 0; k < n; k++) dims[axis] += xs[k]->dims[axis];
  cf_array_t *y = cf_array_new(xs[0]->dtype, rank, dims);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, rank, dims, c);
    int k = 0;
    while (c[axis] >= xs[k]->dims[axis]) c[axis] -= xs[k++]->dims[axis];
    cf_copy_value(y, i, xs[k], ravel(rank, xs[k]->dims, c));
  }
  return y;
}

cf_array_t *cf_ref_pack(cf_array_t *const *xs, int n, int axis) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = xs[0]->rank + 1;
  for (int d = 0, s = 0; d < rank; d++) dims[d] = d == axis ? n : xs[0]->dims[s++];
  cf_array_t *y = cf_array_new(xs[0]->dtype, rank, dims);
  int64_t c[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, rank, dims, c);
    for (int d = 0, s = 0; d < rank; d++)
      if (d != axis) ic[s++] = c[d];
    cf_copy_value(y, i, xs[c[axis]], ravel(rank - 1, xs[0]->dims, ic));
  }
  return y;
}

cf_array_t *cf_ref_unpack(const cf_array_t *x, int axis, int64_t k) {
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0, s = 0; d < x->rank; d++)
    if (d != axis) dims[s++] = x->dims[d];
  cf_array_t *y = cf_array_new(x->dtype, x->rank - 1, dims);
  int64_t c[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, dims, c);
    for (int d = 0, s = 0; d < x->rank; d++) ic[d] = d == axis ? k : c[s++];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, ic));
  }
  return y;
}

cf_array_t *cf_ref_strided(const cf_array_t *x, const int64_t *begin, const int64_t *size,
                           const int64_t *stride) {
  cf_array_t *y = cf_array_new(x->dtype, x->rank, size);
  int64_t c[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, size, c);
    for (int d = 0; d < x->rank; d++) ic[d] = begin[d] + c[d] * stride[d];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, ic));
  }
  return y;
}

cf_array_t *cf_ref_tile(const cf_array_t *x, const int64_t *multiples) {
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0; d < x->rank; d++) dims[d] = x->dims[d] * multiples[d];
  cf_array_t *y = cf_array_new(x->dtype, x->rank, dims);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, dims, c);
    for (int d = 0; d < x->rank; d++) c[d] %= x->dims[d];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, c));
  }
  return y;
}

cf_array_t *cf_ref_pad(const cf_array_t *x, const int64_t *paddings, double value, int mode) {
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0; d < x->rank; d++) dims[d] = x->dims[d] + paddings[2 * d] + paddings[2 * d + 1];
  cf_array_t *y = cf_array_new(x->dtype, x->rank, dims);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, dims, c);
    bool inside = true;
    for (int d = 0; d < x->rank; d++) {
      int64_t p = c[d] - paddings[2 * d], n = x->dims[d];
      if (p >= 0 && p < n) {
        c[d] = p;
        continue;
      }
      if (mode == 0) {
        inside = false;
        break;
      }
      /* REFLECT mirrors without the edge, SYMMETRIC with it. */
      int64_t off = mode == 1 ? 0 : 1;
      while (p < 0 || p >= n) p = p < 0 ? -p - off : 2 * n - 2 - p + off;
      c[d] = p;
    }
    if (inside)
      cf_copy_value(y, i, x, ravel(x->rank, x->dims, c));
    else if (y->v)
      y->v[i] = value;
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_gather(const cf_array_t *params, const cf_array_t *indices, int axis,
                          int batch_dims) {
  /* output shape: params[:axis] + indices[batch_dims:] + params[axis+1:] */
  int64_t dims[WEFT_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < axis; d++) dims[rank++] = params->dims[d];
  for (int d = batch_dims; d < indices->rank; d++) dims[rank++] = indices->dims[d];
  for (int d = axis + 1; d < params->rank; d++) dims[rank++] = params->dims[d];
  cf_array_t *y = cf_array_new(params->dtype, rank, dims);
  int64_t c[WEFT_MAX_RANK], pc[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  int n_idx = indices->rank - batch_dims;
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, rank, dims, c);
    for (int d = 0; d < batch_dims; d++) ic[d] = c[d];
    for (int d = 0; d < n_idx; d++) ic[batch_dims + d] = c[axis + d];
    int64_t idx = (int64_t)indices->v[ravel(indices->rank, indices->dims, ic)];
    if (idx < 0) idx += params->dims[axis];
    for (int d = 0; d < axis; d++) pc[d] = c[d];
    pc[axis] = idx;
    for (int d = axis + 1; d < params->rank; d++) pc[d] = c[d - 1 + n_idx];
    cf_copy_value(y, i, params, ravel(params->rank, params->dims, pc));
  }
  return y;
}

cf_array_t *cf_ref_split_part(const cf_array_t *x, int axis, int64_t begin, int64_t size) {
  int64_t b[WEFT_MAX_RANK] = {0}, sz[WEFT_MAX_RANK], st[WEFT_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    sz[d] = x->dims[d];
    st[d] = 1;
  }
  b[axis] = begin;
  sz[axis] = size;
  return cf_ref_strided(x, b, sz, st);
}

cf_array_t *cf_ref_one_hot(const cf_array_t *indices, int64_t depth, double on, double off,
                           int axis, weft_dtype_t dtype) {
  int rank = indices->rank + 1;
  if (axis < 0) axis = rank - 1;
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0, s = 0; d < rank; d++) dims[d] = d == axis ? depth : indices->dims[s++];
  cf_array_t *y = cf_array_new(dtype, rank, dims);
  int64_t c[WEFT_MAX_RANK], ic[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, rank, dims, c);
    for (int d = 0, s = 0; d < rank; d++)
      if (d != axis) ic[s++] = c[d];
    double idx = indices->v[ravel(indices->rank, indices->dims, ic)];
    y->v[i] = idx == (double)c[axis] ? on : off;
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_broadcast_to(const cf_array_t *x, int rank, const int64_t *dims) {
  cf_array_t *y = cf_array_new(x->dtype, rank, dims);
  for (int64_t i = 0; i < y->n; i++)
    cf_copy_value(y, i, x, cf_broadcast_offset(i, rank, dims, x->rank, x->dims));
  return y;
}

cf_array_t *cf_ref_cast(const cf_array_t *x, weft_dtype_t dtype, bool truncate) {
  cf_array_t *y = cf_array_new_like(x, dtype);
  if (x->s && y->s) {
    for (int64_t i = 0; i < x->n; i++) cf_copy_value(y, i, x, i);
    return y;
  }
  for (int64_t i = 0; i < x->n; i++) {
    double v = x->v[i];
    if (dtype == WEFT_DT_BOOL)
      v = v != 0;
    else if (cf_dtype_is_int(dtype))
      v = trunc(v);
    else if (truncate && (dtype == WEFT_DT_HALF || dtype == WEFT_DT_BFLOAT16)) {
      /* Truncate: drop the low mantissa bits instead of rounding. */
      float f = (float)v;
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      if (dtype == WEFT_DT_BFLOAT16 && !isnan(f)) bits &= 0xFFFF0000u;
      memcpy(&f, &bits, sizeof bits);
      v = f;
    }
    y->v[i] = v;
  }
  cf_array_round(y);
  return y;
}

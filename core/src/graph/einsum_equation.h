/* einsum_equation.h: Einsum's equation ("ij,jk->ik", "...ij->...ji") parsed once for the op's
 * shape function (ops_einsum.c) and its gradient (train/gradients.c). Private to the core; the
 * kernels in plugins read the equation from the attr themselves. */
#ifndef WEFT_EINSUM_EQUATION_H
#define WEFT_EINSUM_EQUATION_H

#include <stdbool.h>

#include "weft/weft.h"

/* Labels are 0..51 ('a'..'z', 'A'..'Z'); an ellipsis holds its place in a subscript. */
#define WEFT__EINSUM_ELLIPSIS (-1)
#define WEFT__EINSUM_N_LABELS 52
/* More labels in one subscript than this could never match a tensor (WEFT_MAX_RANK is far
 * lower); the cap keeps the parsed form a fixed size. */
#define WEFT__EINSUM_MAX_SUBS 32

typedef struct weft__einsum_subs {
  int n; /* entries in label[], the ellipsis (if any) counted as one */
  signed char label[WEFT__EINSUM_MAX_SUBS];
  bool ellipsis;
} weft__einsum_subs_t;

typedef struct weft__einsum_eq {
  int n_inputs; /* 1 or 2 */
  weft__einsum_subs_t in[2];
  weft__einsum_subs_t out;
} weft__einsum_eq_t;

/* Parses TensorFlow's explicit form (one "->", one or two input subscripts, letters and at most
 * one "..." per subscript, every output label present in an input). INVALID_ARGUMENT naming the
 * equation otherwise. */
weft_status_t *weft__einsum_parse(const char *equation, weft__einsum_eq_t *out);
/* The subscript written back ("...ij"); buf holds at least WEFT__EINSUM_MAX_SUBS + 3 bytes. */
void weft__einsum_subs_str(const weft__einsum_subs_t *s, char *buf);
/* Whether label occurs in s. */
bool weft__einsum_has(const weft__einsum_subs_t *s, int label);

#endif /* WEFT_EINSUM_EQUATION_H */

/* cpu_einsum.c: the CPU kernel of TensorFlow's Einsum (tensorflow/core/kernels/einsum_op_impl.h)
 * for float, double, half and bfloat16. The equation is reduced to one batched matrix product:
 * each input is packed into [batch, free, contracted] (its own summed labels added up while
 * packing, repeated labels read along their diagonal by adding their strides, "..." dims
 * broadcast by a stride of 0), the product runs through the batched BLAS GEMM BatchMatMul uses
 * (weft__cpu_blas_gemm_batches), and the result is scattered into the output's label order (a
 * label repeated in the output writes the diagonal, zeros elsewhere). float32 and the 16-bit
 * floats compute in float32, double in double. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

#define ES_ELLIPSIS (-1)
#define ES_MAX_SUBS 32
/* Named labels 0..51; the dims under "..." become labels 52.. (right-aligned across inputs). */
#define ES_N_NAMED 52
#define ES_N_LABELS (ES_N_NAMED + WEFT_MAX_RANK)
#define ES_EQ_MAX 256

typedef struct es_subs {
  int n;
  signed char label[ES_MAX_SUBS];
  bool ellipsis;
} es_subs_t;

typedef struct es_eq {
  const char *text;
  int n_inputs;
  es_subs_t in[2], out;
} es_eq_t;

static weft_status_t *bad(weft_kernel_ctx_t *ctx, const es_eq_t *e, const char *what) {
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Invalid einsum equation '%s': %s", e->text,
                         what);
}

static weft_status_t *parse_subs(weft_kernel_ctx_t *ctx, const es_eq_t *e, const char *b,
                                 const char *end, es_subs_t *s) {
  memset(s, 0, sizeof *s);
  for (const char *p = b; p < end; p++) {
    if (*p == ' ') continue;
    if (s->n == ES_MAX_SUBS) return bad(ctx, e, "too many labels in one subscript");
    if (*p == '.') {
      if (end - p < 3 || p[1] != '.' || p[2] != '.' || s->ellipsis)
        return bad(ctx, e, "expected at most one ellipsis (...) and no periods (.) outside it");
      s->ellipsis = true;
      s->label[s->n++] = ES_ELLIPSIS;
      p += 2;
    } else if (*p >= 'a' && *p <= 'z') {
      s->label[s->n++] = (signed char)(*p - 'a');
    } else if (*p >= 'A' && *p <= 'Z') {
      s->label[s->n++] = (signed char)(26 + *p - 'A');
    } else {
      return bad(ctx, e, "labels are letters a-z and A-Z");
    }
  }
  return NULL;
}

static weft_status_t *parse(weft_kernel_ctx_t *ctx, const char *eq, es_eq_t *e) {
  memset(e, 0, sizeof *e);
  e->text = eq;
  const char *arrow = strstr(eq, "->");
  if (!arrow || strstr(arrow + 2, "->"))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Expecting exactly one '->' in einsum equation: %s", eq);
  const char *comma = memchr(eq, ',', (size_t)(arrow - eq));
  if (comma && memchr(comma + 1, ',', (size_t)(arrow - comma - 1)))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expecting 1 or 2 input subscripts in "
                           "equation '%s' but got more", eq);
  e->n_inputs = comma ? 2 : 1;
  WEFT_RETURN_IF_ERROR(parse_subs(ctx, e, eq, comma ? comma : arrow, &e->in[0]));
  if (comma) WEFT_RETURN_IF_ERROR(parse_subs(ctx, e, comma + 1, arrow, &e->in[1]));
  return parse_subs(ctx, e, arrow + 2, eq + strlen(eq), &e->out);
}

/* Labels grouped by role (any fixed order within a role serves: the packing and the output walk
 * both read it from the plan). */
enum { R_BATCH, R_CONTRACT, R_XFREE, R_YFREE, R_XSUM, R_YSUM, R_N };

typedef struct es_plan {
  int64_t size[ES_N_LABELS];
  int64_t stride[2][ES_N_LABELS]; /* elements of input i per step of a label (0: absent) */
  bool in[3][ES_N_LABELS];        /* present in input 0, input 1, the output */
  int role_labels[R_N][ES_N_LABELS];
  int role_n[R_N];
  int64_t role_size[R_N];
  int out_rank;
  int out_label[WEFT_MAX_RANK];
  int64_t out_dims[WEFT_MAX_RANK];
} es_plan_t;

/* Reads input i's dims into plan: label sizes (named ones must agree, "..." ones broadcast) and
 * strides (repeated labels add up; a broadcast dim of 1 gets 0). */
static weft_status_t *plan_input(weft_kernel_ctx_t *ctx, const es_eq_t *e, int i,
                                 const weft_tensor_view_t *v, int ell_total, es_plan_t *p) {
  const es_subs_t *s = &e->in[i];
  const int named = s->n - (s->ellipsis ? 1 : 0);
  if (s->ellipsis ? v->rank < named : v->rank != named)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected input %d to have rank %s%d but "
                           "got: %d (einsum equation '%s')", i, s->ellipsis ? "at least " : "",
                           named, v->rank, e->text);
  const int ell = v->rank - named;
  int64_t strides[WEFT_MAX_RANK];
  weft_pc_contiguous_strides(v->rank, v->dims, strides);
  int axis = 0;
  for (int k = 0; k < s->n; k++) {
    const int nax = s->label[k] == ES_ELLIPSIS ? ell : 1;
    for (int t = 0; t < nax; t++, axis++) {
      const int l = s->label[k] == ES_ELLIPSIS ? ES_N_NAMED + ell_total - ell + t : s->label[k];
      const int64_t d = v->dims[axis];
      if (l < ES_N_NAMED && p->size[l] >= 0 && p->size[l] != d) {
        char a[CPU_SHAPE_STR_LEN];
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected dimension %lld at axis %d "
                               "of the input shaped %s but got dimension %lld (einsum equation "
                               "'%s')", (long long)p->size[l], axis,
                               weft__cpu_shape_str(v->rank, v->dims, a, sizeof a),
                               (long long)d, e->text);
      }
      if (l >= ES_N_NAMED && p->size[l] >= 0 && p->size[l] != d && p->size[l] != 1 && d != 1)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimensions %lld and %lld under "
                               "'...' cannot broadcast (einsum equation '%s')",
                               (long long)p->size[l], (long long)d, e->text);
      if (p->size[l] < 0 || p->size[l] == 1) p->size[l] = d;
      p->in[i][l] = true;
      p->stride[i][l] += strides[axis];
    }
  }
  return NULL;
}

/* A size product that refuses to overflow (hostile shapes get an error, never a wrap). */
static bool mul_ok(int64_t *acc, int64_t v) { return !__builtin_mul_overflow(*acc, v, acc); }

static weft_status_t *make_plan(weft_kernel_ctx_t *ctx, const es_eq_t *e,
                                const weft_tensor_view_t *v, es_plan_t *p) {
  memset(p, 0, sizeof *p);
  for (int l = 0; l < ES_N_LABELS; l++) p->size[l] = -1;
  int ell_total = 0;
  for (int i = 0; i < e->n_inputs; i++) {
    const int named = e->in[i].n - (e->in[i].ellipsis ? 1 : 0);
    if (e->in[i].ellipsis && v[i].rank - named > ell_total) ell_total = v[i].rank - named;
  }
  for (int i = 0; i < e->n_inputs; i++)
    WEFT_RETURN_IF_ERROR(plan_input(ctx, e, i, &v[i], ell_total, p));
  /* A stride recorded against a broadcast dim of 1 must not move. */
  for (int i = 0; i < e->n_inputs; i++)
    for (int l = ES_N_NAMED; l < ES_N_NAMED + ell_total; l++)
      if (p->in[i][l] && p->size[l] != 1) {
        const es_subs_t *s = &e->in[i];
        const int named = s->n - (s->ellipsis ? 1 : 0), ell = v[i].rank - named;
        int before = 0;
        while (before < s->n && s->label[before] != ES_ELLIPSIS) before++;
        const int axis = before + (l - ES_N_NAMED) - (ell_total - ell);
        if (v[i].dims[axis] == 1) p->stride[i][l] = 0;
      }
  if (!e->out.ellipsis && ell_total > 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Output contains %d broadcasting "
                           "dimension(s) but no ellipsis (...) was found in the output "
                           "subscripts. (einsum equation '%s')", ell_total, e->text);
  for (int k = 0; k < e->out.n; k++) {
    const int l0 = e->out.label[k];
    const int nax = l0 == ES_ELLIPSIS ? ell_total : 1;
    for (int t = 0; t < nax; t++) {
      const int l = l0 == ES_ELLIPSIS ? ES_N_NAMED + t : l0;
      if (p->size[l] < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Einsum output subscripts for "
                               "equation '%s' has a label which is not present in the input "
                               "subscripts", e->text);
      if (p->out_rank == WEFT_MAX_RANK)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Einsum's output would have more "
                               "than %d dimensions (equation '%s')", WEFT_MAX_RANK, e->text);
      p->in[2][l] = true;
      p->out_label[p->out_rank] = l;
      p->out_dims[p->out_rank++] = p->size[l];
    }
  }
  for (int r = 0; r < R_N; r++) p->role_size[r] = 1;
  bool seen[ES_N_LABELS] = {false};
  for (int i = 0; i < e->n_inputs; i++)
    for (int l = 0; l < ES_N_LABELS; l++) {
      if (!p->in[i][l] || seen[l]) continue;
      seen[l] = true;
      const bool x = p->in[0][l], y = p->in[1][l], o = p->in[2][l];
      const int r = x && y ? (o ? R_BATCH : R_CONTRACT)
                           : (x ? (o ? R_XFREE : R_XSUM) : (o ? R_YFREE : R_YSUM));
      p->role_labels[r][p->role_n[r]++] = l;
      if (!mul_ok(&p->role_size[r], p->size[l]))
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "einsum '%s': sizes overflow",
                               e->text);
    }
  return NULL;
}

/* dst[...] = input i packed as the roles r[0..nr) in order (outermost first), the last role's
 * labels summed instead of kept when sum_last. */
typedef struct es_pack {
  const weft_tensor_view_t *v;
  const es_plan_t *p;
  int i;
  bool dbl;
} es_pack_t;

/* dst[j] (float, or double when dbl) = src[off + j * stride] (of dtype dt), j < n: straight
 * copies where the dtypes agree, the 16-bit floats widened. */
static void read_run(weft_dtype_t dt, const void *src, int64_t off, int64_t stride, int64_t n,
                     bool dbl, void *dst) {
  if (dt == WEFT_DT_FLOAT && !dbl) {
    const float *s = (const float *)src + off;
    float *d = dst;
    if (stride == 1) memcpy(d, s, sizeof(float) * (size_t)n);
    else for (int64_t j = 0; j < n; j++) d[j] = s[j * stride];
  } else if (dt == WEFT_DT_DOUBLE && dbl) {
    const double *s = (const double *)src + off;
    double *d = dst;
    if (stride == 1) memcpy(d, s, sizeof(double) * (size_t)n);
    else for (int64_t j = 0; j < n; j++) d[j] = s[j * stride];
  } else {
    for (int64_t j = 0; j < n; j++) {
      const double v = weft__cpu_load_f(dt, src, off + j * stride);
      if (dbl) ((double *)dst)[j] = v;
      else ((float *)dst)[j] = (float)v;
    }
  }
}

/* Steps the odometer idx over n positions (the last fastest) of sizes dims and returns how far
 * the offset moves, position k moving it by strides[k]. */
static int64_t advance(int64_t *idx, int n, const int64_t *dims, const int64_t *strides) {
  int64_t moved = 0;
  for (int k = n - 1; k >= 0; k--) {
    moved += strides[k];
    if (++idx[k] < dims[k]) break;
    moved -= strides[k] * dims[k];
    idx[k] = 0;
  }
  return moved;
}

static void pack(const es_pack_t *pk, const int *roles, int nr, bool sum_last, void *dst) {
  const es_plan_t *p = pk->p;
  int64_t dims[ES_N_LABELS], strides[ES_N_LABELS];
  int n = 0, n_sum = 0;
  for (int k = 0; k < nr; k++)
    for (int j = 0; j < p->role_n[roles[k]]; j++) {
      const int l = p->role_labels[roles[k]][j];
      dims[n] = p->size[l];
      strides[n++] = p->stride[pk->i][l];
      if (sum_last && k == nr - 1) n_sum++;
    }
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < n; k++) {
    if (k < n - n_sum) outer *= dims[k];
    else inner *= dims[k];
  }
  int64_t idx[ES_N_LABELS] = {0}, off = 0;
  if (n_sum == 0) {
    /* Rows along the innermost label, the others walked by the odometer. */
    const int64_t run = n > 0 ? dims[n - 1] : 1, rstride = n > 0 ? strides[n - 1] : 0;
    const size_t es = pk->dbl ? sizeof(double) : sizeof(float);
    for (int64_t row = 0; run > 0 && row < outer / run; row++) {
      read_run(pk->v->dtype, pk->v->data, off, rstride, run, pk->dbl,
               (char *)dst + (size_t)(row * run) * es);
      off += advance(idx, n - 1, dims, strides);
    }
    return;
  }
  for (int64_t o = 0; o < outer; o++) {
    double acc = 0;
    for (int64_t s = 0; s < inner; s++) {
      acc += weft__cpu_load_f(pk->v->dtype, pk->v->data, off);
      off += advance(idx, n, dims, strides);
    }
    if (pk->dbl) ((double *)dst)[o] = acc;
    else ((float *)dst)[o] = (float)acc;
  }
}

/* y = the product c ([batch, xfree, yfree] cells) in the output's label order when no label
 * repeats there: a strided walk of c, rows along the output's last axis. */
static void write_permuted(const es_plan_t *p, const void *c, bool dbl,
                           const weft_tensor_view_t *y) {
  int64_t cstride[ES_N_LABELS] = {0}, st = 1;
  static const int roles[3] = {R_YFREE, R_XFREE, R_BATCH}; /* innermost first */
  for (int r = 0; r < 3; r++)
    for (int j = p->role_n[roles[r]] - 1; j >= 0; j--) {
      const int l = p->role_labels[roles[r]][j];
      cstride[l] = st;
      st *= p->size[l];
    }
  const int rank = p->out_rank;
  const int64_t run = rank > 0 ? p->out_dims[rank - 1] : 1;
  const int64_t rstride = rank > 0 ? cstride[p->out_label[rank - 1]] : 0;
  const bool same = (y->dtype == WEFT_DT_DOUBLE) == dbl &&
                    (y->dtype == WEFT_DT_FLOAT || y->dtype == WEFT_DT_DOUBLE);
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  int64_t idx[WEFT_MAX_RANK] = {0}, off = 0, ostrides[WEFT_MAX_RANK];
  for (int k = 0; k < rank; k++) ostrides[k] = cstride[p->out_label[k]];
  for (int64_t o = 0; o < y->num_elements; o += run) {
    if (same) {
      read_run(y->dtype, c, off, rstride, run, dbl, (char *)y->data + (size_t)o * es);
    } else {
      for (int64_t j = 0; j < run; j++) {
        const int64_t at = off + j * rstride;
        weft__cpu_store_f(y->dtype, y->data, o + j, dbl ? ((const double *)c)[at]
                                                        : ((const float *)c)[at]);
      }
    }
    off += advance(idx, rank - 1, p->out_dims, ostrides);
  }
}

/* The index of the output element's (batch, xfree, yfree) cell in the product, or -1 where a
 * label repeated in the output takes two values (off the diagonal: zero). */
static int64_t product_cell(const es_plan_t *p, const int64_t *oi) {
  int64_t val[ES_N_LABELS];
  for (int l = 0; l < ES_N_LABELS; l++) val[l] = -1;
  for (int a = 0; a < p->out_rank; a++) {
    const int l = p->out_label[a];
    if (val[l] >= 0 && val[l] != oi[a]) return -1;
    val[l] = oi[a];
  }
  static const int roles[3] = {R_BATCH, R_XFREE, R_YFREE};
  int64_t cell = 0;
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < p->role_n[roles[r]]; j++) {
      const int l = p->role_labels[roles[r]][j];
      cell = cell * p->size[l] + val[l];
    }
  return cell;
}

static weft_status_t *k_einsum(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const char *text = NULL;
  size_t len = 0;
  WEFT_RETURN_IF_ERROR(H->attr_string(H->kernel_attrs(ctx), "equation", &text, &len));
  char eq[ES_EQ_MAX];
  if (len >= sizeof eq)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "einsum equation of %zu bytes is longer "
                           "than %d", len, ES_EQ_MAX - 1);
  memcpy(eq, text, len);
  eq[len] = '\0';
  es_eq_t e;
  WEFT_RETURN_IF_ERROR(parse(ctx, eq, &e));
  const int n_in = H->kernel_num_inputs(ctx);
  if (n_in != e.n_inputs)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected %d inputs for equation %s but "
                           "got: %d", e.n_inputs, eq, n_in);
  weft_tensor_view_t v[2], y;
  for (int i = 0; i < n_in; i++) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &v[i]));
  es_plan_t *p = malloc(sizeof *p);
  if (!p) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_status_t *st = make_plan(ctx, &e, v, p);
  if (!st) st = weft__cpu_output(ctx, 0, v[0].dtype, p->out_rank, p->out_dims, &y);
  if (st || y.num_elements == 0) {
    free(p);
    return st;
  }
  const bool dbl = v[0].dtype == WEFT_DT_DOUBLE;
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  const int64_t nb = p->role_size[R_BATCH], nk = p->role_size[R_CONTRACT];
  const int64_t nx = p->role_size[R_XFREE], ny = p->role_size[R_YFREE];
  int64_t na = nb, nbm = nb, nc = nb;
  if (!mul_ok(&na, nx) || !mul_ok(&na, nk) || !mul_ok(&nbm, nk) || !mul_ok(&nbm, ny) ||
      !mul_ok(&nc, nx) || !mul_ok(&nc, ny) || nx > INT_MAX || ny > INT_MAX || nk > INT_MAX) {
    free(p);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "einsum '%s': operands too large", eq);
  }
  void *a = malloc((size_t)na * es + es), *bm = malloc((size_t)nbm * es + es);
  void *c = calloc((size_t)nc + 1, es);
  if (!a || !bm || !c) {
    free(a), free(bm), free(c), free(p);
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  es_pack_t px = {&v[0], p, 0, dbl};
  static const int ra[] = {R_BATCH, R_XFREE, R_CONTRACT, R_XSUM};
  pack(&px, ra, 4, true, a);
  if (n_in == 2) {
    es_pack_t py = {&v[1], p, 1, dbl};
    static const int rb[] = {R_BATCH, R_CONTRACT, R_YFREE, R_YSUM};
    pack(&py, rb, 4, true, bm);
  } else if (dbl) {
    *(double *)bm = 1; /* one input: the product with a 1x1 one */
  } else {
    *(float *)bm = 1;
  }
  if (nk > 0) weft__cpu_blas_gemm_batches(ctx, dbl, nb, nx, ny, nk, a, bm, c);
  bool repeats = false;
  for (int i = 0; i < p->out_rank; i++)
    for (int j = 0; j < i; j++) repeats = repeats || p->out_label[i] == p->out_label[j];
  int64_t oi[WEFT_MAX_RANK] = {0};
  if (!repeats) write_permuted(p, c, dbl, &y);
  for (int64_t o = 0; repeats && o < y.num_elements; o++) {
    const int64_t cell = product_cell(p, oi);
    const double val = cell < 0 ? 0 : (dbl ? ((double *)c)[cell] : ((float *)c)[cell]);
    weft__cpu_store_f(y.dtype, y.data, o, val);
    for (int k = p->out_rank - 1; k >= 0 && ++oi[k] == p->out_dims[k]; k--) oi[k] = 0;
  }
  free(a), free(bm), free(c), free(p);
  return NULL;
}

weft_status_t *weft__cpu_register_einsum(const weft_registrar_t *reg) {
  static const weft_dtype_t types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                       WEFT_DT_BFLOAT16};
  const weft_cpu_kernel_spec_t kernels[] = {
      {"Einsum", k_einsum, "T", types, sizeof types / sizeof types[0], NULL, NULL, NULL, NULL},
  };
  return weft__cpu_register_specs(reg, kernels, 1);
}

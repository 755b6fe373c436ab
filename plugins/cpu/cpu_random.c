/* cpu_random.c: random kernels (RandomStandardNormal, RandomUniform, RandomUniformInt,
 * TruncatedNormal, RandomGamma, RandomPoisson(V2), RandomShuffle, Multinomial, and the candidate
 * samplers UniformCandidateSampler / LogUniformCandidateSampler with their companion
 * ComputeAccidentalHits) on a counter-based Philox-4x32-10 generator, and the stateless ops
 * (StatelessRandomUniform, StatelessRandomNormal, StatelessTruncatedNormal,
 * StatelessRandomUniformInt, StatelessMultinomial) on the same Philox function with TensorFlow's
 * stream layout and conversions, so that they give TensorFlow's numbers bit for bit (see the
 * "Stateless" section below).
 *
 * RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt, RandomShuffle,
 * RandomGamma and RandomPoisson(V2) follow TensorFlow's GuardedPhiloxRandom exactly (see
 * "Stateful" below, k_shuffle and the Gamma / Poisson section): with seed or seed2 set they give
 * TensorFlow's numbers bit for bit, run after run (each run continues the node's stream); with
 * both 0 the seeds come from the system. The candidate samplers take the key from seed and the
 * high counter words from seed2 too, but their own counter layout. Each kernel instance (one per
 * node and session, made by create) owns a 64-bit counter that every run advances, so successive
 * runs differ. Because an output element's bits depend only on (key, counter), the work splits
 * over threads without changing the numbers. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef struct philox_out {
  uint32_t v[4];
} philox_out_t;

static inline void mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t p = (uint64_t)a * b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

/* Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"). */
static inline philox_out_t philox(const uint32_t key_in[2], uint32_t c0, uint32_t c1, uint32_t c2,
                                  uint32_t c3) {
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; round++) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, c0, &hi0, &lo0);
    mulhilo32(0xCD9E8D57u, c2, &hi1, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  philox_out_t out = {{c0, c1, c2, c3}};
  return out;
}

/* TensorFlow's PhiloxRandom (philox_random.h): a key and a 128-bit counter that each call
 * uses, then advances by one. */
typedef struct tf_philox {
  uint32_t key[2];
  uint32_t ctr[4];
} tf_philox_t;

/* PhiloxRandom::Skip: adds n to the 128-bit counter. */
static inline void tf_philox_skip(tf_philox_t *g, uint64_t n) {
  const uint32_t lo = (uint32_t)n;
  uint32_t hi = (uint32_t)(n >> 32);
  g->ctr[0] += lo;
  if (g->ctr[0] < lo) ++hi;
  g->ctr[1] += hi;
  if (g->ctr[1] < hi && ++g->ctr[2] == 0) ++g->ctr[3];
}

static inline philox_out_t tf_philox_next(tf_philox_t *g) {
  philox_out_t r = philox(g->key, g->ctr[0], g->ctr[1], g->ctr[2], g->ctr[3]);
  tf_philox_skip(g, 1);
  return r;
}

/* SingleSampleAdapter<PhiloxRandom>: the generator's words one at a time. */
typedef struct tf_single {
  tf_philox_t *gen;
  philox_out_t buf;
  int used;
} tf_single_t;

static inline uint32_t tf_single_next(tf_single_t *s) {
  if (s->used == 4) {
    s->buf = tf_philox_next(s->gen);
    s->used = 0;
  }
  return s->buf.v[s->used++];
}

typedef struct rng_state {
  uint32_t key[2];
  uint32_t hi[2]; /* seed2: the counter's upper words */
  atomic_uint_least64_t next_block;
} rng_state_t;

static inline philox_out_t rng_block(const rng_state_t *st, uint64_t block, uint32_t attempt) {
  return philox(st->key, (uint32_t)block, (uint32_t)(block >> 32) ^ (attempt << 24), st->hi[0],
                st->hi[1]);
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Seeds for unseeded nodes: the system's entropy, or time and addresses mixed together. */
static void system_seeds(uint64_t *a, uint64_t *b) {
  static atomic_uint_least64_t calls;
  uint64_t buf[2] = {0, 0};
  FILE *f = fopen("/dev/urandom", "rb");
  bool got = false;
  if (f != NULL) {
    got = fread(buf, sizeof buf, 1, f) == 1;
    fclose(f);
  }
  if (!got) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    s ^= (uint64_t)(uintptr_t)&ts ^ (atomic_fetch_add(&calls, 1) << 40);
    buf[0] = splitmix64(&s);
    buf[1] = splitmix64(&s);
  }
  *a = buf[0];
  *b = buf[1];
}

static weft_status_t *rng_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                 void *user_data, void **state) {
  (void)user_data;
  int64_t seed = 0, seed2 = 0;
  weft_status_t *s;
  if (host->attr_has(attrs, "seed") && (s = host->attr_int(attrs, "seed", &seed)) != NULL)
    return s;
  if (host->attr_has(attrs, "seed2") && (s = host->attr_int(attrs, "seed2", &seed2)) != NULL)
    return s;
  rng_state_t *st = calloc(1, sizeof *st);
  if (st == NULL)
    return host->status_new(WEFT_RESOURCE_EXHAUSTED, "out of memory creating a random kernel");
  uint64_t k = (uint64_t)seed, h = (uint64_t)seed2;
  if (seed == 0 && seed2 == 0) system_seeds(&k, &h);
  st->key[0] = (uint32_t)k;
  st->key[1] = (uint32_t)(k >> 32);
  st->hi[0] = (uint32_t)h;
  st->hi[1] = (uint32_t)(h >> 32);
  atomic_init(&st->next_block, 0);
  *state = st;
  return NULL;
}

static void rng_destroy(void *state) { free(state); }

/* ---------------------------------------------------------------------------------------------
 * Conversions from random bits */

static inline double u64_to_unit_double(uint64_t u) { /* [0, 1) */
  uint64_t bits = (u >> 12) | 0x3ff0000000000000ull;
  double d;
  memcpy(&d, &bits, 8);
  return d - 1.0;
}

static inline void store_float(weft_dtype_t dt, void *out, int64_t i, double v) {
  switch (dt) {
    case WEFT_DT_FLOAT: ((float *)out)[i] = (float)v; break;
    case WEFT_DT_DOUBLE: ((double *)out)[i] = v; break;
    case WEFT_DT_HALF: ((uint16_t *)out)[i] = weft__cpu_float_to_half((float)v); break;
    case WEFT_DT_BFLOAT16: ((uint16_t *)out)[i] = weft__cpu_float_to_bf16((float)v); break;
    default: break;
  }
}

typedef enum rng_kind { RNG_UNIFORM, RNG_NORMAL, RNG_TRUNCATED, RNG_INT } rng_kind_t;

/* ---------------------------------------------------------------------------------------------
 * Stateless random ops (stateless_random_ops.cc), TensorFlow's numbers bit for bit.
 *
 * GenerateKey scrambles the seed's two values (as uint64) into a key and counter with one Philox
 * call from a fixed key; the op then runs FillPhiloxRandom as the stateful TensorFlow kernels do:
 * output group g (kResultElementCount elements: 4 for 32-bit results, 2 for 64-bit ones) is the
 * distribution applied to the Philox block at counter + g. The truncated normal draws a variable
 * number of words, so its group g starts at counter + g * (group * 256 / 4) and takes words one
 * at a time. The conversions are random_distributions.h's: the low 23 bits of a word make a float
 * in [1, 2) minus 1, the low 20 bits of one word and all of the next a double, the low 10 (half)
 * or 7 (bfloat16) bits a 16-bit float; normals are its Box-Muller in float (logf, sincosf) or in
 * double, converted to half or bfloat16 afterwards; integers are lo + bits % (hi - lo). Each
 * group depends only on (key, counter, g), so the numbers do not depend on the threading. */

static void tf_generate_key(uint64_t seed0, uint64_t seed1, tf_philox_t *g) {
  static const uint32_t fixed_key[2] = {0x3ec8f720u, 0x02461e29u};
  philox_out_t mix = philox(fixed_key, (uint32_t)seed0, (uint32_t)(seed0 >> 32), (uint32_t)seed1,
                            (uint32_t)(seed1 >> 32));
  g->key[0] = mix.v[0];
  g->key[1] = mix.v[1];
  g->ctr[0] = g->ctr[1] = 0;
  g->ctr[2] = mix.v[2];
  g->ctr[3] = mix.v[3];
}

static inline float tf_uint32_to_float(uint32_t x) { /* Uint32ToFloat: [0, 1) */
  uint32_t bits = (x & 0x7fffffu) | (127u << 23);
  float f;
  memcpy(&f, &bits, 4);
  return f - 1.0f;
}

static inline double tf_uint64_to_double(uint32_t x0, uint32_t x1) { /* Uint64ToDouble */
  uint64_t bits = ((uint64_t)(x0 & 0xfffffu) << 32) | x1 | (1023ull << 52);
  double d;
  memcpy(&d, &bits, 8);
  return d - 1.0;
}

static inline void tf_box_muller_float(uint32_t x0, uint32_t x1, float *f0, float *f1) {
  const float epsilon = 1.0e-7f;
  float u1 = tf_uint32_to_float(x0);
  if (u1 < epsilon) u1 = epsilon;
  const float v1 = (float)(2.0 * M_PI * (double)tf_uint32_to_float(x1));
  const float u2 = sqrtf(-2.0f * logf(u1));
  sincosf(v1, f0, f1);
  *f0 *= u2;
  *f1 *= u2;
}

static inline void tf_box_muller_double(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
                                        double *d0, double *d1) {
  const double epsilon = 1.0e-7;
  double u1 = tf_uint64_to_double(x0, x1);
  if (u1 < epsilon) u1 = epsilon;
  const double v1 = 2 * M_PI * tf_uint64_to_double(x2, x3);
  const double u2 = sqrt(-2.0 * log(u1));
  sincos(v1, d0, d1);
  *d0 *= u2;
  *d1 *= u2;
}

/* Stores a float result in a 16-bit or 32-bit float output. */
static inline void tf_store_f(weft_dtype_t dt, void *out, int64_t i, float v) {
  switch (dt) {
    case WEFT_DT_FLOAT: ((float *)out)[i] = v; break;
    case WEFT_DT_HALF: ((uint16_t *)out)[i] = weft__cpu_float_to_half(v); break;
    case WEFT_DT_BFLOAT16: ((uint16_t *)out)[i] = weft__cpu_float_to_bf16(v); break;
    default: break;
  }
}

typedef struct stateless_job {
  tf_philox_t gen; /* after GenerateKey */
  rng_kind_t kind;
  weft_dtype_t dtype;
  void *out;
  int64_t n;
  int group; /* kResultElementCount */
  int64_t int_lo;
  uint64_t int_range;
} stateless_job_t;

/* One group's values (up to 4) from one Philox block: the fixed-sample distributions. */
static int stateless_fixed_group(const stateless_job_t *j, philox_out_t r, double *dv, float *fv,
                                 int64_t *iv) {
  const uint32_t *w = r.v;
  switch (j->kind) {
    case RNG_UNIFORM:
      if (j->dtype == WEFT_DT_DOUBLE) {
        for (int k = 0; k < 2; k++) dv[k] = tf_uint64_to_double(w[2 * k], w[2 * k + 1]);
      } else {
        for (int k = 0; k < 4; k++) {
          if (j->dtype == WEFT_DT_HALF) fv[k] = (float)(w[k] & 0x3ffu) / 1024.0f;
          else if (j->dtype == WEFT_DT_BFLOAT16) fv[k] = (float)(w[k] & 0x7fu) / 128.0f;
          else fv[k] = tf_uint32_to_float(w[k]);
        }
      }
      break;
    case RNG_NORMAL:
      if (j->dtype == WEFT_DT_DOUBLE) {
        tf_box_muller_double(w[0], w[1], w[2], w[3], &dv[0], &dv[1]);
      } else {
        tf_box_muller_float(w[0], w[1], &fv[0], &fv[1]);
        tf_box_muller_float(w[2], w[3], &fv[2], &fv[3]);
      }
      break;
    case RNG_INT:
      if (j->dtype == WEFT_DT_INT64) {
        for (int k = 0; k < 2; k++) {
          uint64_t bits = (uint64_t)w[2 * k] | (uint64_t)w[2 * k + 1] << 32;
          iv[k] = (int64_t)((uint64_t)j->int_lo + bits % j->int_range);
        }
      } else {
        for (int k = 0; k < 4; k++)
          iv[k] = (int32_t)(uint32_t)((uint32_t)j->int_lo + w[k] % (uint32_t)j->int_range);
      }
      break;
    default:
      break;
  }
  return j->group;
}

/* TruncatedNormalDistribution: Box-Muller pairs from single words until the group holds
 * `group` values with |x| < 2. */
static void stateless_truncated_group(const stateless_job_t *j, int64_t g, double *dv,
                                      float *fv) {
  tf_philox_t gen = j->gen;
  tf_philox_skip(&gen, (uint64_t)g * (uint64_t)(j->group * 256 / 4));
  tf_single_t single = {&gen, {{0, 0, 0, 0}}, 4};
  int index = 0;
  if (j->dtype == WEFT_DT_DOUBLE) {
    for (;;) {
      uint32_t x0 = tf_single_next(&single), x1 = tf_single_next(&single);
      uint32_t x2 = tf_single_next(&single), x3 = tf_single_next(&single);
      double d[2];
      tf_box_muller_double(x0, x1, x2, x3, &d[0], &d[1]);
      for (int k = 0; k < 2; k++)
        if (fabs(d[k]) < 2.0) {
          dv[index++] = d[k];
          if (index >= j->group) return;
        }
    }
  }
  for (;;) {
    uint32_t x0 = tf_single_next(&single), x1 = tf_single_next(&single);
    float f[2];
    tf_box_muller_float(x0, x1, &f[0], &f[1]);
    for (int k = 0; k < 2; k++)
      if (fabsf(f[k]) < 2.0f) {
        fv[index++] = f[k];
        if (index >= j->group) return;
      }
  }
}

static void stateless_range(void *arg, int64_t b, int64_t e) {
  const stateless_job_t *j = arg;
  for (int64_t g = b; g < e; g++) {
    double dv[4];
    float fv[4];
    int64_t iv[4];
    if (j->kind == RNG_TRUNCATED) {
      stateless_truncated_group(j, g, dv, fv);
    } else {
      tf_philox_t gen = j->gen;
      tf_philox_skip(&gen, (uint64_t)g);
      stateless_fixed_group(j, tf_philox_next(&gen), dv, fv, iv);
    }
    const int64_t i0 = g * j->group;
    const int cnt = (int)(j->n - i0 < j->group ? j->n - i0 : j->group);
    for (int k = 0; k < cnt; k++) {
      switch (j->dtype) {
        case WEFT_DT_DOUBLE: ((double *)j->out)[i0 + k] = dv[k]; break;
        case WEFT_DT_INT64: ((int64_t *)j->out)[i0 + k] = iv[k]; break;
        case WEFT_DT_INT32: ((int32_t *)j->out)[i0 + k] = (int32_t)iv[k]; break;
        default: tf_store_f(j->dtype, j->out, i0 + k, fv[k]); break;
      }
    }
  }
}

/* The seed input (index `index`): a [2] vector of int32 or int64, read as two uint64 as
 * GenerateKey does (int32 values sign-extend). */
static weft_status_t *stateless_seed(weft_kernel_ctx_t *ctx, int index, uint64_t seed[2]) {
  weft_tensor_view_t sv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &sv));
  if (sv.rank != 1 || sv.dims[0] != 2) {
    char sh[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seed must have shape [2], not %s",
                           weft__cpu_shape_str(sv.rank, sv.dims, sh, sizeof sh));
  }
  if (sv.dtype != WEFT_DT_INT32 && sv.dtype != WEFT_DT_INT64)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Invalid seed type: %s",
                           weft__cpu_dtype_name(sv.dtype));
  seed[0] = (uint64_t)weft__cpu_index_at(&sv, 0);
  seed[1] = (uint64_t)weft__cpu_index_at(&sv, 1);
  return NULL;
}

/* StatelessRandomOpBase::Compute: the shape (MakeShape's checks and messages), the seed's shape,
 * the output, nothing more for an empty one; then the int op's bounds and the fill. */
static weft_status_t *stateless_compute(weft_kernel_ctx_t *ctx, rng_kind_t kind) {
  weft_tensor_view_t sv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
  char sh[CPU_SHAPE_STR_LEN];
  if (sv.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "shape must be a vector of {int32,int64}, got shape %s",
                           weft__cpu_shape_str(sv.rank, sv.dims, sh, sizeof sh));
  int64_t dims[WEFT_MAX_RANK], rank = 0;
  if (sv.num_elements > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Too many dimensions");
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &rank));
  for (int64_t d = 0; d < rank; d++)
    if (dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)dims[d]);
  uint64_t seed[2];
  {
    weft_tensor_view_t seed_v;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &seed_v));
    if (seed_v.rank != 1 || seed_v.dims[0] != 2)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seed must have shape [2], not %s",
                             weft__cpu_shape_str(seed_v.rank, seed_v.dims, sh, sizeof sh));
  }
  stateless_job_t j;
  memset(&j, 0, sizeof j);
  j.kind = kind;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  weft_dtype_t dt = kind == RNG_INT ? WEFT_DT_INT32 : WEFT_DT_FLOAT;
  if (H->attr_has(attrs, "dtype")) WEFT_RETURN_IF_ERROR(H->attr_type(attrs, "dtype", &dt));
  bool ok = kind == RNG_INT ? dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64
                            : dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE ||
                                  dt == WEFT_DT_HALF || dt == WEFT_DT_BFLOAT16;
  if (!ok)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "no stateless kernel for dtype %s",
                           weft__cpu_dtype_name(dt));
  j.dtype = dt;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, (int)rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(stateless_seed(ctx, 1, seed));
  if (kind == RNG_INT) {
    weft_tensor_view_t lo, hi;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &lo));
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &hi));
    if (lo.rank != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "minval must be 0-D, got shape %s",
                             weft__cpu_shape_str(lo.rank, lo.dims, sh, sizeof sh));
    if (hi.rank != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "maxval must be 0-D, got shape %s",
                             weft__cpu_shape_str(hi.rank, hi.dims, sh, sizeof sh));
    int64_t a = weft__cpu_index_at(&lo, 0), b = weft__cpu_index_at(&hi, 0);
    if (a >= b)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Need minval < maxval, got %lld >= %lld",
                             (long long)a, (long long)b);
    j.int_lo = a;
    j.int_range = (uint64_t)b - (uint64_t)a;
  }
  tf_generate_key(seed[0], seed[1], &j.gen);
  j.out = y.data;
  j.n = y.num_elements;
  j.group = dt == WEFT_DT_DOUBLE || dt == WEFT_DT_INT64 ? 2 : 4;
  int64_t groups = (j.n + j.group - 1) / j.group;
  weft__cpu_parallel(ctx, groups, kind == RNG_INT || kind == RNG_UNIFORM ? 40 : 150,
                     stateless_range, &j);
  return NULL;
}

static weft_status_t *k_stateless_uniform(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return stateless_compute(ctx, RNG_UNIFORM);
}
static weft_status_t *k_stateless_normal(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return stateless_compute(ctx, RNG_NORMAL);
}
static weft_status_t *k_stateless_truncated(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return stateless_compute(ctx, RNG_TRUNCATED);
}
static weft_status_t *k_stateless_uniform_int(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return stateless_compute(ctx, RNG_INT);
}

/* ---------------------------------------------------------------------------------------------
 * Stateful RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt: TensorFlow's
 * numbers bit for bit (random_op.cc's PhiloxRandomOp and RandomUniformIntOp on
 * guarded_philox_random.cc).
 *
 * GuardedPhiloxRandom::Init(seed, seed2) makes PhiloxRandom(seed, seed2): key {seed lo, seed hi},
 * counter {0, 0, seed2 lo, seed2 hi}. Each run reserves ReserveRandomOutputs(n, 256), that is
 * n * 256 Philox samples (128-bit blocks), handing the run the generator as it was and skipping
 * it by that much, so the next run continues after them. The run then fills the output exactly
 * as the stateless ops do (FillPhiloxRandom, same distributions), from that generator. The
 * kernel's next_block counts the samples reserved so far: one atomic add per run, so concurrent
 * runs get disjoint streams as under TensorFlow's mutex. */

/* GuardedPhiloxRandom::ReserveSamples128: the generator as the run finds it (key {seed},
 * counter {0, 0, seed2} skipped by all the samples reserved before), the next run's `samples`
 * 128-bit samples further on. */
static tf_philox_t tf_reserve_samples128(rng_state_t *st, uint64_t samples) {
  const uint64_t reserved = atomic_fetch_add(&st->next_block, samples);
  tf_philox_t g = {{st->key[0], st->key[1]}, {0, 0, st->hi[0], st->hi[1]}};
  tf_philox_skip(&g, reserved);
  return g;
}

static weft_status_t *stateful_compute(weft_kernel_ctx_t *ctx, rng_state_t *st, rng_kind_t kind) {
  weft_tensor_view_t sv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
  int64_t dims[WEFT_MAX_RANK], rank = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &rank));
  for (int64_t d = 0; d < rank; d++)
    if (dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape[%lld] = %lld must be non-negative",
                             (long long)d, (long long)dims[d]);
  stateless_job_t j;
  memset(&j, 0, sizeof j);
  j.kind = kind;
  if (kind == RNG_INT) {
    weft_tensor_view_t lo, hi;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &lo));
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &hi));
    if (lo.num_elements != 1 || hi.num_elements != 1 ||
        (lo.dtype != WEFT_DT_INT32 && lo.dtype != WEFT_DT_INT64))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "minval and maxval must be int32 or int64 scalars");
    int64_t a = weft__cpu_index_at(&lo, 0), b = weft__cpu_index_at(&hi, 0);
    if (a >= b)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Need minval < maxval: %lld >= %lld",
                             (long long)a, (long long)b);
    j.dtype = lo.dtype;
    j.int_lo = a;
    j.int_range = (uint64_t)b - (uint64_t)a;
  } else {
    const weft_attrs_t *attrs = H->kernel_attrs(ctx);
    weft_dtype_t dt = WEFT_DT_FLOAT;
    if (H->attr_has(attrs, "dtype")) WEFT_RETURN_IF_ERROR(H->attr_type(attrs, "dtype", &dt));
    if (dt != WEFT_DT_FLOAT && dt != WEFT_DT_DOUBLE && dt != WEFT_DT_HALF &&
        dt != WEFT_DT_BFLOAT16)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "random dtype must be a floating type, got %s",
                             weft__cpu_dtype_name(dt));
    j.dtype = dt;
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, j.dtype, (int)rank, dims, &y));
  j.out = y.data;
  j.n = y.num_elements;
  j.group = j.dtype == WEFT_DT_DOUBLE || j.dtype == WEFT_DT_INT64 ? 2 : 4;
  /* ReserveRandomOutputs(n, 256): this run's generator, and the next run's 256 n samples on. */
  j.gen = tf_reserve_samples128(st, (uint64_t)j.n * 256u);
  int64_t groups = (j.n + j.group - 1) / j.group;
  if (groups == 0) return NULL;
  weft__cpu_parallel(ctx, groups, kind == RNG_INT || kind == RNG_UNIFORM ? 40 : 150,
                     stateless_range, &j);
  return NULL;
}

static weft_status_t *k_uniform(weft_kernel_ctx_t *ctx, void *state) {
  return stateful_compute(ctx, state, RNG_UNIFORM);
}
static weft_status_t *k_normal(weft_kernel_ctx_t *ctx, void *state) {
  return stateful_compute(ctx, state, RNG_NORMAL);
}
static weft_status_t *k_truncated(weft_kernel_ctx_t *ctx, void *state) {
  return stateful_compute(ctx, state, RNG_TRUNCATED);
}
static weft_status_t *k_uniform_int(weft_kernel_ctx_t *ctx, void *state) {
  return stateful_compute(ctx, state, RNG_INT);
}


/* ---------------------------------------------------------------------------------------------
 * RandomGamma, RandomPoisson(V2): TensorFlow's numbers bit for bit (random_op.cc's RandomGammaOp,
 * random_poisson_op.cc's PoissonFunctor).
 *
 * Each run reserves ReserveRandomOutputs(n, 256) as the other stateful kernels do; output number
 * o (counted parameter-major: o = param_idx * samples_per_param + sample_idx, stored at
 * sample_idx * num_params + param_idx) draws from that generator skipped by 256 * o, whatever
 * the threading. Both samplers take doubles from UniformDistribution<double> (one Philox block
 * gives two, Uint64ToDouble of words 0-1 and 2-3) and Gamma its normals from
 * NormalDistribution<double> (one block, BoxMullerDouble, two normals), each buffer used from its
 * last value down, the normals and uniforms from one generator in the order the sampler asks.
 * Where TensorFlow would loop for ever (a NaN or infinite Poisson rate; a count past the output
 * type's largest value) a sample gives up after k_param_max_tries tries (where TensorFlow accepts
 * at least 3 tries in 4) and answers Weft's value: NaN, the infinite rate, or the rate itself
 * (saturating an integer output); a rate of twice the largest value or more answers at once. */

enum { k_param_reserved = 256, k_param_max_tries = 1000 };

/* A sampler's stream: the generator for one output and its two result buffers. */
typedef struct tf_param_stream {
  tf_philox_t gen;
  double uni[2], nrm[2];
  int uni_left, nrm_left;
} tf_param_stream_t;

static inline double tf_param_uniform(tf_param_stream_t *s) { /* the UNIFORM macro */
  if (s->uni_left == 0) {
    philox_out_t r = tf_philox_next(&s->gen);
    s->uni[0] = tf_uint64_to_double(r.v[0], r.v[1]);
    s->uni[1] = tf_uint64_to_double(r.v[2], r.v[3]);
    s->uni_left = 2;
  }
  return s->uni[--s->uni_left];
}

static inline double tf_param_normal(tf_param_stream_t *s) {
  if (s->nrm_left == 0) {
    philox_out_t r = tf_philox_next(&s->gen);
    tf_box_muller_double(r.v[0], r.v[1], r.v[2], r.v[3], &s->nrm[0], &s->nrm[1]);
    s->nrm_left = 2;
  }
  return s->nrm[--s->nrm_left];
}

/* One Gamma(alpha, 1) sample: alpha == 1 is -log(1 - u); otherwise Marsaglia and Tsang with
 * d = alpha - 1/3 (alpha + 2/3 below 1, the result then times b^(1 / alpha)). */
static double tf_gamma_sample(tf_param_stream_t *s, double alpha) {
  if (alpha == 1.0) return -log(1.0 - tf_param_uniform(s));
  const bool less_than_one = alpha < 1;
  const double d = alpha + (less_than_one ? 2.0 / 3 : -1.0 / 3);
  const double c = 1.0 / 3 / sqrt(d);
  for (long tries = 0; tries < k_param_max_tries; tries++) {
    const double x = tf_param_normal(s);
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = tf_param_uniform(s);
    if ((u < 1 - 0.0331 * (x * x) * (x * x)) || (log(u) < 0.5 * x * x + d * (1 - v + log(v)))) {
      double res = d * v;
      if (less_than_one) res *= pow(tf_param_uniform(s), 1 / alpha);
      return res;
    }
  }
  return NAN;
}

/* One Poisson(rate) sample, in double: below 10 the product of uniforms (Knuth), else Hormann's
 * transformed rejection with its squeeze; `highest` is the output type's largest value. */
static double tf_poisson_sample(tf_param_stream_t *s, double rate, double highest) {
  if (rate < 10) {
    const double exp_neg_rate = exp(-rate);
    double prod = 1, x = 0;
    for (;;) {
      prod = prod * tf_param_uniform(s);
      if (prod <= exp_neg_rate && x <= highest) return x;
      x += 1;
    }
  }
  if (rate >= 2 * highest) return rate; /* k <= highest is some 0.5 sqrt(rate) sigmas away */
  const double log_rate = log(rate);
  const double b = 0.931 + 2.53 * sqrt(rate);
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  for (long tries = 0; tries < k_param_max_tries; tries++) {
    double u = tf_param_uniform(s);
    u -= 0.5;
    const double v = tf_param_uniform(s);
    const double u_shifted = 0.5 - fabs(u);
    const double k = floor((2 * a / u_shifted + b) * u + rate + 0.43);
    if (k > highest) continue; /* retry in case of overflow */
    if (u_shifted >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2)) return k;
    if (k < 0 || (u_shifted < 0.013 && v > u_shifted)) continue;
    const double sv = log(v * inv_alpha / (a / (u_shifted * u_shifted) + b));
    const double t = -rate + k * log_rate - lgamma(k + 1);
    if (sv <= t) return k;
  }
  return rate; /* NaN, +inf, or a rate past the output type: TensorFlow never returns */
}

static inline void store_number(weft_dtype_t dt, void *out, int64_t i, double v) {
  switch (dt) {
    case WEFT_DT_INT32:
      ((int32_t *)out)[i] = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : (int32_t)v;
      break;
    case WEFT_DT_INT64:
      ((int64_t *)out)[i] = isnan(v) ? 0 : v >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)v;
      break;
    default: store_float(dt, out, i, v); break;
  }
}

static double dtype_highest(weft_dtype_t dt) { /* Eigen::NumTraits<U>::highest() as a double */
  switch (dt) {
    case WEFT_DT_HALF: return 65504.0;
    case WEFT_DT_FLOAT: return FLT_MAX;
    case WEFT_DT_INT32: return 2147483647.0;
    case WEFT_DT_INT64: return 9223372036854775807.0;
    default: return DBL_MAX;
  }
}

typedef struct param_job {
  tf_philox_t gen; /* this run's generator */
  bool gamma;
  const weft_tensor_view_t *param;
  weft_dtype_t dtype;
  void *out;
  int64_t n_param, per_param; /* per_param: the samples per parameter */
  double highest;
} param_job_t;

static void param_range(void *arg, int64_t b, int64_t e) {
  const param_job_t *j = arg;
  for (int64_t o = b; o < e; o++) {
    const int64_t p_idx = o / j->per_param, s_idx = o % j->per_param;
    tf_param_stream_t s;
    s.gen = j->gen;
    tf_philox_skip(&s.gen, (uint64_t)k_param_reserved * (uint64_t)o);
    s.uni_left = s.nrm_left = 0;
    const double p = weft__cpu_get_double(j->param, p_idx);
    double v;
    if (j->gamma) {
      v = tf_gamma_sample(&s, p);
    } else if (isnan(p) || (isinf(p) && p > 0)) {
      v = p; /* TensorFlow never returns: Weft answers NaN, +inf */
    } else {
      v = tf_poisson_sample(&s, p, j->highest);
    }
    store_number(j->dtype, j->out, s_idx * j->n_param + p_idx, v);
  }
}

/* Output shape = the shape input's value ++ the parameter's shape. */
static weft_status_t *param_compute(weft_kernel_ctx_t *ctx, rng_state_t *st, bool gamma) {
  weft_tensor_view_t sv, param, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &param));
  int64_t dims[WEFT_MAX_RANK], rank = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &rank));
  for (int64_t d = 0; d < rank; d++)
    if (dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape[%lld] = %lld must be non-negative",
                             (long long)d, (long long)dims[d]);
  if (rank + param.rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output rank %lld exceeds the maximum %d",
                           (long long)(rank + param.rank), WEFT_MAX_RANK);
  for (int d = 0; d < param.rank; d++) dims[rank + d] = param.dims[d];
  weft_dtype_t dt = param.dtype;
  if (!gamma)
    WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "dtype", param.dtype, &dt));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, (int)(rank + param.rank), dims, &y));
  if (y.num_elements == 0) return NULL;
  param_job_t j;
  memset(&j, 0, sizeof j);
  j.gamma = gamma;
  j.param = &param;
  j.dtype = dt;
  j.out = y.data;
  j.n_param = param.num_elements;
  j.per_param = y.num_elements / param.num_elements;
  j.highest = dtype_highest(dt);
  /* ReserveRandomOutputs(num_samples * num_params, 256) */
  j.gen = tf_reserve_samples128(st, (uint64_t)y.num_elements * k_param_reserved);
  weft__cpu_parallel(ctx, y.num_elements, 200, param_range, &j);
  return NULL;
}

static weft_status_t *k_gamma(weft_kernel_ctx_t *ctx, void *state) {
  return param_compute(ctx, state, true);
}
static weft_status_t *k_poisson(weft_kernel_ctx_t *ctx, void *state) {
  return param_compute(ctx, state, false);
}

/* RandomShuffle: a uniform permutation of the first dimension (Fisher-Yates). */
static weft_status_t *k_shuffle(weft_kernel_ctx_t *ctx, void *state) {
  rng_state_t *st = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  int64_t n = x.rank == 0 ? 1 : x.dims[0];
  if (n <= 1 || x.num_elements == 0) return weft__cpu_copy_elems(ctx, &y, 0, &x, 0, x.num_elements);
  int64_t row = x.num_elements / n;
  int64_t *perm = malloc((size_t)n * sizeof *perm);
  if (perm == NULL)
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory shuffling %lld rows",
                           (long long)n);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  /* random_shuffle_op.cc: ReserveSamples32(n - 1), then for i = 0 .. n - 2 swap i with
   * i + word % (n - i), the words one at a time (SingleSampleAdapter). */
  tf_philox_t gen = tf_reserve_samples128(st, ((uint64_t)n - 1 + 3) / 4);
  tf_single_t single = {&gen, {{0, 0, 0, 0}}, 4};
  for (int64_t i = 0; i < n - 1; i++) {
    int64_t k = i + (int64_t)(tf_single_next(&single) % (uint32_t)(n - i));
    int64_t t = perm[i];
    perm[i] = perm[k];
    perm[k] = t;
  }
  weft_status_t *s = NULL;
  for (int64_t i = 0; i < n && s == NULL; i++)
    s = weft__cpu_copy_elems(ctx, &y, i * row, &x, perm[i] * row, row);
  free(perm);
  return s;
}

/* Multinomial (multinomial_op.cc): num_samples class ids per row of logits, drawn from
 * softmax(row) over the row's finite logits (a NaN or infinite logit has weight 0, so -inf is
 * never drawn). As TensorFlow, each draw is a uniform times the row's unnormalised total searched
 * in the running sums of exp(logit - max); a row with no finite logit answers num_classes, as
 * TensorFlow's kernel does. The uniforms are SimplePhilox::RandDouble's (two words each) from
 * TensorFlow's generator, the rows one after the other in one stream: TensorFlow's numbers
 * whenever TensorFlow runs the rows as one shard (see k_stateless_multinomial); the rows run on
 * one thread, so the numbers do not depend on the threading. */
typedef struct multinomial_job {
  tf_single_t *tf; /* TensorFlow's stream, one row after the other */
  const weft_tensor_view_t *logits;
  void *out;
  bool out64;
  int64_t classes, samples;
} multinomial_job_t;

static void multinomial_row(const multinomial_job_t *j, int64_t b, double *cdf) {
  const int64_t k = j->classes;
  double max = -DBL_MAX;
  for (int64_t c = 0; c < k; c++) {
    double v = weft__cpu_load_f(j->logits->dtype, j->logits->data, b * k + c);
    if (isfinite(v) && v > max) max = v;
  }
  double total = 0;
  for (int64_t c = 0; c < k; c++) {
    double v = weft__cpu_load_f(j->logits->dtype, j->logits->data, b * k + c);
    if (isfinite(v)) total += exp(v - max);
    cdf[c] = total;
  }
  for (int64_t s = 0; s < j->samples; s++) {
    const uint32_t x0 = tf_single_next(j->tf); /* SimplePhilox::RandDouble */
    const double u = tf_uint64_to_double(x0, tf_single_next(j->tf));
    double find = u * total;
    int64_t lo = 0, hi = k; /* the first running sum above find */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (cdf[mid] > find) hi = mid;
      else lo = mid + 1;
    }
    if (j->out64) ((int64_t *)j->out)[b * j->samples + s] = lo;
    else ((int32_t *)j->out)[b * j->samples + s] = (int32_t)lo;
  }
}

/* MultinomialOp::DoCompute; tf (StatelessMultinomial) or st (Multinomial) gives the numbers. */
static weft_status_t *multinomial_compute(weft_kernel_ctx_t *ctx, rng_state_t *st,
                                          tf_single_t *tf) {
  weft_tensor_view_t logits, nv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &logits));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &nv));
  char sh[CPU_SHAPE_STR_LEN];
  if (logits.rank != 2) {
    weft__cpu_shape_str(logits.rank, logits.dims, sh, sizeof sh);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "logits should be a matrix, got shape %s",
                           sh);
  }
  if (nv.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_samples should be a scalar.");
  const int64_t samples = weft__cpu_index_at(&nv, 0);
  if (samples < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_samples should be nonnegative, got %lld", (long long)samples);
  for (int d = 0; d < 2; d++)
    if (logits.dims[d] > INT32_MAX) {
      weft__cpu_shape_str(logits.rank, logits.dims, sh, sizeof sh);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "logits.shape = %s too large for int", sh);
    }
  const int64_t batch = logits.dims[0], classes = logits.dims[1];
  if (classes <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_classes should be positive, got %lld",
                           (long long)classes);
  weft_dtype_t odt = WEFT_DT_INT64;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "output_dtype"))
    WEFT_RETURN_IF_ERROR(H->attr_type(attrs, "output_dtype", &odt));
  if (odt != WEFT_DT_INT32 && odt != WEFT_DT_INT64)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_dtype must be int32 or int64, got "
                           "%s", weft__cpu_dtype_name(odt));
  const int64_t dims[2] = {batch, samples};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, odt, 2, dims, &y));
  if (y.num_elements == 0) return NULL;
  tf_philox_t gen;
  tf_single_t single;
  if (st != NULL) {
    /* Multinomial: ReserveRandomOutputs(batch * ceil4(num_samples) * 2, 256) (two words per
     * sample on the CPU), then the same draws as StatelessMultinomial's from that generator. */
    const uint64_t ceil4 = ((uint64_t)samples + 3) / 4 * 4 * 2;
    gen = tf_reserve_samples128(st, (uint64_t)batch * ceil4 * 256u);
    single = (tf_single_t){&gen, {{0, 0, 0, 0}}, 4};
    tf = &single;
  }
  multinomial_job_t j = {tf, &logits, y.data, odt == WEFT_DT_INT64, classes, samples};
  double *cdf;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)classes, (void **)&cdf));
  for (int64_t b = 0; b < batch; b++) multinomial_row(&j, b, cdf);
  return NULL;
}

static weft_status_t *k_multinomial(weft_kernel_ctx_t *ctx, void *state) {
  return multinomial_compute(ctx, state, NULL);
}

/* StatelessMultinomial: the seed's checks and GenerateKey, then Multinomial's kernel drawing from
 * TensorFlow's generator. TensorFlow shards the rows over threads, each shard skipping its
 * generator by start_row * (num_samples + 3) / 4 blocks; this is its single-shard stream (all
 * rows from counter 0, one double per sample), which is what TensorFlow computes whenever it runs
 * the rows as one shard (a batch of 1, or batch * 50 * (num_samples * log2(classes) + classes)
 * below 10000, or one thread). */
static weft_status_t *k_stateless_multinomial(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  uint64_t seed[2];
  WEFT_RETURN_IF_ERROR(stateless_seed(ctx, 2, seed));
  tf_philox_t gen;
  tf_generate_key(seed[0], seed[1], &gen);
  tf_single_t single = {&gen, {{0, 0, 0, 0}}, 4};
  return multinomial_compute(ctx, NULL, &single);
}


/* ---------------------------------------------------------------------------------------------
 * Candidate samplers (candidate_sampler_ops.cc, range_sampler.cc).
 *
 * One set of num_sampled candidates per run, drawn from [0, range_max) with the uniform or the
 * log-uniform (Zipfian) base distribution, with replacement, or without (unique) by rejection.
 * Expected counts are RangeSampler::SampleBatchGetExpectedCountAvoid's: p * num_sampled when
 * every try was kept (always so without unique), else 1 - (1 - p)^num_tries computed in float
 * as -expm1(num_tries * log1p(-p)), p being the sampler's float probability.
 *
 * The stream is not TensorFlow's: each run reserves 512 * num_sampled Philox blocks (two doubles
 * each, TensorFlow's reservation of 2048 * num_sampled 32-bit words), and draws past them move
 * on to the next attempt number rather than reuse bits. A fixed seed / seed2 therefore gives the
 * same candidates in every session, and successive runs of a node differ. */

typedef struct cand_stream {
  const rng_state_t *st;
  uint64_t base, reserved, k; /* k: doubles drawn so far */
  philox_out_t r;
} cand_stream_t;

static double cand_unit(cand_stream_t *s) { /* [0, 1) */
  uint64_t blk = s->k / 2;
  int half = (int)(s->k % 2);
  if (half == 0)
    s->r = rng_block(s->st, s->base + blk % s->reserved, (uint32_t)(blk / s->reserved));
  s->k++;
  return u64_to_unit_double(((uint64_t)s->r.v[2 * half] << 32) | s->r.v[2 * half + 1]);
}

typedef struct cand_sampler {
  bool log_uniform;
  int64_t range;
  double log_range; /* log1p(range): LogUniformSampler's log_range_ */
} cand_sampler_t;

static int64_t cand_sample(const cand_sampler_t *cs, cand_stream_t *s) {
  double u = cand_unit(s);
  if (!cs->log_uniform) {
    int64_t v = (int64_t)(u * (double)cs->range);
    return v < cs->range ? v : cs->range - 1; /* u * range may round up to range */
  }
  /* exp(u * log(range + 1)) - 1 is in [0, range] up to rounding: TensorFlow folds range back
   * to 0 with a modulo, kept here. */
  const int64_t v = (int64_t)exp(u * cs->log_range) - 1;
  return v % cs->range;
}

/* The samplers' Probability(value), in float as range_sampler.cc returns it; values outside
 * [0, range) get whatever the formula gives, as in TensorFlow. */
static float cand_probability(const cand_sampler_t *cs, int64_t v) {
  if (!cs->log_uniform) return (float)(1.0 / (double)cs->range);
  return (float)(log(((double)v + 2.0) / ((double)v + 1.0)) / cs->log_range);
}

static float cand_expected_count(float p, int64_t batch, int64_t num_tries) {
  if (num_tries == batch) return p * (float)batch;
  return -expm1f((float)num_tries * log1pf(-p));
}

/* An open-addressing set of non-negative int64 (-1 marks an empty slot), sized for n keys. */
typedef struct i64_set {
  int64_t *slot;
  uint64_t mask;
} i64_set_t;

static bool i64_set_insert(i64_set_t *set, int64_t v) { /* true when v was new */
  uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15ull;
  for (uint64_t i = (h ^ (h >> 29)) & set->mask;; i = (i + 1) & set->mask) {
    if (set->slot[i] == v) return false;
    if (set->slot[i] < 0) {
      set->slot[i] = v;
      return true;
    }
  }
}

static weft_status_t *candidate_sampler(weft_kernel_ctx_t *ctx, rng_state_t *st, bool log_uniform) {
  /* The op definition makes these attrs required; 0 answers the >= 1 check below. */
  const int64_t num_true = weft__cpu_attr_int(ctx, "num_true", 0);
  const int64_t num_sampled = weft__cpu_attr_int(ctx, "num_sampled", 0);
  const int64_t range = weft__cpu_attr_int(ctx, "range_max", 0);
  const bool unique = weft__cpu_attr_bool(ctx, "unique", false);
  if (num_sampled < 1 || num_true < 1 || range < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_true (%lld), num_sampled (%lld) and range_max (%lld) must be >= 1",
                           (long long)num_true, (long long)num_sampled, (long long)range);
  weft_tensor_view_t tc, cand, true_ec, samp_ec;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tc));
  if (tc.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "true_classes must be a matrix");
  if (tc.dims[1] != num_true)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "true_classes must have num_true columns, expected: %lld was: %lld",
                           (long long)tc.dims[1], (long long)num_true);
  if (unique && num_sampled > range)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Sampler's range is too small.");
  /* The output holds num_sampled int64 and floats: refuse a count whose bytes overflow. */
  if ((uint64_t)num_sampled > SIZE_MAX / 16)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_sampled = %lld is too large",
                           (long long)num_sampled);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 1, &num_sampled, &cand));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, WEFT_DT_FLOAT, 2, tc.dims, &true_ec));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, WEFT_DT_FLOAT, 1, &num_sampled, &samp_ec));
  cand_sampler_t cs = {log_uniform, range, log1p((double)range)};
  cand_stream_t s = {st, 0, 0, 0, {{0, 0, 0, 0}}};
  s.reserved = (uint64_t)num_sampled <= UINT64_MAX / 512 ? 512 * (uint64_t)num_sampled
                                                           : UINT64_MAX;
  s.base = atomic_fetch_add(&st->next_block, s.reserved);
  int64_t *out = cand.data;
  int64_t num_tries = num_sampled;
  if (unique) {
    uint64_t cap = 2;
    while (cap < 2 * (uint64_t)num_sampled) cap *= 2;
    i64_set_t set;
    WEFT_RETURN_IF_ERROR(
        H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)cap, (void **)&set.slot));
    memset(set.slot, 0xff, sizeof(int64_t) * (size_t)cap);
    set.mask = cap - 1;
    num_tries = 0;
    for (int64_t picked = 0; picked < num_sampled;) {
      num_tries++;
      int64_t v = cand_sample(&cs, &s);
      if (i64_set_insert(&set, v)) out[picked++] = v;
    }
  } else {
    for (int64_t i = 0; i < num_sampled; i++) out[i] = cand_sample(&cs, &s);
  }
  float *sec = samp_ec.data, *tec = true_ec.data;
  for (int64_t i = 0; i < num_sampled; i++)
    sec[i] = cand_expected_count(cand_probability(&cs, out[i]), num_sampled, num_tries);
  const int64_t *tv = tc.data;
  for (int64_t i = 0; i < tc.num_elements; i++)
    tec[i] = cand_expected_count(cand_probability(&cs, tv[i]), num_sampled, num_tries);
  return NULL;
}

static weft_status_t *k_uniform_candidates(weft_kernel_ctx_t *ctx, void *state) {
  return candidate_sampler(ctx, state, false);
}
static weft_status_t *k_log_uniform_candidates(weft_kernel_ctx_t *ctx, void *state) {
  return candidate_sampler(ctx, state, true);
}

/* ComputeAccidentalHits: for every true class (row i, column j) that is also a sampled
 * candidate, the entry (indices = i, ids = the candidate's position, weights = -FLT_MAX), in row
 * then column order. A candidate sampled twice answers its last position, as TensorFlow's map
 * from candidate to position (later positions overwrite earlier ones). */
typedef struct cand_pos {
  int64_t value, pos;
} cand_pos_t;

static int cand_pos_cmp(const void *a, const void *b) {
  const cand_pos_t *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The last position of v among the sorted candidates, or -1. */
static int64_t cand_find(const cand_pos_t *sorted, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n; /* first entry with value > v */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid].value <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && sorted[lo - 1].value == v ? sorted[lo - 1].pos : -1;
}

static weft_status_t *k_accidental_hits(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const int64_t num_true = weft__cpu_attr_int(ctx, "num_true", 0);
  weft_tensor_view_t tc, sc, yi, yid, yw;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tc));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &sc));
  if (tc.rank != 2 || tc.dims[1] != num_true)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "true_candidates must be a batch_size * num_true matrix");
  if (sc.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "sampled_candidates must be a vector, which is typically an output "
                           "from CandidateSampler");
  if (tc.dims[0] > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "true_classes has %lld rows, more than int32 indices hold",
                           (long long)tc.dims[0]);
  const int64_t n = sc.num_elements;
  cand_pos_t *sorted = NULL;
  if (n > 0) {
    if ((uint64_t)n > SIZE_MAX / sizeof *sorted)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%lld sampled candidates are too many",
                             (long long)n);
    WEFT_RETURN_IF_ERROR(
        H->kernel_scratch(ctx, sizeof *sorted * (size_t)n, (void **)&sorted));
    const int64_t *sv = sc.data;
    for (int64_t i = 0; i < n; i++) sorted[i] = (cand_pos_t){sv[i], i};
    qsort(sorted, (size_t)n, sizeof *sorted, cand_pos_cmp);
  }
  const int64_t *tv = tc.data;
  int64_t hits = 0;
  for (int64_t i = 0; i < tc.num_elements && n > 0; i++) hits += cand_find(sorted, n, tv[i]) >= 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT32, 1, &hits, &yi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, WEFT_DT_INT64, 1, &hits, &yid));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, WEFT_DT_FLOAT, 1, &hits, &yw));
  int32_t *oi = yi.data;
  int64_t *oid = yid.data;
  float *ow = yw.data;
  for (int64_t i = 0, h = 0; i < tc.num_elements && h < hits; i++) {
    int64_t pos = cand_find(sorted, n, tv[i]);
    if (pos < 0) continue;
    oi[h] = (int32_t)(i / num_true);
    oid[h] = pos;
    ow[h] = -FLT_MAX;
    h++;
  }
  return NULL;
}

weft_status_t *weft__cpu_register_random(const weft_registrar_t *reg) {
  static const char *const hm_shape[] = {"shape", NULL};
  static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_BFLOAT16};
  static const weft_dtype_t int_types[] = {WEFT_DT_INT32, WEFT_DT_INT64};
  weft_cpu_kernel_spec_t spec;
  memset(&spec, 0, sizeof spec);
  spec.host_memory = hm_shape;
  spec.create = rng_create;
  spec.destroy = rng_destroy;
  spec.type_attr = "dtype";
  spec.dtypes = float_types;
  spec.n_dtypes = 4;
  spec.op = "RandomUniform";
  spec.compute = k_uniform;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "RandomStandardNormal";
  spec.compute = k_normal;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "TruncatedNormal";
  spec.compute = k_truncated;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "RandomUniformInt";
  spec.compute = k_uniform_int;
  spec.type_attr = "Tout";
  spec.dtypes = int_types;
  spec.n_dtypes = 2;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  static const weft_dtype_t gamma_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF};
  static const weft_dtype_t poisson_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                               WEFT_DT_INT32, WEFT_DT_INT64};
  spec.op = "RandomGamma";
  spec.compute = k_gamma;
  spec.type_attr = "T";
  spec.dtypes = gamma_types;
  spec.n_dtypes = 3;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "RandomPoisson";
  spec.compute = k_poisson;
  spec.type_attr = "dtype";
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "RandomPoissonV2";
  spec.dtypes = poisson_types;
  spec.n_dtypes = 5;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "RandomShuffle";
  spec.compute = k_shuffle;
  spec.host_memory = NULL;
  spec.type_attr = "T";
  spec.dtypes = weft__cpu_all_types;
  spec.n_dtypes = weft__cpu_n_all_types;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  /* multinomial_op.cc's CPU kernel takes the floating types only. */
  static const char *const hm_num[] = {"num_samples", NULL};
  spec.op = "Multinomial";
  spec.compute = k_multinomial;
  spec.host_memory = hm_num;
  spec.dtypes = float_types;
  spec.n_dtypes = 4;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  /* The stateless ops keep no state; their shape, seed and bounds live in host memory, as
   * TensorFlow registers them. */
  static const char *const hm_stateless[] = {"shape", "seed", NULL};
  static const char *const hm_stateless_int[] = {"shape", "seed", "minval", "maxval", NULL};
  static const char *const hm_stateless_mn[] = {"num_samples", "seed", NULL};
  spec.create = NULL;
  spec.destroy = NULL;
  spec.host_memory = hm_stateless;
  spec.type_attr = "dtype";
  spec.dtypes = float_types;
  spec.n_dtypes = 4;
  spec.op = "StatelessRandomUniform";
  spec.compute = k_stateless_uniform;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "StatelessRandomNormal";
  spec.compute = k_stateless_normal;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "StatelessTruncatedNormal";
  spec.compute = k_stateless_truncated;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "StatelessRandomUniformInt";
  spec.compute = k_stateless_uniform_int;
  spec.host_memory = hm_stateless_int;
  spec.dtypes = int_types;
  spec.n_dtypes = 2;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "StatelessMultinomial";
  spec.compute = k_stateless_multinomial;
  spec.host_memory = hm_stateless_mn;
  spec.type_attr = "T";
  spec.dtypes = float_types;
  spec.n_dtypes = 4;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.create = rng_create;
  spec.destroy = rng_destroy;
  spec.host_memory = NULL;
  spec.type_attr = NULL;
  spec.dtypes = NULL;
  spec.n_dtypes = 0;
  spec.op = "UniformCandidateSampler";
  spec.compute = k_uniform_candidates;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "LogUniformCandidateSampler";
  spec.compute = k_log_uniform_candidates;
  WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  spec.op = "ComputeAccidentalHits";
  spec.compute = k_accidental_hits;
  spec.create = NULL;
  spec.destroy = NULL;
  return weft__cpu_register(reg, &spec);
}

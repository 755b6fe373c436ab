/* ops_random.c: the standard random ops (RandomStandardNormal, RandomUniform, RandomUniformInt,
 * TruncatedNormal, RandomGamma, RandomPoisson(V2), RandomShuffle, Multinomial) and the candidate
 * samplers of candidate_sampling_ops.cc (UniformCandidateSampler, LogUniformCandidateSampler,
 * ComputeAccidentalHits) with TensorFlow's args and attrs. The random ones are stateful: two
 * nodes with the same inputs must not be merged, and their values are never constant-folded.
 *
 * The stateless ones of stateless_random_ops.cc (StatelessRandomUniform, StatelessRandomNormal,
 * StatelessTruncatedNormal, StatelessRandomUniformInt, StatelessMultinomial) take their seed as
 * a [2] input and are pure functions of their inputs, as in TensorFlow: not stateful. */
#include "ops_shape.h"

/* The output shape is the value of the 1-D shape input. */
static weft_status_t *random_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *random_int_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t minval, maxval;
  weft__sh_input(ctx, 1, &minval);
  weft__sh_input(ctx, 2, &maxval);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &minval, 0, "minval"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &maxval, 0, "maxval"));
  return random_shape(ctx);
}

/* StatelessShape: the seed input (index seed_index) must be a vector of 2. */
static weft_status_t *stateless_seed_check(weft_shape_ctx_t *ctx, int seed_index) {
  weft__shape_t seed;
  weft__sh_input(ctx, seed_index, &seed);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &seed, 1, "seed"));
  if (seed.rank == 1 && seed.dims[0] != WEFT_DIM_UNKNOWN && seed.dims[0] != 2)
    return weft__sh_error(ctx, "Dimension must be 2 but is %" G_GINT64_FORMAT, seed.dims[0]);
  return NULL;
}

static weft_status_t *stateless_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(stateless_seed_check(ctx, 1));
  return random_shape(ctx);
}

static weft_status_t *stateless_int_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t minval, maxval;
  weft__sh_input(ctx, 2, &minval);
  weft__sh_input(ctx, 3, &maxval);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &minval, 0, "minval"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &maxval, 0, "maxval"));
  return stateless_shape(ctx);
}

/* RandomGamma, RandomPoisson(V2): one sample array of the shape input's value per element of
 * the parameter input (1): output shape = shape ++ shape(param). */
static weft_status_t *random_param_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out, param;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  weft__sh_input(ctx, 1, &param);
  if (out.rank < 0 || param.rank < 0) return weft__sh_output(ctx, 0, &(weft__shape_t){.rank = -1});
  if (out.rank + param.rank > WEFT_MAX_RANK)
    return weft__sh_error(ctx, "output rank %d exceeds the maximum %d", out.rank + param.rank,
                          WEFT_MAX_RANK);
  for (int i = 0; i < param.rank; i++) out.dims[out.rank + i] = param.dims[i];
  out.rank += param.rank;
  return weft__sh_output(ctx, 0, &out);
}

/* Multinomial: logits [batch, classes] and a scalar num_samples -> [batch, num_samples], the
 * sample count known when num_samples is a constant. */
static weft_status_t *multinomial_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t logits, num;
  weft__sh_input(ctx, 0, &logits);
  weft__sh_input(ctx, 1, &num);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &logits, 2, "logits"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &num, 0, "num_samples"));
  weft__shape_t out = weft__sh_unknown_dims(2);
  if (logits.rank == 2) out.dims[0] = logits.dims[0];
  int64_t *vals = NULL, n = 0;
  if (weft__sh_const_ints(ctx, 1, &vals, &n, NULL)) {
    int64_t v = n == 1 ? vals[0] : WEFT_DIM_UNKNOWN;
    g_free(vals);
    if (n == 1 && v < 0)
      return weft__sh_error(ctx, "Dimension size, given by scalar input 1, must be "
                            "non-negative but is %" G_GINT64_FORMAT, v);
    out.dims[1] = v;
  }
  return weft__sh_output(ctx, 0, &out);
}

/* StatelessMultinomial: Multinomial's shape after the seed check (seed is input 2). */
static weft_status_t *stateless_multinomial_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(stateless_seed_check(ctx, 2));
  return multinomial_shape(ctx);
}

/* The candidate samplers (CandidateSamplerShapeFn): true_classes [batch, num_true] ->
 * sampled_candidates [num_sampled], true_expected_count [batch, num_true], sampled_expected_count
 * [num_sampled]. */
static weft_status_t *candidate_sampler_shape(weft_shape_ctx_t *ctx) {
  const int64_t num_sampled = weft__sh_attr_int(ctx, "num_sampled", WEFT_DIM_UNKNOWN);
  const int64_t num_true = weft__sh_attr_int(ctx, "num_true", WEFT_DIM_UNKNOWN);
  weft__shape_t tc;
  weft__sh_input(ctx, 0, &tc);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &tc, 2, "true_classes"));
  weft__shape_t v = {.rank = 1, .dims = {num_sampled}};
  weft__shape_t m = {.rank = 2, .dims = {tc.rank == 2 ? tc.dims[0] : WEFT_DIM_UNKNOWN, num_true}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &v));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &m));
  return weft__sh_output(ctx, 2, &v);
}

/* ComputeAccidentalHits: true_classes must be [batch, num_true] and sampled_candidates a
 * vector; the three outputs are vectors of the (data-dependent) number of hits. */
static weft_status_t *accidental_hits_shape(weft_shape_ctx_t *ctx) {
  const int64_t num_true = weft__sh_attr_int(ctx, "num_true", WEFT_DIM_UNKNOWN);
  weft__shape_t tc, sc;
  weft__sh_input(ctx, 0, &tc);
  weft__sh_input(ctx, 1, &sc);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &tc, 2, "true_classes"));
  if (tc.rank == 2 && tc.dims[1] != WEFT_DIM_UNKNOWN && tc.dims[1] != num_true)
    return weft__sh_error(ctx, "Dimension 1 of true_classes must be num_true = %" G_GINT64_FORMAT
                          " but is %" G_GINT64_FORMAT, num_true, tc.dims[1]);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &sc, 1, "sampled_candidates"));
  weft__shape_t v = weft__sh_unknown_dims(1);
  for (int i = 0; i < 3; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, &v));
  return NULL;
}

#define CANDIDATE_SAMPLER(name)                                                               \
  WEFT__OP(name, WEFT__SPECS("true_classes: int64"),                                          \
           WEFT__SPECS("sampled_candidates: int64", "true_expected_count: float",             \
                       "sampled_expected_count: float"),                                      \
           WEFT__SPECS("num_true: int >= 1", "num_sampled: int >= 1", "unique: bool",          \
                       "range_max: int >= 1", "seed: int = 0", "seed2: int = 0"),             \
           1, candidate_sampler_shape)

#define RANDOM_FLOAT(name)                                                                    \
  WEFT__OP(name, WEFT__SPECS("shape: T"), WEFT__SPECS("output: dtype"),                        \
           WEFT__SPECS("seed: int = 0", "seed2: int = 0",                                    \
                       "dtype: {half, bfloat16, float, double}",                            \
                       "T: {int32, int64}"),                                                  \
           1, random_shape)

#define STATELESS_FLOAT(name)                                                                 \
  WEFT__OP(name, WEFT__SPECS("shape: T", "seed: Tseed"), WEFT__SPECS("output: dtype"),          \
           WEFT__SPECS("dtype: {half, bfloat16, float, double} = DT_FLOAT",                     \
                       "T: {int32, int64} = DT_INT32", "Tseed: {int32, int64} = DT_INT64"),     \
           0, stateless_shape)

const weft_op_def_t weft__ops_random[] = {
    RANDOM_FLOAT("RandomStandardNormal"),
    RANDOM_FLOAT("RandomUniform"),
    RANDOM_FLOAT("TruncatedNormal"),
    WEFT__OP("RandomUniformInt", WEFT__SPECS("shape: T", "minval: Tout", "maxval: Tout"),
             WEFT__SPECS("output: Tout"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "Tout: {int32, int64}",
                         "T: {int32, int64}"),
             1, random_int_shape),
    WEFT__OP("RandomGamma", WEFT__SPECS("shape: S", "alpha: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "S: {int32, int64}",
                         "T: {half, float, double}"),
             1, random_param_shape),
    WEFT__OP("RandomPoisson", WEFT__SPECS("shape: S", "rate: dtype"), WEFT__SPECS("output: dtype"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "S: {int32, int64}",
                         "dtype: {half, float, double}"),
             1, random_param_shape),
    WEFT__OP("RandomPoissonV2", WEFT__SPECS("shape: S", "rate: R"), WEFT__SPECS("output: dtype"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "S: {int32, int64}",
                         "R: {half, float, double, int32, int64} = DT_DOUBLE",
                         "dtype: {half, float, double, int32, int64} = DT_INT64"),
             1, random_param_shape),
    WEFT__OP("RandomShuffle", WEFT__SPECS("value: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "T: type"), 1,
             weft__shape_fn_unchanged),
    WEFT__OP("Multinomial", WEFT__SPECS("logits: T", "num_samples: int32"),
             WEFT__SPECS("output: output_dtype"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "T: realnumbertype",
                         "output_dtype: {int32, int64} = DT_INT64"),
             1, multinomial_shape),
    STATELESS_FLOAT("StatelessRandomUniform"),
    STATELESS_FLOAT("StatelessRandomNormal"),
    STATELESS_FLOAT("StatelessTruncatedNormal"),
    WEFT__OP("StatelessRandomUniformInt",
             WEFT__SPECS("shape: T", "seed: Tseed", "minval: dtype", "maxval: dtype"),
             WEFT__SPECS("output: dtype"),
             WEFT__SPECS("dtype: {int32, int64}", "T: {int32, int64}",
                         "Tseed: {int32, int64} = DT_INT64"),
             0, stateless_int_shape),
    WEFT__OP("StatelessMultinomial", WEFT__SPECS("logits: T", "num_samples: int32", "seed: Tseed"),
             WEFT__SPECS("output: output_dtype"),
             WEFT__SPECS("T: realnumbertype", "Tseed: {int32, int64} = DT_INT64",
                         "output_dtype: {int32, int64} = DT_INT64"),
             0, stateless_multinomial_shape),
    CANDIDATE_SAMPLER("UniformCandidateSampler"),
    CANDIDATE_SAMPLER("LogUniformCandidateSampler"),
    /* seed and seed2 are unused, as in TensorFlow; the op draws nothing, so it is not stateful. */
    WEFT__OP("ComputeAccidentalHits",
             WEFT__SPECS("true_classes: int64", "sampled_candidates: int64"),
             WEFT__SPECS("indices: int32", "ids: int64", "weights: float"),
             WEFT__SPECS("num_true: int", "seed: int = 0", "seed2: int = 0"), 0,
             accidental_hits_shape),
    WEFT__OPS_END,
};

/* ops_string.c: TensorFlow's string, logging and file ops (string_ops.cc, logging_ops.cc,
 * io_ops.cc, parsing_ops.cc's DecodeRaw) and its regular-expression ops (RegexReplace,
 * RegexFullMatch and their Static* forms) with its names, args, attrs and shape functions, so a
 * GraphDef that prints, formats or parses strings imports as it is. Print, PrintV2 and WriteFile
 * are stateful (never pruned as unused or folded). Kernels: plugins/cpu/cpu_string.c; the regex
 * ops' are the core's (core/src/exec/regex_kernels.c: GRegex, which a plugin cannot link). */
#include "ops_shape.h"

/* Output 0: the merge of every non-scalar input (scalars broadcast), a scalar when all are. */
static weft_status_t *string_join_shape(weft_shape_ctx_t *ctx) {
  return weft__sh_merge_non_scalars(ctx, "the inputs");
}

/* Substr: input's shape; pos and len must be scalars or of input's shape. */
static weft_status_t *substr_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, pos, len;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &pos);
  weft__sh_input(ctx, 2, &len);
  weft__shape_t m;
  weft_status_t *st = weft__sh_merge(ctx, &pos, &len, &m, "pos and len");
  if (st) return st;
  return weft__sh_output(ctx, 0, &in);
}

/* DecodeRaw: input's shape plus one unknown dim (the values per string). */
static weft_status_t *decode_raw_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (in.rank < 0 || in.rank >= WEFT_MAX_RANK) return weft__sh_output(ctx, 0, &in);
  in.dims[in.rank++] = WEFT_DIM_UNKNOWN;
  return weft__sh_output(ctx, 0, &in);
}

/* StringSplit / StringSplitV2: indices [?, 2], values [?], shape [2]. */
static weft_status_t *string_split_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, delim;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &delim);
  weft_status_t *st = weft__sh_with_rank(ctx, &in, 1, "input");
  if (!st) st = weft__sh_with_rank(ctx, &delim, 0, "delimiter");
  if (st) return st;
  weft__shape_t idx = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, 2}};
  weft__shape_t vals = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  weft__shape_t shape = {.rank = 1, .dims = {2}};
  st = weft__sh_output(ctx, 0, &idx);
  if (!st) st = weft__sh_output(ctx, 1, &vals);
  if (!st) st = weft__sh_output(ctx, 2, &shape);
  return st;
}

/* ReduceJoin: known only when the reduction indices are constant. */
static weft_status_t *reduce_join_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *axes = NULL, n = 0;
  if (in.rank < 0 || !weft__sh_const_ints(ctx, 1, &axes, &n, NULL)) {
    weft__shape_t unknown = {.rank = -1};
    return weft__sh_output(ctx, 0, &unknown);
  }
  bool keep = weft__sh_attr_bool(ctx, "keep_dims", false), reduced[WEFT_MAX_RANK] = {false};
  weft_status_t *st = NULL;
  for (int64_t i = 0; i < n && !st; i++) {
    int a;
    st = weft__sh_axis(ctx, axes[i], in.rank, "reduction_indices", &a);
    if (!st) reduced[a] = true;
  }
  g_free(axes);
  if (st) return st;
  weft__shape_t out = {.rank = 0};
  for (int d = 0; d < in.rank; d++) {
    if (!reduced[d]) out.dims[out.rank++] = in.dims[d];
    else if (keep) out.dims[out.rank++] = 1;
  }
  return weft__sh_output(ctx, 0, &out);
}

/* RegexReplace (pattern, rewrite) and RegexFullMatch (pattern): inputs 1 .. n_scalars are
 * scalars; the output has the input's shape. */
static weft_status_t *regex_shape(weft_shape_ctx_t *ctx, int n_scalars) {
  static const char *const names[] = {"pattern", "rewrite"};
  weft__shape_t in, s;
  for (int i = 1; i <= n_scalars; i++) {
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i - 1]));
  }
  weft__sh_input(ctx, 0, &in);
  return weft__sh_output(ctx, 0, &in);
}

static weft_status_t *regex_replace_shape(weft_shape_ctx_t *ctx) { return regex_shape(ctx, 2); }
static weft_status_t *regex_match_shape(weft_shape_ctx_t *ctx) { return regex_shape(ctx, 1); }

static weft_status_t *no_outputs_shape(weft_shape_ctx_t *ctx) {
  (void)ctx;
  return NULL;
}

#define NUMERIC_AND_BOOL                                                                       \
  "T: {float, double, half, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, "     \
  "uint64, bool}"

const weft_op_def_t weft__ops_string[] = {
    WEFT__OP("StringJoin", WEFT__SPECS("inputs: N * string"), WEFT__SPECS("output: string"),
             WEFT__SPECS("N: int >= 1", "separator: string = ''"), 0, string_join_shape),
    WEFT__OP("AsString", WEFT__SPECS("input: T"), WEFT__SPECS("output: string"),
             WEFT__SPECS(NUMERIC_AND_BOOL, "precision: int = -1", "scientific: bool = false",
                         "shortest: bool = false", "width: int = -1", "fill: string = ''"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("StringToNumber", WEFT__SPECS("string_tensor: string"),
             WEFT__SPECS("output: out_type"),
             WEFT__SPECS("out_type: {float, double, int32, int64} = DT_FLOAT"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("StringLength", WEFT__SPECS("input: string"), WEFT__SPECS("output: int32"),
             WEFT__SPECS("unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"), 0, weft__shape_fn_unchanged),
    WEFT__OP("Substr", WEFT__SPECS("input: string", "pos: T", "len: T"),
             WEFT__SPECS("output: string"),
             WEFT__SPECS("T: {int32, int64}", "unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"), 0,
             substr_shape),
    WEFT__OP("StringSplit", WEFT__SPECS("input: string", "delimiter: string"),
             WEFT__SPECS("indices: int64", "values: string", "shape: int64"),
             WEFT__SPECS("skip_empty: bool = true"), 0, string_split_shape),
    WEFT__OP("StringSplitV2", WEFT__SPECS("input: string", "sep: string"),
             WEFT__SPECS("indices: int64", "values: string", "shape: int64"),
             WEFT__SPECS("maxsplit: int = -1"), 0, string_split_shape),
    WEFT__OP("StringStrip", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__NO_SPECS, 0, weft__shape_fn_unchanged),
    WEFT__OP("StringUpper", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__SPECS("encoding: string = ''"), 0, weft__shape_fn_unchanged),
    WEFT__OP("StringLower", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__SPECS("encoding: string = ''"), 0, weft__shape_fn_unchanged),
    WEFT__OP("ReduceJoin", WEFT__SPECS("inputs: string", "reduction_indices: int32"),
             WEFT__SPECS("output: string"),
             WEFT__SPECS("keep_dims: bool = false", "separator: string = ''"), 0,
             reduce_join_shape),
    WEFT__OP("EncodeBase64", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__SPECS("pad: bool = false"), 0, weft__shape_fn_unchanged),
    WEFT__OP("DecodeBase64", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__NO_SPECS, 0, weft__shape_fn_unchanged),
    WEFT__OP("ReadFile", WEFT__SPECS("filename: string"), WEFT__SPECS("contents: string"),
             WEFT__NO_SPECS, 0, weft__shape_fn_scalar),
    WEFT__OP("WriteFile", WEFT__SPECS("filename: string", "contents: string"), WEFT__NO_SPECS,
             WEFT__NO_SPECS, 1, no_outputs_shape),
    WEFT__OP("DecodeRaw", WEFT__SPECS("bytes: string"), WEFT__SPECS("output: out_type"),
             WEFT__SPECS("out_type: {half, float, double, int32, uint16, uint8, int16, int8, "
                         "int64, bfloat16}",
                         "little_endian: bool = true"),
             0, decode_raw_shape),
    WEFT__OP("Print", WEFT__SPECS("input: T", "data: U"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "U: list(type) >= 0", "message: string = ''",
                         "first_n: int = -1", "summarize: int = 3"),
             1, weft__shape_fn_unchanged),
    WEFT__OP("PrintV2", WEFT__SPECS("input: string"), WEFT__NO_SPECS,
             WEFT__SPECS("output_stream: string = 'stderr'", "end: string = '\\n'"), 1,
             no_outputs_shape),
    WEFT__OP("StringFormat", WEFT__SPECS("inputs: T"), WEFT__SPECS("output: string"),
             WEFT__SPECS("T: list(type) >= 0", "template: string = '%s'",
                         "placeholder: string = '%s'", "summarize: int = 3"),
             0, weft__shape_fn_scalar),
    /* Kernels: core/src/exec/regex_kernels.c (GRegex, with RE2's syntax: docs/strings.md). */
    WEFT__OP("RegexReplace", WEFT__SPECS("input: string", "pattern: string", "rewrite: string"),
             WEFT__SPECS("output: string"), WEFT__SPECS("replace_global: bool = true"), 0,
             regex_replace_shape),
    WEFT__OP("StaticRegexReplace", WEFT__SPECS("input: string"), WEFT__SPECS("output: string"),
             WEFT__SPECS("pattern: string", "rewrite: string", "replace_global: bool = true"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("RegexFullMatch", WEFT__SPECS("input: string", "pattern: string"),
             WEFT__SPECS("output: bool"), WEFT__NO_SPECS, 0, regex_match_shape),
    WEFT__OP("StaticRegexFullMatch", WEFT__SPECS("input: string"), WEFT__SPECS("output: bool"),
             WEFT__SPECS("pattern: string"), 0, weft__shape_fn_unchanged),
    WEFT__OPS_END,
};

/* Tests for core/src/graph's op definitions: the REGISTER_OP spec parser (valid specs and the
 * exact errors for bad ones), the op registry, and the standard ops' shape functions exercised
 * through the public graph API (broadcasting, MatMul, reductions, Reshape, ConcatV2, Transpose,
 * ExpandDims, Squeeze, StridedSlice, unknown dims, ...). */
#include <stdarg.h>
#include <string.h>

#include "graph/graph_internal.h"

/* Asserts st has `code` and a message containing `needle`, then frees it. */
#define assert_status(st, code, needle)                                                    \
  do {                                                                                     \
    weft_status_t *s_ = (st);                                                              \
    if (s_ == NULL) g_error("expected %s containing \"%s\", got OK", weft_code_name(code), \
                            (needle));                                                    \
    if (weft_status_code(s_) != (code) || !strstr(weft_status_message(s_), (needle)))      \
      g_error("expected %s containing \"%s\", got %s: %s", weft_code_name(code), (needle), \
              weft_code_name(weft_status_code(s_)), weft_status_message(s_));             \
    weft_status_free(s_);                                                                  \
  } while (0)

#define assert_ok(st)                                                                 \
  do {                                                                                \
    weft_status_t *s_ = (st);                                                         \
    if (s_ != NULL)                                                                   \
      g_error("unexpected %s: %s", weft_code_name(weft_status_code(s_)),              \
              weft_status_message(s_));                                               \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Parser */

static weft_status_t *parse(const char *name, const char *const *inputs,
                            const char *const *outputs, const char *const *attrs,
                            weft__op_def_t **out) {
  weft_op_def_t spec = {
      .struct_size = sizeof spec, .name = name, .inputs = inputs, .outputs = outputs,
      .attrs = attrs, .is_stateful = 0, .shape_fn = NULL,
  };
  return weft__op_def_parse(&spec, "test", out);
}

static const weft__arg_def_t *arg_at(GPtrArray *args, guint i) {
  g_assert_cmpuint(i, <, args->len);
  return args->pdata[i];
}

static void test_parse_full_spec(void) {
  static const char *const inputs[] = {"x: T", "values: N * T", "ref: Ref(T)", "shape: int32",
                                       "ids: N * int64", "extra: Tlist", NULL};
  static const char *const outputs[] = {"y: T", "outputs: Tout", "out_ref: Ref(T)", NULL};
  static const char *const attrs[] = {
      "T: {float, double, int32} = DT_FLOAT",
      "N: int >= 2",
      "Tlist: list(type) >= 0",
      "Tout: list(type)",
      "transpose_a: bool = false",
      "alpha: float = 0.2",
      "container: string = ''",
      "note: string = \"hi\"",
      "s: shape",
      "s2: shape = { unknown_rank: true }",
      "s3: shape = [2, ?, 3]",
      "value: tensor",
      "perm: list(int)",
      "squeeze_dims: list(int) >= 0 = []",
      "sizes: list(int) = [1, -2, 3]",
      "dtype: {float, half} = DT_HALF",
      "padding: {'SAME', 'VALID'}",
      "data_format: {'NHWC', 'NCHW'} = 'NCHW'",
      "num: numbertype",
      "k: int = -1",
      NULL,
  };
  weft__op_def_t *def = NULL;
  assert_ok(parse("FullOp", inputs, outputs, attrs, &def));
  g_assert_nonnull(def);
  g_assert_cmpstr(def->name, ==, "FullOp");
  g_assert_cmpstr(def->origin, ==, "test");
  g_assert_cmpuint(def->inputs->len, ==, 6);
  g_assert_cmpuint(def->outputs->len, ==, 3);
  g_assert_cmpuint(def->attrs->len, ==, 20);

  const weft__arg_def_t *a = arg_at(def->inputs, 0);
  g_assert_cmpstr(a->name, ==, "x");
  g_assert_cmpstr(a->type_attr, ==, "T");
  g_assert_null(a->number_attr);
  g_assert_false(a->is_ref);
  a = arg_at(def->inputs, 1);
  g_assert_cmpstr(a->number_attr, ==, "N");
  g_assert_cmpstr(a->type_attr, ==, "T");
  a = arg_at(def->inputs, 2);
  g_assert_true(a->is_ref);
  g_assert_cmpstr(a->type_attr, ==, "T");
  a = arg_at(def->inputs, 3);
  g_assert_cmpint(a->fixed_type, ==, WEFT_DT_INT32);
  g_assert_null(a->type_attr);
  a = arg_at(def->inputs, 4);
  g_assert_cmpint(a->fixed_type, ==, WEFT_DT_INT64);
  g_assert_cmpstr(a->number_attr, ==, "N");
  a = arg_at(def->inputs, 5);
  g_assert_cmpstr(a->type_list_attr, ==, "Tlist");
  a = arg_at(def->outputs, 1);
  g_assert_cmpstr(a->type_list_attr, ==, "Tout");
  g_assert_true(arg_at(def->outputs, 2)->is_ref);

  const weft__attr_def_t *t = weft__op_def_find_attr(def, "T");
  g_assert_nonnull(t);
  g_assert_cmpstr(t->type, ==, "type");
  g_assert_cmpuint(t->n_allowed_types, ==, 3);
  g_assert_cmpint(t->allowed_types[0], ==, WEFT_DT_FLOAT);
  g_assert_cmpint(t->allowed_types[1], ==, WEFT_DT_DOUBLE);
  g_assert_cmpint(t->allowed_types[2], ==, WEFT_DT_INT32);
  g_assert_cmpint(t->default_value->kind, ==, WEFT_ATTR_TYPE);
  g_assert_cmpint(t->default_value->u.type, ==, WEFT_DT_FLOAT);

  const weft__attr_def_t *n = weft__op_def_find_attr(def, "N");
  g_assert_cmpstr(n->type, ==, "int");
  g_assert_true(n->has_minimum);
  g_assert_cmpint(n->minimum, ==, 2);
  g_assert_null(n->default_value);

  g_assert_cmpstr(weft__op_def_find_attr(def, "Tout")->type, ==, "list(type)");
  const weft__attr_def_t *b = weft__op_def_find_attr(def, "transpose_a");
  g_assert_cmpint(b->default_value->kind, ==, WEFT_ATTR_BOOL);
  g_assert_false(b->default_value->u.b);
  const weft__attr_def_t *f = weft__op_def_find_attr(def, "alpha");
  g_assert_cmpint(f->default_value->kind, ==, WEFT_ATTR_FLOAT);
  g_assert_cmpfloat_with_epsilon(f->default_value->u.f, 0.2f, 1e-7);
  const weft__attr_def_t *c = weft__op_def_find_attr(def, "container");
  g_assert_cmpint(c->default_value->kind, ==, WEFT_ATTR_STRING);
  g_assert_cmpstr(c->default_value->u.s.data, ==, "");
  g_assert_cmpuint(c->default_value->u.s.len, ==, 0);
  g_assert_cmpstr(weft__op_def_find_attr(def, "note")->default_value->u.s.data, ==, "hi");

  const weft__attr_def_t *s = weft__op_def_find_attr(def, "s");
  g_assert_cmpstr(s->type, ==, "shape");
  g_assert_null(s->default_value);
  const weft__attr_def_t *s2 = weft__op_def_find_attr(def, "s2");
  g_assert_cmpint(s2->default_value->kind, ==, WEFT_ATTR_SHAPE);
  g_assert_cmpint(s2->default_value->u.shape.rank, ==, -1);
  const weft__attr_def_t *s3 = weft__op_def_find_attr(def, "s3");
  g_assert_cmpint(s3->default_value->u.shape.rank, ==, 3);
  g_assert_cmpint(s3->default_value->u.shape.dims[0], ==, 2);
  g_assert_cmpint(s3->default_value->u.shape.dims[1], ==, WEFT_DIM_UNKNOWN);
  g_assert_cmpint(s3->default_value->u.shape.dims[2], ==, 3);

  g_assert_cmpstr(weft__op_def_find_attr(def, "value")->type, ==, "tensor");
  g_assert_cmpstr(weft__op_def_find_attr(def, "perm")->type, ==, "list(int)");
  const weft__attr_def_t *sq = weft__op_def_find_attr(def, "squeeze_dims");
  g_assert_cmpstr(sq->type, ==, "list(int)");
  g_assert_true(sq->has_minimum);
  g_assert_cmpint(sq->minimum, ==, 0);
  g_assert_cmpint(sq->default_value->kind, ==, WEFT_ATTR_LIST_INT);
  g_assert_cmpuint(sq->default_value->u.list.n, ==, 0);
  const weft__attr_def_t *sizes = weft__op_def_find_attr(def, "sizes");
  g_assert_cmpuint(sizes->default_value->u.list.n, ==, 3);
  g_assert_cmpint(sizes->default_value->u.list.i[1], ==, -2);

  const weft__attr_def_t *dt = weft__op_def_find_attr(def, "dtype");
  g_assert_cmpuint(dt->n_allowed_types, ==, 2);
  g_assert_cmpint(dt->default_value->u.type, ==, WEFT_DT_HALF);
  const weft__attr_def_t *pad = weft__op_def_find_attr(def, "padding");
  g_assert_cmpstr(pad->type, ==, "string");
  g_assert_null(pad->allowed_types);
  g_assert_cmpstr(weft__op_def_find_attr(def, "data_format")->default_value->u.s.data, ==,
                  "NCHW");
  const weft__attr_def_t *num = weft__op_def_find_attr(def, "num");
  g_assert_cmpstr(num->type, ==, "type");
  g_assert_cmpuint(num->n_allowed_types, ==, 12);
  g_assert_cmpint(weft__op_def_find_attr(def, "k")->default_value->u.i, ==, -1);
  g_assert_null(weft__op_def_find_attr(def, "nope"));
  weft__op_def_free(def);
}

static void test_parse_no_attrs_and_struct_fields(void) {
  static const char *const inputs[] = {"x: bool", NULL};
  static const char *const outputs[] = {"y: bool", NULL};
  weft_op_def_t spec = {
      .struct_size = sizeof spec, .name = "_Internal", .inputs = inputs, .outputs = outputs,
      .attrs = NULL, .is_stateful = 1, .shape_fn = NULL,
  };
  weft__op_def_t *def = NULL;
  assert_ok(weft__op_def_parse(&spec, "p.so", &def));
  g_assert_true(def->is_stateful);
  g_assert_cmpuint(def->attrs->len, ==, 0);
  g_assert_cmpint(arg_at(def->inputs, 0)->fixed_type, ==, WEFT_DT_BOOL);
  weft__op_def_free(def);

  /* A writer whose struct ended before is_stateful: the fields it lacks read as zero. */
  spec.struct_size = offsetof(weft_op_def_t, attrs) + sizeof(spec.attrs);
  assert_ok(weft__op_def_parse(&spec, "old.so", &def));
  g_assert_false(def->is_stateful);
  weft__op_def_free(def);

  spec.struct_size = 8;
  def = (weft__op_def_t *)&spec; /* must be reset to NULL on failure */
  assert_status(weft__op_def_parse(&spec, "tiny.so", &def), WEFT_INVALID_ARGUMENT,
                "struct_size 8 is too small");
  g_assert_null(def);
}

typedef struct {
  const char *inputs[4];
  const char *outputs[3];
  const char *attrs[4];
  const char *message; /* must appear in the error */
} bad_case_t;

static void test_parse_errors(void) {
  static const bad_case_t cases[] = {
      {{"x: T"}, {"y: T"}, {"T: flaot"},
       "op 'Bad': invalid attr spec \"T: flaot\": unknown attr type 'flaot'"},
      {{"x: U"}, {"y: T"}, {"T: type"},
       "op 'Bad': invalid input spec \"x: U\": 'U' is not a declared attr"},
      {{"x: T"}, {"y: V"}, {"T: type"},
       "op 'Bad': invalid output spec \"y: V\": 'V' is not a declared attr"},
      {{"values: N * T"}, {"y: T"}, {"T: type"},
       "invalid input spec \"values: N * T\": 'N' is not a declared attr"},
      {{"values: N * T"}, {"y: T"}, {"T: type", "N: float"},
       "attr 'N' is a float, but a list length needs an int"},
      {{"x: N"}, {"y: N"}, {"N: int"},
       "invalid input spec \"x: N\": attr 'N' is a int, not a type"},
      {{"x T"}, {"y: T"}, {"T: type"}, "invalid input spec \"x T\": expected 'name: type'"},
      {{"9x: T"}, {"y: T"}, {"T: type"}, "'9x' is not a valid input name"},
      {{"ref: Ref(T"}, {"y: T"}, {"T: type"}, "missing ')' after Ref("},
      {{"x: T"}, {"y: T"}, {"T: {float, int33}"},
       "invalid attr spec \"T: {float, int33}\": unknown dtype 'int33'"},
      {{"x: T"}, {"y: T"}, {"T: {float, int32} = DT_DOUBLE"},
       "default DT_DOUBLE is not one of the allowed types"},
      {{"x: T"}, {"y: T"}, {"T: type = DT_NOPE"}, "unknown dtype 'DT_NOPE'"},
      {{"x: T"}, {"y: T"}, {"T: type", "b: bool = maybe"},
       "invalid attr spec \"b: bool = maybe\": 'maybe' is not a bool (true or false)"},
      {{"x: T"}, {"y: T"}, {"T: type", "i: int = 1.5"}, "'1.5' is not an int"},
      {{"x: T"}, {"y: T"}, {"T: type", "f: float = fast"}, "'fast' is not a float"},
      {{"x: T"}, {"y: T"}, {"T: type", "s: string = abc"}, "'abc' is not a quoted string"},
      {{"x: T"}, {"y: T"}, {"T: type", "N: int >= 2 = 1"},
       "default 1 is below the minimum 2"},
      {{"x: T"}, {"y: T"}, {"T: type", "l: list(int) >= 2 = [1]"},
       "default has 1 elements, below the minimum length 2"},
      {{"x: T"}, {"y: T"}, {"T: type", "b: bool >= 1"},
       "a minimum (>=) applies only to int and list attrs"},
      {{"x: T"}, {"y: T"}, {"T: type", "p: {'SAME', 'VALID'} = 'FULL'"},
       "default 'FULL' is not one of the allowed values"},
      {{"x: T"}, {"y: T"}, {"T: type", "T: int"}, "attr 'T' is declared twice"},
      {{"x: T", "x: T"}, {"y: T"}, {"T: type"}, "input 'x' is declared twice"},
      {{"x: T"}, {"y: T"}, {"T: type", "l: list(int) = 3"}, "list default '3' is not in brackets"},
      {{"x: T"}, {"y: T"}, {"T: type", "s: shape = [2,x]"}, "'[2,x]' is not a shape"},
      {{"x: T"}, {"y: T"}, {"T: type", "t: tensor = 1"},
       "'1' is not a tensor ({ dtype: DT_.. tensor_shape: {..} int_val: ..})"},
      {{"x: T"}, {"y: T"}, {"T: type", "t: tensor = { dtype: DT_STRING string_val: 'a' }"},
       "is not a tensor"},
      {{"x: T"}, {"y: T"}, {"T: {float, int32"}, "missing '}'"},
      {{"x: T"}, {"y: T"}, {"T: list(int"}, "missing ')' after list("},
      {{"x: T"}, {"y: T"}, {"T: type extra"}, "unexpected 'extra'"},
      {{"x: T"}, {"y: T"}, {"T: quantizedtype"}, "the type set holds no dtype Weft supports"},
      {{"x: T"}, {"y: T"}, {"T: type ="}, "missing default value after '='"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    weft__op_def_t *def = NULL;
    const char *const *attrs = cases[i].attrs;
    weft_status_t *st = parse("Bad", cases[i].inputs, cases[i].outputs, attrs, &def);
    if (g_test_verbose()) g_test_message("case %zu: %s", i, weft_status_message(st));
    g_assert_null(def);
    assert_status(st, WEFT_INVALID_ARGUMENT, cases[i].message);
  }

  /* Op names. */
  static const char *const none[] = {NULL};
  weft__op_def_t *def = NULL;
  assert_status(parse("lowerCase", none, none, none, &def), WEFT_INVALID_ARGUMENT,
                "'lowerCase' is not a valid op name");
  assert_status(parse(NULL, none, none, none, &def), WEFT_INVALID_ARGUMENT,
                "'(null)' is not a valid op name");
  assert_status(parse("Has Space", none, none, none, &def), WEFT_INVALID_ARGUMENT,
                "'Has Space' is not a valid op name");
  assert_status(weft__op_def_parse(NULL, "x", &def), WEFT_INVALID_ARGUMENT, "NULL argument");
}

/* ---------------------------------------------------------------------------------------------
 * Registry */

static void test_registry_standard_ops(void) {
  weft__ops_register_standard();
  static const char *const names[] = {
      "NoOp", "Identity", "IdentityN", "StopGradient", "PreventGradient",
      "Const", "Placeholder", "PlaceholderWithDefault", "Reshape", "Transpose", "ConcatV2",
      "Pack", "Unpack", "Fill", "ZerosLike", "OnesLike", "Shape", "ShapeN", "Size", "Rank",
      "ExpandDims", "Squeeze", "Slice", "StridedSlice", "Tile", "Range", "Gather", "GatherV2",
      "Split", "SplitV", "Pad", "OneHot", "BroadcastTo", "DynamicStitch",
      "BroadcastGradientArgs", "Cast",
      "Add", "AddV2", "AddN", "Sub", "Mul", "Div", "RealDiv", "FloorDiv", "FloorMod", "Mod",
      "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Expm1", "Pow", "Maximum",
      "Minimum", "SquaredDifference", "Sign", "Reciprocal", "Inv", "Floor", "Ceil", "Round",
      "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
      "Erf", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
      "LogicalOr", "LogicalNot", "Select", "SelectV2", "IsNan", "IsInf", "IsFinite", "MatMul",
      "BatchMatMulV2", "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin",
      "Cumsum", "ClipByValue",
      "BiasAdd", "BiasAddGrad", "Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Softplus",
      "Softsign", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
      "SparseSoftmaxCrossEntropyWithLogits", "ReluGrad", "SigmoidGrad", "TanhGrad", "L2Loss",
      "VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
      "ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad", "ApplyAdam", "ApplyRMSProp",
      "WeftAccumulatorApply", "WeftAccumulatorTake",
      "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
    const weft__op_def_t *def = weft__op_registry_lookup(names[i]);
    if (def == NULL) g_error("standard op %s is not registered", names[i]);
    g_assert_cmpstr(def->origin, ==, "core");
    g_assert_nonnull(def->shape_fn);
  }
  g_assert_null(weft__op_registry_lookup("NoSuchOp"));
  g_assert_null(weft__op_registry_lookup(NULL));

  /* TensorFlow's arg and attr names, which GraphDef import depends on. */
  const weft__op_def_t *mm = weft__op_registry_lookup("MatMul");
  g_assert_cmpstr(arg_at(mm->inputs, 0)->name, ==, "a");
  g_assert_cmpstr(arg_at(mm->inputs, 1)->name, ==, "b");
  g_assert_cmpstr(arg_at(mm->outputs, 0)->name, ==, "product");
  g_assert_false(weft__op_def_find_attr(mm, "transpose_a")->default_value->u.b);
  const weft__op_def_t *sum = weft__op_registry_lookup("Sum");
  g_assert_cmpstr(arg_at(sum->inputs, 1)->name, ==, "reduction_indices");
  g_assert_cmpstr(arg_at(sum->inputs, 1)->type_attr, ==, "Tidx");
  g_assert_cmpint(weft__op_def_find_attr(sum, "Tidx")->default_value->u.type, ==, WEFT_DT_INT32);
  const weft__op_def_t *var = weft__op_registry_lookup("VariableV2");
  g_assert_true(var->is_stateful);
  g_assert_true(arg_at(var->outputs, 0)->is_ref);
  g_assert_cmpstr(arg_at(var->outputs, 0)->type_attr, ==, "dtype");
  g_assert_cmpstr(weft__op_def_find_attr(var, "shared_name")->default_value->u.s.data, ==, "");
  const weft__op_def_t *assign = weft__op_registry_lookup("Assign");
  g_assert_cmpstr(arg_at(assign->outputs, 0)->name, ==, "output_ref");
  g_assert_true(weft__op_def_find_attr(assign, "validate_shape")->default_value->u.b);
  const weft__op_def_t *concat = weft__op_registry_lookup("ConcatV2");
  g_assert_cmpstr(arg_at(concat->inputs, 0)->number_attr, ==, "N");
  g_assert_cmpint(weft__op_def_find_attr(concat, "N")->minimum, ==, 2);
  const weft__op_def_t *ph = weft__op_registry_lookup("Placeholder");
  g_assert_cmpint(weft__op_def_find_attr(ph, "shape")->default_value->u.shape.rank, ==, -1);
  const weft__op_def_t *cast = weft__op_registry_lookup("Cast");
  g_assert_nonnull(weft__op_def_find_attr(cast, "Truncate"));
  const weft__op_def_t *argmax = weft__op_registry_lookup("ArgMax");
  g_assert_cmpint(weft__op_def_find_attr(argmax, "output_type")->default_value->u.type, ==,
                  WEFT_DT_INT64);
  g_assert_true(weft__op_registry_lookup("RandomUniform")->is_stateful);
  g_assert_false(weft__op_registry_lookup("AddV2")->is_stateful);
}

static void test_registry_add_remove(void) {
  static const char *const io[] = {"x: float", NULL};
  weft__op_def_t *def = NULL;
  assert_ok(parse("TestOnlyOp", io, io, NULL, &def));
  assert_ok(weft__op_registry_add(def));
  const weft__op_def_t *found = weft__op_registry_lookup("TestOnlyOp");
  g_assert_true(found == def);

  /* A second definition under the same name is refused (and freed by the registry). */
  weft__op_def_t *again = NULL;
  assert_ok(parse("TestOnlyOp", io, io, NULL, &again));
  assert_status(weft__op_registry_add(again), WEFT_ALREADY_EXISTS,
                "op 'TestOnlyOp' from test is already registered (by test)");
  weft__op_def_t *matmul = NULL;
  assert_ok(parse("MatMul", io, io, NULL, &matmul));
  assert_status(weft__op_registry_add(matmul), WEFT_ALREADY_EXISTS,
                "op 'MatMul' from test is already registered (by core)");

  weft__op_registry_remove("TestOnlyOp");
  g_assert_null(weft__op_registry_lookup("TestOnlyOp"));
  weft__op_registry_remove("TestOnlyOp"); /* removing twice is harmless */
  g_assert_nonnull(weft__op_registry_lookup("MatMul"));
}

/* ---------------------------------------------------------------------------------------------
 * Shape inference through the graph API */

static weft_graph_t *graph;

/* A placeholder of "[2,?,3]" (or "?" for unknown rank). */
static weft_output_t ph_typed(weft_dtype_t dtype, const char *shape) {
  int64_t dims[WEFT_MAX_RANK] = {0};
  int rank = -1;
  if (strcmp(shape, "?") != 0) {
    g_assert_true(shape[0] == '[');
    rank = 0;
    const char *p = shape + 1;
    while (*p && *p != ']') {
      if (*p == '?') {
        dims[rank++] = WEFT_DIM_UNKNOWN;
        p++;
      } else {
        char *end = NULL;
        dims[rank++] = g_ascii_strtoll(p, &end, 10);
        p = end;
      }
      if (*p == ',') p++;
    }
  }
  weft_status_t *st = NULL;
  weft_output_t o = weft_placeholder(graph, "ph", dtype, rank, dims, &st);
  assert_ok(st);
  return o;
}

static weft_output_t ph(const char *shape) { return ph_typed(WEFT_DT_FLOAT, shape); }

/* A constant int32 vector (n >= 0) or scalar (n == -1, one value). */
static weft_output_t ci(int n, ...) {
  int32_t vals[16];
  int count = n < 0 ? 1 : n;
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < count; i++) vals[i] = va_arg(ap, int);
  va_end(ap);
  int64_t dims[1] = {n};
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, n < 0 ? 0 : 1, dims, vals,
                                               sizeof(int32_t) * (size_t)count, &st);
  assert_ok(st);
  weft_output_t o = weft_const(graph, "c", t, &st);
  weft_tensor_unref(t);
  assert_ok(st);
  return o;
}

static char *shape_of(weft_output_t o) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = weft_node_output_shape(o.node, o.index, dims);
  return weft__shape_to_string(rank, dims);
}

#define assert_shape(o, expected)            \
  do {                                       \
    char *got_ = shape_of(o);                \
    g_assert_cmpstr(got_, ==, (expected));   \
    g_free(got_);                            \
  } while (0)

/* Starts a node with inputs (n of them); attrs go on the builder before build(). */
static weft_op_builder_t *op(const char *type, const char *name, int n, ...) {
  weft_op_builder_t *b = weft_op_new(graph, type, name);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) weft_op_add_input(b, va_arg(ap, weft_output_t));
  va_end(ap);
  return b;
}

static weft_status_t *build(weft_op_builder_t *b, weft_output_t *out) {
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (out) {
    out->node = node;
    out->index = 0;
  }
  return st;
}

/* Builds and asserts success; returns output 0. */
static weft_output_t ok(weft_op_builder_t *b) {
  weft_output_t o;
  assert_ok(build(b, &o));
  return o;
}

static void setup(void) { graph = weft_graph_new(); }
static void teardown(void) {
  weft_graph_free(graph);
  graph = NULL;
}

#define SHAPE_TEST(fn)        \
  static void fn##_run(void) { \
    setup();                  \
    fn();                     \
    teardown();               \
  }

static void shape_broadcast(void) {
  assert_shape(ok(op("AddV2", "a1", 2, ph("[2,3]"), ph("[3]"))), "[2,3]");
  assert_shape(ok(op("Mul", "m1", 2, ph("[2,1,3]"), ph("[4,1]"))), "[2,4,3]");
  assert_shape(ok(op("Sub", "s1", 2, ph("[?,3]"), ph("[3]"))), "[?,3]");
  assert_shape(ok(op("Maximum", "mx", 2, ph("[]"), ph("[5,?]"))), "[5,?]");
  assert_shape(ok(op("Less", "lt", 2, ph("[2,1]"), ph("[1,7]"))), "[2,7]");
  g_assert_cmpint(weft_node_output_dtype(weft_graph_node(graph, "lt"), 0), ==, WEFT_DT_BOOL);
  /* String Add. */
  weft_output_t s = ph_typed(WEFT_DT_STRING, "[4]");
  assert_shape(ok(op("Add", "sa", 2, s, ph_typed(WEFT_DT_STRING, "[]"))), "[4]");

  weft_output_t o;
  weft_status_t *st = build(op("AddV2", "badd", 2, ph("[2,3]"), ph("[4]")), &o);
  g_assert_null(o.node);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  const char *msg = weft_status_message(st);
  g_assert_nonnull(strstr(msg, "badd"));
  g_assert_nonnull(strstr(msg, "Incompatible shapes: [2,3] vs. [4]"));
  weft_status_free(st);
  g_assert_null(weft_graph_node(graph, "badd"));

  /* SelectV2 broadcasts all three; Select needs t and e to agree. */
  weft_output_t cond = ph_typed(WEFT_DT_BOOL, "[2,1]");
  assert_shape(ok(op("SelectV2", "sel2", 3, cond, ph("[3]"), ph("[1,3]"))), "[2,3]");
  weft_output_t vcond = ph_typed(WEFT_DT_BOOL, "[2]");
  assert_shape(ok(op("Select", "sel", 3, vcond, ph("[2,5]"), ph("[?,5]"))), "[2,5]");
  assert_status(build(op("Select", "bsel", 3, vcond, ph("[3,5]"), ph("[3,5]")), NULL),
                WEFT_INVALID_ARGUMENT, "bsel");
}
SHAPE_TEST(shape_broadcast)

static weft_op_builder_t *matmul(const char *name, weft_output_t a, weft_output_t b, bool ta,
                                 bool tb) {
  weft_op_builder_t *bld = op("MatMul", name, 2, a, b);
  weft_op_set_attr_bool(bld, "transpose_a", ta);
  weft_op_set_attr_bool(bld, "transpose_b", tb);
  return bld;
}

static void shape_matmul(void) {
  assert_shape(ok(matmul("mm", ph("[2,3]"), ph("[3,4]"), false, false)), "[2,4]");
  assert_shape(ok(matmul("mm", ph("[3,2]"), ph("[3,4]"), true, false)), "[2,4]");
  assert_shape(ok(matmul("mm", ph("[2,3]"), ph("[4,3]"), false, true)), "[2,4]");
  assert_shape(ok(matmul("mm", ph("[3,2]"), ph("[4,3]"), true, true)), "[2,4]");
  assert_shape(ok(matmul("mm", ph("[?,3]"), ph("[?,4]"), false, false)), "[?,4]");
  assert_shape(ok(matmul("mm", ph("?"), ph("[3,4]"), false, false)), "[?,4]");
  /* The default transposes (false) come from the op definition. */
  assert_shape(ok(op("MatMul", "mmd", 2, ph("[5,6]"), ph("[6,7]"))), "[5,7]");

  weft_status_t *st = build(matmul("mm_bad", ph("[2,3]"), ph("[4,5]"), false, false), NULL);
  g_assert_nonnull(st);
  const char *msg = weft_status_message(st);
  g_assert_nonnull(strstr(msg, "mm_bad"));
  g_assert_nonnull(strstr(msg, "Dimensions must be equal, but are 3 and 4"));
  g_assert_nonnull(strstr(msg, "[2,3]"));
  g_assert_nonnull(strstr(msg, "[4,5]"));
  weft_status_free(st);
  assert_status(build(matmul("mm_bad_t", ph("[2,3]"), ph("[2,5]"), true, true), NULL),
                WEFT_INVALID_ARGUMENT, "but are 2 and 5");
  assert_status(build(matmul("mm_rank", ph("[2,3,4]"), ph("[4,5]"), false, false), NULL),
                WEFT_INVALID_ARGUMENT, "must be rank 2 but is rank 3");

  weft_op_builder_t *b = op("BatchMatMulV2", "bmm", 2, ph("[5,1,2,3]"), ph("[4,3,6]"));
  assert_shape(ok(b), "[5,4,2,6]");
  b = op("BatchMatMulV2", "bmm_adj", 2, ph("[7,3,2]"), ph("[7,6,3]"));
  weft_op_set_attr_bool(b, "adj_x", true);
  weft_op_set_attr_bool(b, "adj_y", true);
  assert_shape(ok(b), "[7,2,6]");
}
SHAPE_TEST(shape_matmul)

static weft_op_builder_t *reduce(const char *type, const char *name, weft_output_t x,
                                 weft_output_t axes, bool keep) {
  weft_op_builder_t *b = op(type, name, 2, x, axes);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  return b;
}

static void shape_reductions(void) {
  weft_output_t x = ph("[2,3,4]");
  assert_shape(ok(reduce("Sum", "sum", x, ci(1, 1), false)), "[2,4]");
  assert_shape(ok(reduce("Sum", "sum_keep", x, ci(1, 1), true)), "[2,1,4]");
  assert_shape(ok(reduce("Mean", "mean", x, ci(2, -1, 0), false)), "[3]");
  assert_shape(ok(reduce("Max", "max", x, ci(-1, 2), false)), "[2,3]");
  assert_shape(ok(reduce("Prod", "prod_all", x, ci(3, 0, 1, 2), false)), "[]");
  assert_shape(ok(reduce("Min", "min_keep", x, ci(3, 0, 1, 2), true)), "[1,1,1]");
  assert_shape(ok(reduce("Sum", "sum_none", x, ci(0), false)), "[2,3,4]");
  /* Default keep_dims (false). */
  assert_shape(ok(op("Sum", "sum_default", 2, x, ci(1, 0))), "[3,4]");
  weft_output_t bx = ph_typed(WEFT_DT_BOOL, "[?,5]");
  assert_shape(ok(reduce("All", "all", bx, ci(1, 1), false)), "[?]");
  assert_shape(ok(reduce("Any", "any", bx, ci(1, 0), true)), "[1,5]");

  /* Axes known only at run time. */
  weft_output_t axes = ph_typed(WEFT_DT_INT32, "[1]");
  assert_shape(ok(reduce("Sum", "sum_dyn_keep", x, axes, true)), "[?,?,?]");
  assert_shape(ok(reduce("Sum", "sum_dyn", x, axes, false)), "<unknown>");
  assert_shape(ok(reduce("Sum", "sum_unknown_in", ph("?"), ci(1, 0), true)), "<unknown>");

  assert_status(build(reduce("Sum", "sum_bad", x, ci(1, 3), false), NULL), WEFT_INVALID_ARGUMENT,
                "Invalid reduction dimension 3 for input with 3 dimensions");
  assert_status(build(reduce("Sum", "sum_bad2", x, ci(1, -4), false), NULL),
                WEFT_INVALID_ARGUMENT, "sum_bad2");

  assert_shape(ok(op("ArgMax", "argmax", 2, x, ci(-1, 1))), "[2,4]");
  g_assert_cmpint(weft_node_output_dtype(weft_graph_node(graph, "argmax"), 0), ==, WEFT_DT_INT64);
  assert_shape(ok(op("ArgMin", "argmin", 2, x, ci(-1, -1))), "[2,3]");
  assert_status(build(op("ArgMax", "argmax_bad", 2, x, ci(-1, 3)), NULL), WEFT_INVALID_ARGUMENT,
                "dimension 3 is out of range [-3, 3)");
}
SHAPE_TEST(shape_reductions)

static void shape_reshape(void) {
  weft_output_t x = ph("[2,3]");
  assert_shape(ok(op("Reshape", "r1", 2, x, ci(1, -1))), "[6]");
  assert_shape(ok(op("Reshape", "r2", 2, x, ci(2, 3, -1))), "[3,2]");
  assert_shape(ok(op("Reshape", "r3", 2, x, ci(3, 1, -1, 2))), "[1,3,2]");
  assert_shape(ok(op("Reshape", "r4", 2, ph("[1,1]"), ci(0))), "[]");
  assert_shape(ok(op("Reshape", "r5", 2, ph("[?,3]"), ci(2, -1, 3))), "[?,3]");
  assert_shape(ok(op("Reshape", "r6", 2, ph("?"), ci(2, 4, 5))), "[4,5]");
  /* A shape computed at run time: its length gives the rank. */
  assert_shape(ok(op("Reshape", "r7", 2, x, ph_typed(WEFT_DT_INT32, "[3]"))), "[?,?,?]");
  assert_shape(ok(op("Reshape", "r8", 2, x, ph_typed(WEFT_DT_INT32, "[?]"))), "<unknown>");
  g_assert_cmpint(weft_node_output_dtype(weft_graph_node(graph, "r1"), 0), ==, WEFT_DT_FLOAT);

  assert_status(build(op("Reshape", "r_bad", 2, x, ci(2, 4, 2)), NULL), WEFT_INVALID_ARGUMENT,
                "Cannot reshape a tensor with 6 elements to shape [4,2] (8 elements)");
  weft_status_t *st = build(op("Reshape", "r_bad_name", 2, x, ci(2, 4, 2)), NULL);
  g_assert_nonnull(strstr(weft_status_message(st), "r_bad_name"));
  weft_status_free(st);
  assert_status(build(op("Reshape", "r_bad2", 2, x, ci(2, 4, -1)), NULL), WEFT_INVALID_ARGUMENT,
                "Input to reshape is a tensor with 6 values, but the requested shape [4,?] "
                "requires a multiple of 4");
  assert_status(build(op("Reshape", "r_bad3", 2, x, ci(2, -1, -1)), NULL), WEFT_INVALID_ARGUMENT,
                "only one input size may be -1, not both 0 and 1");
  assert_status(build(op("Reshape", "r_bad4", 2, x, ci(2, -2, 3)), NULL), WEFT_INVALID_ARGUMENT,
                "size 0 must be non-negative, not -2");
  int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 40};
  int64_t hdims[1] = {3};
  weft_status_t *hst = NULL;
  weft_tensor_t *ht = weft_tensor_new_from_data(WEFT_DT_INT64, 1, hdims, huge, sizeof huge, &hst);
  assert_ok(hst);
  weft_output_t hc = weft_const(graph, "huge", ht, &hst);
  weft_tensor_unref(ht);
  assert_ok(hst);
  assert_status(build(op("Reshape", "r_huge", 2, x, hc), NULL), WEFT_INVALID_ARGUMENT,
                "more than 2^63 elements");
}
SHAPE_TEST(shape_reshape)

static weft_op_builder_t *concat(const char *name, weft_output_t axis, int n, ...) {
  weft_output_t values[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) values[i] = va_arg(ap, weft_output_t);
  va_end(ap);
  weft_op_builder_t *b = weft_op_new(graph, "ConcatV2", name);
  weft_op_add_input_list(b, values, n);
  weft_op_add_input(b, axis);
  return b;
}

static void shape_concat_pack(void) {
  assert_shape(ok(concat("cc1", ci(-1, 1), 2, ph("[2,3]"), ph("[2,5]"))), "[2,8]");
  assert_shape(ok(concat("cc2", ci(-1, -2), 3, ph("[2,3]"), ph("[4,3]"), ph("[1,3]"))), "[7,3]");
  assert_shape(ok(concat("cc3", ci(-1, 1), 2, ph("[?,3]"), ph("[2,5]"))), "[2,8]");
  assert_shape(ok(concat("cc4", ci(-1, 1), 2, ph("[2,?]"), ph("[2,5]"))), "[2,?]");
  assert_shape(ok(concat("cc5", ci(-1, 0), 2, ph("?"), ph("[2,5]"))), "[?,5]");
  assert_shape(ok(concat("cc6", ph_typed(WEFT_DT_INT32, "[]"), 2, ph("[2,3]"), ph("[2,5]"))),
               "[?,?]");
  g_assert_cmpint(weft_node_output_dtype(weft_graph_node(graph, "cc1"), 0), ==, WEFT_DT_FLOAT);

  assert_status(build(concat("cc_bad", ci(-1, 1), 2, ph("[2,3]"), ph("[3,5]")), NULL),
                WEFT_INVALID_ARGUMENT,
                "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2,3] and "
                "[3,5]");
  assert_status(build(concat("cc_rank", ci(-1, 0), 2, ph("[2,3]"), ph("[2]")), NULL),
                WEFT_INVALID_ARGUMENT, "Shape must be rank 2 but is rank 1");
  assert_status(build(concat("cc_axis", ci(-1, 2), 2, ph("[2,3]"), ph("[2,3]")), NULL),
                WEFT_INVALID_ARGUMENT, "ConcatV2 axis 2 is out of range [-2, 2)");
  assert_status(build(concat("cc_one", ci(-1, 0), 1, ph("[2,3]")), NULL), WEFT_INVALID_ARGUMENT,
                "less than its minimum 2");

  weft_output_t vals[3] = {ph("[2]"), ph("[?]"), ph("[2]")};
  weft_op_builder_t *b = weft_op_new(graph, "Pack", "pack0");
  weft_op_add_input_list(b, vals, 3);
  assert_shape(ok(b), "[3,2]");
  b = weft_op_new(graph, "Pack", "pack1");
  weft_op_add_input_list(b, vals, 3);
  weft_op_set_attr_int(b, "axis", -1);
  assert_shape(ok(b), "[2,3]");

  b = op("Unpack", "unpack", 1, ph("[4,3]"));
  weft_op_set_attr_int(b, "num", 3);
  weft_op_set_attr_int(b, "axis", 1);
  weft_output_t u = ok(b);
  g_assert_cmpint(weft_node_num_outputs(u.node), ==, 3);
  assert_shape(weft_out(u.node, 2), "[4]");
}
SHAPE_TEST(shape_concat_pack)

static void shape_transpose_expand_squeeze(void) {
  weft_output_t x = ph("[2,3,4]");
  assert_shape(ok(op("Transpose", "tr", 2, x, ci(3, 2, 0, 1))), "[4,2,3]");
  assert_shape(ok(op("Transpose", "tr_dyn", 2, x, ph_typed(WEFT_DT_INT32, "[3]"))), "[?,?,?]");
  assert_shape(ok(op("Transpose", "tr_unk", 2, ph("?"), ci(2, 1, 0))), "[?,?]");
  assert_status(build(op("Transpose", "tr_bad", 2, x, ci(3, 0, 0, 1)), NULL),
                WEFT_INVALID_ARGUMENT, "perm is not a permutation of 0..2");
  assert_status(build(op("Transpose", "tr_len", 2, x, ci(2, 1, 0)), NULL), WEFT_INVALID_ARGUMENT,
                "transpose expects a vector of size 3");

  weft_output_t y = ph("[2,3]");
  assert_shape(ok(op("ExpandDims", "ed0", 2, y, ci(-1, 0))), "[1,2,3]");
  assert_shape(ok(op("ExpandDims", "ed1", 2, y, ci(-1, -1))), "[2,3,1]");
  assert_shape(ok(op("ExpandDims", "ed2", 2, y, ci(-1, -3))), "[1,2,3]");
  assert_shape(ok(op("ExpandDims", "ed3", 2, y, ci(-1, 2))), "[2,3,1]");
  assert_shape(ok(op("ExpandDims", "ed4", 2, y, ci(1, -2))), "[2,1,3]");
  assert_shape(ok(op("ExpandDims", "ed5", 2, y, ph_typed(WEFT_DT_INT32, "[]"))), "[?,?,?]");
  assert_status(build(op("ExpandDims", "ed_bad", 2, y, ci(-1, 3)), NULL), WEFT_INVALID_ARGUMENT,
                "Tried to expand dim index 3 for tensor with 2 dimensions");
  assert_status(build(op("ExpandDims", "ed_bad2", 2, y, ci(-1, -4)), NULL),
                WEFT_INVALID_ARGUMENT, "ed_bad2");

  weft_output_t z = ph("[1,2,1,3]");
  assert_shape(ok(op("Squeeze", "sq", 1, z)), "[2,3]");
  weft_op_builder_t *b = op("Squeeze", "sq2", 1, z);
  int64_t d2[] = {2};
  weft_op_set_attr_int_list(b, "squeeze_dims", d2, 1);
  assert_shape(ok(b), "[1,2,3]");
  b = op("Squeeze", "sq3", 1, z);
  int64_t dm4[] = {-4, -2};
  weft_op_set_attr_int_list(b, "squeeze_dims", dm4, 2);
  assert_shape(ok(b), "[2,3]");
  b = op("Squeeze", "sq_bad", 1, z);
  int64_t d1[] = {1};
  weft_op_set_attr_int_list(b, "squeeze_dims", d1, 1);
  assert_status(build(b, NULL), WEFT_INVALID_ARGUMENT,
                "Can not squeeze dim[1], expected a dimension of 1, got 2");
  b = op("Squeeze", "sq_range", 1, z);
  int64_t d4[] = {4};
  weft_op_set_attr_int_list(b, "squeeze_dims", d4, 1);
  assert_status(build(b, NULL), WEFT_INVALID_ARGUMENT,
                "Tried to squeeze dim index 4 for tensor with 4 dimensions");
  /* An unknown dim might be 1: without squeeze_dims the rank is unknown. */
  assert_shape(ok(op("Squeeze", "sq_unk", 1, ph("[?,1]"))), "<unknown>");
  b = op("Squeeze", "sq_unk2", 1, ph("[?,1,4]"));
  int64_t d0[] = {0};
  weft_op_set_attr_int_list(b, "squeeze_dims", d0, 1);
  assert_shape(ok(b), "[1,4]");
}
SHAPE_TEST(shape_transpose_expand_squeeze)

static void shape_unknown_propagates(void) {
  weft_output_t u = ph("?");
  assert_shape(ok(op("Relu", "relu", 1, u)), "<unknown>");
  assert_shape(ok(op("AddV2", "add", 2, u, ph("[2,3]"))), "<unknown>");
  assert_shape(ok(op("Transpose", "tr", 2, u, ph_typed(WEFT_DT_INT32, "?"))), "<unknown>");
  assert_shape(ok(op("Shape", "shape", 1, u)), "[?]");
  assert_shape(ok(op("Shape", "shape2", 1, ph("[?,4,5]"))), "[3]");
  assert_shape(ok(op("Size", "size", 1, u)), "[]");
  assert_shape(ok(op("Rank", "rank", 1, u)), "[]");
  assert_shape(ok(op("ExpandDims", "ed", 2, u, ci(-1, 0))), "<unknown>");
  assert_shape(ok(op("Softmax", "sm", 1, ph("[?,10]"))), "[?,10]");
  assert_shape(ok(op("Sigmoid", "sig", 1, ph("[?,?]"))), "[?,?]");
  assert_shape(ok(op("Identity", "id", 1, ph("[7,?]"))), "[7,?]");
  assert_shape(ok(op("L2Loss", "l2", 1, u)), "[]");
  weft_op_builder_t *b = op("Cast", "cast", 1, ph("[3,?]"));
  weft_op_set_attr_type(b, "DstT", WEFT_DT_INT32);
  weft_output_t c = ok(b);
  assert_shape(c, "[3,?]");
  g_assert_cmpint(weft_node_output_dtype(c.node, 0), ==, WEFT_DT_INT32);
  b = matmul("mm", u, u, false, false);
  assert_shape(ok(b), "[?,?]");
  assert_shape(ok(reduce("Sum", "sum", u, ph_typed(WEFT_DT_INT32, "?"), false)), "<unknown>");
  assert_shape(ok(concat("cc", ph_typed(WEFT_DT_INT32, "[]"), 2, u, u)), "<unknown>");
}
SHAPE_TEST(shape_unknown_propagates)

/* StridedSlice(x, begin, end, strides) with the five masks. */
static weft_op_builder_t *sslice(const char *name, weft_output_t x, weft_output_t begin,
                                 weft_output_t end, weft_output_t strides, int64_t begin_mask,
                                 int64_t end_mask, int64_t ellipsis_mask, int64_t new_axis_mask,
                                 int64_t shrink_mask) {
  weft_op_builder_t *b = op("StridedSlice", name, 4, x, begin, end, strides);
  weft_op_set_attr_int(b, "begin_mask", begin_mask);
  weft_op_set_attr_int(b, "end_mask", end_mask);
  weft_op_set_attr_int(b, "ellipsis_mask", ellipsis_mask);
  weft_op_set_attr_int(b, "new_axis_mask", new_axis_mask);
  weft_op_set_attr_int(b, "shrink_axis_mask", shrink_mask);
  return b;
}

static void shape_strided_slice(void) {
  weft_output_t x = ph("[5,6,7]");
  /* x[1:3] */
  assert_shape(ok(sslice("s1", x, ci(1, 1), ci(1, 3), ci(1, 1), 0, 0, 0, 0, 0)), "[2,6,7]");
  /* x[2] */
  assert_shape(ok(sslice("s2", x, ci(1, 2), ci(1, 3), ci(1, 1), 0, 0, 0, 0, 1)), "[6,7]");
  /* x[-1, :, 1] */
  assert_shape(ok(sslice("s3", x, ci(3, -1, 0, 1), ci(3, 0, 0, 2), ci(3, 1, 1, 1), 2, 2, 0, 0, 5)),
               "[6]");
  /* x[:, :] */
  assert_shape(ok(sslice("s4", x, ci(2, 0, 0), ci(2, 0, 0), ci(2, 1, 1), 3, 3, 0, 0, 0)),
               "[5,6,7]");
  /* x[..., 1:3] */
  assert_shape(ok(sslice("s5", x, ci(2, 0, 1), ci(2, 0, 3), ci(2, 1, 1), 0, 0, 1, 0, 0)),
               "[5,6,2]");
  /* x[tf.newaxis, :] */
  assert_shape(ok(sslice("s6", x, ci(2, 0, 0), ci(2, 0, 0), ci(2, 1, 1), 2, 2, 0, 1, 0)),
               "[1,5,6,7]");
  /* x[::-1] */
  assert_shape(ok(sslice("s7", x, ci(1, 0), ci(1, 0), ci(1, -1), 1, 1, 0, 0, 0)), "[5,6,7]");
  /* x[4:1:-1] */
  assert_shape(ok(sslice("s8", x, ci(1, 4), ci(1, 1), ci(1, -1), 0, 0, 0, 0, 0)), "[3,6,7]");
  /* x[1:100] clamps; x[0:5:2] */
  assert_shape(ok(sslice("s9", x, ci(1, 1), ci(1, 100), ci(1, 1), 0, 0, 0, 0, 0)), "[4,6,7]");
  assert_shape(ok(sslice("s10", x, ci(1, 0), ci(1, 5), ci(1, 2), 0, 0, 0, 0, 0)), "[3,6,7]");
  /* x[3:1] is empty */
  assert_shape(ok(sslice("s11", x, ci(1, 3), ci(1, 1), ci(1, 1), 0, 0, 0, 0, 0)), "[0,6,7]");
  /* x[..., 0, tf.newaxis] */
  assert_shape(ok(sslice("s12", x, ci(3, 0, 0, 0), ci(3, 0, 1, 0), ci(3, 1, 1, 1), 0, 0, 1, 4, 2)),
               "[5,6,1]");
  /* Unknown dims and run-time bounds. */
  assert_shape(ok(sslice("s13", ph("[?,6]"), ci(2, 0, 1), ci(2, 0, 4), ci(2, 1, 1), 1, 1, 0, 0, 0)),
               "[?,3]");
  weft_output_t dyn = ph_typed(WEFT_DT_INT32, "[2]");
  assert_shape(ok(sslice("s14", x, dyn, dyn, ci(2, 1, 1), 0, 0, 0, 0, 1)), "[?,7]");
  assert_shape(ok(sslice("s15", ph("?"), ci(1, 0), ci(1, 1), ci(1, 1), 0, 0, 0, 0, 0)),
               "<unknown>");

  /* Extreme bounds clamp instead of overflowing. */
  assert_shape(ok(sslice("s16", x, ci(1, G_MININT32), ci(1, G_MAXINT32), ci(1, G_MAXINT32), 0, 0,
                         0, 0, 0)), "[1,6,7]");
  assert_shape(ok(sslice("s17", x, ci(1, G_MAXINT32), ci(1, G_MININT32), ci(1, G_MININT32), 0, 0,
                         0, 0, 0)), "[1,6,7]");
  assert_shape(ok(sslice("s18", x, ci(1, -5), ci(1, G_MAXINT32), ci(1, 1), 0, 0, 0, 0, 0)),
               "[5,6,7]");
  assert_status(build(sslice("ss_bad", x, ci(1, 7), ci(1, 8), ci(1, 1), 0, 0, 0, 0, 1), NULL),
                WEFT_INVALID_ARGUMENT, "slice index 7 of dimension 0 out of bounds");
  assert_status(build(sslice("ss_zero", x, ci(1, 0), ci(1, 1), ci(1, 0), 0, 0, 0, 0, 0), NULL),
                WEFT_INVALID_ARGUMENT, "strides for dimension 0 must be non-zero");
  assert_status(build(sslice("ss_many", x, ci(4, 0, 0, 0, 0), ci(4, 1, 1, 1, 1),
                             ci(4, 1, 1, 1, 1), 0, 0, 0, 0, 0), NULL),
                WEFT_INVALID_ARGUMENT, "Index out of range using input dim 3");
  assert_status(build(sslice("ss_len", x, ci(1, 0), ci(2, 1, 1), ci(1, 1), 0, 0, 0, 0, 0), NULL),
                WEFT_INVALID_ARGUMENT, "Expected begin, end, and strides to be 1D equal size");
  assert_status(build(sslice("ss_ell", x, ci(2, 0, 0), ci(2, 0, 0), ci(2, 1, 1), 0, 0, 3, 0, 0),
                      NULL),
                WEFT_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");

  /* Slice(x, begin, size) */
  assert_shape(ok(op("Slice", "sl", 3, x, ci(3, 1, 0, 2), ci(3, 2, -1, 3))), "[2,6,3]");
  assert_shape(ok(op("Slice", "sl_dyn", 3, x, ph_typed(WEFT_DT_INT32, "[3]"), ci(3, 2, -1, 3))),
               "[2,?,3]");
  assert_status(build(op("Slice", "sl_bad", 3, x, ci(3, 4, 0, 0), ci(3, 2, 1, 1)), NULL),
                WEFT_INVALID_ARGUMENT, "sl_bad");
}
SHAPE_TEST(shape_strided_slice)

static void shape_array_misc(void) {
  /* Const and Placeholder. */
  int64_t dims[2] = {2, 3};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 2, dims);
  weft_status_t *st = NULL;
  weft_output_t c = weft_const(graph, "k", t, &st);
  weft_tensor_unref(t);
  assert_ok(st);
  assert_shape(c, "[2,3]");
  assert_shape(ph("?"), "<unknown>");
  assert_shape(ph("[?,3]"), "[?,3]");
  weft_op_builder_t *b = op("Placeholder", "ph_default", 0);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_INT32);
  assert_shape(ok(b), "<unknown>");
  b = op("PlaceholderWithDefault", "pwd", 1, c);
  int64_t pdims[2] = {WEFT_DIM_UNKNOWN, 3};
  weft_op_set_attr_shape(b, "shape", 2, pdims);
  assert_shape(ok(b), "[?,3]");
  b = op("PlaceholderWithDefault", "pwd_bad", 1, c);
  int64_t bdims[1] = {6};
  weft_op_set_attr_shape(b, "shape", 1, bdims);
  assert_status(build(b, NULL), WEFT_INVALID_ARGUMENT, "pwd_bad");

  /* Fill, ZerosLike, Tile, Pad, Range, OneHot, BroadcastTo. */
  assert_shape(ok(op("Fill", "fill", 2, ci(3, 2, 1, 4), weft_const_float(graph, "v", 1.0f, NULL))),
               "[2,1,4]");
  assert_shape(ok(op("ZerosLike", "zl", 1, ph("[4,?]"))), "[4,?]");
  assert_shape(ok(op("Tile", "tile", 2, ph("[2,?]"), ci(2, 3, 2))), "[6,?]");
  assert_status(build(op("Tile", "tile_bad", 2, ph("[2,3]"), ci(1, 3)), NULL),
                WEFT_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length 2");
  int32_t pads[4] = {1, 2, 0, 3};
  int64_t pdim[2] = {2, 2};
  weft_tensor_t *pt = weft_tensor_new_from_data(WEFT_DT_INT32, 2, pdim, pads, sizeof pads, &st);
  assert_ok(st);
  weft_output_t pc = weft_const(graph, "pads", pt, &st);
  weft_tensor_unref(pt);
  assert_ok(st);
  assert_shape(ok(op("Pad", "pad", 2, ph("[4,5]"), pc)), "[7,8]");
  assert_shape(ok(op("Range", "range", 3, ci(-1, 2), ci(-1, 11), ci(-1, 3))), "[3]");
  assert_shape(ok(op("Range", "range_dyn", 3, ci(-1, 0), ph_typed(WEFT_DT_INT32, "[]"),
                     ci(-1, 1))), "[?]");
  assert_status(build(op("Range", "range_bad", 3, ci(-1, 5), ci(-1, 1), ci(-1, 1)), NULL),
                WEFT_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: 5/1");
  b = op("OneHot", "onehot", 4, ph_typed(WEFT_DT_INT64, "[3,?]"), ci(-1, 10),
         weft_const_float(graph, "on", 1.0f, NULL), weft_const_float(graph, "off", 0.0f, NULL));
  assert_shape(ok(b), "[3,?,10]");
  assert_shape(ok(op("BroadcastTo", "bt", 2, ph("[3,1]"), ci(3, 2, 3, 4))), "[2,3,4]");
  assert_status(build(op("BroadcastTo", "bt_bad", 2, ph("[3,2]"), ci(2, 3, 4)), NULL),
                WEFT_INVALID_ARGUMENT, "Unable to broadcast tensor of shape [3,2] to tensor of "
                "shape [3,4]");

  /* Gather, GatherV2, Split, SplitV. */
  assert_shape(ok(op("Gather", "g1", 2, ph("[10,4]"), ph_typed(WEFT_DT_INT32, "[2,3]"))),
               "[2,3,4]");
  assert_shape(ok(op("GatherV2", "g2", 3, ph("[10,4,5]"), ph_typed(WEFT_DT_INT32, "[7]"),
                     ci(-1, 1))), "[10,7,5]");
  b = op("Split", "split", 2, ci(-1, 1), ph("[4,6]"));
  weft_op_set_attr_int(b, "num_split", 3);
  weft_output_t sp = ok(b);
  g_assert_cmpint(weft_node_num_outputs(sp.node), ==, 3);
  assert_shape(weft_out(sp.node, 2), "[4,2]");
  b = op("Split", "split_bad", 2, ci(-1, 1), ph("[4,6]"));
  weft_op_set_attr_int(b, "num_split", 4);
  assert_status(build(b, NULL), WEFT_INVALID_ARGUMENT, "evenly divide");
  b = op("SplitV", "splitv", 3, ph("[4,9]"), ci(3, 2, -1, 3), ci(-1, -1));
  weft_op_set_attr_int(b, "num_split", 3);
  weft_op_set_attr_type(b, "Tlen", WEFT_DT_INT32);
  weft_output_t spv = ok(b);
  assert_shape(weft_out(spv.node, 0), "[4,2]");
  assert_shape(weft_out(spv.node, 1), "[4,4]");
  assert_shape(weft_out(spv.node, 2), "[4,3]");

  /* ShapeN, DynamicStitch, BroadcastGradientArgs. */
  weft_output_t two[2] = {ph("[2,3]"), ph("?")};
  b = weft_op_new(graph, "ShapeN", "shapen");
  weft_op_add_input_list(b, two, 2);
  weft_output_t sn = ok(b);
  assert_shape(weft_out(sn.node, 0), "[2]");
  assert_shape(weft_out(sn.node, 1), "[?]");
  weft_output_t idx[2] = {ci(2, 0, 2), ci(1, 1)};
  weft_output_t data[2] = {ph("[2,5]"), ph("[1,5]")};
  b = weft_op_new(graph, "DynamicStitch", "stitch");
  weft_op_add_input_list(b, idx, 2);
  weft_op_add_input_list(b, data, 2);
  assert_shape(ok(b), "[3,5]");
  weft_output_t bga = ok(op("BroadcastGradientArgs", "bga", 2, ci(2, 2, 3), ci(1, 3)));
  assert_shape(weft_out(bga.node, 1), "[?]");
  b = weft_op_new(graph, "IdentityN", "idn");
  weft_output_t mixed[2] = {ph("[2,3]"), ph_typed(WEFT_DT_INT32, "[?]")};
  weft_op_add_input_list(b, mixed, 2);
  weft_output_t idn = ok(b);
  assert_shape(weft_out(idn.node, 0), "[2,3]");
  assert_shape(weft_out(idn.node, 1), "[?]");
  g_assert_cmpint(weft_node_output_dtype(idn.node, 1), ==, WEFT_DT_INT32);
}
SHAPE_TEST(shape_array_misc)

static void shape_nn_and_state(void) {
  assert_shape(ok(op("BiasAdd", "ba", 2, ph("[?,4]"), ph("[4]"))), "[?,4]");
  weft_op_builder_t *b = op("BiasAdd", "ba_nchw", 2, ph("[8,3,5,5]"), ph("[3]"));
  weft_op_set_attr_string(b, "data_format", "NCHW");
  assert_shape(ok(b), "[8,3,5,5]");
  assert_status(build(op("BiasAdd", "ba_bad", 2, ph("[2,4]"), ph("[5]")), NULL),
                WEFT_INVALID_ARGUMENT, "but are 4 and 5");
  assert_shape(ok(op("BiasAddGrad", "bag", 1, ph("[?,6]"))), "[6]");
  weft_output_t xent = ok(op("SoftmaxCrossEntropyWithLogits", "xent", 2, ph("[?,10]"),
                             ph("[32,10]")));
  assert_shape(weft_out(xent.node, 0), "[32]");
  assert_shape(weft_out(xent.node, 1), "[32,10]");
  weft_output_t sxent = ok(op("SparseSoftmaxCrossEntropyWithLogits", "sxent", 2, ph("[?,10]"),
                              ph_typed(WEFT_DT_INT64, "[16]")));
  assert_shape(weft_out(sxent.node, 0), "[16]");
  assert_shape(weft_out(sxent.node, 1), "[16,10]");
  assert_shape(ok(op("ReluGrad", "rg", 2, ph("[?,3]"), ph("[2,?]"))), "[2,3]");
  assert_status(build(op("ReluGrad", "rg_bad", 2, ph("[2,3]"), ph("[3,2]")), NULL),
                WEFT_INVALID_ARGUMENT, "rg_bad");
  b = op("LeakyRelu", "lrelu", 1, ph("[3]"));
  assert_shape(ok(b), "[3]");

  /* Variables. */
  weft_status_t *st = NULL;
  weft_output_t init = ok(op("Fill", "init", 2, ci(2, 3, 4),
                             weft_const_float(graph, "zero", 0.0f, NULL)));
  weft_output_t read = weft_variable(graph, "w", init, &st);
  assert_ok(st);
  assert_shape(read, "[3,4]");
  weft_node_t *var = weft_graph_node(graph, "w");
  g_assert_nonnull(var);
  assert_shape(weft_out(var, 0), "[3,4]");
  g_assert_cmpint(var->output_types[0], ==, WEFT_DT_FLOAT + WEFT_DT_REF_OFFSET);
  assert_shape(weft_out(weft_graph_node(graph, "w/Assign"), 0), "[3,4]");
  assert_status(build(op("Assign", "assign_bad", 2, weft_out(var, 0), ph("[4,3]")), NULL),
                WEFT_INVALID_ARGUMENT, "assign_bad");
  b = op("Assign", "assign_free", 2, weft_out(var, 0), ph("[4,3]"));
  weft_op_set_attr_bool(b, "validate_shape", false);
  assert_shape(ok(b), "[4,3]");
  assert_shape(ok(op("AssignAdd", "aa", 2, weft_out(var, 0), ph("[3,4]"))), "[3,4]");
  assert_shape(ok(op("IsVariableInitialized", "isinit", 1, weft_out(var, 0))), "[]");
  assert_shape(ok(op("ApplyGradientDescent", "gd", 3, weft_out(var, 0),
                     weft_const_float(graph, "lr", 0.1f, NULL), ph("[3,4]"))), "[3,4]");
  assert_status(build(op("ApplyGradientDescent", "gd_bad", 3, weft_out(var, 0), ph("[2]"),
                         ph("[3,4]")), NULL),
                WEFT_INVALID_ARGUMENT, "must be rank 0 but is rank 1");

  weft_output_t accum = weft_variable(graph, "accum", init, &st);
  assert_ok(st);
  (void)accum;
  weft_node_t *acc = weft_graph_node(graph, "accum");
  weft_output_t lr = weft_const_float(graph, "lr", 0.1f, NULL);
  assert_shape(ok(op("ApplyMomentum", "mom", 5, weft_out(var, 0), weft_out(acc, 0), lr,
                     ph("[3,?]"), weft_const_float(graph, "m", 0.9f, NULL))), "[3,4]");
  assert_status(build(op("ApplyMomentum", "mom_bad", 5, weft_out(var, 0), weft_out(acc, 0), lr,
                         ph("[4,3]"), weft_const_float(graph, "m", 0.9f, NULL)), NULL),
                WEFT_INVALID_ARGUMENT, "mom_bad");
  assert_shape(ok(op("ApplyAdagrad", "adagrad", 4, weft_out(var, 0), weft_out(acc, 0), lr,
                     ph("[3,4]"))), "[3,4]");

  /* Random ops take their shape from a constant input. */
  b = op("RandomStandardNormal", "rnd", 1, ci(2, 5, 2));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  assert_shape(ok(b), "[5,2]");
  b = op("RandomUniform", "rnd_dyn", 1, ph_typed(WEFT_DT_INT32, "[3]"));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  assert_shape(ok(b), "[?,?,?]");
}
SHAPE_TEST(shape_nn_and_state)

/* The string, printing and file ops: TensorFlow's statefulness (Print, PrintV2 and WriteFile
 * must never be pruned or folded), an escaped default, and their shape functions. */
static void test_registry_string_ops(void) {
  static const char *const stateful[] = {"Print", "PrintV2", "WriteFile"};
  static const char *const pure[] = {"StringJoin", "ReduceJoin", "AsString", "StringToNumber",
                                     "StringFormat", "ReadFile", "DecodeRaw", "Substr"};
  for (size_t i = 0; i < G_N_ELEMENTS(stateful); i++) {
    const weft__op_def_t *def = weft__op_registry_lookup(stateful[i]);
    g_assert_nonnull(def);
    g_assert_true(def->is_stateful);
  }
  for (size_t i = 0; i < G_N_ELEMENTS(pure); i++) {
    const weft__op_def_t *def = weft__op_registry_lookup(pure[i]);
    g_assert_nonnull(def);
    g_assert_false(def->is_stateful);
  }
  const weft__op_def_t *p2 = weft__op_registry_lookup("PrintV2");
  g_assert_cmpstr(weft__op_def_find_attr(p2, "end")->default_value->u.s.data, ==, "\n");
}

static void shape_strings(void) {
  weft_output_t v2 = ph_typed(WEFT_DT_STRING, "[2]"), v3 = ph_typed(WEFT_DT_STRING, "[3]");
  weft_output_t sc = ph_typed(WEFT_DT_STRING, "[]"), vq = ph_typed(WEFT_DT_STRING, "[?]");
  weft_output_t join_in[3] = {sc, vq, v2};
  weft_op_builder_t *b = weft_op_new(graph, "StringJoin", "join");
  weft_op_add_input_list(b, join_in, 3);
  assert_shape(ok(b), "[2]");
  weft_output_t bad_in[2] = {v2, v3};
  b = weft_op_new(graph, "StringJoin", "join_bad");
  weft_op_add_input_list(b, bad_in, 2);
  assert_status(build(b, NULL), WEFT_INVALID_ARGUMENT, "join_bad");
  b = op("DecodeRaw", "raw", 1, ph_typed(WEFT_DT_STRING, "[4,5]"));
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT32);
  assert_shape(ok(b), "[4,5,?]");
  weft_output_t m = ph_typed(WEFT_DT_STRING, "[2,3]");
  b = op("ReduceJoin", "rj", 2, m, ci(1, 0));
  assert_shape(ok(b), "[3]");
  b = op("ReduceJoin", "rj_keep", 2, m, ci(1, -1));
  weft_op_set_attr_bool(b, "keep_dims", true);
  assert_shape(ok(b), "[2,1]");
  assert_shape(ok(op("ReduceJoin", "rj_dyn", 2, m, ph_typed(WEFT_DT_INT32, "[1]"))), "<unknown>");
  assert_shape(ok(op("StringSplit", "split", 2, v3, sc)), "[?,2]");
  assert_status(build(op("StringSplit", "split_bad", 2, m, sc), NULL), WEFT_INVALID_ARGUMENT,
                "split_bad");
  assert_shape(ok(op("ReadFile", "rf", 1, sc)), "[]");
  assert_shape(ok(op("Substr", "sub", 3, m, ci(-1, 1), ci(-1, 2))), "[2,3]");
}
SHAPE_TEST(shape_strings)

/* The image codec ops (ops_codec.c): TensorFlow's shape functions, and '' accepted as one of
 * EncodeJpeg's enumerated formats (the kernel refuses the others). */
static void shape_codecs(void) {
  weft_output_t sc = ph_typed(WEFT_DT_STRING, "[]"), v2 = ph_typed(WEFT_DT_STRING, "[2]");
  weft_op_builder_t *b = op("DecodeJpeg", "dj", 1, sc);
  weft_op_set_attr_int(b, "channels", 3);
  assert_shape(ok(b), "[?,?,3]");
  assert_shape(ok(op("DecodePng", "dp", 1, sc)), "[?,?,?]");
  assert_shape(ok(op("DecodeBmp", "db", 1, sc)), "[?,?,?]");
  assert_shape(ok(op("DecodeGif", "dg", 1, sc)), "[?,?,?,3]");
  assert_shape(ok(op("DecodeImage", "di", 1, sc)), "<unknown>");
  b = op("DecodeImage", "di3", 1, sc);
  weft_op_set_attr_bool(b, "expand_animations", false);
  weft_op_set_attr_int(b, "channels", 1);
  assert_shape(ok(b), "[?,?,1]");
  assert_shape(ok(op("DecodeAndCropJpeg", "dc", 2, sc, ci(4, 0, 1, 5, 6))), "[5,6,?]");
  assert_shape(ok(op("ExtractJpegShape", "es", 1, sc)), "[3]");
  assert_status(build(op("DecodePng", "dp_bad", 1, v2), NULL), WEFT_INVALID_ARGUMENT, "dp_bad");
  weft_output_t img = ph_typed(WEFT_DT_UINT8, "[4,5,3]");
  b = op("EncodeJpeg", "ej", 1, img);
  weft_op_set_attr_string(b, "format", "");
  assert_shape(ok(b), "[]");
  assert_shape(ok(op("EncodePng", "ep", 1, img)), "[]");
  assert_status(build(op("EncodePng", "ep_bad", 1, ph_typed(WEFT_DT_UINT8, "[4,5]")), NULL),
                WEFT_INVALID_ARGUMENT, "ep_bad");
}
SHAPE_TEST(shape_codecs)

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ops/parse/full_spec", test_parse_full_spec);
  g_test_add_func("/ops/parse/no_attrs_and_struct_fields", test_parse_no_attrs_and_struct_fields);
  g_test_add_func("/ops/parse/errors", test_parse_errors);
  g_test_add_func("/ops/registry/standard_ops", test_registry_standard_ops);
  g_test_add_func("/ops/registry/add_remove", test_registry_add_remove);
  g_test_add_func("/ops/shape/broadcast", shape_broadcast_run);
  g_test_add_func("/ops/shape/matmul", shape_matmul_run);
  g_test_add_func("/ops/shape/reductions", shape_reductions_run);
  g_test_add_func("/ops/shape/reshape", shape_reshape_run);
  g_test_add_func("/ops/shape/concat_pack", shape_concat_pack_run);
  g_test_add_func("/ops/shape/transpose_expand_squeeze", shape_transpose_expand_squeeze_run);
  g_test_add_func("/ops/shape/unknown_propagates", shape_unknown_propagates_run);
  g_test_add_func("/ops/shape/strided_slice", shape_strided_slice_run);
  g_test_add_func("/ops/shape/array_misc", shape_array_misc_run);
  g_test_add_func("/ops/shape/nn_and_state", shape_nn_and_state_run);
  g_test_add_func("/ops/registry/string_ops", test_registry_string_ops);
  g_test_add_func("/ops/shape/strings", shape_strings_run);
  g_test_add_func("/ops/shape/codecs", shape_codecs_run);
  return g_test_run();
}

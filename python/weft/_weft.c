/* weft._weft: the Python package's native part, thin wrappers over the public C API (weft.h)
 * alone. Graph (op builder, lookup, scopes, GraphDef bytes, gradients), Node (an op of a graph),
 * Session (run with feeds, fetches, targets, run options and metadata) and numpy <-> tensor
 * conversion. Errors become the exception a Python factory makes from (code, message), set by
 * weft/__init__.py (docs/python.md, "The extension"). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <string.h>

#include "_weft.h"

PyMODINIT_FUNC PyInit__weft(void);

/* ---------------------------------------------------------------------------------------------
 * Errors */

static PyObject *error_factory; /* callable(code, message) -> exception instance */

/* Raises `status` as a Python exception and frees it; returns NULL for `return raise(s)`. */
PyObject *raise_status(weft_status_t *status) {
  weft_code_t code = weft_status_code(status);
  const char *msg = weft_status_message(status);
  if (error_factory) {
    PyObject *exc = PyObject_CallFunction(error_factory, "is", (int)code, msg);
    if (exc) {
      PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
      Py_DECREF(exc);
    }
  } else {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", weft_code_name(code), msg);
  }
  weft_status_free(status);
  return NULL;
}

static PyObject *set_error_factory(PyObject *self, PyObject *fn) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "set_error_factory: expected a callable(code, message)");
    return NULL;
  }
  Py_XSETREF(error_factory, Py_NewRef(fn));
  Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * numpy <-> tensor */

static int npy_type_of(weft_dtype_t dt) {
  switch (dt) {
  case WEFT_DT_FLOAT: return NPY_FLOAT32;
  case WEFT_DT_DOUBLE: return NPY_FLOAT64;
  case WEFT_DT_HALF: return NPY_FLOAT16;
  case WEFT_DT_INT8: return NPY_INT8;
  case WEFT_DT_INT16: return NPY_INT16;
  case WEFT_DT_INT32: return NPY_INT32;
  case WEFT_DT_INT64: return NPY_INT64;
  case WEFT_DT_UINT8: return NPY_UINT8;
  case WEFT_DT_UINT16: return NPY_UINT16;
  case WEFT_DT_UINT32: return NPY_UINT32;
  case WEFT_DT_UINT64: return NPY_UINT64;
  case WEFT_DT_BOOL: return NPY_BOOL;
  default: return -1;
  }
}

static weft_dtype_t dtype_of_npy(int t) {
  switch (t) {
  case NPY_FLOAT32: return WEFT_DT_FLOAT;
  case NPY_FLOAT64: return WEFT_DT_DOUBLE;
  case NPY_FLOAT16: return WEFT_DT_HALF;
  case NPY_INT8: return WEFT_DT_INT8;
  case NPY_INT16: return WEFT_DT_INT16;
  case NPY_INT32: return WEFT_DT_INT32;
  case NPY_INT64: return WEFT_DT_INT64;
  case NPY_UINT8: return WEFT_DT_UINT8;
  case NPY_UINT16: return WEFT_DT_UINT16;
  case NPY_UINT32: return WEFT_DT_UINT32;
  case NPY_UINT64: return WEFT_DT_UINT64;
  case NPY_BOOL: return WEFT_DT_BOOL;
  default:
    /* long long / long are the same width as int64 here but a different type number */
    if (t == NPY_LONGLONG || t == NPY_LONG) return WEFT_DT_INT64;
    if (t == NPY_ULONGLONG || t == NPY_ULONG) return WEFT_DT_UINT64;
    return WEFT_DT_INVALID;
  }
}

/* One element of a string array as bytes (str is encoded as UTF-8). */
static int string_element(PyObject *item, const char **bytes, Py_ssize_t *len, PyObject **keep) {
  *keep = NULL;
  if (PyBytes_Check(item)) return PyBytes_AsStringAndSize(item, (char **)bytes, len);
  if (PyUnicode_Check(item)) {
    *bytes = PyUnicode_AsUTF8AndSize(item, len);
    return *bytes ? 0 : -1;
  }
  PyErr_Format(PyExc_TypeError, "a string tensor takes bytes or str elements, not %s",
               Py_TYPE(item)->tp_name);
  return -1;
}

/* A new tensor (the caller owns the reference) from anything numpy makes an array of; `want` is
 * the dtype to convert to (WEFT_DT_INVALID: the array's own). NULL with a Python error set. */
static weft_tensor_t *tensor_from_py(PyObject *obj, weft_dtype_t want) {
  PyArrayObject *arr = NULL;
  int npy_want = want == WEFT_DT_INVALID || want == WEFT_DT_STRING ? NPY_NOTYPE : npy_type_of(want);
  if (want != WEFT_DT_INVALID && want != WEFT_DT_STRING && npy_want < 0) {
    PyErr_Format(PyExc_TypeError, "numpy has no dtype for weft dtype %s", weft_dtype_name(want));
    return NULL;
  }
  PyArray_Descr *descr = npy_want == NPY_NOTYPE ? NULL : PyArray_DescrFromType(npy_want);
  arr = (PyArrayObject *)PyArray_FromAny(obj, descr, 0, 0, NPY_ARRAY_C_CONTIGUOUS |
                                         NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
  if (!arr) return NULL;
  int rank = PyArray_NDIM(arr);
  if (rank > WEFT_MAX_RANK) {
    PyErr_Format(PyExc_ValueError, "a tensor has at most %d dimensions, this array %d",
                 WEFT_MAX_RANK, rank);
    Py_DECREF(arr);
    return NULL;
  }
  int64_t dims[WEFT_MAX_RANK];
  for (int i = 0; i < rank; i++) dims[i] = PyArray_DIM(arr, i);
  int t = PyArray_TYPE(arr);
  weft_tensor_t *tensor = NULL;
  if (t == NPY_OBJECT || t == NPY_STRING || t == NPY_UNICODE || want == WEFT_DT_STRING) {
    tensor = weft_tensor_new(WEFT_DT_STRING, rank, dims);
    if (!tensor) {
      Py_DECREF(arr);
      return (weft_tensor_t *)PyErr_NoMemory();
    }
    npy_intp n = PyArray_SIZE(arr);
    for (npy_intp i = 0; i < n; i++) {
      PyObject *item = PyArray_GETITEM(arr, PyArray_BYTES(arr) + i * PyArray_ITEMSIZE(arr));
      const char *bytes;
      Py_ssize_t len;
      PyObject *keep;
      int rc = item ? string_element(item, &bytes, &len, &keep) : -1;
      if (rc == 0) {
        weft_status_t *st = weft_tensor_set_string(tensor, i, bytes, (size_t)len);
        if (st) {
          Py_XDECREF(item);
          weft_tensor_unref(tensor);
          Py_DECREF(arr);
          return (weft_tensor_t *)raise_status(st);
        }
      }
      Py_XDECREF(item);
      if (rc != 0) {
        weft_tensor_unref(tensor);
        Py_DECREF(arr);
        return NULL;
      }
    }
    Py_DECREF(arr);
    return tensor;
  }
  weft_dtype_t dt = dtype_of_npy(t);
  if (dt == WEFT_DT_INVALID) {
    PyErr_Format(PyExc_TypeError, "no weft dtype for numpy dtype %R",
                 (PyObject *)PyArray_DESCR(arr));
    Py_DECREF(arr);
    return NULL;
  }
  weft_status_t *st = NULL;
  tensor = weft_tensor_new_from_data(dt, rank, dims, PyArray_DATA(arr), (size_t)PyArray_NBYTES(arr),
                                     &st);
  Py_DECREF(arr);
  if (!tensor) return (weft_tensor_t *)raise_status(st);
  return tensor;
}

static void tensor_capsule_free(PyObject *cap) {
  weft_tensor_unref(PyCapsule_GetPointer(cap, "weft.tensor"));
}

/* A numpy array of `tensor` (borrowed; the array takes its own reference when it shares the
 * memory), or a numpy scalar (bytes for a string) when it has rank 0. Strings become an object
 * array of bytes; a tensor nobody else holds is shared, not copied, and the array keeps it
 * alive through its base object. */
static PyObject *tensor_to_py(weft_tensor_t *tensor) {
  weft_dtype_t dt = weft_tensor_dtype(tensor);
  int rank = weft_tensor_rank(tensor);
  npy_intp dims[WEFT_MAX_RANK];
  for (int i = 0; i < rank; i++) dims[i] = (npy_intp)weft_tensor_dims(tensor)[i];
  if (dt == WEFT_DT_STRING && rank == 0) {
    const weft_string_t *s = weft_tensor_data(tensor);
    return PyBytes_FromStringAndSize(s[0].data, (Py_ssize_t)s[0].len);
  }
  if (dt == WEFT_DT_STRING) {
    PyArrayObject *arr = (PyArrayObject *)PyArray_SimpleNew(rank, dims, NPY_OBJECT);
    if (!arr) return NULL;
    const weft_string_t *s = weft_tensor_data(tensor);
    int64_t n = weft_tensor_num_elements(tensor);
    PyObject **slots = PyArray_DATA(arr);
    for (int64_t i = 0; i < n; i++) {
      PyObject *b = PyBytes_FromStringAndSize(s[i].data, (Py_ssize_t)s[i].len);
      if (!b) {
        Py_DECREF(arr);
        return NULL;
      }
      Py_XSETREF(slots[i], b);
    }
    return (PyObject *)arr;
  }
  int t = npy_type_of(dt);
  if (t < 0) {
    PyErr_Format(PyExc_TypeError, "numpy has no dtype for weft dtype %s", weft_dtype_name(dt));
    return NULL;
  }
  void *data = weft_tensor_data(tensor);
  if (rank == 0) { /* a numpy scalar, as TensorFlow returns for a 0-d fetch */
    PyArray_Descr *descr = PyArray_DescrFromType(t);
    if (!descr) return NULL;
    PyObject *scalar = PyArray_Scalar(data, descr, NULL);
    Py_DECREF(descr);
    return scalar;
  }
  size_t align = (size_t)weft_dtype_size(dt);
  if (weft_tensor_is_exclusive(tensor) && data && ((uintptr_t)data % (align ? align : 1)) == 0) {
    PyObject *arr = PyArray_SimpleNewFromData(rank, dims, t, data);
    if (!arr) return NULL;
    PyObject *cap = PyCapsule_New(weft_tensor_ref(tensor), "weft.tensor", tensor_capsule_free);
    if (!cap) {
      weft_tensor_unref(tensor);
      Py_DECREF(arr);
      return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
      Py_DECREF(arr);
      return NULL;
    }
    return arr;
  }
  PyArrayObject *arr = (PyArrayObject *)PyArray_SimpleNew(rank, dims, t);
  if (!arr) return NULL;
  if (weft_tensor_nbytes(tensor)) memcpy(PyArray_DATA(arr), data, weft_tensor_nbytes(tensor));
  return (PyObject *)arr;
}

/* Round trip, for tests: numpy -> tensor -> numpy. */
static PyObject *py_roundtrip(PyObject *self, PyObject *args) {
  PyObject *obj;
  int want = 0;
  if (!PyArg_ParseTuple(args, "O|i", &obj, &want)) return NULL;
  weft_tensor_t *t = tensor_from_py(obj, (weft_dtype_t)want);
  if (!t) return NULL;
  PyObject *r = tensor_to_py(t);
  weft_tensor_unref(t);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * Graph and Node */

PyTypeObject GraphType, NodeType, SessionType;

PyObject *node_wrap(GraphObject *g, weft_node_t *n) {
  if (!n) Py_RETURN_NONE;
  NodeObject *o = PyObject_New(NodeObject, &NodeType);
  if (!o) return NULL;
  o->graph = (GraphObject *)Py_NewRef((PyObject *)g);
  o->node = n;
  return (PyObject *)o;
}

PyObject *output_wrap(GraphObject *g, weft_output_t out) {
  if (!out.node) Py_RETURN_NONE;
  PyObject *n = node_wrap(g, out.node);
  if (!n) return NULL;
  return Py_BuildValue("(Ni)", n, out.index);
}

/* (Node, index) or Node (index 0) of graph g -> weft_output_t. */
int output_from_py(GraphObject *g, PyObject *obj, weft_output_t *out) {
  PyObject *node = obj;
  int index = 0;
  if (PyTuple_Check(obj)) {
    if (!PyArg_ParseTuple(obj, "Oi", &node, &index)) return -1;
  }
  if (!PyObject_TypeCheck(node, &NodeType)) {
    PyErr_Format(PyExc_TypeError, "expected a Node or (Node, index), not %s",
                 Py_TYPE(node)->tp_name);
    return -1;
  }
  NodeObject *n = (NodeObject *)node;
  if (g && n->graph != g) {
    PyErr_Format(PyExc_ValueError, "node '%s' belongs to another graph", weft_node_name(n->node));
    return -1;
  }
  if (index < 0 || index >= weft_node_num_outputs(n->node)) {
    PyErr_Format(PyExc_ValueError, "node '%s' has %d outputs, not output %d",
                 weft_node_name(n->node), weft_node_num_outputs(n->node), index);
    return -1;
  }
  out->node = n->node;
  out->index = index;
  return 0;
}

weft_node_t *node_from_py(GraphObject *g, PyObject *obj) {
  if (!PyObject_TypeCheck(obj, &NodeType)) {
    PyErr_Format(PyExc_TypeError, "expected a Node, not %s", Py_TYPE(obj)->tp_name);
    return NULL;
  }
  NodeObject *n = (NodeObject *)obj;
  if (n->graph != g) {
    PyErr_Format(PyExc_ValueError, "node '%s' belongs to another graph", weft_node_name(n->node));
    return NULL;
  }
  return n->node;
}

static int graph_init(GraphObject *self, PyObject *args, PyObject *kw) {
  if (!PyArg_ParseTuple(args, "")) return -1;
  self->graph = weft_graph_new();
  self->device_fns = PyList_New(0);
  self->fn_results = PyList_New(0);
  if (!self->graph || !self->device_fns || !self->fn_results) {
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

static void graph_dealloc(GraphObject *self) {
  weft_graph_free(self->graph);
  Py_XDECREF(self->device_fns);
  Py_XDECREF(self->fn_results);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A dtype number from Python, checked: the core would otherwise take any number. */
static int dtype_from_py(PyObject *v, const char *attr, weft_dtype_t *out) {
  long x = PyLong_AsLong(v);
  if (x == -1 && PyErr_Occurred()) return -1;
  if (x <= 0 || x > 2 * WEFT_DT_REF_OFFSET ||
      !strcmp(weft_dtype_name((weft_dtype_t)x), "invalid")) {
    PyErr_Format(PyExc_ValueError, "attribute '%s': %ld is not a weft dtype", attr, x);
    return -1;
  }
  *out = (weft_dtype_t)x;
  return 0;
}

/* A shape attribute's value: None (unknown rank: *rank -1) or a sequence of ints and Nones
 * (unknown dimensions). */
static int shape_attr_from_py(PyObject *v, const char *name, int *rank, int64_t *dims) {
  if (v == Py_None) {
    *rank = -1;
    return 0;
  }
  PyObject *seq = PySequence_Fast(v, "a shape is a sequence of ints or None");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > WEFT_MAX_RANK) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "attribute '%s': a shape has at most %d dimensions", name,
                 WEFT_MAX_RANK);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
    dims[i] = d == Py_None ? WEFT_DIM_UNKNOWN : PyLong_AsLongLong(d);
    if (dims[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  *rank = (int)n;
  return 0;
}

/* Sets one attribute from (name, kind, value); kinds: int float bool type string shape tensor
 * list_int list_float list_type list_string list_shape list_bool(as ints). */
static int set_attr(GraphObject *g, weft_op_builder_t *b, PyObject *spec) {
  const char *name, *kind;
  PyObject *v;
  if (!PyArg_ParseTuple(spec, "ssO", &name, &kind, &v)) return -1;
  if (!strcmp(kind, "int")) {
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    weft_op_set_attr_int(b, name, x);
  } else if (!strcmp(kind, "float")) {
    double x = PyFloat_AsDouble(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    weft_op_set_attr_float(b, name, (float)x);
  } else if (!strcmp(kind, "bool")) {
    int x = PyObject_IsTrue(v);
    if (x < 0) return -1;
    weft_op_set_attr_bool(b, name, x);
  } else if (!strcmp(kind, "type")) {
    weft_dtype_t x;
    if (dtype_from_py(v, name, &x) < 0) return -1;
    weft_op_set_attr_type(b, name, x);
  } else if (!strcmp(kind, "string")) {
    const char *s;
    if (PyBytes_Check(v)) s = PyBytes_AsString(v);
    else s = PyUnicode_AsUTF8(v);
    if (!s) return -1;
    weft_op_set_attr_string(b, name, s);
  } else if (!strcmp(kind, "shape")) {
    int64_t dims[WEFT_MAX_RANK];
    int rank;
    if (shape_attr_from_py(v, name, &rank, dims) < 0) return -1;
    weft_op_set_attr_shape(b, name, rank, dims);
  } else if (!strcmp(kind, "tensor")) {
    PyObject *arr = v;
    int want = 0;
    if (PyTuple_Check(v) && !PyArg_ParseTuple(v, "Oi", &arr, &want)) return -1;
    weft_tensor_t *t = tensor_from_py(arr, (weft_dtype_t)want);
    if (!t) return -1;
    weft_op_set_attr_tensor(b, name, t);
    weft_tensor_unref(t);
  } else if (!strncmp(kind, "list_", 5)) {
    PyObject *seq = PySequence_Fast(v, "a list attribute takes a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    const char *k = kind + 5;
    if (!strcmp(k, "int") || !strcmp(k, "type")) {
      int64_t *ints = PyMem_Calloc((size_t)n + 1, sizeof *ints);
      weft_dtype_t *types = PyMem_Calloc((size_t)n + 1, sizeof *types);
      for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (k[0] == 't') {
          rc = dtype_from_py(item, name, &types[i]);
        } else {
          ints[i] = PyLong_AsLongLong(item);
          if (ints[i] == -1 && PyErr_Occurred()) rc = -1;
        }
      }
      if (rc == 0 && k[0] == 'i') weft_op_set_attr_int_list(b, name, ints, (int)n);
      if (rc == 0 && k[0] == 't') weft_op_set_attr_type_list(b, name, types, (int)n);
      PyMem_Free(ints);
      PyMem_Free(types);
    } else if (!strcmp(k, "float")) {
      float *fs = PyMem_Calloc((size_t)n + 1, sizeof *fs);
      for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        double d = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        fs[i] = (float)d;
        if (d == -1 && PyErr_Occurred()) rc = -1;
      }
      if (rc == 0) weft_op_set_attr_float_list(b, name, fs, (int)n);
      PyMem_Free(fs);
    } else if (!strcmp(k, "string")) {
      const char **ss = PyMem_Calloc((size_t)n + 1, sizeof *ss);
      for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        ss[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (!ss[i]) rc = -1;
      }
      if (rc == 0) weft_op_set_attr_string_list(b, name, ss, (int)n);
      PyMem_Free(ss);
    } else if (!strcmp(k, "shape")) {
      int *ranks = PyMem_Calloc((size_t)n + 1, sizeof *ranks);
      int64_t *all = PyMem_Calloc(((size_t)n + 1) * WEFT_MAX_RANK, sizeof *all);
      const int64_t **dims = PyMem_Calloc((size_t)n + 1, sizeof *dims);
      if (!ranks || !all || !dims) {
        PyErr_NoMemory();
        rc = -1;
      }
      for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        dims[i] = all + i * WEFT_MAX_RANK;
        rc = shape_attr_from_py(PySequence_Fast_GET_ITEM(seq, i), name, &ranks[i],
                                all + i * WEFT_MAX_RANK);
      }
      if (rc == 0) weft_op_set_attr_shape_list(b, name, ranks, dims, (int)n);
      PyMem_Free(ranks);
      PyMem_Free(all);
      PyMem_Free(dims);
    } else {
      PyErr_Format(PyExc_ValueError, "attribute '%s': unknown kind '%s'", name, kind);
      rc = -1;
    }
    Py_DECREF(seq);
    return rc;
  } else {
    PyErr_Format(PyExc_ValueError, "attribute '%s': unknown kind '%s'", name, kind);
    return -1;
  }
  return 0;
}

/* add_op(op, name, inputs, attrs=(), control_inputs=(), device=None) -> Node.
 * inputs: items (Node, index) / Node, or a list of them for a list argument. */
static PyObject *graph_add_op(GraphObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op", "name", "inputs", "attrs", "control_inputs", "device", NULL};
  const char *op, *name = NULL, *device = NULL;
  PyObject *inputs = NULL, *attrs = NULL, *controls = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sz|OOOz", kwlist, &op, &name, &inputs, &attrs,
                                   &controls, &device))
    return NULL;
  weft_op_builder_t *b = weft_op_new(self->graph, op, name);
  if (!b) return PyErr_NoMemory();
  PyObject *seq = NULL;
  weft_output_t *list = NULL;
#define FAIL()                                  \
  do {                                          \
    Py_XDECREF(seq);                            \
    PyMem_Free(list);                           \
    weft_status_free(weft_op_finish(b, NULL)); \
    return NULL;                                \
  } while (0)
  /* the builder is finished (and freed) on failure with the error discarded: it holds no node */
  if (inputs && inputs != Py_None) {
    seq = PySequence_Fast(inputs, "inputs must be a sequence");
    if (!seq) FAIL();
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
      PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
      if (PyList_Check(item)) {
        Py_ssize_t n = PyList_GET_SIZE(item);
        list = PyMem_Calloc((size_t)n + 1, sizeof *list);
        if (!list) FAIL();
        for (Py_ssize_t k = 0; k < n; k++)
          if (output_from_py(self, PyList_GET_ITEM(item, k), &list[k]) < 0) FAIL();
        weft_op_add_input_list(b, list, (int)n);
        PyMem_Free(list);
        list = NULL;
      } else {
        weft_output_t o;
        if (output_from_py(self, item, &o) < 0) FAIL();
        weft_op_add_input(b, o);
      }
    }
    Py_CLEAR(seq);
  }
  if (attrs && attrs != Py_None) {
    seq = PySequence_Fast(attrs, "attrs must be a sequence of (name, kind, value)");
    if (!seq) FAIL();
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
      if (set_attr(self, b, PySequence_Fast_GET_ITEM(seq, i)) < 0) FAIL();
    Py_CLEAR(seq);
  }
  if (controls && controls != Py_None) {
    seq = PySequence_Fast(controls, "control_inputs must be a sequence of Nodes");
    if (!seq) FAIL();
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
      weft_node_t *n = node_from_py(self, PySequence_Fast_GET_ITEM(seq, i));
      if (!n) FAIL();
      weft_op_add_control_input(b, n);
    }
    Py_CLEAR(seq);
  }
#undef FAIL
  if (device) weft_op_set_device(b, device);
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) return raise_status(st);
  return node_wrap(self, node);
}

static PyObject *graph_node(GraphObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  return node_wrap(self, weft_graph_node(self->graph, name));
}

static PyObject *graph_num_nodes(GraphObject *self, PyObject *unused) {
  return PyLong_FromLong(weft_graph_num_nodes(self->graph));
}

static PyObject *graph_node_at(GraphObject *self, PyObject *arg) {
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= weft_graph_num_nodes(self->graph)) {
    PyErr_Format(PyExc_IndexError, "node index %ld out of range", i);
    return NULL;
  }
  return node_wrap(self, weft_graph_node_at(self->graph, (int)i));
}

static PyObject *graph_find_output(GraphObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  weft_output_t out;
  weft_status_t *st = weft_graph_find_output(self->graph, name, &out);
  if (st) return raise_status(st);
  return output_wrap(self, out);
}

/* close_loop(merge, index, next): weft_graph_close_loop, the back edge of a while loop. */
static PyObject *graph_close_loop(GraphObject *self, PyObject *args) {
  PyObject *merge, *next;
  int index;
  if (!PyArg_ParseTuple(args, "O!iO!", &NodeType, &merge, &index, &NodeType, &next)) return NULL;
  weft_status_t *st = weft_graph_close_loop(self->graph, ((NodeObject *)merge)->node, index,
                                            weft_out(((NodeObject *)next)->node, 0));
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *graph_push_name_scope(GraphObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8(arg);
  if (!s) return NULL;
  weft_graph_push_name_scope(self->graph, s);
  Py_RETURN_NONE;
}

static PyObject *graph_pop_name_scope(GraphObject *self, PyObject *unused) {
  weft_graph_pop_name_scope(self->graph);
  Py_RETURN_NONE;
}

/* Device functions are Python callables fn(op_type, node_name) -> str or None. The graph calls
 * them while an op is added, with the GIL held (add_op keeps it); a Python error inside is
 * printed and counts as "no opinion", since the C callback cannot fail. */
static const char *call_device_fn(void *user_data, const char *op, const char *node_name) {
  PyObject *pair = user_data; /* (graph, fn) */
  GraphObject *g = (GraphObject *)PyTuple_GET_ITEM(pair, 0);
  PyObject *fn = PyTuple_GET_ITEM(pair, 1);
  PyObject *r = PyObject_CallFunction(fn, "ss", op, node_name);
  if (!r) {
    PyErr_WriteUnraisable(fn);
    return NULL;
  }
  if (r == Py_None) {
    Py_DECREF(r);
    return NULL;
  }
  if (!PyUnicode_Check(r)) {
    PyErr_Format(PyExc_TypeError, "a device function returns a str or None, not %s",
                 Py_TYPE(r)->tp_name);
    PyErr_WriteUnraisable(fn);
    Py_DECREF(r);
    return NULL;
  }
  /* keep the string alive until the graph has copied it: replace the previous result */
  Py_ssize_t n = PyList_GET_SIZE(g->fn_results);
  if (n > 0) PyList_SetItem(g->fn_results, n - 1, r);
  else Py_DECREF(r);
  return n > 0 ? PyUnicode_AsUTF8(r) : NULL;
}

static PyObject *graph_push_device(GraphObject *self, PyObject *arg) {
  if (PyCallable_Check(arg)) {
    PyObject *pair = PyTuple_Pack(2, (PyObject *)self, arg);
    if (!pair || PyList_Append(self->device_fns, pair) < 0 ||
        PyList_Append(self->fn_results, Py_None) < 0) {
      Py_XDECREF(pair);
      return NULL;
    }
    Py_DECREF(pair);
    /* borrowed: device_fns holds it until the matching pop */
    weft_graph_push_device_fn(self->graph, call_device_fn, pair);
    Py_RETURN_NONE;
  }
  const char *s = arg == Py_None ? "" : PyUnicode_AsUTF8(arg);
  if (!s) return NULL;
  if (PyList_Append(self->device_fns, Py_None) < 0) return NULL;
  weft_graph_push_device(self->graph, s);
  Py_RETURN_NONE;
}

static PyObject *graph_pop_device(GraphObject *self, PyObject *unused) {
  Py_ssize_t n = PyList_GET_SIZE(self->device_fns);
  if (n == 0) {
    PyErr_SetString(PyExc_RuntimeError, "pop_device without a matching push_device");
    return NULL;
  }
  weft_graph_pop_device(self->graph);
  if (PyList_GET_ITEM(self->device_fns, n - 1) != Py_None) {
    Py_ssize_t m = PyList_GET_SIZE(self->fn_results);
    if (PyList_SetSlice(self->fn_results, m - 1, m, NULL) < 0) return NULL;
  }
  if (PyList_SetSlice(self->device_fns, n - 1, n, NULL) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *graph_push_control_deps(GraphObject *self, PyObject *arg) {
  PyObject *seq = PySequence_Fast(arg, "control dependencies are a sequence of Nodes");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  weft_node_t **nodes = PyMem_Calloc((size_t)n + 1, sizeof *nodes);
  for (Py_ssize_t i = 0; i < n; i++) {
    nodes[i] = node_from_py(self, PySequence_Fast_GET_ITEM(seq, i));
    if (!nodes[i]) {
      PyMem_Free(nodes);
      Py_DECREF(seq);
      return NULL;
    }
  }
  weft_graph_push_control_deps(self->graph, nodes, (int)n);
  PyMem_Free(nodes);
  Py_DECREF(seq);
  Py_RETURN_NONE;
}

static PyObject *graph_pop_control_deps(GraphObject *self, PyObject *unused) {
  weft_graph_pop_control_deps(self->graph);
  Py_RETURN_NONE;
}

static PyObject *graph_push_colocate(GraphObject *self, PyObject *arg) {
  weft_node_t *n = node_from_py(self, arg);
  if (!n) return NULL;
  weft_graph_push_colocate(self->graph, n);
  Py_RETURN_NONE;
}

static PyObject *graph_pop_colocate(GraphObject *self, PyObject *unused) {
  weft_graph_pop_colocate(self->graph);
  Py_RETURN_NONE;
}

/* import_graph_def(bytes, prefix=None, input_map=()): input_map is a sequence of
 * (key str, (Node, index)). */
static PyObject *graph_import(GraphObject *self, PyObject *args) {
  Py_buffer buf;
  const char *prefix = NULL;
  PyObject *map = NULL;
  if (!PyArg_ParseTuple(args, "y*|zO", &buf, &prefix, &map)) return NULL;
  PyObject *seq = map && map != Py_None ? PySequence_Fast(map, "input_map: (key, output) pairs")
                                        : PyTuple_New(0);
  if (!seq) {
    PyBuffer_Release(&buf);
    return NULL;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  const char **keys = PyMem_Calloc((size_t)n + 1, sizeof *keys);
  weft_output_t *values = PyMem_Calloc((size_t)n + 1, sizeof *values);
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
    PyObject *key, *value;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO", &key, &value) ||
        !(keys[i] = PyUnicode_AsUTF8(key)) || output_from_py(self, value, &values[i]) < 0)
      rc = -1;
  }
  weft_status_t *st = NULL;
  if (rc == 0)
    st = weft_graph_import_graphdef_mapped(self->graph, buf.buf, (size_t)buf.len, prefix, keys,
                                           values, (int)n);
  PyMem_Free(keys);
  PyMem_Free(values);
  Py_DECREF(seq);
  PyBuffer_Release(&buf);
  if (rc < 0) return NULL;
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *graph_export(GraphObject *self, PyObject *unused) {
  void *bytes = NULL;
  size_t len = 0;
  weft_status_t *st = weft_graph_export_graphdef(self->graph, &bytes, &len);
  if (st) return raise_status(st);
  PyObject *r = PyBytes_FromStringAndSize(bytes, (Py_ssize_t)len);
  weft_free(bytes);
  return r;
}

/* outputs list of (Node, index) -> C array (PyMem_Free it); None entries allowed if `nullable`. */
static weft_output_t *outputs_from_py(GraphObject *g, PyObject *obj, Py_ssize_t *n, bool nullable) {
  PyObject *seq = PySequence_Fast(obj, "expected a sequence of (Node, index)");
  if (!seq) return NULL;
  *n = PySequence_Fast_GET_SIZE(seq);
  weft_output_t *outs = PyMem_Calloc((size_t)*n + 1, sizeof *outs);
  for (Py_ssize_t i = 0; i < *n; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (nullable && item == Py_None) continue;
    if (output_from_py(g, item, &outs[i]) < 0) {
      PyMem_Free(outs);
      Py_DECREF(seq);
      return NULL;
    }
  }
  Py_DECREF(seq);
  return outs;
}

/* gradients(ys, xs, grad_ys=None) -> list of (Node, index) or None per x. */
static PyObject *graph_gradients(GraphObject *self, PyObject *args) {
  PyObject *ys_obj, *xs_obj, *gy_obj = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O", &ys_obj, &xs_obj, &gy_obj)) return NULL;
  Py_ssize_t n_ys, n_xs, n_gy = 0;
  weft_output_t *ys = outputs_from_py(self, ys_obj, &n_ys, false);
  if (!ys) return NULL;
  weft_output_t *xs = outputs_from_py(self, xs_obj, &n_xs, false);
  weft_output_t *gy = NULL;
  if (xs && gy_obj != Py_None) {
    gy = outputs_from_py(self, gy_obj, &n_gy, true);
    if (gy && n_gy != n_ys) {
      PyErr_Format(PyExc_ValueError, "grad_ys has %zd entries for %zd ys", n_gy, n_ys);
      PyMem_Free(gy);
      gy = NULL;
    }
  }
  PyObject *result = NULL;
  if (xs && (gy || gy_obj == Py_None)) {
    weft_output_t *grads = PyMem_Calloc((size_t)n_xs + 1, sizeof *grads);
    weft_status_t *st = weft_gradients(self->graph, ys, (int)n_ys, xs, (int)n_xs, gy, grads);
    if (st) {
      raise_status(st);
    } else {
      result = PyList_New(n_xs);
      for (Py_ssize_t i = 0; result && i < n_xs; i++) {
        PyObject *o = output_wrap(self, grads[i]);
        if (!o) Py_CLEAR(result);
        else PyList_SET_ITEM(result, i, o);
      }
    }
    PyMem_Free(grads);
  }
  PyMem_Free(ys);
  PyMem_Free(xs);
  PyMem_Free(gy);
  return result;
}

static PyMethodDef graph_methods[] = {
  {"add_op", (PyCFunction)(void (*)(void))graph_add_op, METH_VARARGS | METH_KEYWORDS,
   "add_op(op, name, inputs=(), attrs=(), control_inputs=(), device=None) -> Node"},
  {"node", (PyCFunction)graph_node, METH_O, "node(name) -> Node or None"},
  {"close_loop", (PyCFunction)graph_close_loop, METH_VARARGS,
   "close_loop(merge, index, next_iteration): point a loop's Merge input at its NextIteration"},
  {"num_nodes", (PyCFunction)graph_num_nodes, METH_NOARGS, "number of nodes"},
  {"node_at", (PyCFunction)graph_node_at, METH_O, "node_at(i) -> Node, creation order"},
  {"find_output", (PyCFunction)graph_find_output, METH_O, "find_output('n:1') -> (Node, 1)"},
  {"push_name_scope", (PyCFunction)graph_push_name_scope, METH_O, NULL},
  {"pop_name_scope", (PyCFunction)graph_pop_name_scope, METH_NOARGS, NULL},
  {"push_device", (PyCFunction)graph_push_device, METH_O,
   "push_device(spec str, None or callable(op_type, node_name) -> str|None)"},
  {"pop_device", (PyCFunction)graph_pop_device, METH_NOARGS, NULL},
  {"push_control_deps", (PyCFunction)graph_push_control_deps, METH_O, NULL},
  {"pop_control_deps", (PyCFunction)graph_pop_control_deps, METH_NOARGS, NULL},
  {"push_colocate", (PyCFunction)graph_push_colocate, METH_O, NULL},
  {"pop_colocate", (PyCFunction)graph_pop_colocate, METH_NOARGS, NULL},
  {"import_graph_def", (PyCFunction)graph_import, METH_VARARGS,
   "import_graph_def(bytes, prefix=None, input_map=((key, (Node, index)), ...))"},
  {"export_graph_def", (PyCFunction)graph_export, METH_NOARGS, "GraphDef bytes"},
  {"gradients", (PyCFunction)graph_gradients, METH_VARARGS,
   "gradients(ys, xs, grad_ys=None) -> [(Node, index) or None]"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject GraphType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Graph",
  .tp_basicsize = sizeof(GraphObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A weft graph (weft_graph_t).",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)graph_init,
  .tp_dealloc = (destructor)graph_dealloc,
  .tp_methods = graph_methods,
};

static void node_dealloc(NodeObject *self) {
  Py_XDECREF(self->graph);
  PyObject_Free(self);
}

static PyObject *node_get_name(NodeObject *self, void *c) {
  return PyUnicode_FromString(weft_node_name(self->node));
}
static PyObject *node_get_op(NodeObject *self, void *c) {
  return PyUnicode_FromString(weft_node_op(self->node));
}
static PyObject *node_get_device(NodeObject *self, void *c) {
  return PyUnicode_FromString(weft_node_requested_device(self->node));
}
static PyObject *node_get_num_outputs(NodeObject *self, void *c) {
  return PyLong_FromLong(weft_node_num_outputs(self->node));
}
static PyObject *node_get_graph(NodeObject *self, void *c) {
  return Py_NewRef((PyObject *)self->graph);
}
static PyObject *node_get_colocation(NodeObject *self, void *c) {
  const char *g = weft_node_colocation_group(self->node);
  if (!g) Py_RETURN_NONE;
  return PyUnicode_FromString(g);
}
static PyObject *node_get_inputs(NodeObject *self, void *c) {
  int n = weft_node_num_inputs(self->node);
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject *o = output_wrap(self->graph, weft_node_input(self->node, i));
    if (!o) Py_CLEAR(l);
    else PyList_SET_ITEM(l, i, o);
  }
  return l;
}
static PyObject *node_get_control_inputs(NodeObject *self, void *c) {
  int n = weft_node_num_control_inputs(self->node);
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject *o = node_wrap(self->graph, weft_node_control_input(self->node, i));
    if (!o) Py_CLEAR(l);
    else PyList_SET_ITEM(l, i, o);
  }
  return l;
}

static PyObject *node_output_dtype(NodeObject *self, PyObject *arg) {
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(weft_node_output_dtype(self->node, (int)i));
}

/* output_shape(i) -> tuple with None for unknown dims, or None for an unknown rank. */
static PyObject *node_output_shape(NodeObject *self, PyObject *arg) {
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  int64_t dims[WEFT_MAX_RANK];
  int rank = weft_node_output_shape(self->node, (int)i, dims);
  if (rank < 0) Py_RETURN_NONE;
  PyObject *t = PyTuple_New(rank);
  for (int k = 0; t && k < rank; k++)
    PyTuple_SET_ITEM(t, k, dims[k] < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(dims[k]));
  return t;
}

static Py_hash_t node_hash(NodeObject *self) { return _Py_HashPointer(self->node); }

static PyObject *node_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, &NodeType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  bool eq = ((NodeObject *)a)->node == ((NodeObject *)b)->node;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *node_repr(NodeObject *self) {
  return PyUnicode_FromFormat("<weft Node '%s' op=%s>", weft_node_name(self->node),
                              weft_node_op(self->node));
}

static PyGetSetDef node_getset[] = {
  {"name", (getter)node_get_name, NULL, NULL, NULL},
  {"op", (getter)node_get_op, NULL, NULL, NULL},
  {"device", (getter)node_get_device, NULL, "requested device", NULL},
  {"num_outputs", (getter)node_get_num_outputs, NULL, NULL, NULL},
  {"graph", (getter)node_get_graph, NULL, NULL, NULL},
  {"colocation_group", (getter)node_get_colocation, NULL, NULL, NULL},
  {"inputs", (getter)node_get_inputs, NULL, "[(Node, index)]", NULL},
  {"control_inputs", (getter)node_get_control_inputs, NULL, "[Node]", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef node_methods[] = {
  {"output_dtype", (PyCFunction)node_output_dtype, METH_O, "weft dtype number of output i"},
  {"output_shape", (PyCFunction)node_output_shape, METH_O, "inferred shape of output i"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject NodeType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Node",
  .tp_basicsize = sizeof(NodeObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A node of a weft graph (borrowed from it; keeps the graph alive).",
  .tp_dealloc = (destructor)node_dealloc,
  .tp_getset = node_getset,
  .tp_methods = node_methods,
  .tp_hash = (hashfunc)node_hash,
  .tp_richcompare = node_richcompare,
  .tp_repr = (reprfunc)node_repr,
};

/* ---------------------------------------------------------------------------------------------
 * Session */


static int opt_int(PyObject *opts, const char *key, long *out) {
  PyObject *v = PyDict_GetItemString(opts, key);
  if (!v || v == Py_None) return 0;
  *out = PyLong_AsLong(v);
  return *out == -1 && PyErr_Occurred() ? -1 : 1;
}

static int opt_double(PyObject *opts, const char *key, double *out) {
  PyObject *v = PyDict_GetItemString(opts, key);
  if (!v || v == Py_None) return 0;
  *out = PyFloat_AsDouble(v);
  return *out == -1 && PyErr_Occurred() ? -1 : 1;
}

/* Session(graph, target='', options={}) with options keys as in docs/python.md. */
static int session_init(SessionObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"graph", "target", "options", NULL};
  PyObject *graph, *opts = NULL;
  const char *target = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|zO!", kwlist, &GraphType, &graph, &target,
                                   &PyDict_Type, &opts))
    return -1;
  weft_session_options_t *o = weft_session_options_new();
  if (target) weft_session_options_set_target(o, target);
  int rc = 0;
  if (opts) {
    long v;
    double d;
    int r;
#define INT_OPT(key, setter)                                 \
  if ((r = opt_int(opts, key, &v)) < 0) rc = -1;           \
  else if (r) setter(o, v);
    INT_OPT("log_device_placement", weft_session_options_set_log_device_placement)
    INT_OPT("allow_soft_placement", weft_session_options_set_allow_soft_placement)
    INT_OPT("inter_op_threads", weft_session_options_set_inter_op_threads)
    INT_OPT("intra_op_threads", weft_session_options_set_intra_op_threads)
    INT_OPT("use_per_session_threads", weft_session_options_set_use_per_session_threads)
    INT_OPT("gpu_allow_growth", weft_session_options_set_gpu_allow_growth)
    INT_OPT("operation_timeout_ms", weft_session_options_set_operation_timeout_ms)
#undef INT_OPT
    if ((r = opt_double(opts, "gpu_memory_fraction", &d)) < 0) rc = -1;
    else if (r) weft_session_options_set_gpu_memory_fraction(o, d);
    PyObject *counts = PyDict_GetItemString(opts, "device_count");
    if (rc == 0 && counts && counts != Py_None) {
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      if (!PyDict_Check(counts)) {
        PyErr_SetString(PyExc_TypeError, "device_count is a dict of device type -> count");
        rc = -1;
      }
      while (rc == 0 && PyDict_Next(counts, &pos, &key, &value)) {
        const char *type = PyUnicode_AsUTF8(key);
        long n = PyLong_AsLong(value);
        if (!type || (n == -1 && PyErr_Occurred())) rc = -1;
        else weft_session_options_set_device_count(o, type, (int)n);
      }
    }
    PyObject *visible = PyDict_GetItemString(opts, "visible_gpus");
    if (rc == 0 && visible && visible != Py_None) {
      const char *list = PyUnicode_AsUTF8(visible);
      if (!list) rc = -1;
      else weft_session_options_set_visible_gpus(o, list);
    }
    PyObject *filters = PyDict_GetItemString(opts, "device_filters");
    if (rc == 0 && filters && filters != Py_None) {
      PyObject *seq = PySequence_Fast(filters, "device_filters is a sequence of str");
      if (!seq) {
        rc = -1;
      } else {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        const char **fs = PyMem_Calloc((size_t)n + 1, sizeof *fs);
        for (Py_ssize_t i = 0; i < n && rc == 0; i++)
          if (!(fs[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) rc = -1;
        if (rc == 0) weft_session_options_set_device_filters(o, fs, (int)n);
        PyMem_Free(fs);
        Py_DECREF(seq);
      }
    }
  }
  if (rc < 0) {
    weft_session_options_free(o);
    return -1;
  }
  weft_status_t *st = NULL;
  weft_session_t *s;
  Py_BEGIN_ALLOW_THREADS
  s = weft_session_new(((GraphObject *)graph)->graph, o, &st);
  Py_END_ALLOW_THREADS
  weft_session_options_free(o);
  if (!s) {
    raise_status(st);
    return -1;
  }
  weft_session_free(self->session);
  self->session = s;
  Py_XSETREF(self->graph, Py_NewRef(graph));
  return 0;
}

static void session_dealloc(SessionObject *self) {
  if (self->session) {
    Py_BEGIN_ALLOW_THREADS
    weft_session_free(self->session);
    Py_END_ALLOW_THREADS
  }
  Py_XDECREF(self->graph);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int check_open(SessionObject *self) {
  if (self->session) return 0;
  raise_status(weft_status_new(WEFT_FAILED_PRECONDITION,
                               "Attempted to use a closed Session."));
  return -1;
}

/* A list of str -> array of borrowed UTF-8 pointers (PyMem_Free it). */
static const char **names_from_py(PyObject *seq, Py_ssize_t *n) {
  if (!PyList_Check(seq)) {
    PyErr_SetString(PyExc_TypeError, "expected a list of str");
    return NULL;
  }
  *n = PyList_GET_SIZE(seq);
  const char **names = PyMem_Calloc((size_t)*n + 1, sizeof *names);
  for (Py_ssize_t i = 0; i < *n; i++)
    if (!(names[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(seq, i)))) {
      PyMem_Free(names);
      return NULL;
    }
  return names;
}

static PyObject *metadata_to_py(weft_run_metadata_t *meta) {
  int n = weft_run_metadata_num_node_stats(meta);
  PyObject *stats = PyList_New(n);
  for (int i = 0; stats && i < n; i++) {
    const weft_node_stats_t *s = weft_run_metadata_node_stats(meta, i);
    PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:s,s:L,s:L,s:K,s:K}", "node_name", s->node_name,
                                "op", s->op, "device", s->device, "inputs", s->inputs,
                                "start_us", (long long)s->start_us, "duration_us",
                                (long long)s->duration_us, "output_bytes",
                                (unsigned long long)s->output_bytes, "thread_id",
                                (unsigned long long)s->thread_id);
    if (!d) Py_CLEAR(stats);
    else PyList_SET_ITEM(stats, i, d);
  }
  if (!stats) return NULL;
  char *trace = weft_run_metadata_chrome_trace(meta);
  PyObject *r = Py_BuildValue("{s:N,s:s}", "step_stats", stats, "chrome_trace",
                              trace ? trace : "");
  weft_free(trace);
  return r;
}

/* run(feed_names, feed_values, fetch_names, target_names, trace_level=0, timeout_ms=0,
 *     feed_dtypes=None) -> (list of arrays, metadata dict or None). feed_dtypes: per feed the
 * weft dtype number to convert to (0: the value's own). The GIL is released for the step. */
static PyObject *session_run(SessionObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"feed_names", "feed_values", "fetch_names", "target_names",
                           "trace_level", "timeout_ms", "feed_dtypes", NULL};
  PyObject *feed_names_o, *feed_values_o, *fetch_names_o, *target_names_o, *feed_dtypes = Py_None;
  int trace_level = 0;
  long long timeout_ms = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|iLO", kwlist, &feed_names_o, &feed_values_o,
                                   &fetch_names_o, &target_names_o, &trace_level, &timeout_ms,
                                   &feed_dtypes))
    return NULL;
  if (check_open(self) < 0) return NULL;
  Py_ssize_t n_feeds = 0, n_fetches = 0, n_targets = 0;
  const char **feed_names = NULL, **fetch_names = NULL, **target_names = NULL;
  weft_tensor_t **feeds = NULL, **outs = NULL;
  PyObject *result = NULL;
  if (!(feed_names = names_from_py(feed_names_o, &n_feeds))) goto done;
  if (!(fetch_names = names_from_py(fetch_names_o, &n_fetches))) goto done;
  if (!(target_names = names_from_py(target_names_o, &n_targets))) goto done;
  if (!PyList_Check(feed_values_o) || PyList_GET_SIZE(feed_values_o) != n_feeds) {
    PyErr_SetString(PyExc_ValueError, "feed_values must be a list as long as feed_names");
    goto done;
  }
  feeds = PyMem_Calloc((size_t)n_feeds + 1, sizeof *feeds);
  outs = PyMem_Calloc((size_t)n_fetches + 1, sizeof *outs);
  for (Py_ssize_t i = 0; i < n_feeds; i++) {
    long want = 0;
    if (PyList_Check(feed_dtypes) && i < PyList_GET_SIZE(feed_dtypes)) {
      want = PyLong_AsLong(PyList_GET_ITEM(feed_dtypes, i));
      if (want == -1 && PyErr_Occurred()) goto done;
    }
    if (!(feeds[i] = tensor_from_py(PyList_GET_ITEM(feed_values_o, i), (weft_dtype_t)want)))
      goto done;
  }
  weft_status_t *st;
  weft_run_metadata_t *meta = NULL;
  weft_run_options_t *ro = NULL;
  if (trace_level || timeout_ms) {
    ro = weft_run_options_new();
    weft_run_options_set_trace_level(ro, trace_level ? WEFT_TRACE_FULL : WEFT_TRACE_NONE);
    weft_run_options_set_timeout_ms(ro, timeout_ms);
  }
  Py_BEGIN_ALLOW_THREADS
  st = weft_session_run_with_options(self->session, ro, feed_names, feeds, (int)n_feeds,
                                     fetch_names, outs, (int)n_fetches, target_names,
                                     (int)n_targets, trace_level ? &meta : NULL);
  Py_END_ALLOW_THREADS
  weft_run_options_free(ro);
  if (st) {
    raise_status(st);
    goto done;
  }
  PyObject *list = PyList_New(n_fetches);
  for (Py_ssize_t i = 0; list && i < n_fetches; i++) {
    PyObject *a = tensor_to_py(outs[i]);
    if (!a) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, a);
  }
  PyObject *md = NULL;
  if (list && meta) md = metadata_to_py(meta);
  else if (list) md = Py_NewRef(Py_None);
  weft_run_metadata_free(meta);
  if (list && md) result = PyTuple_Pack(2, list, md);
  Py_XDECREF(list);
  Py_XDECREF(md);
done:
  for (Py_ssize_t i = 0; feeds && i < n_feeds; i++) weft_tensor_unref(feeds[i]);
  for (Py_ssize_t i = 0; outs && i < n_fetches; i++) weft_tensor_unref(outs[i]);
  PyMem_Free(feeds);
  PyMem_Free(outs);
  PyMem_Free(feed_names);
  PyMem_Free(fetch_names);
  PyMem_Free(target_names);
  return result;
}

/* A prepared step (Session.prepare): the fetch and target names converted to UTF-8 once, run with
 * no feeds and no options by calling it with no arguments. weft.compat.v1's Session.run keeps one
 * per Tensor or Operation fetched again without feeds (a training or serving loop), so a step
 * parses no arguments and builds no name arrays, lists or result tuples. */
typedef struct {
  PyObject_HEAD
  SessionObject *session;
  PyObject *keep; /* (fetch list, target list): the str objects the name arrays point into */
  const char **fetch_names, **target_names;
  Py_ssize_t n_fetches, n_targets;
  int single; /* return the one fetched array itself rather than a list */
} StepObject;

static void step_dealloc(StepObject *self) {
  Py_XDECREF(self->session);
  Py_XDECREF(self->keep);
  PyMem_Free(self->fetch_names);
  PyMem_Free(self->target_names);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *step_call(StepObject *self, PyObject *args, PyObject *kw) {
  if ((args && PyTuple_GET_SIZE(args)) || (kw && PyDict_GET_SIZE(kw))) {
    PyErr_SetString(PyExc_TypeError, "a prepared step takes no arguments");
    return NULL;
  }
  if (check_open(self->session) < 0) return NULL;
  static const char *no_names[1];
  static weft_tensor_t *no_feeds[1];
  weft_tensor_t *one[1] = {NULL};
  weft_tensor_t **outs = one;
  if (self->n_fetches > 1 && !(outs = PyMem_Calloc((size_t)self->n_fetches, sizeof *outs)))
    return PyErr_NoMemory();
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_session_run_with_options(self->session->session, NULL, no_names, no_feeds, 0,
                                     self->fetch_names, outs, (int)self->n_fetches,
                                     self->target_names, (int)self->n_targets, NULL);
  Py_END_ALLOW_THREADS
  PyObject *result = NULL;
  if (st) {
    raise_status(st);
  } else if (self->single) {
    result = tensor_to_py(outs[0]);
  } else if (self->n_fetches == 0) {
    result = Py_NewRef(Py_None);
  } else if ((result = PyList_New(self->n_fetches))) {
    for (Py_ssize_t i = 0; i < self->n_fetches; i++) {
      PyObject *a = tensor_to_py(outs[i]);
      if (!a) {
        Py_CLEAR(result);
        break;
      }
      PyList_SET_ITEM(result, i, a);
    }
  }
  for (Py_ssize_t i = 0; i < self->n_fetches; i++) weft_tensor_unref(outs[i]);
  if (outs != one) PyMem_Free(outs);
  return result;
}

static PyTypeObject StepType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Step",
  .tp_basicsize = sizeof(StepObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A prepared Session step without feeds (Session.prepare); call it to run.",
  .tp_dealloc = (destructor)step_dealloc,
  .tp_call = (ternaryfunc)step_call,
};

/* prepare(fetch_names, target_names, single) -> Step; the lists are copied. */
static PyObject *session_prepare(SessionObject *self, PyObject *args) {
  PyObject *fetch_o, *target_o;
  int single = 0;
  if (!PyArg_ParseTuple(args, "O!O!p", &PyList_Type, &fetch_o, &PyList_Type, &target_o, &single))
    return NULL;
  if (check_open(self) < 0) return NULL;
  if (single && PyList_GET_SIZE(fetch_o) != 1) {
    PyErr_SetString(PyExc_ValueError, "a single-fetch step needs exactly one fetch name");
    return NULL;
  }
  StepObject *step = PyObject_New(StepObject, &StepType);
  if (!step) return NULL;
  step->session = (SessionObject *)Py_NewRef((PyObject *)self);
  step->fetch_names = step->target_names = NULL;
  step->single = single;
  step->keep = Py_BuildValue("(NN)", PyList_GetSlice(fetch_o, 0, PY_SSIZE_T_MAX),
                             PyList_GetSlice(target_o, 0, PY_SSIZE_T_MAX));
  if (!step->keep ||
      !(step->fetch_names = names_from_py(PyTuple_GET_ITEM(step->keep, 0), &step->n_fetches)) ||
      !(step->target_names = names_from_py(PyTuple_GET_ITEM(step->keep, 1), &step->n_targets))) {
    Py_DECREF(step);
    return NULL;
  }
  return (PyObject *)step;
}

static PyObject *session_close(SessionObject *self, PyObject *unused) {
  if (!self->session) Py_RETURN_NONE;
  weft_session_t *s = self->session;
  self->session = NULL;
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_session_close(s);
  weft_session_free(s);
  Py_END_ALLOW_THREADS
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *session_node_device(SessionObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name || check_open(self) < 0) return NULL;
  return PyUnicode_FromString(weft_session_node_device(self->session, name));
}

static PyMethodDef session_methods[] = {
  {"run", (PyCFunction)(void (*)(void))session_run, METH_VARARGS | METH_KEYWORDS,
   "run(feed_names, feed_values, fetch_names, target_names, trace_level=0, timeout_ms=0, "
   "feed_dtypes=None) -> (arrays, metadata or None)"},
  {"prepare", (PyCFunction)session_prepare, METH_VARARGS,
   "prepare(fetch_names, target_names, single) -> Step: call it to run them without feeds"},
  {"close", (PyCFunction)session_close, METH_NOARGS, NULL},
  {"node_device", (PyCFunction)session_node_device, METH_O, "device a node was placed on"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject SessionType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Session",
  .tp_basicsize = sizeof(SessionObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A weft session over a Graph (weft_session_t).",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)session_init,
  .tp_dealloc = (destructor)session_dealloc,
  .tp_methods = session_methods,
};

/* ---------------------------------------------------------------------------------------------
 * Module functions */

static PyObject *py_dtype_name(PyObject *self, PyObject *arg) {
  long v = PyLong_AsLong(arg);
  if (v == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(weft_dtype_name((weft_dtype_t)v));
}

static PyObject *py_devices(PyObject *self, PyObject *unused) {
  int n;
  Py_BEGIN_ALLOW_THREADS
  n = weft_devices_count();
  Py_END_ALLOW_THREADS
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    PyObject *o = Py_BuildValue("{s:s,s:s,s:i,s:s,s:K,s:O,s:O}", "name", d->name, "device_type",
                                d->device_type, "ordinal", d->ordinal, "description",
                                d->description ? d->description : "", "memory_bytes",
                                (unsigned long long)d->memory_bytes, "gpu_like",
                                d->gpu_like ? Py_True : Py_False, "emulated",
                                d->emulated ? Py_True : Py_False);
    if (!o) Py_CLEAR(l);
    else PyList_SET_ITEM(l, i, o);
  }
  return l;
}

/* Names of the device types of the plugins that loaded ("CPU", "CUDA", ...), devices or not. */
static PyObject *py_plugin_device_types(PyObject *self, PyObject *unused) {
  weft_plugins_load_default();
  PyObject *l = PyList_New(0);
  for (int i = 0; l && i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->error || !r->device_types || !*r->device_types) continue;
    PyObject *s = PyUnicode_FromString(r->device_types);
    if (!s || PyList_Append(l, s) < 0) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  return l;
}

/* ---------------------------------------------------------------------------------------------
 * Host functions (tf.py_func): a Python callable registered under a token, called by PyFunc
 * nodes on the executor's threads (weft_host_func_register). The callable (script_ops.py wraps
 * the user's function) takes numpy values and returns a list of them. */

typedef struct {
  PyObject *callable;
  char *token;
} py_host_func_t;

/* The pending Python exception as a status, with the code TensorFlow's py_func gives it
 * (ValueError and TypeError INVALID_ARGUMENT, StopIteration OUT_OF_RANGE, MemoryError
 * RESOURCE_EXHAUSTED, NotImplementedError UNIMPLEMENTED; else UNKNOWN) and its message
 * "ValueError: ..." followed by the traceback. Clears the exception. */
static weft_status_t *status_from_exception(void) {
  weft_code_t code = WEFT_UNKNOWN;
  if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError))
    code = WEFT_INVALID_ARGUMENT;
  else if (PyErr_ExceptionMatches(PyExc_StopIteration))
    code = WEFT_OUT_OF_RANGE;
  else if (PyErr_ExceptionMatches(PyExc_MemoryError))
    code = WEFT_RESOURCE_EXHAUSTED;
  else if (PyErr_ExceptionMatches(PyExc_NotImplementedError))
    code = WEFT_UNIMPLEMENTED;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  /* A weft error (errors.OpError: error_code and message) raised in the function, such as the
   * OutOfRangeError "End of sequence" that ends a tf.data iterator, keeps its code and text. */
  PyObject *own_code = value ? PyObject_GetAttrString(value, "error_code") : NULL;
  PyObject *own_text = own_code ? PyObject_GetAttrString(value, "message") : NULL;
  PyErr_Clear();
  if (own_code && PyLong_Check(own_code) && own_text && PyUnicode_Check(own_text)) {
    long c = PyLong_AsLong(own_code);
    const char *text = PyUnicode_AsUTF8(own_text);
    PyErr_Clear();
    if (c > 0 && c <= WEFT_UNAUTHENTICATED && text) {
      weft_status_t *st = weft_status_new((weft_code_t)c, "%s", text);
      Py_DECREF(own_code);
      Py_DECREF(own_text);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
      return st;
    }
  }
  Py_XDECREF(own_code);
  Py_XDECREF(own_text);
  PyErr_Clear();
  /* "ValueError: text", then the traceback's lines: built as Python strings. */
  PyObject *text = value ? PyObject_Str(value) : NULL;
  if (!text) {
    PyErr_Clear();
    text = PyUnicode_FromString("(unknown error message)");
  }
  const char *type_name = type ? ((PyTypeObject *)type)->tp_name : "Exception";
  PyObject *msg = text ? PyUnicode_FromFormat("%s: %U", type_name, text) : NULL;
  Py_XDECREF(text);
  PyObject *traceback = tb && msg ? PyImport_ImportModule("traceback") : NULL;
  PyObject *lines = traceback ? PyObject_CallMethod(traceback, "format_tb", "O", tb) : NULL;
  PyObject *sep = lines ? PyUnicode_FromString("") : NULL;
  PyObject *joined = sep && PyList_Check(lines) ? PyUnicode_Join(sep, lines) : NULL;
  if (joined && PyUnicode_GET_LENGTH(joined) > 0) {
    PyObject *full = PyUnicode_FromFormat("%U\nTraceback (most recent call last):\n%U", msg,
                                          joined);
    if (full) Py_SETREF(msg, full);
  }
  Py_XDECREF(joined);
  Py_XDECREF(sep);
  Py_XDECREF(lines);
  Py_XDECREF(traceback);
  PyErr_Clear();
  const char *utf8 = msg ? PyUnicode_AsUTF8(msg) : NULL;
  weft_status_t *st = weft_status_new(code, "%s", utf8 ? utf8 : "(unknown error message)");
  PyErr_Clear();
  Py_XDECREF(msg);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return st;
}

static weft_status_t *py_host_func_call(void *user_data, weft_tensor_t *const *inputs,
                                        int n_inputs, weft_tensor_t **outputs, int n_outputs) {
  py_host_func_t *f = user_data;
  PyGILState_STATE gil = PyGILState_Ensure();
  weft_status_t *st = NULL;
  PyObject *args = PyTuple_New(n_inputs), *result = NULL, *seq = NULL;
  for (int i = 0; args && i < n_inputs; i++) {
    PyObject *a = tensor_to_py(inputs[i]);
    if (!a) {
      Py_CLEAR(args);
      break;
    }
    PyTuple_SET_ITEM(args, i, a);
  }
  if (args) result = PyObject_CallObject(f->callable, args);
  if (result) seq = PySequence_Fast(result, "a host function returns a list of values");
  if (!seq) {
    st = status_from_exception();
  } else if (PySequence_Fast_GET_SIZE(seq) != n_outputs) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "%s returns %zd values, but expects to see %d values.", f->token,
                         PySequence_Fast_GET_SIZE(seq), n_outputs);
  } else {
    for (int i = 0; i < n_outputs && !st; i++) {
      outputs[i] = tensor_from_py(PySequence_Fast_GET_ITEM(seq, i), WEFT_DT_INVALID);
      if (!outputs[i]) st = status_from_exception();
    }
    for (int i = 0; st && i < n_outputs; i++) {
      weft_tensor_unref(outputs[i]);
      outputs[i] = NULL;
    }
  }
  Py_XDECREF(seq);
  Py_XDECREF(result);
  Py_XDECREF(args);
  PyGILState_Release(gil);
  return st;
}

static void py_host_func_destroy(void *user_data) {
  py_host_func_t *f = user_data;
  /* After the interpreter has gone (a step still running at exit) the callable is left. */
  if (Py_IsInitialized() && !_Py_IsFinalizing()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(f->callable);
    PyGILState_Release(gil);
  }
  free(f->token);
  free(f);
}

static PyObject *py_host_func_register(PyObject *self, PyObject *args) {
  (void)self;
  const char *token;
  PyObject *callable;
  if (!PyArg_ParseTuple(args, "sO", &token, &callable)) return NULL;
  if (!PyCallable_Check(callable)) {
    PyErr_SetString(PyExc_TypeError, "host_func_register: expected a callable");
    return NULL;
  }
  py_host_func_t *f = calloc(1, sizeof *f);
  if (!f || !(f->token = strdup(token))) {
    free(f);
    return PyErr_NoMemory();
  }
  f->callable = Py_NewRef(callable);
  weft_status_t *st = weft_host_func_register(token, py_host_func_call, f, py_host_func_destroy);
  if (st) {
    Py_DECREF(f->callable);
    free(f->token);
    free(f);
    return raise_status(st);
  }
  Py_RETURN_NONE;
}

static PyObject *py_host_func_unregister(PyObject *self, PyObject *arg) {
  (void)self;
  const char *token = PyUnicode_AsUTF8(arg);
  if (!token) return NULL;
  return PyBool_FromLong(weft_host_func_unregister(token));
}

static PyMethodDef module_methods[] = {
  {"set_error_factory", set_error_factory, METH_O,
   "set_error_factory(fn): fn(code, message) makes the exception raised for a weft error"},
  {"dtype_name", py_dtype_name, METH_O, "weft dtype number -> 'float32'"},
  {"roundtrip", py_roundtrip, METH_VARARGS, "numpy -> tensor -> numpy (tests)"},
  {"devices", py_devices, METH_NOARGS, "the local devices, as dicts"},
  {"plugin_device_types", py_plugin_device_types, METH_NOARGS,
   "device types of the loaded plugins"},
  {"host_func_register", py_host_func_register, METH_VARARGS,
   "host_func_register(token, fn): PyFunc nodes naming token call fn(*arrays) -> [arrays]"},
  {"host_func_unregister", py_host_func_unregister, METH_O,
   "host_func_unregister(token) -> whether it was registered"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT, "_weft", "Weft's C API for Python (docs/python.md).", -1,
  module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weft(void) {
  import_array();
  if (PyType_Ready(&GraphType) < 0 || PyType_Ready(&NodeType) < 0 ||
      PyType_Ready(&SessionType) < 0 || PyType_Ready(&StepType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (PyModule_AddObjectRef(m, "Graph", (PyObject *)&GraphType) < 0 ||
      PyModule_AddObjectRef(m, "Node", (PyObject *)&NodeType) < 0 ||
      PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) < 0 ||
      weft_py_train_init(m) < 0 || weft_py_summary_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

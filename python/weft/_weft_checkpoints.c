/* weft._weft_checkpoints: the checkpoint lookups weft.compat.v1.train needs beside weft._weft's
 * training part (whether a prefix opens, its keys, the `checkpoint` state file), over the public
 * C API alone (docs/python-training.md). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "weft/weft.h"

PyMODINIT_FUNC PyInit__weft_checkpoints(void);

static PyObject *error_factory; /* weft._weft's: (code, message) -> exception instance */

static PyObject *raise_status(weft_status_t *status) {
  weft_code_t code = weft_status_code(status);
  const char *msg = weft_status_message(status);
  PyObject *exc = error_factory ? PyObject_CallFunction(error_factory, "is", (int)code, msg)
                                : NULL;
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  } else if (!PyErr_Occurred()) {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", weft_code_name(code), msg);
  }
  weft_status_free(status);
  return NULL;
}

static PyObject *set_error_factory(PyObject *self, PyObject *fn) {
  (void)self;
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
    return NULL;
  }
  Py_XSETREF(error_factory, Py_NewRef(fn));
  Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * Checkpoints */

static PyObject *checkpoint_exists(PyObject *self, PyObject *arg) {
  (void)self;
  const char *prefix = PyUnicode_AsUTF8(arg);
  if (!prefix) return NULL;
  weft_checkpoint_reader_t *r = NULL;
  weft_status_t *st = weft_checkpoint_reader_open(prefix, &r);
  weft_checkpoint_reader_free(r);
  if (st) {
    weft_status_free(st);
    Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

/* The reader of checkpoint `prefix` (a str), or NULL with the exception set */
static weft_checkpoint_reader_t *open_reader(PyObject *prefix_obj) {
  const char *prefix = PyUnicode_AsUTF8(prefix_obj);
  if (!prefix) return NULL;
  weft_checkpoint_reader_t *r = NULL;
  weft_status_t *st = weft_checkpoint_reader_open(prefix, &r);
  if (st) {
    raise_status(st);
    return NULL;
  }
  return r;
}

/* checkpoint_keys(prefix) -> the tensor keys of checkpoint PREFIX, in key order */
static PyObject *checkpoint_keys(PyObject *self, PyObject *arg) {
  (void)self;
  weft_checkpoint_reader_t *r = open_reader(arg);
  if (!r) return NULL;
  int n = weft_checkpoint_reader_num_tensors(r);
  PyObject *keys = PyList_New(n);
  for (int i = 0; keys && i < n; i++) {
    PyObject *k = PyUnicode_FromString(weft_checkpoint_reader_key(r, i));
    if (!k) Py_CLEAR(keys);
    else PyList_SET_ITEM(keys, i, k);
  }
  weft_checkpoint_reader_free(r);
  return keys;
}

/* (dims...) as a tuple of ints */
static PyObject *shape_tuple(int rank, const int64_t *dims) {
  PyObject *shape = PyTuple_New(rank);
  for (int d = 0; shape && d < rank; d++) {
    PyObject *v = PyLong_FromLongLong((long long)dims[d]);
    if (!v) Py_CLEAR(shape);
    else PyTuple_SET_ITEM(shape, d, v);
  }
  return shape;
}

/* checkpoint_info(prefix) -> [(key, dtype name, (dims...))] in key order */
static PyObject *checkpoint_info(PyObject *self, PyObject *arg) {
  (void)self;
  weft_checkpoint_reader_t *r = open_reader(arg);
  if (!r) return NULL;
  int n = weft_checkpoint_reader_num_tensors(r);
  PyObject *out = PyList_New(n);
  for (int i = 0; out && i < n; i++) {
    const char *key = weft_checkpoint_reader_key(r, i);
    weft_dtype_t dtype;
    int rank = 0;
    int64_t dims[WEFT_MAX_RANK];
    weft_status_t *st = weft_checkpoint_reader_info(r, key, &dtype, &rank, dims);
    if (st) {
      Py_CLEAR(out);
      weft_checkpoint_reader_free(r);
      return raise_status(st);
    }
    PyObject *shape = shape_tuple(rank, dims);
    PyObject *item = shape ? Py_BuildValue("(ssN)", key, weft_dtype_name(dtype), shape) : NULL;
    if (!item) Py_CLEAR(out);
    else PyList_SET_ITEM(out, i, item);
  }
  weft_checkpoint_reader_free(r);
  return out;
}

/* checkpoint_read(prefix, key) -> (dtype name, (dims...), bytes), or a list of bytes (one per
 * element) for a string tensor in place of the bytes */
static PyObject *checkpoint_read(PyObject *self, PyObject *args) {
  (void)self;
  const char *prefix, *key;
  if (!PyArg_ParseTuple(args, "ss", &prefix, &key)) return NULL;
  weft_checkpoint_reader_t *r = NULL;
  weft_status_t *st = weft_checkpoint_reader_open(prefix, &r);
  if (st) return raise_status(st);
  weft_tensor_t *t = NULL;
  st = weft_checkpoint_reader_read(r, key, &t);
  weft_checkpoint_reader_free(r);
  if (st) return raise_status(st);
  weft_dtype_t dtype = weft_tensor_dtype(t);
  PyObject *shape = shape_tuple(weft_tensor_rank(t), weft_tensor_dims(t));
  PyObject *data = NULL;
  if (shape && dtype == WEFT_DT_STRING) {
    int64_t n = weft_tensor_num_elements(t);
    const weft_string_t *strs = weft_tensor_data(t);
    data = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; data && i < n; i++) {
      PyObject *b = PyBytes_FromStringAndSize(strs[i].data, (Py_ssize_t)strs[i].len);
      if (!b) Py_CLEAR(data);
      else PyList_SET_ITEM(data, (Py_ssize_t)i, b);
    }
  } else if (shape) {
    data = PyBytes_FromStringAndSize(weft_tensor_data(t), (Py_ssize_t)weft_tensor_nbytes(t));
  }
  PyObject *out = NULL;
  if (shape && data) out = Py_BuildValue("(sNN)", weft_dtype_name(dtype), shape, data);
  else {
    Py_XDECREF(shape);
    Py_XDECREF(data);
  }
  weft_tensor_unref(t);
  return out;
}

/* checkpoint_state(dir) -> (latest, [all]) resolved against dir, or None without a state file */
static PyObject *checkpoint_state(PyObject *self, PyObject *arg) {
  (void)self;
  const char *dir = PyUnicode_AsUTF8(arg);
  if (!dir) return NULL;
  char *latest = NULL, **all = NULL;
  weft_status_t *st = weft_checkpoint_state_read(dir, &latest, &all);
  if (st && weft_status_code(st) == WEFT_NOT_FOUND) {
    weft_status_free(st);
    Py_RETURN_NONE;
  }
  if (st) return raise_status(st);
  PyObject *list = PyList_New(0);
  for (char **p = all; list && p && *p; p++) {
    PyObject *s = PyUnicode_FromString(*p);
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  PyObject *r = list ? Py_BuildValue("(zN)", latest, list) : NULL;
  weft_free(latest);
  weft_strv_free(all);
  return r;
}

static PyMethodDef module_methods[] = {
  {"checkpoint_state", checkpoint_state, METH_O, "checkpoint_state(dir) -> (latest, [all])"},
  {"checkpoint_keys", checkpoint_keys, METH_O, "checkpoint_keys(prefix) -> [key]"},
  {"checkpoint_info", checkpoint_info, METH_O,
   "checkpoint_info(prefix) -> [(key, dtype name, shape tuple)]"},
  {"checkpoint_read", checkpoint_read, METH_VARARGS,
   "checkpoint_read(prefix, key) -> (dtype name, shape tuple, bytes or [bytes])"},
  {"set_error_factory", set_error_factory, METH_O, "as weft._weft.set_error_factory"},
  {"checkpoint_exists", checkpoint_exists, METH_O, "whether PREFIX.index opens"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT, "_weft_checkpoints",
  "Weft's checkpoint lookups for Python (docs/python-training.md).", -1, module_methods,
  NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weft_checkpoints(void) { return PyModule_Create(&module_def); }

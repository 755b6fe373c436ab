/* weft._weft's event-file part, for tf.summary.FileWriter and tf.train.summary_iterator
 * (docs/tensorboard.md, "Python"): EventWriter over weft_event_writer_* and EventReader over
 * weft_event_reader_*, thin wrappers of the public C API. Events themselves are serialized in
 * Python (compat/v1/summary_pb.py); only the graph with the session's placement needs the core.
 * The GIL stays held: records are small appends, and it keeps one writer's calls in order. */
#include "_weft.h"

typedef struct {
  PyObject_HEAD
  weft_event_writer_t *w;
} EventWriterObject;

typedef struct {
  PyObject_HEAD
  weft_event_reader_t *r;
} EventReaderObject;

static PyTypeObject EventWriterType, EventReaderType;

/* EventWriter(logdir, suffix=None): a new event file in logdir; EventWriter(records=path): a
 * TFRecord file at path (tf.io.TFRecordWriter), written with add_record. */
static int writer_init(EventWriterObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"logdir", "suffix", "records", NULL};
  const char *dir = NULL, *suffix = NULL, *records = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzz", kwlist, &dir, &suffix, &records)) return -1;
  if (!dir == !records) {
    PyErr_SetString(PyExc_TypeError, "EventWriter takes a logdir or records=path");
    return -1;
  }
  weft_event_writer_free(self->w);
  self->w = NULL;
  weft_status_t *st = records ? weft_event_writer_open_records(records, &self->w)
                              : weft_event_writer_new(dir, suffix, &self->w);
  if (st) {
    raise_status(st);
    return -1;
  }
  return 0;
}

static void writer_dealloc(EventWriterObject *self) {
  weft_event_writer_free(self->w);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static weft_event_writer_t *writer_of(EventWriterObject *self) {
  if (!self->w) PyErr_SetString(PyExc_ValueError, "EventWriter is not initialised");
  return self->w;
}

/* None, or the status raised. */
static PyObject *done(weft_status_t *st) {
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *writer_path(EventWriterObject *self, void *unused) {
  (void)unused;
  weft_event_writer_t *w = writer_of(self);
  return w ? PyUnicode_FromString(weft_event_writer_path(w)) : NULL;
}

static PyObject *writer_set_flush_secs(EventWriterObject *self, PyObject *arg) {
  weft_event_writer_t *w = writer_of(self);
  double secs = PyFloat_AsDouble(arg);
  if (!w || (secs == -1 && PyErr_Occurred())) return NULL;
  if (secs < 0) {
    PyErr_Format(PyExc_ValueError, "flush_secs must be >= 0, not %g", secs);
    return NULL;
  }
  weft_event_writer_set_flush_secs(w, secs);
  Py_RETURN_NONE;
}

static PyObject *writer_add_event(EventWriterObject *self, PyObject *arg) {
  weft_event_writer_t *w = writer_of(self);
  Py_buffer b;
  if (!w || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
  weft_status_t *st = weft_event_writer_add_event(w, b.buf, (size_t)b.len);
  PyBuffer_Release(&b);
  return done(st);
}

static PyObject *writer_add_record(EventWriterObject *self, PyObject *arg) {
  weft_event_writer_t *w = writer_of(self);
  Py_buffer b;
  if (!w || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
  weft_status_t *st = weft_event_writer_add_record(w, b.buf, (size_t)b.len);
  PyBuffer_Release(&b);
  return done(st);
}

/* add_graph(Graph, Session or None): NodeDef.device is where the session placed each node. */
static PyObject *writer_add_graph(EventWriterObject *self, PyObject *args) {
  weft_event_writer_t *w = writer_of(self);
  PyObject *g, *s = Py_None;
  if (!w || !PyArg_ParseTuple(args, "O!|O", &GraphType, &g, &s)) return NULL;
  weft_session_t *session = NULL;
  if (s != Py_None) {
    if (!PyObject_TypeCheck(s, &SessionType)) {
      PyErr_Format(PyExc_TypeError, "add_graph: session must be a weft._weft.Session or None, "
                   "not %s", Py_TYPE(s)->tp_name);
      return NULL;
    }
    session = ((SessionObject *)s)->session; /* NULL once closed: requested devices */
  }
  return done(weft_event_writer_add_graph(w, ((GraphObject *)g)->graph, session));
}

static PyObject *writer_flush(EventWriterObject *self, PyObject *unused) {
  (void)unused;
  weft_event_writer_t *w = writer_of(self);
  return w ? done(weft_event_writer_flush(w)) : NULL;
}

static PyObject *writer_close(EventWriterObject *self, PyObject *unused) {
  (void)unused;
  weft_event_writer_t *w = writer_of(self);
  return w ? done(weft_event_writer_close(w)) : NULL;
}

static PyMethodDef writer_methods[] = {
  {"set_flush_secs", (PyCFunction)writer_set_flush_secs, METH_O, "flush period in seconds"},
  {"add_event", (PyCFunction)writer_add_event, METH_O, "append a serialized Event"},
  {"add_record", (PyCFunction)writer_add_record, METH_O, "append bytes as one TFRecord"},
  {"add_graph", (PyCFunction)writer_add_graph, METH_VARARGS,
   "add_graph(Graph, Session or None): the graph with each node's placed device"},
  {"flush", (PyCFunction)writer_flush, METH_NOARGS, "write what is buffered"},
  {"close", (PyCFunction)writer_close, METH_NOARGS, "flush and close the file"},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef writer_getset[] = {
  {"path", (getter)writer_path, NULL, "the event file's path", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EventWriterType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.EventWriter",
  .tp_basicsize = sizeof(EventWriterObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "EventWriter(logdir, suffix=None): a new events.out.tfevents.* file in logdir; "
             "EventWriter(records=path): a TFRecord file at path.",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)writer_init,
  .tp_dealloc = (destructor)writer_dealloc,
  .tp_getset = writer_getset,
  .tp_methods = writer_methods,
};

static int reader_init(EventReaderObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", NULL};
  const char *path;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s", kwlist, &path)) return -1;
  weft_event_reader_free(self->r);
  self->r = NULL;
  weft_status_t *st = weft_event_reader_open(path, &self->r);
  if (st) {
    raise_status(st);
    return -1;
  }
  return 0;
}

static void reader_dealloc(EventReaderObject *self) {
  weft_event_reader_free(self->r);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The next record's bytes (both crcs checked), or None at the end of the file. */
static PyObject *reader_next(EventReaderObject *self, PyObject *unused) {
  (void)unused;
  if (!self->r) {
    PyErr_SetString(PyExc_ValueError, "EventReader is not initialised");
    return NULL;
  }
  const void *data;
  size_t len;
  bool eof = false;
  weft_status_t *st = weft_event_reader_next(self->r, &data, &len, &eof);
  if (st) return raise_status(st);
  if (eof) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
}

static PyObject *reader_offset(EventReaderObject *self, void *unused) {
  (void)unused;
  return PyLong_FromLongLong(self->r ? weft_event_reader_offset(self->r) : 0);
}

static PyMethodDef reader_methods[] = {
  {"next", (PyCFunction)reader_next, METH_NOARGS, "the next record's bytes, or None at the end"},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef reader_getset[] = {
  {"offset", (getter)reader_offset, NULL, "byte offset of the record last returned", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EventReaderType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.EventReader",
  .tp_basicsize = sizeof(EventReaderObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "EventReader(path): the records of an event file, crcs checked.",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)reader_init,
  .tp_dealloc = (destructor)reader_dealloc,
  .tp_getset = reader_getset,
  .tp_methods = reader_methods,
};

int weft_py_summary_init(PyObject *module) {
  if (PyType_Ready(&EventWriterType) < 0 || PyType_Ready(&EventReaderType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "EventWriter", (PyObject *)&EventWriterType) < 0 ||
      PyModule_AddObjectRef(module, "EventReader", (PyObject *)&EventReaderType) < 0)
    return -1;
  return 0;
}

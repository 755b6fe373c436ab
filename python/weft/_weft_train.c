/* weft._weft's training and cluster part, for the Python training layer (tf.train's optimizers,
 * Saver, Server, ClusterSpec): Graph.global_step and Graph.minimize (weft_minimize), Saver,
 * latest_checkpoint, cluster_spec_parse and Server, each a thin wrapper of the C API that
 * releases the GIL around whatever blocks (docs/python.md, "The extension"). */
#include "_weft.h"

#include <string.h>

/* Graph.global_step() -> Node "global_step" (created on first use). */
static PyObject *graph_global_step(PyObject *self, PyObject *unused) {
  GraphObject *g = (GraphObject *)self;
  weft_status_t *st = NULL;
  weft_node_t *n = weft_train_global_step(g->graph, &st);
  if (!n) return raise_status(st);
  return node_wrap(g, n);
}

static const struct {
  const char *name;
  weft_optimizer_kind_t kind;
} kOptimizers[] = {
  {"GradientDescent", WEFT_OPTIMIZER_GRADIENT_DESCENT}, {"Momentum", WEFT_OPTIMIZER_MOMENTUM},
  {"Adagrad", WEFT_OPTIMIZER_ADAGRAD}, {"Adam", WEFT_OPTIMIZER_ADAM},
  {"RMSProp", WEFT_OPTIMIZER_RMSPROP},
};

static int spec_double(PyObject *params, const char *key, double *out) {
  PyObject *v = params ? PyDict_GetItemString(params, key) : NULL;
  if (!v || v == Py_None) return 0;
  double d = PyFloat_AsDouble(v);
  if (d == -1 && PyErr_Occurred()) return -1;
  *out = d;
  return 0;
}

/* Graph.minimize(loss, kind, learning_rate, params={}, var_list=None, global_step=None)
 * -> train_op Node. kind: "GradientDescent", "Momentum", "Adagrad", "Adam", "RMSProp"; params
 * keys: momentum, use_nesterov, initial_accumulator_value, beta1, beta2, decay, epsilon, name. */
static PyObject *graph_minimize(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"loss", "kind", "learning_rate", "params", "var_list", "global_step",
                           NULL};
  GraphObject *g = (GraphObject *)self;
  PyObject *loss_obj, *params = NULL, *vars = Py_None, *gs = Py_None;
  const char *kind_name;
  double lr;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Osd|O!OO", kwlist, &loss_obj, &kind_name, &lr,
                                   &PyDict_Type, &params, &vars, &gs))
    return NULL;
  int k = -1;
  for (size_t i = 0; i < sizeof kOptimizers / sizeof kOptimizers[0]; i++)
    if (!strcmp(kind_name, kOptimizers[i].name)) k = (int)i;
  if (k < 0) {
    PyErr_Format(PyExc_ValueError, "unknown optimizer '%s' (GradientDescent, Momentum, Adagrad, "
                 "Adam or RMSProp)", kind_name);
    return NULL;
  }
  weft_output_t loss;
  if (output_from_py(g, loss_obj, &loss) < 0) return NULL;
  weft_optimizer_spec_t spec = weft_optimizer_spec_default(kOptimizers[k].kind, lr);
  if (spec_double(params, "momentum", &spec.momentum) < 0 ||
      spec_double(params, "initial_accumulator_value", &spec.initial_accumulator_value) < 0 ||
      spec_double(params, "beta1", &spec.beta1) < 0 ||
      spec_double(params, "beta2", &spec.beta2) < 0 ||
      spec_double(params, "decay", &spec.decay) < 0 ||
      spec_double(params, "epsilon", &spec.epsilon) < 0)
    return NULL;
  PyObject *nesterov = params ? PyDict_GetItemString(params, "use_nesterov") : NULL;
  if (nesterov) spec.use_nesterov = PyObject_IsTrue(nesterov) == 1;
  PyObject *name = params ? PyDict_GetItemString(params, "name") : NULL;
  if (name && name != Py_None && !(spec.name = PyUnicode_AsUTF8(name))) return NULL;
  weft_node_t *global_step = NULL;
  if (gs != Py_None && !(global_step = node_from_py(g, gs))) return NULL;
  PyObject *seq = vars == Py_None ? PyList_New(0) : PySequence_Fast(vars, "var_list: Nodes");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  weft_node_t **var_list = PyMem_Calloc((size_t)n + 1, sizeof *var_list);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!(var_list[i] = node_from_py(g, PySequence_Fast_GET_ITEM(seq, i)))) {
      PyMem_Free(var_list);
      Py_DECREF(seq);
      return NULL;
    }
  }
  weft_node_t *train_op = NULL;
  weft_status_t *st = weft_minimize(g->graph, loss, &spec, var_list, (int)n, global_step,
                                    &train_op);
  PyMem_Free(var_list);
  Py_DECREF(seq);
  if (st) return raise_status(st);
  return node_wrap(g, train_op);
}

static PyMethodDef graph_train_methods[] = {
  {"global_step", graph_global_step, METH_NOARGS, "the int64 'global_step' variable node"},
  {"minimize", (PyCFunction)(void (*)(void))graph_minimize, METH_VARARGS | METH_KEYWORDS,
   "minimize(loss, kind, learning_rate, params={}, var_list=None, global_step=None) -> Node"},
  {NULL, NULL, 0, NULL},
};

/* ---------------------------------------------------------------------------------------------
 * Saver */

typedef struct {
  PyObject_HEAD
  weft_saver_t *saver;
} SaverObject;

static int saver_init(SaverObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"max_to_keep", "var_list", NULL};
  int max_to_keep = 5;
  PyObject *names = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|iO", kwlist, &max_to_keep, &names)) return -1;
  weft_saver_free(self->saver);
  self->saver = weft_saver_new(max_to_keep);
  if (names == Py_None) return 0;
  PyObject *seq = PySequence_Fast(names, "var_list: variable node names");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  const char **v = PyMem_Calloc((size_t)n + 1, sizeof *v);
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; i++)
    if (!(v[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) rc = -1;
  if (rc == 0) weft_saver_set_var_list(self->saver, v, (int)n);
  PyMem_Free(v);
  Py_DECREF(seq);
  return rc;
}

static void saver_dealloc(SaverObject *self) {
  weft_saver_free(self->saver);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static weft_session_t *session_of(PyObject *obj) {
  if (!PyObject_TypeCheck(obj, &SessionType)) {
    PyErr_Format(PyExc_TypeError, "expected a weft._weft.Session, not %s", Py_TYPE(obj)->tp_name);
    return NULL;
  }
  weft_session_t *s = ((SessionObject *)obj)->session;
  if (!s) PyErr_SetString(PyExc_RuntimeError, "Attempted to use a closed Session.");
  return s;
}

/* save(session, prefix, global_step=-1) -> the prefix written. */
static PyObject *saver_save(SaverObject *self, PyObject *args) {
  PyObject *sess;
  const char *prefix;
  long long step = -1;
  if (!PyArg_ParseTuple(args, "Os|L", &sess, &prefix, &step)) return NULL;
  weft_session_t *s = session_of(sess);
  if (!s) return NULL;
  char *path = NULL;
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_saver_save(self->saver, s, NULL, prefix, step, &path);
  Py_END_ALLOW_THREADS
  if (st) return raise_status(st);
  PyObject *r = PyUnicode_FromString(path ? path : prefix);
  weft_free(path);
  return r;
}

static PyObject *saver_restore(SaverObject *self, PyObject *args) {
  PyObject *sess;
  const char *prefix;
  if (!PyArg_ParseTuple(args, "Os", &sess, &prefix)) return NULL;
  weft_session_t *s = session_of(sess);
  if (!s) return NULL;
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_saver_restore(self->saver, s, NULL, prefix);
  Py_END_ALLOW_THREADS
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyMethodDef saver_methods[] = {
  {"save", (PyCFunction)saver_save, METH_VARARGS, "save(session, prefix, global_step=-1)"},
  {"restore", (PyCFunction)saver_restore, METH_VARARGS, "restore(session, prefix)"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject SaverType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Saver",
  .tp_basicsize = sizeof(SaverObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Saver(max_to_keep=5, var_list=None): weft_saver_t over a session's variables.",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)saver_init,
  .tp_dealloc = (destructor)saver_dealloc,
  .tp_methods = saver_methods,
};

static PyObject *py_latest_checkpoint(PyObject *self, PyObject *arg) {
  const char *dir = PyUnicode_AsUTF8(arg);
  if (!dir) return NULL;
  char *latest = weft_checkpoint_latest(dir);
  if (!latest) Py_RETURN_NONE;
  PyObject *r = PyUnicode_FromString(latest);
  weft_free(latest);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * Cluster specs and servers */

/* cluster_spec_parse("ps=h:p;worker=h:p,h:p") -> {job: {task: address}}, checked by the core. */
static PyObject *py_cluster_spec_parse(PyObject *self, PyObject *arg) {
  const char *text = PyUnicode_AsUTF8(arg);
  if (!text) return NULL;
  weft_cluster_spec_t *spec = NULL;
  weft_status_t *st = weft_cluster_spec_parse(text, &spec);
  if (st) return raise_status(st);
  PyObject *jobs = PyDict_New();
  for (int j = 0; jobs && j < weft_cluster_spec_num_jobs(spec); j++) {
    const char *job = weft_cluster_spec_job_name(spec, j);
    PyObject *tasks = PyDict_New();
    for (int t = 0; tasks && t < weft_cluster_spec_num_tasks(spec, job); t++) {
      const char *addr = weft_cluster_spec_task_address(spec, job, t);
      if (!addr) continue;
      PyObject *k = PyLong_FromLong(t), *v = PyUnicode_FromString(addr);
      if (!k || !v || PyDict_SetItem(tasks, k, v) < 0) Py_CLEAR(tasks);
      Py_XDECREF(k);
      Py_XDECREF(v);
    }
    if (!tasks || PyDict_SetItemString(jobs, job, tasks) < 0) Py_CLEAR(jobs);
    Py_XDECREF(tasks);
  }
  weft_cluster_spec_free(spec);
  return jobs;
}

typedef struct {
  PyObject_HEAD
  weft_server_t *server;
} ServerObject;

/* Server(cluster_text, job, task, start=True, bind_address=None); Server(None) is
 * weft_server_new_local. */
static int server_init(ServerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"cluster", "job", "task", "start", "bind_address", NULL};
  const char *cluster = NULL, *job = NULL, *bind = NULL;
  int task = 0, start = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "z|zipz", kwlist, &cluster, &job, &task, &start,
                                   &bind))
    return -1;
  weft_status_t *st = NULL;
  weft_server_t *server = NULL;
  if (!cluster) {
    Py_BEGIN_ALLOW_THREADS
    st = weft_server_new_local(start, &server);
    Py_END_ALLOW_THREADS
  } else {
    weft_cluster_spec_t *spec = NULL;
    st = weft_cluster_spec_parse(cluster, &spec);
    weft_server_options_t *opts = weft_server_options_new();
    if (bind) weft_server_options_set_bind_address(opts, bind);
    if (!st) {
      Py_BEGIN_ALLOW_THREADS
      st = weft_server_new(spec, job ? job : "", task, opts, &server);
      if (!st && start) st = weft_server_start(server);
      Py_END_ALLOW_THREADS
    }
    weft_server_options_free(opts);
    weft_cluster_spec_free(spec);
  }
  if (st) {
    weft_server_free(server);
    raise_status(st);
    return -1;
  }
  self->server = server;
  return 0;
}

static void server_dealloc(ServerObject *self) {
  if (self->server) {
    Py_BEGIN_ALLOW_THREADS
    weft_server_free(self->server);
    Py_END_ALLOW_THREADS
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *server_target(ServerObject *self, void *c) {
  return PyUnicode_FromString(weft_server_target(self->server));
}

static PyObject *server_start(ServerObject *self, PyObject *unused) {
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_server_start(self->server);
  Py_END_ALLOW_THREADS
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *server_join(ServerObject *self, PyObject *unused) {
  Py_BEGIN_ALLOW_THREADS
  weft_server_join(self->server);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject *server_stop(ServerObject *self, PyObject *unused) {
  weft_status_t *st;
  Py_BEGIN_ALLOW_THREADS
  st = weft_server_stop(self->server);
  Py_END_ALLOW_THREADS
  if (st) return raise_status(st);
  Py_RETURN_NONE;
}

static PyGetSetDef server_getset[] = {
  {"target", (getter)server_target, NULL, "grpc://host:port", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef server_methods[] = {
  {"start", (PyCFunction)server_start, METH_NOARGS, NULL},
  {"join", (PyCFunction)server_join, METH_NOARGS, "blocks until stopped (GIL released)"},
  {"stop", (PyCFunction)server_stop, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject ServerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "weft._weft.Server",
  .tp_basicsize = sizeof(ServerObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Server(cluster_text or None, job=None, task=0, start=True, bind_address=None).",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)server_init,
  .tp_dealloc = (destructor)server_dealloc,
  .tp_getset = server_getset,
  .tp_methods = server_methods,
};

static PyMethodDef train_functions[] = {
  {"latest_checkpoint", py_latest_checkpoint, METH_O, "newest checkpoint prefix of a folder"},
  {"cluster_spec_parse", py_cluster_spec_parse, METH_O,
   "'ps=h:p;worker=h:p,h:p' -> {job: {task: address}}"},
  {NULL, NULL, 0, NULL},
};

int weft_py_train_init(PyObject *module) {
  /* Graph's training methods are added to its type here, beside the rest of this part. */
  for (PyMethodDef *m = graph_train_methods; m->ml_name; m++) {
    PyObject *descr = PyDescr_NewMethod(&GraphType, m);
    if (!descr || PyDict_SetItemString(GraphType.tp_dict, m->ml_name, descr) < 0) {
      Py_XDECREF(descr);
      return -1;
    }
    Py_DECREF(descr);
  }
  PyType_Modified(&GraphType);
  if (PyType_Ready(&SaverType) < 0 || PyType_Ready(&ServerType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Saver", (PyObject *)&SaverType) < 0 ||
      PyModule_AddObjectRef(module, "Server", (PyObject *)&ServerType) < 0)
    return -1;
  return PyModule_AddFunctions(module, train_functions);
}

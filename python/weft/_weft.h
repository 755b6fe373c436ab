/* What the files of the extension weft._weft share: its object layouts, the Graph, Node and
 * Session types, and the helpers that convert nodes and raise statuses (_weft.c); the training
 * and cluster part (_weft_train.c) registers itself through weft_py_train_init. Python.h comes
 * first, as CPython requires. */
#ifndef WEFT_PY_WEFT_H
#define WEFT_PY_WEFT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "weft/weft.h"

typedef struct {
  PyObject_HEAD
  weft_graph_t *graph;
  PyObject *device_fns; /* list of the device functions pushed, kept alive while pushed */
  PyObject *fn_results; /* the last result of each, so its UTF-8 outlives the call */
} GraphObject;

typedef struct {
  PyObject_HEAD
  GraphObject *graph;
  weft_node_t *node;
} NodeObject;

typedef struct {
  PyObject_HEAD
  weft_session_t *session;
  PyObject *graph;
} SessionObject;

extern PyTypeObject GraphType, NodeType, SessionType;

/* Raises `status` as the exception the error factory makes and frees it; returns NULL. */
PyObject *raise_status(weft_status_t *status);
/* A Node of g for n (None for NULL); a new reference. */
PyObject *node_wrap(GraphObject *g, weft_node_t *n);
/* (Node, index) for out, None when out.node is NULL; a new reference. */
PyObject *output_wrap(GraphObject *g, weft_output_t out);
/* (Node, index) or Node of graph g (NULL: any graph) -> *out; -1 with an exception set. */
int output_from_py(GraphObject *g, PyObject *obj, weft_output_t *out);
/* A Node of g -> its weft node; NULL with an exception set. */
weft_node_t *node_from_py(GraphObject *g, PyObject *obj);
/* Adds the training and cluster types and functions to the module (_weft_train.c). */
int weft_py_train_init(PyObject *module);
/* Adds EventWriter and EventReader (_weft_summary.c). */
int weft_py_summary_init(PyObject *module);

#endif /* WEFT_PY_WEFT_H */

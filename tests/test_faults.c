/* Fault injection with real weftd processes on loopback (docs/operations.md): requests that
 * break the server's validation limits, a worker killed in the middle of a step, a peer that
 * accepts connections but never answers, a worker frozen with SIGSTOP (a network cut), a
 * checkpoint write killed half way, and a disk that fills up during a checkpoint. Each failure
 * must come back as the documented error within its deadline, and what still runs must keep
 * working. */
#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/distributed_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define CHECKPOINT_CHILD WEFT_BUILD_DIR "/tests/checkpoint_child"

#define OK(expr)                                                                          \
  do {                                                                                    \
    weft_status_t *st_ = (expr);                                                          \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(st_->code), weft_status_message(st_)); \
  } while (0)

static void expect_code(weft_status_t *st, weft_code_t code) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
}

static weft_session_t *session_to(weft_graph_t *g, const char *target, int64_t timeout_ms,
                                  const char *token_file) {
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, target);
  if (timeout_ms > 0) weft_session_options_set_operation_timeout_ms(o, timeout_ms);
  if (token_file) weft_session_options_set_auth_token_file(o, token_file);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  weft_session_options_free(o);
  return s;
}

/* Fetches `name`, feeding x0 = 2.5 when the graph has it. */
static weft_status_t *run1(weft_session_t *s, const char *name, weft_tensor_t **out) {
  const char *feed = "x0";
  weft_tensor_t *x0 = weft_tensor_new_scalar_float(2.5f);
  bool fed = strcmp(name, "a0") == 0;
  weft_status_t *st = weft_session_run(s, &feed, &x0, fed ? 1 : 0, &name, out, 1, NULL, 0);
  weft_tensor_unref(x0);
  return st;
}

static double fetch1(weft_session_t *s, const char *name) {
  weft_tensor_t *out = NULL;
  OK(run1(s, name, &out));
  double v = weft_tensor_get_double(out, 0);
  weft_tensor_unref(out);
  return v;
}

/* ---------------------------------------------------------------------------------------------
 * Request validation */


typedef struct raw_target {
  const char *address;
  const weft__security_t *security;
} raw_target_t;

static void expect_raw(const raw_target_t *t, const char *method, GByteArray *bytes,
                       weft_code_t code, const char *message) {
  char *answer = NULL;
  size_t answer_len = 0;
  weft_status_t *st = weft__rpc_raw_secure(t->address, t->security, method, bytes->data,
                                           bytes->len, 5000, &answer, &answer_len);
  g_test_message("%s: %s", method, st ? weft_status_message(st) : "OK");
  expect_code(st, code);
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
  g_free(answer);
  g_byte_array_free(bytes, TRUE);
}

/* A RunStep of session "s" feeding "x" with one tensor described by meta, followed by `tail`. */
static GByteArray *run_step_frame(Weft__TensorMeta *meta, const void *tail, size_t tail_len) {
  Weft__RunStepRequest step = WEFT__RUN_STEP_REQUEST__INIT;
  step.session_handle = "s";
  char *feed = "x";
  step.n_feed = 1;
  step.feed = &feed;
  Weft__TensorMeta *metas[1] = {meta};
  Weft__TensorList list = WEFT__TENSOR_LIST__INIT;
  list.n_tensor = 1;
  list.tensor = metas;
  return weftd_frame_request(&step.base, &list, tail, tail_len);
}

/* A CreateSession whose graph holds `n` nodes n0..; node 0 gets op, device and attrs. */
static GByteArray *create_frame(int n, const char *op, const char *device,
                                Tensorflow__AttrEntry **attrs, size_t n_attrs) {
  Tensorflow__NodeDef *nodes = g_new0(Tensorflow__NodeDef, n);
  Tensorflow__NodeDef **ptrs = g_new0(Tensorflow__NodeDef *, n);
  char **names = g_new0(char *, n);
  for (int k = 0; k < n; k++) {
    tensorflow__node_def__init(&nodes[k]);
    names[k] = g_strdup_printf("n%d", k);
    nodes[k].name = names[k];
    nodes[k].op = "NoOp";
    ptrs[k] = &nodes[k];
  }
  nodes[0].op = (char *)op;
  nodes[0].device = (char *)device;
  nodes[0].n_attr = n_attrs;
  nodes[0].attr = attrs;
  Tensorflow__GraphDef gd = TENSORFLOW__GRAPH_DEF__INIT;
  gd.n_node = (size_t)n;
  gd.node = ptrs;
  Weft__CreateSessionRequest req = WEFT__CREATE_SESSION_REQUEST__INIT;
  req.graph_def = &gd;
  Weft__TensorList empty = WEFT__TENSOR_LIST__INIT;
  GByteArray *out = weftd_frame_request(&req.base, &empty, NULL, 0);
  for (int k = 0; k < n; k++) g_free(names[k]);
  g_free(names);
  g_free(ptrs);
  g_free(nodes);
  return out;
}

/* A Const node's "value" attribute: dtype float, shape [dim], `content` bytes of content. */
static GByteArray *const_frame(int64_t dim, size_t content, int n_float_val) {
  Tensorflow__TensorShapeProto__Dim d = TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT;
  d.size = dim;
  Tensorflow__TensorShapeProto__Dim *dims[1] = {&d};
  Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 1;
  shape.dim = dims;
  Tensorflow__TensorProto t = TENSORFLOW__TENSOR_PROTO__INIT;
  t.dtype = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  t.tensor_shape = &shape;
  uint8_t *bytes = g_malloc0(content + 1);
  t.tensor_content.data = bytes;
  t.tensor_content.len = content;
  float vals[4] = {1, 2, 3, 4};
  t.n_float_val = (size_t)n_float_val;
  t.float_val = vals;
  Tensorflow__AttrValue value = TENSORFLOW__ATTR_VALUE__INIT;
  value.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
  value.tensor = &t;
  Tensorflow__AttrValue type = TENSORFLOW__ATTR_VALUE__INIT;
  type.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
  type.type = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  Tensorflow__AttrEntry e0 = TENSORFLOW__ATTR_ENTRY__INIT, e1 = TENSORFLOW__ATTR_ENTRY__INIT;
  e0.key = "dtype";
  e0.value = &type;
  e1.key = "value";
  e1.value = &value;
  Tensorflow__AttrEntry *attrs[2] = {&e0, &e1};
  GByteArray *out = create_frame(1, "Const", "/job:ps/task:0", attrs, 2);
  g_free(bytes);
  return out;
}

/* Every limit and consistency check, each with its exact message, on a server that requires a
 * token (the token is checked before anything else); then a real step still runs. */
static void test_validation(void) {
  char *dir = g_dir_make_tmp("weft-faults-XXXXXX", NULL);
  char *token = g_build_filename(dir, "token", NULL);
  g_assert_true(g_file_set_contents(token, "s3cret-token\n", -1, NULL));
  const char *extra[] = {"--max_message_bytes", "65536", "--max_tensor_bytes", "4096",
                         "--max_graph_nodes",   "10",    "--max_node_attrs",   "8",
                         "--max_tensor_rank",   "3",     "--auth-token-file",  token,
                         NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 0, extra)) {
    g_free(token);
    g_free(dir);
    return;
  }
  weft__security_t *sec = NULL;
  OK(weft__security_new(false, false, NULL, NULL, NULL, token, &sec));
  raw_target_t plain = {c.address[0], NULL}, t = {c.address[0], sec};

  /* No token: refused before the request is even looked at. */
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  int64_t dims[4] = {4, 1, 1, 1};
  meta.dtype = WEFT_DT_FLOAT;
  meta.n_dims = 1;
  meta.dims = dims;
  meta.nbytes = 12;
  char *unauth = NULL;
  {
    char *answer = NULL;
    size_t len = 0;
    GByteArray *b = run_step_frame(&meta, "123456789012", 12);
    weft_status_t *st = weft__rpc_raw_secure(plain.address, NULL, "/weft.Master/RunStep", b->data,
                                             b->len, 5000, &answer, &len);
    expect_code(st, WEFT_UNAUTHENTICATED);
    unauth = g_strdup(weft_status_message(st));
    weft_status_free(st);
    g_byte_array_free(b, TRUE);
  }
  g_test_message("without the token: %s", unauth);
  g_free(unauth);

  expect_raw(&t, "/weft.Master/RunStep", run_step_frame(&meta, "123456789012", 12),
             WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'feed[0].tensor_content' holds 12 bytes but dtype "
             "float32 and shape [4] need 16");
  meta.n_dims = 4;
  meta.nbytes = 16;
  expect_raw(&t, "/weft.Master/RunStep", run_step_frame(&meta, "1234567890123456", 16),
             WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'feed[0].shape' has rank 4; the server allows at "
             "most 3 (--max_tensor_rank)");
  meta.n_dims = 1;
  dims[0] = 2048;
  meta.nbytes = 8192;
  uint8_t *big = g_malloc0(8192);
  expect_raw(&t, "/weft.Worker/RunGraph", run_step_frame(&meta, big, 8192), WEFT_INVALID_ARGUMENT,
             "Invalid RunGraph request: field 'feed[0].tensor_content' needs 8192 bytes; the "
             "server allows at most 4096 per tensor (--max_tensor_bytes)");
  g_free(big);
  dims[0] = 1000;
  meta.nbytes = 4000;
  expect_raw(&t, "/weft.Master/RunStep", run_step_frame(&meta, "1234", 4), WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'feed[0].tensor_content' needs 4000 bytes but only "
             "4 follow in the message");
  meta.dtype = 77;
  expect_raw(&t, "/weft.Master/RunStep", run_step_frame(&meta, NULL, 0), WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'feed[0].dtype' is 77, not a dtype a tensor can "
             "have");
  GByteArray *huge = g_byte_array_new();
  g_byte_array_set_size(huge, 70000);
  memset(huge->data, 0, huge->len);
  expect_raw(&t, "/weft.Master/RunStep", huge, WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: the message is 70000 bytes; the server accepts at most "
             "65536 (--max_message_bytes)");

  /* Far beyond the limit: gRPC cuts it off while it arrives. */
  {
    size_t len = 65536 + (2 << 20);
    char *bytes = g_malloc0(len), *answer = NULL;
    size_t answer_len = 0;
    weft_status_t *st = weft__rpc_raw_secure(t.address, t.security, "/weft.Master/RunStep", bytes,
                                             len, 5000, &answer, &answer_len);
    g_test_message("far beyond the limit: %s", weft_status_message(st));
    expect_code(st, WEFT_RESOURCE_EXHAUSTED);
    g_assert_nonnull(strstr(weft_status_message(st), "Received message larger than max"));
    weft_status_free(st);
    g_free(bytes);
  }
  expect_raw(&t, "/weft.Master/CreateSession", create_frame(11, "NoOp", NULL, NULL, 0),
             WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node' has 11 nodes; the server "
             "allows at most 10 (--max_graph_nodes)");
  expect_raw(&t, "/weft.Master/CreateSession", create_frame(2, "NoSuchOp", NULL, NULL, 0),
             WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].op' of node 'n0': Op type "
             "not registered 'NoSuchOp'");
  char *nowhere = g_strdup_printf("Invalid CreateSession request: field "
                                  "'graph_def.node[0].device' of node 'n0' is "
                                  "'/job:nowhere/task:0', but the cluster has no job 'nowhere' "
                                  "(cluster: ps=%s)",
                                  c.address[0]);
  expect_raw(&t, "/weft.Master/CreateSession", create_frame(1, "NoOp", "/job:nowhere/task:0",
                                                            NULL, 0),
             WEFT_INVALID_ARGUMENT, nowhere);
  g_free(nowhere);
  expect_raw(&t, "/weft.Master/CreateSession", create_frame(1, "NoOp", "/job:ps/task:3", NULL, 0),
             WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].device' of node 'n0' is "
             "'/job:ps/task:3', but job 'ps' has no task 3");
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  v.value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
  Tensorflow__AttrEntry entries[9];
  Tensorflow__AttrEntry *attrs[9];
  char keys[9][8];
  for (int k = 0; k < 9; k++) {
    tensorflow__attr_entry__init(&entries[k]);
    g_snprintf(keys[k], sizeof keys[k], "a%d", k);
    entries[k].key = keys[k];
    entries[k].value = &v;
    attrs[k] = &entries[k];
  }
  expect_raw(&t, "/weft.Master/CreateSession", create_frame(1, "NoOp", NULL, attrs, 9),
             WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].attr' of node 'n0' has 9 "
             "attributes; the server allows at most 8 (--max_node_attrs)");
  expect_raw(&t, "/weft.Master/CreateSession", const_frame(4, 12, 0), WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].attr['value'].tensor."
             "tensor_content' holds 12 bytes but dtype float32 and shape [4] need 16");
  expect_raw(&t, "/weft.Master/CreateSession", const_frame(1000000000, 0, 1),
             WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].attr['value'].tensor' "
             "(dtype float32, 1000000000 elements) needs more than the 4096 bytes the server "
             "allows per tensor (--max_tensor_bytes)");
  expect_raw(&t, "/weft.Master/CreateSession", const_frame(2, 0, 3), WEFT_INVALID_ARGUMENT,
             "Invalid CreateSession request: field 'graph_def.node[0].attr['value'].tensor."
             "float_val' has 3 values but shape [2] has 2 elements");

  Weft__TensorList empty = WEFT__TENSOR_LIST__INIT;
  Weft__RunStepRequest step = WEFT__RUN_STEP_REQUEST__INIT;
  expect_raw(&t, "/weft.Master/RunStep", weftd_frame_request(&step.base, &empty, NULL, 0),
             WEFT_INVALID_ARGUMENT, "Invalid RunStep request: field 'session_handle' is empty");
  step.session_handle = "s";
  char *fetches[2] = {"y", ""};
  step.n_fetch = 2;
  step.fetch = fetches;
  expect_raw(&t, "/weft.Master/RunStep", weftd_frame_request(&step.base, &empty, NULL, 0),
             WEFT_INVALID_ARGUMENT, "Invalid RunStep request: field 'fetch[1]' is empty");
  step.n_fetch = 1;
  step.timeout_ms = -5;
  expect_raw(&t, "/weft.Master/RunStep", weftd_frame_request(&step.base, &empty, NULL, 0),
             WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'timeout_ms' is -5; it must be 0 (the default) or "
             "more");
  step.timeout_ms = 0;
  char *feed = "x";
  step.n_feed = 1;
  step.feed = &feed;
  expect_raw(&t, "/weft.Master/RunStep", weftd_frame_request(&step.base, &empty, NULL, 0),
             WEFT_INVALID_ARGUMENT,
             "Invalid RunStep request: field 'feed' names 1 tensors but the message carries 0");

  Tensorflow__NodeDef node = TENSORFLOW__NODE_DEF__INIT;
  node.name = "n";
  node.op = "NoOp";
  Tensorflow__NodeDef *nodes[1] = {&node};
  Tensorflow__GraphDef gd = TENSORFLOW__GRAPH_DEF__INIT;
  gd.n_node = 1;
  gd.node = nodes;
  Weft__TaskAddress peer = WEFT__TASK_ADDRESS__INIT;
  peer.task = "/job:evil/replica:0/task:0";
  peer.address = "10.0.0.1:22";
  Weft__TaskAddress *peers[1] = {&peer};
  Weft__RegisterGraphRequest reg = WEFT__REGISTER_GRAPH_REQUEST__INIT;
  reg.graph_def = &gd;
  reg.n_peer = 1;
  reg.peer = peers;
  char *want = g_strdup_printf("Invalid RegisterGraph request: field 'peer[0].task' is "
                               "'/job:evil/replica:0/task:0', but the cluster has no job 'evil' "
                               "(cluster: ps=%s)",
                               c.address[0]);
  expect_raw(&t, "/weft.Worker/RegisterGraph", weftd_frame_request(&reg.base, &empty, NULL, 0),
             WEFT_INVALID_ARGUMENT, want);
  g_free(want);

  /* Still serving, and a well-formed step is within every limit. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t a = weft_const_float(g, "a", 1.5f, &st);
  OK(st);
  weft_output_t b = weft_const_float(g, "b", 2.0f, &st);
  OK(st);
  weft_binary(g, "AddV2", "sum", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = session_to(g, c.target[0], 0, token);
  g_assert_cmpfloat(fetch1(s, "sum"), ==, 3.5);
  weft_session_free(s);
  weft_graph_free(g);
  weft__security_unref(sec);
  weftd_cluster_stop(&c);
  g_unlink(token);
  g_rmdir(dir);
  g_free(token);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Dead, silent and frozen peers */

/* sq0 = x0^2 on worker 0 (x0 fed), sq1 = 3^2 on worker 1 (when there is one), and on the ps
 * a0 = sq0 + 1 and a1 = sq1 + 1: fetching a0 needs worker 0, fetching a1 does not. */
static weft_graph_t *two_worker_graph(bool second) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_output_t x0 = weft_placeholder(g, "x0", WEFT_DT_FLOAT, 0, NULL, &st);
  weft_output_t sq0 = weft_binary(g, "Mul", "sq0", x0, x0, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_output_t sq1 = {NULL, 0};
  if (second) {
    weft_graph_push_device(g, "/job:worker/task:1");
    weft_output_t x1 = weft_const_float(g, "x1", 3.0f, &st);
    sq1 = weft_binary(g, "Mul", "sq1", x1, x1, &st);
    OK(st);
    weft_graph_pop_device(g);
  }
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  weft_binary(g, "AddV2", "a0", sq0, one, &st);
  if (second) weft_binary(g, "AddV2", "a1", sq1, one, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

typedef struct step_thread {
  weft_session_t *s;
  const char *fetch;
  weft_status_t *status;
  gint64 finished;
} step_thread_t;

static gpointer run_fetch(gpointer data) {
  step_thread_t *t = data;
  weft_tensor_t *out = NULL;
  t->status = run1(t->s, t->fetch, &out);
  weft_tensor_unref(out);
  t->finished = g_get_monotonic_time();
  return NULL;
}

/* A worker SIGKILLed while a step waits on it: the step fails with UNAVAILABLE naming it well
 * within the deadline, and a step that does not need it still runs on the ps and the other
 * worker. */
static void test_worker_killed(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 2, NULL)) return;
  weft_graph_t *g = two_worker_graph(true);
  weft_session_t *s = session_to(g, c.target[2], 8000, NULL);
  g_assert_cmpfloat(fetch1(s, "a0"), ==, 7.25);
  g_assert_cmpfloat(fetch1(s, "a1"), ==, 10.0);

  /* Frozen first so that the step is certainly in flight on it when it dies. */
  weftd_cluster_signal(&c, 1, SIGSTOP);
  step_thread_t t = {s, "a0", NULL, 0};
  GThread *th = g_thread_new("step", run_fetch, &t);
  g_usleep(400000);
  if (t.finished) g_test_message("finished early: %s", weft_status_message(t.status));
  g_assert_cmpint(t.finished, ==, 0);
  gint64 killed = g_get_monotonic_time();
  weftd_cluster_signal(&c, 1, SIGKILL);
  g_thread_join(th);
  double after = (t.finished - killed) / 1e6;
  g_test_message("worker killed mid-step: failed %.2f s after the kill: %s", after,
                 weft_status_message(t.status));
  expect_code(t.status, WEFT_UNAVAILABLE);
  g_assert_nonnull(strstr(weft_status_message(t.status), "/job:worker/replica:0/task:0"));
  g_assert_nonnull(strstr(weft_status_message(t.status), c.address[1]));
  g_assert_cmpfloat(after, <, 5.0);
  weft_status_free(t.status);

  /* The ps and worker 1 keep serving. */
  for (int k = 0; k < 3; k++) g_assert_cmpfloat(fetch1(s, "a1"), ==, 10.0);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* A listener that completes TCP handshakes (the kernel does) and never says a word. */
static int silent_listener(char **address) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof addr), ==, 0);
  g_assert_cmpint(listen(fd, 64), ==, 0);
  g_assert_cmpint(getsockname(fd, (struct sockaddr *)&addr, &len), ==, 0);
  *address = g_strdup_printf("127.0.0.1:%d", ntohs(addr.sin_port));
  return fd;
}

/* A task that accepts the connection and never answers: a call to it ends at its deadline
 * naming the task and its address, and a session that needs the cluster fails within the
 * master's status timeout naming it; nothing hangs. */
static void test_silent_peer(void) {
  char *silent = NULL;
  int fd = silent_listener(&silent);
  const char *fixed[3] = {NULL, NULL, silent};
  const char *extra[] = {"--status_timeout_ms", "1500", NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start_full(&c, 1, 2, extra, NULL, fixed)) {
    close(fd);
    g_free(silent);
    return;
  }
  weft__peer_t peer = {"/job:worker/replica:0/task:1", silent, NULL, NULL};
  Weft__GetStatusRequest req = WEFT__GET_STATUS_REQUEST__INIT;
  ProtobufCMessage *resp = NULL;
  gint64 t0 = g_get_monotonic_time();
  weft_status_t *st = weft__rpc_unary(&peer, "/weft.Worker/GetStatus", &req.base, NULL, 0, 800,
                                      false, NULL, &weft__get_status_response__descriptor, &resp,
                                      NULL, NULL);
  double call_s = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("silent peer, direct call: %.2f s: %s", call_s, weft_status_message(st));
  g_assert_nonnull(st);
  g_assert_true(weft_status_code(st) == WEFT_DEADLINE_EXCEEDED ||
                weft_status_code(st) == WEFT_UNAVAILABLE);
  g_assert_nonnull(strstr(weft_status_message(st), "Task /job:worker/replica:0/task:1 at "));
  g_assert_nonnull(strstr(weft_status_message(st), silent));
  g_assert_cmpfloat(call_s, <, 3.0);
  weft_status_free(st);

  weft_graph_t *g = two_worker_graph(false);
  weft_session_t *s = session_to(g, c.target[0], 3000, NULL);
  t0 = g_get_monotonic_time();
  weft_tensor_t *out = NULL;
  st = run1(s, "a0", &out);
  double step_s = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("silent peer, session: %.2f s: %s", step_s, weft_status_message(st));
  char *want = g_strdup_printf("CreateSession: 1 of 3 tasks did not answer GetStatus within 1500 "
                               "ms: /job:worker/replica:0/task:1 (%s)",
                               silent);
  expect_code(st, WEFT_UNAVAILABLE);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_assert_cmpfloat(step_s, <, 6.0);
  g_free(want);
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
  close(fd);
  g_free(silent);
}

/* A worker frozen with SIGSTOP looks like a cut network: the step ends at its deadline naming
 * the worker; after SIGCONT the same session runs again. */
static void test_stopped_worker(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = two_worker_graph(false);
  weft_session_t *s = session_to(g, c.target[0], 1500, NULL);
  g_assert_cmpfloat(fetch1(s, "a0"), ==, 7.25);
  weftd_cluster_signal(&c, 1, SIGSTOP);
  weft_tensor_t *out = NULL;
  gint64 t0 = g_get_monotonic_time();
  weft_status_t *st = run1(s, "a0", &out);
  double hung = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("stopped worker: %.2f s: %s", hung, weft_status_message(st));
  expect_code(st, WEFT_DEADLINE_EXCEEDED);
  g_assert_nonnull(strstr(weft_status_message(st), "/job:worker/replica:0/task:0"));
  g_assert_cmpfloat(hung, >=, 1.4);
  g_assert_cmpfloat(hung, <, 8.0);
  weft_status_free(st);
  weftd_cluster_signal(&c, 1, SIGCONT);
  g_assert_cmpfloat(fetch1(s, "a0"), ==, 7.25);
  g_assert_cmpfloat(fetch1(s, "a0"), ==, 7.25);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Checkpoints */

static bool no_child(void) {
  if (g_file_test(CHECKPOINT_CHILD, G_FILE_TEST_IS_EXECUTABLE)) return false;
  g_test_skip("checkpoint_child not built at " CHECKPOINT_CHILD);
  return true;
}

static GPid spawn_child(const char *dir, const char *mode, const char *mib, const char *fsize,
                        int *out_fd) {
  const char *argv[] = {CHECKPOINT_CHILD, dir, mode, mib, NULL};
  char **envp = g_get_environ();
  if (fsize) envp = g_environ_setenv(envp, "FSIZE_LIMIT", fsize, TRUE);
  GPid pid = 0;
  GError *error = NULL;
  g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, envp, G_SPAWN_DO_NOT_REAP_CHILD,
                                         die_with_parent, NULL, &pid, NULL, out_fd, NULL,
                                         &error));
  g_assert_no_error(error);
  g_strfreev(envp);
  return pid;
}

/* Checks that checkpoint `prefix` holds what checkpoint_child wrote as number n: every byte. */
static void assert_checkpoint(const char *prefix, int n, int64_t mib) {
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  weft_tensor_t *t = NULL;
  OK(weft_checkpoint_reader_read(r, "t", &t));
  int64_t elements = mib * 1024 * 256;
  g_assert_cmpint(t->num_elements, ==, elements);
  const int32_t *v = weft_tensor_data(t);
  int64_t bad = 0;
  for (int64_t k = 0; k < elements; k++) bad += v[k] != (int32_t)(n * 1000003 + k);
  g_assert_cmpint(bad, ==, 0);
  weft_tensor_unref(t);
  weft_checkpoint_reader_free(r);
}

static int count_with(const char *dir, const char *needle) {
  GDir *d = g_dir_open(dir, 0, NULL);
  int n = 0;
  const char *name;
  while (d && (name = g_dir_read_name(d))) n += strstr(name, needle) != NULL;
  if (d) g_dir_close(d);
  return n;
}

static void remove_tree(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    char *path = g_build_filename(dir, name, NULL);
    g_unlink(path);
    g_free(path);
  }
  if (d) g_dir_close(d);
  g_rmdir(dir);
}

/* A process killed while it writes a checkpoint: the state file and weft_checkpoint_latest
 * still name the last complete checkpoint, which restores byte for byte; the partial one is
 * only temporary files nobody reads. */
static void test_checkpoint_killed(void) {
  if (no_child()) return;
  char *dir = g_dir_make_tmp("weft-ckpt-kill-XXXXXX", NULL);
  int out = -1;
  GPid pid = spawn_child(dir, "loop", "24", NULL, &out);
  int last_saved = -1;
  char *line = NULL;
  while ((line = read_line(out, 30000))) {
    int n = -1;
    if (sscanf(line, "saved %d", &n) == 1) last_saved = n;
    bool go = sscanf(line, "writing %d", &n) == 1 && n == 2;
    g_free(line);
    if (go) break;
  }
  g_assert_cmpint(last_saved, ==, 1);
  /* Into the write of checkpoint 2: its temporary data file exists. */
  gint64 until = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  while (count_with(dir, "ckpt-2.data-00000-of-00001.tempstate") == 0 &&
         g_get_monotonic_time() < until)
    g_usleep(500);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  g_spawn_close_pid(pid);
  while ((line = read_line(out, 1000))) {
    int n = -1;
    if (sscanf(line, "saved %d", &n) == 1) last_saved = n;
    g_free(line);
  }
  close(out);
  g_assert_true(WIFSIGNALED(status));
  int partial = count_with(dir, "ckpt-2.data-00000-of-00001.tempstate");
  g_test_message("killed after checkpoint %d was saved; %d partial data files of checkpoint 2 "
                 "left", last_saved, partial);
  char *index2 = g_strdup_printf("%s/ckpt-2.index", dir);
  /* Unless the write finished in the instant between seeing its file and the kill. */
  if (last_saved == 1 && !g_file_test(index2, G_FILE_TEST_EXISTS)) g_assert_cmpint(partial, ==, 1);
  g_free(index2);
  char *latest = weft_checkpoint_latest(dir);
  char *want = g_strdup_printf("%s/ckpt-%d", dir, last_saved);
  g_assert_cmpstr(latest, ==, want);
  assert_checkpoint(latest, last_saved, 24);
  /* The one that was being written is not a checkpoint (no index) unless it was finished. */
  char *next_index = g_strdup_printf("%s/ckpt-%d.index", dir, last_saved + 1);
  if (g_file_test(next_index, G_FILE_TEST_EXISTS)) {
    g_test_message("checkpoint %d was complete but not yet in the state file", last_saved + 1);
  }
  g_free(next_index);
  /* The killed writer's temporary files are its own (its pid is in their names) and it is
   * gone: the next saver of this prefix removes them, and only them. */
  char *prefix = g_build_filename(dir, "ckpt", NULL);
  int temps = count_with(dir, "tempstate"), removed = -1;
  g_assert_cmpint(temps, >=, partial);
  weft_status_t *st = weft_checkpoint_remove_stale_temp_files(prefix, &removed);
  g_assert_null(st);
  g_assert_cmpint(removed, ==, temps);
  g_assert_cmpint(count_with(dir, "tempstate"), ==, 0);
  assert_checkpoint(latest, last_saved, 24);
  g_free(prefix);
  g_free(want);
  g_free(latest);
  remove_tree(dir);
  g_free(dir);
}

/* The disk fills up during a checkpoint: the save fails naming the file, nothing is left
 * behind, and the previous checkpoint still restores byte for byte. A small tmpfs when this
 * process may mount one, else RLIMIT_FSIZE in the child (EFBIG instead of ENOSPC). */
static void test_disk_full(void) {
  if (no_child()) return;
  char *dir = g_dir_make_tmp("weft-ckpt-full-XXXXXX", NULL);
  bool mounted = geteuid() == 0 && mount("tmpfs", dir, "tmpfs", 0, "size=6m") == 0;
  int out = -1;
  GPid pid = spawn_child(dir, "full", "16", mounted ? NULL : "4194304", &out);
  char *first = read_line(out, 30000);
  char *second = read_line(out, 30000);
  int status = 0;
  waitpid(pid, &status, 0);
  g_spawn_close_pid(pid);
  close(out);
  g_test_message("%s: %s", mounted ? "tmpfs of 6 MiB" : "RLIMIT_FSIZE of 4 MiB", second);
  g_assert_cmpstr(first, ==, "saved 0");
  g_assert_nonnull(second);
  char *file = g_strdup_printf("'%s/ckpt-1.data-00000-of-00001.tempstate", dir);
  g_assert_nonnull(strstr(second, file));
  if (mounted) {
    g_assert_true(g_str_has_prefix(second, "error RESOURCE_EXHAUSTED Checkpoint: cannot write"));
    g_assert_nonnull(strstr(second, "No space left on device"));
  } else {
    g_assert_true(g_str_has_prefix(second, "error "));
    g_assert_nonnull(strstr(second, "File too large"));
  }
  g_assert_cmpint(count_with(dir, "tempstate"), ==, 0);
  g_assert_cmpint(count_with(dir, "ckpt-1"), ==, 0);
  char *latest = weft_checkpoint_latest(dir);
  char *want = g_strdup_printf("%s/ckpt-0", dir);
  g_assert_cmpstr(latest, ==, want);
  assert_checkpoint(latest, 0, 1);
  g_free(latest);
  g_free(want);
  g_free(file);
  g_free(first);
  g_free(second);
  if (mounted) g_assert_cmpint(umount(dir), ==, 0);
  remove_tree(dir);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  weft_plugins_load_default();
  g_test_add_func("/faults/validation", test_validation);
  g_test_add_func("/faults/worker_killed", test_worker_killed);
  g_test_add_func("/faults/silent_peer", test_silent_peer);
  g_test_add_func("/faults/stopped_worker", test_stopped_worker);
  g_test_add_func("/faults/checkpoint_killed", test_checkpoint_killed);
  g_test_add_func("/faults/disk_full", test_disk_full);
  return g_test_run();
}

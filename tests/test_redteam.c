/* Attacks from a caller who holds the cluster token (or shares the host) against real weftd
 * processes and the parsers they run (docs/security.md, "Threat model"): forged shared-memory
 * offers, hostile Master and Worker requests (unknown handles, duplicated and missing names,
 * cycles, self-sends, huge shapes), and the same hostile bytes through `weft run --graph`. Each
 * must end in the documented error, never a crash, abort or hang, and the server keeps serving. */
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/distributed_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Forged shared-memory offers */

/* A memfd named the way a receiver names its segments, `size` bytes long, with `seals`. */
static int forged_segment(const char *token, off_t size, unsigned seals) {
  char *name = g_strdup_printf("weft-%s", token);
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  g_free(name);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(ftruncate(fd, size), ==, 0);
  if (seals) g_assert_cmpint(fcntl(fd, F_ADD_SEALS, seals), ==, 0);
  return fd;
}

static weft_tensor_t *filled(int64_t n) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  memset(weft_tensor_data(t), 0x3f, (size_t)n * 4);
  return t;
}

/* Runs `fn` in a child process: a SIGBUS there would otherwise end the whole test binary. The
 * child's exit status is what the parent asserts on. */
static int in_child(void (*fn)(void)) {
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  return status;
}

/* An offer whose capacity is larger than its memfd: the sender must not map (and later write)
 * past the end of the file, which raises SIGBUS. The first export fits the file; the second,
 * larger one reuses the cached mapping. */
static void capacity_beyond_file(void) {
  const char *token = "0123456789abcdef0123456789abcdef";
  int fd = forged_segment(token, 512 * 1024, F_SEAL_SHRINK);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 64u << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *small = filled(80 * 1024), *large = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  /* Refused: the bytes go in the response instead. */
  g_assert_false(weft__shm_export(&offer, small, &resp, &meta));
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, large, &resp, &meta));
  weft_tensor_unref(small);
  weft_tensor_unref(large);
  close(fd);
}

/* A receiver that shrinks its segment after the sender mapped it: the next write through the
 * cached mapping would fault. */
static void shrunk_after_mapping(void) {
  const char *token = "fedcba9876543210fedcba9876543210";
  int fd = forged_segment(token, 4 << 20, 0);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 4 << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *t = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta)); /* not sealed: refused */
  g_assert_cmpint(ftruncate(fd, 0), ==, 0);
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta));
  weft_tensor_unref(t);
  close(fd);
}

/* A segment made the way receivers make them (sealed, capacity inside the file) still works. */
static void sealed_segment(void) {
  const char *token = "00112233445566778899aabbccddeeff";
  int fd = forged_segment(token, 4 << 20, F_SEAL_SHRINK);
  weft__shm_offer_t offer = {.pid = getpid(), .fd = fd, .capacity = 4 << 20};
  g_strlcpy(offer.token, token, sizeof offer.token);
  weft_tensor_t *t = filled(1 << 20);
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta;
  weft__recv_tensor_response__init(&resp);
  g_assert_true(weft__shm_export(&offer, t, &resp, &meta));
  g_assert_true(resp.in_shm);
  g_assert_cmpuint(meta.nbytes, ==, 4u << 20);
  weft__shm_meta_clear(&meta);
  void *map = mmap(NULL, 4 << 20, PROT_READ, MAP_SHARED, fd, 0);
  g_assert_true(map != MAP_FAILED);
  g_assert_cmpint(memcmp(map, weft_tensor_data(t), 4 << 20), ==, 0);
  munmap(map, 4 << 20);
  weft_tensor_unref(t);
  close(fd);
}

static void test_shm_forged_offers(void) {
  sealed_segment();
  int status = in_child(capacity_beyond_file);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  status = in_child(shrunk_after_mapping);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}


/* ---------------------------------------------------------------------------------------------
 * Hostile Master and Worker requests */

/* Threads of a process (/proc/PID/status), -1 when unreadable. */
static int proc_threads(GPid pid) {
  char *path = g_strdup_printf("/proc/%d/status", (int)pid), *text = NULL;
  int n = -1;
  if (g_file_get_contents(path, &text, NULL, NULL)) {
    const char *line = strstr(text, "\nThreads:");
    if (line) n = atoi(line + 9);
  }
  g_free(text);
  g_free(path);
  return n;
}

/* A raw call of a request frame (weftd_frame_request) as it is; returns its status (NULL: OK)
 * and the first message of the answer in *answer. */
static weft_status_t *call_frame(const char *address, const char *method, const GByteArray *frame,
                                 const ProtobufCMessageDescriptor *answer_desc,
                                 ProtobufCMessage **answer) {
  char *bytes = NULL;
  size_t len = 0;
  weft_status_t *st =
      weft__rpc_raw(address, method, frame->data, frame->len, 20000, &bytes, &len);
  if (answer) *answer = NULL;
  if (!st && answer && answer_desc) {
    /* The answer's frame: a varint length, then the message. */
    size_t n = 0, shift = 0, used = 0;
    while (used < len && shift < 64) {
      uint8_t b = (uint8_t)bytes[used++];
      n |= (size_t)(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    g_assert_cmpuint(n, <=, len - used);
    *answer = protobuf_c_message_unpack(answer_desc, NULL, n, (const uint8_t *)bytes + used);
    g_assert_nonnull(*answer);
  }
  g_free(bytes);
  g_test_message("%s: %s%s%s", method, st ? weft_code_name(weft_status_code(st)) : "OK",
                 st ? ": " : "", st ? weft_status_message(st) : "");
  return st;
}

/* A raw call of `msg`; as call_frame. */
static weft_status_t *call(const char *address, const char *method, const ProtobufCMessage *msg,
                           const ProtobufCMessageDescriptor *answer_desc,
                           ProtobufCMessage **answer) {
  Weft__TensorList empty = WEFT__TENSOR_LIST__INIT;
  GByteArray *frame = weftd_frame_request(msg, &empty, NULL, 0);
  weft_status_t *st = call_frame(address, method, frame, answer_desc, answer);
  g_byte_array_free(frame, TRUE);
  return st;
}

static void expect(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  if (message) g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

typedef struct nodes {
  GPtrArray *owned; /* everything allocated for the graph */
  GPtrArray *nodes; /* Tensorflow__NodeDef* */
} nodes_t;

static void *own(nodes_t *g, void *p) {
  g_ptr_array_add(g->owned, p);
  return p;
}

static Tensorflow__AttrEntry *attr_entry(nodes_t *g, const char *key) {
  Tensorflow__AttrEntry *e = own(g, g_new0(Tensorflow__AttrEntry, 1));
  tensorflow__attr_entry__init(e);
  e->key = own(g, g_strdup(key));
  e->value = own(g, g_new0(Tensorflow__AttrValue, 1));
  tensorflow__attr_value__init(e->value);
  return e;
}

static Tensorflow__NodeDef *add_node(nodes_t *g, const char *name, const char *op,
                                     const char *device, int n_inputs, const char *const *inputs) {
  Tensorflow__NodeDef *n = own(g, g_new0(Tensorflow__NodeDef, 1));
  tensorflow__node_def__init(n);
  n->name = own(g, g_strdup(name));
  n->op = own(g, g_strdup(op));
  if (device) n->device = own(g, g_strdup(device));
  n->n_input = (size_t)n_inputs;
  n->input = own(g, g_new0(char *, n_inputs + 1));
  for (int k = 0; k < n_inputs; k++) n->input[k] = own(g, g_strdup(inputs[k]));
  n->attr = own(g, g_new0(Tensorflow__AttrEntry *, 8));
  g_ptr_array_add(g->nodes, n);
  return n;
}

static void set_type(nodes_t *g, Tensorflow__NodeDef *n, const char *key, int dtype) {
  Tensorflow__AttrEntry *e = attr_entry(g, key);
  e->value->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
  e->value->type = dtype;
  n->attr[n->n_attr++] = e;
}

static void set_string(nodes_t *g, Tensorflow__NodeDef *n, const char *key, const char *v) {
  Tensorflow__AttrEntry *e = attr_entry(g, key);
  e->value->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
  e->value->s.data = own(g, g_strdup(v));
  e->value->s.len = strlen(v);
  n->attr[n->n_attr++] = e;
}

static void set_int(nodes_t *g, Tensorflow__NodeDef *n, const char *key, int64_t v) {
  Tensorflow__AttrEntry *e = attr_entry(g, key);
  e->value->value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
  e->value->i = v;
  n->attr[n->n_attr++] = e;
}

static void graph_init(nodes_t *g) {
  g->owned = g_ptr_array_new_with_free_func(g_free);
  g->nodes = g_ptr_array_new();
}

static void graph_clear(nodes_t *g) {
  g_ptr_array_free(g->nodes, TRUE);
  g_ptr_array_free(g->owned, TRUE);
}

static void graph_def(nodes_t *g, Tensorflow__GraphDef *gd) {
  tensorflow__graph_def__init(gd);
  gd->n_node = g->nodes->len;
  gd->node = (Tensorflow__NodeDef **)g->nodes->pdata;
}

/* CreateSession of g's nodes with cfg (may be NULL): its status, and *handle (the caller's) when
 * it succeeds. */
static weft_status_t *create_session_of(const char *address, nodes_t *g, Weft__SessionConfig *cfg,
                                        char **handle) {
  Tensorflow__GraphDef gd;
  graph_def(g, &gd);
  Weft__CreateSessionRequest req = WEFT__CREATE_SESSION_REQUEST__INIT;
  req.graph_def = &gd;
  req.config = cfg;
  ProtobufCMessage *answer = NULL;
  weft_status_t *st = call(address, "/weft.Master/CreateSession", &req.base,
                           &weft__create_session_response__descriptor, &answer);
  *handle = NULL;
  if (answer) {
    *handle = g_strdup(((Weft__CreateSessionResponse *)answer)->session_handle);
    protobuf_c_message_free_unpacked(answer, NULL);
  }
  return st;
}

/* x = Placeholder(float), y = Identity(x), z = NoOp, on the worker. */
static char *create_session(const char *address, const char *device) {
  nodes_t g;
  graph_init(&g);
  Tensorflow__NodeDef *x = add_node(&g, "x", "Placeholder", device, 0, NULL);
  set_type(&g, x, "dtype", WEFT_DT_FLOAT);
  const char *in_x[] = {"x"};
  set_type(&g, add_node(&g, "y", "Identity", device, 1, in_x), "T", WEFT_DT_FLOAT);
  add_node(&g, "z", "NoOp", device, 0, NULL);
  char *handle = NULL;
  OK(create_session_of(address, &g, NULL, &handle));
  graph_clear(&g);
  return handle;
}

static weft_status_t *run_step(const char *address, const char *handle, int n_fetch,
                               const char *const *fetch, int n_target,
                               const char *const *target) {
  Weft__RunStepRequest req = WEFT__RUN_STEP_REQUEST__INIT;
  req.session_handle = (char *)handle;
  req.n_fetch = (size_t)n_fetch;
  req.fetch = (char **)fetch;
  req.n_target = (size_t)n_target;
  req.target = (char **)target;
  return call(address, "/weft.Master/RunStep", &req.base, NULL, NULL);
}

static uint64_t incarnation_of(const char *address) {
  Weft__GetStatusRequest req = WEFT__GET_STATUS_REQUEST__INIT;
  ProtobufCMessage *answer = NULL;
  OK(call(address, "/weft.Worker/GetStatus", &req.base, &weft__get_status_response__descriptor,
          &answer));
  uint64_t inc = ((Weft__GetStatusResponse *)answer)->incarnation;
  protobuf_c_message_free_unpacked(answer, NULL);
  return inc;
}

/* Registers g on the worker at address with peer ps; returns the status and the handle. */
static weft_status_t *register_graph(const char *address, nodes_t *g, const char *peer_task,
                                     const char *peer_address, char **handle) {
  Tensorflow__GraphDef gd;
  graph_def(g, &gd);
  Weft__RegisterGraphRequest req = WEFT__REGISTER_GRAPH_REQUEST__INIT;
  req.session_handle = "attacker";
  req.graph_def = &gd;
  req.incarnation = incarnation_of(address);
  Weft__TaskAddress peer = WEFT__TASK_ADDRESS__INIT;
  Weft__TaskAddress *peers[1] = {&peer};
  if (peer_task) {
    peer.task = (char *)peer_task;
    peer.address = (char *)peer_address;
    peer.incarnation = incarnation_of(peer_address);
    req.n_peer = 1;
    req.peer = peers;
  }
  ProtobufCMessage *answer = NULL;
  weft_status_t *st = call(address, "/weft.Worker/RegisterGraph", &req.base,
                           &weft__register_graph_response__descriptor, &answer);
  *handle = NULL;
  if (answer) {
    *handle = g_strdup(((Weft__RegisterGraphResponse *)answer)->graph_handle);
    protobuf_c_message_free_unpacked(answer, NULL);
  }
  return st;
}

static weft_status_t *run_graph(const char *address, const char *handle, int64_t step_id,
                                int64_t timeout_ms) {
  Weft__RunGraphRequest req = WEFT__RUN_GRAPH_REQUEST__INIT;
  req.graph_handle = (char *)handle;
  req.step_id = step_id;
  req.incarnation = incarnation_of(address);
  req.timeout_ms = timeout_ms;
  return call(address, "/weft.Worker/RunGraph", &req.base, NULL, NULL);
}

/* A partition graph on the worker whose _Recv nodes (n of them, keys k0.., from `from`) feed
 * nothing. */
static void recv_graph(nodes_t *g, int n, const char *from) {
  const char *dev = "/job:worker/replica:0/task:0/device:CPU:0";
  for (int k = 0; k < n; k++) {
    char name[32], key[32];
    g_snprintf(name, sizeof name, "r%d", k);
    g_snprintf(key, sizeof key, "k%d", k);
    Tensorflow__NodeDef *r = add_node(g, name, "_Recv", dev, 0, NULL);
    set_type(g, r, "tensor_type", WEFT_DT_FLOAT);
    set_string(g, r, "tensor_name", key);
    set_string(g, r, "send_device", from);
    set_int(g, r, "send_device_incarnation", 1);
    set_string(g, r, "recv_device", dev);
  }
}

static void test_hostile_requests(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *ps = c.address[0], *worker = c.address[1];
  const char *wdev = "/job:worker/replica:0/task:0/device:CPU:0";
  char *handle = create_session(worker, "/job:worker/task:0");
  char *msg;

  /* RunStep: unknown session, fetches and targets that do not exist, duplicates. */
  expect(run_step(worker, "no-such-session", 1, (const char *[]){"y"}, 0, NULL), WEFT_ABORTED,
         "Session 'no-such-session' is not known to the master of /job:worker/replica:0/task:0 "
         "(it was closed, or the server restarted); create the session again");
  expect(run_step(worker, handle, 2, (const char *[]){"y", "y"}, 0, NULL), WEFT_INVALID_ARGUMENT,
         "You must feed a value for placeholder tensor 'x' with dtype float32 and shape "
         "<unknown>");
  expect(run_step(worker, handle, 1, (const char *[]){"nope"}, 0, NULL), WEFT_NOT_FOUND,
         "The tensor 'nope' does not exist in the graph: no node 'nope'");
  expect(run_step(worker, handle, 1, (const char *[]){"y:7"}, 0, NULL), WEFT_NOT_FOUND,
         "The tensor 'y:7' does not exist: node 'y' (Identity) has 1 output");
  expect(run_step(worker, handle, 1, (const char *[]){"^y"}, 0, NULL), WEFT_NOT_FOUND,
         "The tensor '^y' does not exist in the graph: no node '^y'");
  expect(run_step(worker, handle, 0, NULL, 1, (const char *[]){"nope"}), WEFT_NOT_FOUND,
         "Target 'nope' is not a node in the graph");
  OK(run_step(worker, handle, 0, NULL, 2, (const char *[]){"z", "z"}));

  /* ExtendSession: a self-loop, a stale version, an unknown session, a name taken. */
  {
    nodes_t g;
    graph_init(&g);
    set_type(&g, add_node(&g, "w", "Identity", NULL, 1, (const char *[]){"w"}), "T",
             WEFT_DT_FLOAT);
    Tensorflow__GraphDef gd;
    graph_def(&g, &gd);
    Weft__ExtendSessionRequest req = WEFT__EXTEND_SESSION_REQUEST__INIT;
    req.session_handle = handle;
    req.graph_def = &gd;
    req.current_graph_version = 3;
    const char *m = "/weft.Master/ExtendSession";
    expect(call(worker, m, &req.base, NULL, NULL), WEFT_INVALID_ARGUMENT,
           "ExtendSession: GraphDef has a cycle through nodes 'w' -> 'w' that no NextIteration "
           "-> Merge edge closes");
    req.current_graph_version = -7;
    expect(call(worker, m, &req.base, NULL, NULL), WEFT_FAILED_PRECONDITION,
           "ExtendSession: the client extends a graph of -7 nodes but the master holds 3");
    req.session_handle = "nope";
    expect(call(worker, m, &req.base, NULL, NULL), WEFT_ABORTED,
           "Session 'nope' is not known to the master of /job:worker/replica:0/task:0 (it was "
           "closed, or the server restarted); create the session again");
    graph_clear(&g);
    graph_init(&g);
    set_type(&g, add_node(&g, "y", "Identity", NULL, 1, (const char *[]){"x"}), "T",
             WEFT_DT_FLOAT);
    graph_def(&g, &gd);
    req.session_handle = handle;
    req.current_graph_version = 3;
    expect(call(worker, m, &req.base, NULL, NULL), WEFT_ALREADY_EXISTS,
           "ExtendSession: Node 'y' of the GraphDef already exists in the graph");
    graph_clear(&g);
  }

  /* Worker calls with handles and steps nobody made, and aborts with odd codes. */
  expect(run_graph(worker, "feedfacefeedface", 1, 1000), WEFT_ABORTED,
         "Graph handle 'feedfacefeedface' is not registered on task /job:worker/replica:0/task:0 "
         "(the task may have restarted); create the session again");
  {
    Weft__AbortRequest ab = WEFT__ABORT_REQUEST__INIT;
    ab.step_id = 424242;
    ab.code = 0;
    expect(call(worker, "/weft.Worker/Abort", &ab.base, NULL, NULL), WEFT_INVALID_ARGUMENT,
           "Invalid Abort request: field 'code' is 0; an abort needs an error code from 1 to 16");
    ab.code = 9999;
    expect(call(worker, "/weft.Worker/Abort", &ab.base, NULL, NULL), WEFT_INVALID_ARGUMENT,
           "Invalid Abort request: field 'code' is 9999; an abort needs an error code from 1 to "
           "16");
    ab.code = WEFT_CANCELLED;
    ab.reason = "the attacker says so";
    OK(call(worker, "/weft.Worker/Abort", &ab.base, NULL, NULL));
    /* A RecvTensor of the aborted step answers at once with the abort's code and reason. */
    Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
    req.rendezvous_key = "k0";
    req.step_id = 424242;
    weft_status_t *st = call(worker, "/weft.Worker/RecvTensor", &req.base, NULL, NULL);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_CANCELLED);
    g_assert_nonnull(strstr(weft_status_message(st), "the attacker says so"));
    weft_status_free(st);
  }

  /* RegisterGraph: a _Recv that waits for the _Send it feeds on the same task (a cycle through
   * the rendezvous): the step ends at its deadline. */
  {
    nodes_t g;
    graph_init(&g);
    recv_graph(&g, 1, wdev);
    Tensorflow__NodeDef *s = add_node(&g, "s", "_Send", wdev, 1, (const char *[]){"r0"});
    set_type(&g, s, "T", WEFT_DT_FLOAT);
    set_string(&g, s, "tensor_name", "k0");
    set_string(&g, s, "send_device", wdev);
    set_int(&g, s, "send_device_incarnation", 1);
    set_string(&g, s, "recv_device", wdev);
    char *gh = NULL;
    OK(register_graph(worker, &g, "/job:worker/replica:0/task:0", worker, &gh));
    weft_status_t *st = run_graph(worker, gh, 77, 2000);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_DEADLINE_EXCEEDED);
    weft_status_free(st);
    g_free(gh);
    graph_clear(&g);
  }

  /* RegisterGraph with more _Recv nodes than a graph may have: refused before any thread of
   * them is made. */
  {
    nodes_t g;
    graph_init(&g);
    recv_graph(&g, WEFT_MAX_RECV_PER_GRAPH + 1, "/job:ps/replica:0/task:0/device:CPU:0");
    char *gh = NULL;
    int before = proc_threads(c.d[1].pid);
    msg = g_strdup_printf("RegisterGraph on /job:worker/replica:0/task:0: the graph has %d _Recv "
                          "nodes, each of which takes a thread; a graph may have at most %d",
                          WEFT_MAX_RECV_PER_GRAPH + 1, WEFT_MAX_RECV_PER_GRAPH);
    expect(register_graph(worker, &g, "/job:ps/replica:0/task:0", ps, &gh), WEFT_INVALID_ARGUMENT,
           msg);
    g_free(msg);
    int after = proc_threads(c.d[1].pid);
    g_test_message("threads of the worker: %d before, %d after", before, after);
    g_assert_cmpint(after, <, before + 64);
    g_assert_null(gh);
    graph_clear(&g);
  }

  /* The server still serves. */
  char *again = create_session(worker, "/job:worker/task:0");
  g_free(again);
  g_free(handle);
  weftd_cluster_stop(&c);
}

/* A RunStep of `handle` feeding n tensors (names, metas) followed by `tail`, fetching `fetch`. */
static weft_status_t *run_step_fed(const char *address, const char *handle, int n,
                                   const char *const *names, Weft__TensorMeta *const *metas,
                                   const void *tail, size_t tail_len, const char *fetch) {
  Weft__RunStepRequest req = WEFT__RUN_STEP_REQUEST__INIT;
  req.session_handle = (char *)handle;
  req.n_feed = (size_t)n;
  req.feed = (char **)names;
  req.n_fetch = 1;
  req.fetch = (char **)&fetch;
  Weft__TensorList list = WEFT__TENSOR_LIST__INIT;
  list.n_tensor = (size_t)n;
  list.tensor = (Weft__TensorMeta **)metas;
  GByteArray *frame = weftd_frame_request(&req.base, &list, tail, tail_len);
  char *bytes = NULL;
  size_t len = 0;
  weft_status_t *st = weft__rpc_raw(address, "/weft.Master/RunStep", frame->data, frame->len,
                                    20000, &bytes, &len);
  g_test_message("RunStep with %d feeds: %s: %s", n, weft_code_name(weft_status_code(st)),
                 weft_status_message(st));
  g_byte_array_free(frame, TRUE);
  g_free(bytes);
  return st;
}

static void test_hostile_feeds(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 1, NULL)) return;
  const char *worker = c.address[0];
  char *handle = create_session(worker, "/job:worker/task:0");
  int64_t one = 1;
  Weft__TensorMeta f = WEFT__TENSOR_META__INIT, s = WEFT__TENSOR_META__INIT;
  f.dtype = WEFT_DT_FLOAT;
  f.n_dims = 1;
  f.dims = &one;
  f.nbytes = 4;
  float two[2] = {2.0f, 3.0f};
  Weft__TensorMeta *ff[2] = {&f, &f};
  /* The same placeholder fed twice. */
  expect(run_step_fed(worker, handle, 2, (const char *[]){"x", "x"}, ff, two, 8, "y"),
         WEFT_INVALID_ARGUMENT, "Tensor 'x' is fed more than once");
  /* A feed of a node that is not a placeholder replaces its output (as in TensorFlow); fetching
   * what is fed leaves the master no partition to run, which crashed weftd (a NULL partition
   * in master.c's execute). */
  OK(run_step_fed(worker, handle, 1, (const char *[]){"y"}, ff, two, 4, "y"));
  expect(run_step_fed(worker, handle, 1, (const char *[]){"nope"}, ff, two, 4, "y"),
         WEFT_NOT_FOUND, "The tensor 'nope' does not exist in the graph: no node 'nope'");
  /* int32 into a float placeholder. */
  f.dtype = WEFT_DT_INT32;
  expect(run_step_fed(worker, handle, 1, (const char *[]){"x"}, ff, two, 4, "y"),
         WEFT_INVALID_ARGUMENT, "Feed 'x': expected a tensor of type float32 but got int32");
  /* A string tensor whose element lengths add up past 2^64. */
  uint64_t lengths[2] = {G_MAXUINT64 / 2 + 2, G_MAXUINT64 / 2 + 2};
  int64_t n2 = 2;
  s.dtype = WEFT_DT_STRING;
  s.n_dims = 1;
  s.dims = &n2;
  s.n_string_lengths = 2;
  s.string_lengths = lengths;
  s.nbytes = 2;
  Weft__TensorMeta *ss[1] = {&s};
  expect(run_step_fed(worker, handle, 1, (const char *[]){"x"}, ss, "ab", 2, "y"),
         WEFT_INVALID_ARGUMENT,
         "Invalid RunStep request: field 'feed[0].tensor_content' holds 2 bytes but its string "
         "lengths add up to more than 9223372036854775807");
  /* The server still runs a good step. */
  f.dtype = WEFT_DT_FLOAT;
  OK(run_step_fed(worker, handle, 1, (const char *[]){"x"}, ff, two, 4, "y"));
  weftd_cluster_stop(&c);
  g_free(handle);
}

/* `weft run` against weftd, feeding and fetching the same tensor: the RunStep that crashed weftd,
 * as a user sends it. The answer is the fed value. */
static void test_cli_fetch_fed(void) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root ? g_strdup(root)
                   : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", NULL);
  char *graph = g_build_filename(dir, "tf", "graphdef", "multiplication.pb", NULL);
  g_free(dir);
  if (!g_file_test(graph, G_FILE_TEST_IS_REGULAR)) {
    char *why = g_strdup_printf("corpus file %s not found (set WEFT_CORPUS)", graph);
    g_test_skip(why);
    g_free(why);
    g_free(graph);
    return;
  }
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 1, NULL)) {
    g_free(graph);
    return;
  }
  const char *args[] = {"run", "--graph", graph, "--feed", "c=5", "--feed", "a=2", "--fetch", "c",
                        "--fetch", "a", "--target", c.target[0], "--json", NULL};
  run_result_t r = run_program(WEFT_BUILD_DIR "/core/tools/weft", args, NULL);
  g_test_message("weft run: exit %d: %s%s", r.exit_code, r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==, "{\"c\": {\"dtype\": \"float32\", \"shape\": [], \"values\": [5]}, "
                             "\"a\": {\"dtype\": \"float32\", \"shape\": [], \"values\": [2]}}\n");
  run_result_clear(&r);
  weftd_cluster_stop(&c);
  g_free(graph);
}

/* ExtendSession after ExtendSession, each within --max_graph_nodes, must not grow one session's
 * graph past it. */
static weft_status_t *extend_by(const char *address, const char *handle, int64_t version, int n,
                                int first) {
  nodes_t g;
  graph_init(&g);
  for (int k = 0; k < n; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "extra%d", first + k);
    add_node(&g, name, "NoOp", NULL, 0, NULL);
  }
  Tensorflow__GraphDef gd;
  graph_def(&g, &gd);
  Weft__ExtendSessionRequest req = WEFT__EXTEND_SESSION_REQUEST__INIT;
  req.session_handle = (char *)handle;
  req.graph_def = &gd;
  req.current_graph_version = version;
  weft_status_t *st = call(address, "/weft.Master/ExtendSession", &req.base, NULL, NULL);
  graph_clear(&g);
  return st;
}

static void test_extend_limit(void) {
  const char *extra[] = {"--max_graph_nodes", "10", NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 1, extra)) return;
  const char *worker = c.address[0];
  char *handle = create_session(worker, "/job:worker/task:0"); /* 3 nodes */
  OK(extend_by(worker, handle, 3, 6, 0));
  expect(extend_by(worker, handle, 9, 2, 6), WEFT_INVALID_ARGUMENT,
         "ExtendSession: the session's graph would have 11 nodes; the server allows at most 10 "
         "(--max_graph_nodes)");
  OK(extend_by(worker, handle, 9, 1, 6));
  g_free(handle);
  weftd_cluster_stop(&c);
}

typedef struct graph_call {
  const char *address, *handle;
  int64_t step;
  weft_status_t *st;
  int64_t timeout_ms; /* 0: 3 s */
} graph_call_t;

static gpointer run_graph_thread(gpointer data) {
  graph_call_t *gc = data;
  int64_t timeout_ms = gc->timeout_ms > 0 ? gc->timeout_ms : 3000;
  gc->st = run_graph(gc->address, gc->handle, gc->step, timeout_ms);
  return NULL;
}

/* DeregisterGraph, CleanupGraph and Abort of a partition while a RunGraph of it is blocked (a
 * _Recv from a task that never sends): the step ends with an error, nothing is freed under it
 * (the sanitizer build checks), and the task keeps serving. */
static void test_deregister_during_run(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *ps = c.address[0], *worker = c.address[1];
  for (int round = 0; round < 3; round++) {
    nodes_t g;
    graph_init(&g);
    recv_graph(&g, 2, "/job:ps/replica:0/task:0/device:CPU:0");
    char *gh = NULL;
    OK(register_graph(worker, &g, "/job:ps/replica:0/task:0", ps, &gh));
    graph_clear(&g);
    graph_call_t gc = {worker, gh, 900 + round, NULL, 0};
    GThread *th = g_thread_new("run-graph", run_graph_thread, &gc);
    g_usleep(300 * 1000);
    if (round == 0) {
      Weft__DeregisterGraphRequest req = WEFT__DEREGISTER_GRAPH_REQUEST__INIT;
      req.graph_handle = gh;
      OK(call(worker, "/weft.Worker/DeregisterGraph", &req.base, NULL, NULL));
    } else if (round == 1) {
      Weft__CleanupGraphRequest req = WEFT__CLEANUP_GRAPH_REQUEST__INIT;
      req.step_id = gc.step;
      OK(call(worker, "/weft.Worker/CleanupGraph", &req.base, NULL, NULL));
    } else {
      Weft__AbortRequest req = WEFT__ABORT_REQUEST__INIT;
      req.step_id = gc.step;
      req.code = WEFT_ABORTED;
      req.reason = "round 2";
      OK(call(worker, "/weft.Worker/Abort", &req.base, NULL, NULL));
    }
    g_thread_join(th);
    g_assert_nonnull(gc.st);
    weft_status_free(gc.st);
    /* Once more on the same handle: gone after DeregisterGraph, a fresh step otherwise. */
    weft_status_t *st = run_graph(worker, gh, 950 + round, 500);
    g_assert_nonnull(st);
    weft_status_free(st);
    g_free(gh);
  }
  char *again = create_session(worker, "/job:worker/task:0");
  g_free(again);
  weftd_cluster_stop(&c);
}

/* Timeouts near INT64_MAX overflowed the deadline arithmetic (UBSan: signed integer overflow in
 * master.c, and weftd died); the longest one allowed still runs. */
static void test_huge_timeouts(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *worker = c.address[1];
  nodes_t g;
  graph_init(&g);
  add_node(&g, "z", "NoOp", "/job:ps/task:0", 0, NULL);
  Weft__SessionConfig cfg = WEFT__SESSION_CONFIG__INIT;
  cfg.operation_timeout_ms = G_MAXINT64;
  char *handle = NULL;
  expect(create_session_of(worker, &g, &cfg, &handle), WEFT_INVALID_ARGUMENT,
         "Invalid CreateSession request: field 'config.operation_timeout_ms' is "
         "9223372036854775807; it must be at most 1099511627776 (about 34 years)");
  cfg.operation_timeout_ms = WEFT_MAX_TIMEOUT_MS;
  OK(create_session_of(worker, &g, &cfg, &handle));
  graph_clear(&g);
  OK(run_step(worker, handle, 0, NULL, 1, (const char *[]){"z"}));
  Weft__RunStepRequest rs = WEFT__RUN_STEP_REQUEST__INIT;
  rs.session_handle = handle;
  rs.n_target = 1;
  rs.target = (char *[]){"z"};
  rs.timeout_ms = G_MAXINT64;
  expect(call(worker, "/weft.Master/RunStep", &rs.base, NULL, NULL), WEFT_INVALID_ARGUMENT,
         "Invalid RunStep request: field 'timeout_ms' is 9223372036854775807; it must be at most "
         "1099511627776 (about 34 years)");
  rs.timeout_ms = WEFT_MAX_TIMEOUT_MS;
  OK(call(worker, "/weft.Master/RunStep", &rs.base, NULL, NULL));
  expect(run_graph(worker, "feedfacefeedface", 5, G_MAXINT64), WEFT_INVALID_ARGUMENT,
         "Invalid RunGraph request: field 'timeout_ms' is 9223372036854775807; it must be at most "
         "1099511627776 (about 34 years)");
  g_free(handle);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * CloseSession while a step of the session runs */

typedef struct step_call {
  const char *address, *handle;
  weft_status_t *st;
} step_call_t;

static gpointer run_step_thread(gpointer data) {
  step_call_t *sc = data;
  Weft__RunStepRequest req = WEFT__RUN_STEP_REQUEST__INIT;
  req.session_handle = (char *)sc->handle;
  char *fetch = "y";
  req.n_fetch = 1;
  req.fetch = &fetch;
  /* Far beyond the test: a step that ends ended because of the close, not its deadline. */
  req.timeout_ms = 120000;
  sc->st = call(sc->address, "/weft.Master/RunStep", &req.base, NULL, NULL);
  return NULL;
}

static gpointer close_thread(gpointer data) {
  step_call_t *sc = data;
  Weft__CloseSessionRequest close = WEFT__CLOSE_SESSION_REQUEST__INIT;
  close.session_handle = (char *)sc->handle;
  sc->st = call(sc->address, "/weft.Master/CloseSession", &close.base, NULL, NULL);
  return NULL;
}

static gpointer extend_thread(gpointer data) {
  step_call_t *sc = data;
  Weft__ExtendSessionRequest req = WEFT__EXTEND_SESSION_REQUEST__INIT;
  req.session_handle = (char *)sc->handle;
  req.current_graph_version = 2;
  sc->st = call(sc->address, "/weft.Master/ExtendSession", &req.base, NULL, NULL);
  return NULL;
}

/* c = Const on the ps, y = Identity(c) on the worker: a step needs both tasks. With the ps
 * stopped the step blocks; closing the session meanwhile ends the step at once with TensorFlow's
 * CANCELLED "Session has been closed." (its deadline is minutes away), twice at once and beside
 * an ExtendSession, and leaves both tasks serving. */
/* The session of c = Const(1) on the ps, y = Identity(c) on the worker, through the worker's
 * master; the caller frees the handle. */
static char *create_ps_worker_session(const char *worker) {
  nodes_t g;
  graph_init(&g);
  Tensorflow__NodeDef *k = add_node(&g, "c", "Const", "/job:ps/task:0", 0, NULL);
  set_type(&g, k, "dtype", WEFT_DT_FLOAT);
  Tensorflow__TensorProto t = TENSORFLOW__TENSOR_PROTO__INIT;
  Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  float one = 1.0f;
  t.dtype = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  t.tensor_shape = &shape;
  t.n_float_val = 1;
  t.float_val = &one;
  Tensorflow__AttrEntry *value = attr_entry(&g, "value");
  value->value->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
  value->value->tensor = &t;
  k->attr[k->n_attr++] = value;
  set_type(&g, add_node(&g, "y", "Identity", "/job:worker/task:0", 1, (const char *[]){"c"}),
           "T", WEFT_DT_FLOAT);
  char *handle = NULL;
  OK(create_session_of(worker, &g, NULL, &handle));
  graph_clear(&g);
  return handle;
}

static void test_close_during_step(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *worker = c.address[1];
  char *handle = create_ps_worker_session(worker);

  step_call_t sc = {worker, handle, NULL};
  run_step_thread(&sc);
  OK(sc.st);
  weftd_cluster_signal(&c, 0, SIGSTOP);
  GThread *th = g_thread_new("step", run_step_thread, &sc);
  g_usleep(500 * 1000);
  step_call_t closers[2] = {{worker, handle, NULL}, {worker, handle, NULL}};
  step_call_t ext = {worker, handle, NULL};
  gint64 t0 = g_get_monotonic_time();
  GThread *cl0 = g_thread_new("close", close_thread, &closers[0]);
  GThread *cl1 = g_thread_new("close", close_thread, &closers[1]);
  GThread *ex = g_thread_new("extend", extend_thread, &ext);
  g_thread_join(th);
  g_test_message("the step ended %.1f s after CloseSession: %s: %s",
                 (double)(g_get_monotonic_time() - t0) / 1e6,
                 weft_code_name(weft_status_code(sc.st)), weft_status_message(sc.st));
  expect(sc.st, WEFT_CANCELLED, "Session has been closed.");
  g_thread_join(cl0);
  g_thread_join(cl1);
  g_thread_join(ex);
  OK(closers[0].st);
  OK(closers[1].st);
  /* The extend either came first (OK) or found the session gone. */
  if (ext.st) expect(ext.st, WEFT_ABORTED, NULL);
  weftd_cluster_signal(&c, 0, SIGCONT);
  /* Both tasks still serve. */
  expect(run_step(worker, handle, 1, (const char *[]){"y"}, 0, NULL), WEFT_ABORTED, NULL);
  g_free(handle);
  weftd_cluster_stop(&c);
}

/* The session GC (--session_gc_seconds 1) never reclaims a session whose step runs, however
 * long the step blocks (the ps stopped for 2.5 s); once idle, the session is reclaimed. */
static void test_gc_spares_running_step(void) {
  weftd_cluster_t c;
  const char *extra[] = {"--session_gc_seconds", "1", NULL};
  if (!weftd_cluster_start(&c, 1, 1, extra)) return;
  const char *worker = c.address[1];
  char *handle = create_ps_worker_session(worker);
  step_call_t sc = {worker, handle, NULL};
  weftd_cluster_signal(&c, 0, SIGSTOP);
  GThread *th = g_thread_new("step", run_step_thread, &sc);
  g_usleep(2500 * 1000);
  weftd_cluster_signal(&c, 0, SIGCONT);
  g_thread_join(th);
  OK(sc.st);
  g_usleep(2500 * 1000);
  char *msg = g_strdup_printf("Session '%s' was closed by the master of "
                              "/job:worker/replica:0/task:0 after 1 s unused "
                              "(--session_gc_seconds); create the session again", handle);
  expect(run_step(worker, handle, 1, (const char *[]){"y"}, 0, NULL), WEFT_ABORTED, msg);
  g_free(msg);
  g_free(handle);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Damaged checkpoint folders given to weft-train */

/* weft-train --local on `dir`; returns its result (the caller clears it). */
static run_result_t train_in(const char *dir, const char *steps) {
  const char *args[] = {"--local", "--model", "linear", "--train_steps", steps,
                        "--save_steps", steps, "--checkpoint_dir", dir, NULL};
  return run_program(WEFT_BUILD_DIR "/core/tools/weft-train", args, NULL);
}

/* A truncated index or data file stops the chief with DATA_LOSS naming the file; a state file
 * that is garbage, or names a file that is not a checkpoint, starts afresh as TensorFlow does,
 * but says so on stderr instead of silently training from step 0 beside the checkpoints. */
static void test_damaged_checkpoints(void) {
  char *dir = test_tmpdir("weft-redteam-XXXXXX");
  run_result_t r = train_in(dir, "20");
  g_assert_cmpint(r.exit_code, ==, 0);
  run_result_clear(&r);
  char *index = g_build_filename(dir, "model.ckpt-20.index", NULL);
  char *data = g_build_filename(dir, "model.ckpt-20.data-00000-of-00001", NULL);
  char *state = g_build_filename(dir, "checkpoint", NULL);
  gchar *index_bytes = NULL, *data_bytes = NULL, *state_bytes = NULL;
  gsize index_len = 0, data_len = 0;
  g_assert_true(g_file_get_contents(index, &index_bytes, &index_len, NULL));
  g_assert_true(g_file_get_contents(data, &data_bytes, &data_len, NULL));
  g_assert_true(g_file_get_contents(state, &state_bytes, NULL, NULL));

  g_assert_true(g_file_set_contents(index, index_bytes, 20, NULL));
  r = train_in(dir, "40");
  g_assert_cmpint(r.exit_code, ==, 1);
  char *want = g_strdup_printf("Checkpoint index '%s' is truncated: 20 bytes is shorter than a "
                               "table footer (48 bytes)", index);
  g_assert_nonnull(strstr(r.err, want));
  g_free(want);
  run_result_clear(&r);
  g_assert_true(g_file_set_contents(index, index_bytes, (gssize)index_len, NULL));

  g_assert_true(g_file_set_contents(data, data_bytes, 3, NULL));
  r = train_in(dir, "40");
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_nonnull(strstr(r.err, "DATA_LOSS"));
  g_assert_nonnull(strstr(r.err, "is truncated: tensor '"));
  run_result_clear(&r);
  g_assert_true(g_file_set_contents(data, data_bytes, (gssize)data_len, NULL));

  g_assert_true(g_file_set_contents(state, "model_checkpoint_path: \"/etc/passwd\"\n", -1, NULL));
  r = train_in(dir, "40");
  g_assert_cmpint(r.exit_code, ==, 0);
  want = g_strdup_printf("the checkpoint state in '%s' names '/etc/passwd', which is not a "
                         "checkpoint (no index file)", dir);
  g_assert_nonnull(strstr(r.err, want));
  g_free(want);
  run_result_clear(&r);

  g_assert_true(g_file_set_contents(state, "garbage\n", -1, NULL));
  r = train_in(dir, "40");
  g_assert_cmpint(r.exit_code, ==, 0);
  want = g_strdup_printf("ignoring the checkpoint state in '%s': Checkpoint state file '%s', "
                         "line 1: expected field: \"value\", got 'garbage'", dir, state);
  g_assert_nonnull(strstr(r.err, want));
  g_free(want);
  run_result_clear(&r);

  g_free(index_bytes);
  g_free(data_bytes);
  g_free(state_bytes);
  g_free(index);
  g_free(data);
  g_free(state);
  test_rm_rf(dir);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * FIFOs and devices where a model file should be */

static void expect_weft_error(const char *const *args, const char *message) {
  run_result_t r = run_program(WEFT_BUILD_DIR "/core/tools/weft", args, NULL);
  g_test_message("weft %s: exit %d: %s", args[0], r.exit_code, r.err);
  g_assert_cmpint(r.exit_code, ==, 1);
  char *want = g_strdup_printf("weft: error: %s\n", message);
  g_assert_cmpstr(r.err, ==, want);
  g_free(want);
  run_result_clear(&r);
}

/* A GraphDef, SavedModel or checkpoint file that is a FIFO blocked its reader forever; one that
 * is a link to /dev/zero read until memory ran out. Both are now refused at once. */
static void test_special_files(void) {
  char *dir = test_tmpdir("weft-redteam-XXXXXX");
  char *fifo = g_build_filename(dir, "graph.pb", NULL);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  char *msg = g_strdup_printf("INVALID_ARGUMENT: GraphDef file '%s' is a FIFO, not a file", fifo);
  expect_weft_error((const char *[]){"run", "--graph", fifo, "--fetch", "y", NULL}, msg);
  g_free(msg);
  expect_weft_error((const char *[]){"run", "--graph", "/dev/zero", "--fetch", "y", NULL},
                    "INVALID_ARGUMENT: GraphDef file '/dev/zero' is a character device, not a "
                    "file");

  /* A SavedModel whose variables index is a FIFO and whose graph is /dev/zero. */
  char *sm = g_build_filename(dir, "model", NULL);
  char *vars = g_build_filename(sm, "variables", NULL);
  g_assert_cmpint(g_mkdir_with_parents(vars, 0700), ==, 0);
  char *pb = g_build_filename(sm, "saved_model.pb", NULL);
  g_assert_cmpint(symlink("/dev/zero", pb), ==, 0);
  msg = g_strdup_printf("INVALID_ARGUMENT: SavedModel '%s': %s is a character device, not a file",
                        sm, pb);
  expect_weft_error((const char *[]){"run", "--saved-model", sm, "--fetch", "y", NULL}, msg);
  g_free(msg);
  msg = g_strdup_printf("INVALID_ARGUMENT: inspect %s: %s is a character device, not a file", sm,
                        pb);
  expect_weft_error((const char *[]){"inspect", sm, NULL}, msg);
  g_free(msg);

  char *index = g_build_filename(vars, "variables.index", NULL);
  g_assert_cmpint(mkfifo(index, 0600), ==, 0);
  weft_checkpoint_reader_t *reader = NULL;
  char *prefix = g_build_filename(vars, "variables", NULL);
  weft_status_t *st = weft_checkpoint_reader_open(prefix, &reader);
  msg = g_strdup_printf("Checkpoint index '%s' is a FIFO, not a file", index);
  expect(st, WEFT_INVALID_ARGUMENT, msg);
  g_free(msg);
  g_assert_null(reader);
  g_free(prefix);
  g_free(index);
  g_free(pb);
  g_free(vars);
  g_free(sm);
  g_free(fifo);
  test_rm_rf(dir);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Steps that never run here, and what ends their waiting RecvTensors */

typedef struct recv_call {
  const char *address;
  int64_t step;
  const char *key;
  weft_status_t *st;
} recv_call_t;

static gpointer recv_thread(gpointer data) {
  recv_call_t *rc = data;
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  req.step_id = rc->step;
  req.rendezvous_key = (char *)rc->key;
  rc->st = call(rc->address, "/weft.Worker/RecvTensor", &req.base, NULL, NULL);
  return NULL;
}

/* A RecvTensor of a step no RunGraph runs ends after --step_idle_timeout_ms with ABORTED naming
 * the step (not at the caller's deadline, 20 s here), and so does a RunGraph whose _Recv waits
 * on a task where the step never runs: that task drops it. */
static void test_recv_never_run(void) {
  weftd_cluster_t c;
  const char *extra[] = {"--step_idle_timeout_ms", "1000", NULL};
  if (!weftd_cluster_start(&c, 1, 1, extra)) return;
  const char *ps = c.address[0], *worker = c.address[1];
  recv_call_t rc = {worker, 5151, "k", NULL};
  recv_thread(&rc);
  expect(rc.st, WEFT_ABORTED,
         "[derived] Step 5151 was dropped: no RunGraph of it ran on this task for 1000 ms "
         "(--step_idle_timeout_ms)");
  nodes_t g;
  graph_init(&g);
  recv_graph(&g, 1, "/job:ps/replica:0/task:0/device:CPU:0");
  char *gh = NULL;
  OK(register_graph(worker, &g, "/job:ps/replica:0/task:0", ps, &gh));
  graph_clear(&g);
  weft_status_t *st = run_graph(worker, gh, 6161, 120000);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(WEFT_ABORTED));
  g_assert_nonnull(strstr(weft_status_message(st), "Step 6161 was dropped: no RunGraph of it ran "
                                                   "on this task for 1000 ms"));
  weft_status_free(st);
  g_free(gh);
  weftd_cluster_stop(&c);
}

/* CleanupGraph, Abort and DeregisterGraph end the waiting RecvTensors of their step at once
 * (the idle limit is the default minute, the caller's deadline 20 s), naming the step. */
static void test_recv_ended(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *ps = c.address[0], *worker = c.address[1];
  recv_call_t rc = {worker, 7171, "k", NULL};
  GThread *th = g_thread_new("recv", recv_thread, &rc);
  g_usleep(300 * 1000);
  Weft__CleanupGraphRequest cg = WEFT__CLEANUP_GRAPH_REQUEST__INIT;
  cg.step_id = 7171;
  OK(call(worker, "/weft.Worker/CleanupGraph", &cg.base, NULL, NULL));
  g_thread_join(th);
  expect(rc.st, WEFT_CANCELLED, "[derived] Step 7171 was cleaned up");

  recv_call_t ra = {worker, 7272, "k", NULL};
  th = g_thread_new("recv", recv_thread, &ra);
  g_usleep(300 * 1000);
  Weft__AbortRequest ab = WEFT__ABORT_REQUEST__INIT;
  ab.step_id = 7272;
  ab.code = WEFT_CANCELLED;
  ab.reason = "Session has been closed.";
  OK(call(worker, "/weft.Worker/Abort", &ab.base, NULL, NULL));
  g_thread_join(th);
  expect(ra.st, WEFT_CANCELLED, "[derived] Session has been closed.");

  /* A RunGraph blocked in a _Recv from the ps (where the step never runs), and a RecvTensor of
   * the same step on the worker, when the graph is deregistered. */
  nodes_t g;
  graph_init(&g);
  recv_graph(&g, 1, "/job:ps/replica:0/task:0/device:CPU:0");
  char *gh = NULL;
  OK(register_graph(worker, &g, "/job:ps/replica:0/task:0", ps, &gh));
  graph_clear(&g);
  graph_call_t gc = {worker, gh, 8181, NULL, 120000};
  GThread *run = g_thread_new("run-graph", run_graph_thread, &gc);
  g_usleep(1000 * 1000);
  recv_call_t rd = {worker, 8181, "zz", NULL};
  th = g_thread_new("recv", recv_thread, &rd);
  g_usleep(300 * 1000);
  Weft__DeregisterGraphRequest dg = WEFT__DEREGISTER_GRAPH_REQUEST__INIT;
  dg.graph_handle = gh;
  OK(call(worker, "/weft.Worker/DeregisterGraph", &dg.base, NULL, NULL));
  g_thread_join(run);
  g_thread_join(th);
  char *msg = g_strdup_printf("Step 8181 was aborted: its graph %s was deregistered from task "
                              "/job:worker/replica:0/task:0", gh);
  g_assert_nonnull(gc.st);
  g_assert_cmpstr(weft_code_name(weft_status_code(gc.st)), ==, weft_code_name(WEFT_CANCELLED));
  g_assert_nonnull(strstr(weft_status_message(gc.st), msg));
  weft_status_free(gc.st);
  char *derived = g_strconcat("[derived] ", msg, NULL);
  expect(rd.st, WEFT_CANCELLED, derived);
  g_free(derived);
  g_free(msg);
  g_free(gh);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * RegisterGraph: peers and devices of the cluster only, and a bounded number of graphs */

static void test_register_graph_bounds(void) {
  weftd_cluster_t c;
  const char *extra[] = {"--max_registered_graphs", "2", NULL};
  if (!weftd_cluster_start(&c, 1, 1, extra)) return;
  const char *ps = c.address[0], *worker = c.address[1];
  char *gh = NULL;
  nodes_t g;
  graph_init(&g);
  recv_graph(&g, 1, "/job:ps/replica:0/task:0/device:CPU:0");
  /* The ps named at another address (any the caller likes): the worker would connect there. */
  char *msg = g_strdup_printf("RegisterGraph on /job:worker/replica:0/task:0: peer "
                              "/job:ps/replica:0/task:0 is at '%s' in the cluster spec, not '%s'",
                              ps, worker);
  expect(register_graph(worker, &g, "/job:ps/replica:0/task:0", worker, &gh),
         WEFT_INVALID_ARGUMENT, msg);
  g_free(msg);
  /* Task names the request validation refuses already (validate.c). */
  msg = g_strdup_printf("Invalid RegisterGraph request: field 'peer[0].task' is "
                        "'/job:evil/replica:0/task:0', but the cluster has no job 'evil' "
                        "(cluster: ps=%s;worker=%s)", ps, worker);
  expect(register_graph(worker, &g, "/job:evil/replica:0/task:0", ps, &gh), WEFT_INVALID_ARGUMENT,
         msg);
  g_free(msg);
  graph_clear(&g);
  static const char *const outside[] = {"/job:evil/replica:0/task:0/device:CPU:0",
                                        "/job:ps/replica:0/task:3/device:CPU:0"};
  for (size_t k = 0; k < G_N_ELEMENTS(outside); k++) {
    graph_init(&g);
    recv_graph(&g, 1, outside[k]);
    msg = g_strdup_printf("RegisterGraph on /job:worker/replica:0/task:0: node 'r0' (_Recv) has "
                          "send_device '%s', which is not a device of a task of the cluster",
                          outside[k]);
    expect(register_graph(worker, &g, "/job:ps/replica:0/task:0", ps, &gh),
           WEFT_INVALID_ARGUMENT, msg);
    g_free(msg);
    graph_clear(&g);
  }
  g_assert_null(gh);

  /* At most two graphs; a third waits for one to go. */
  graph_init(&g);
  add_node(&g, "z", "NoOp", "/job:worker/replica:0/task:0/device:CPU:0", 0, NULL);
  char *h[3] = {NULL, NULL, NULL};
  OK(register_graph(worker, &g, NULL, NULL, &h[0]));
  OK(register_graph(worker, &g, NULL, NULL, &h[1]));
  expect(register_graph(worker, &g, NULL, NULL, &h[2]), WEFT_RESOURCE_EXHAUSTED,
         "RegisterGraph on /job:worker/replica:0/task:0: 2 graphs are registered, the most this "
         "task allows (--max_registered_graphs 2); deregister graphs or close sessions first");
  Weft__DeregisterGraphRequest dg = WEFT__DEREGISTER_GRAPH_REQUEST__INIT;
  dg.graph_handle = h[0];
  OK(call(worker, "/weft.Worker/DeregisterGraph", &dg.base, NULL, NULL));
  OK(register_graph(worker, &g, NULL, NULL, &h[2]));
  OK(run_graph(worker, h[2], 11, 5000));
  graph_clear(&g);
  for (int k = 0; k < 3; k++) g_free(h[k]);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * NUL bytes in names: protobuf-c would cut "hXh" with X = 0 to "h" */

/* The frame of msg with its one 'X' byte made 0; *at: where the string field holding it starts
 * in the message (its tag, then a one-byte length, then `before` bytes of the string). */
static GByteArray *frame_with_nul(const ProtobufCMessage *msg, size_t before, size_t *at) {
  Weft__TensorList empty = WEFT__TENSOR_LIST__INIT;
  GByteArray *frame = weftd_frame_request(msg, &empty, NULL, 0);
  uint8_t *x = memchr(frame->data, 'X', frame->len);
  g_assert_nonnull(x);
  *x = 0;
  g_assert_cmpuint(protobuf_c_message_get_packed_size(msg), <, 128); /* a 1-byte frame length */
  *at = (size_t)(x - frame->data) - 1 - 2 - before;
  return frame;
}

static void test_nul_in_requests(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *worker = c.address[1];
  size_t at = 0;
  Weft__RunStepRequest rs = WEFT__RUN_STEP_REQUEST__INIT;
  rs.session_handle = "hXh";
  GByteArray *frame = frame_with_nul(&rs.base, 1, &at);
  g_assert_cmpuint(at, ==, 0);
  expect(call_frame(worker, "/weft.Master/RunStep", frame, NULL, NULL), WEFT_INVALID_ARGUMENT,
         "/weft.Master/RunStep: Malformed request: the message (weft.RunStepRequest): string "
         "field 'session_handle' holds a NUL byte (field at byte 0)");
  g_byte_array_free(frame, TRUE);

  nodes_t g;
  graph_init(&g);
  add_node(&g, "aXb", "NoOp", NULL, 0, NULL);
  Tensorflow__GraphDef gd;
  graph_def(&g, &gd);
  Weft__CreateSessionRequest cs = WEFT__CREATE_SESSION_REQUEST__INIT;
  cs.graph_def = &gd;
  frame = frame_with_nul(&cs.base, 1, &at);
  char *msg = g_strdup_printf("/weft.Master/CreateSession: Malformed request: the message "
                              "(weft.CreateSessionRequest): string field 'graph_def.node.name' "
                              "holds a NUL byte (field at byte %zu)",
                              at);
  expect(call_frame(worker, "/weft.Master/CreateSession", frame, NULL, NULL),
         WEFT_INVALID_ARGUMENT, msg);
  g_free(msg);
  g_byte_array_free(frame, TRUE);
  graph_clear(&g);
  char *again = create_session(worker, "/job:worker/task:0");
  g_free(again);
  weftd_cluster_stop(&c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/redteam/shm_forged_offers", test_shm_forged_offers);
  g_test_add_func("/redteam/hostile_requests", test_hostile_requests);
  g_test_add_func("/redteam/hostile_feeds", test_hostile_feeds);
  g_test_add_func("/redteam/cli_fetch_fed", test_cli_fetch_fed);
  g_test_add_func("/redteam/extend_limit", test_extend_limit);
  g_test_add_func("/redteam/deregister_during_run", test_deregister_during_run);
  g_test_add_func("/redteam/huge_timeouts", test_huge_timeouts);
  g_test_add_func("/redteam/close_during_step", test_close_during_step);
  g_test_add_func("/redteam/gc_spares_running_step", test_gc_spares_running_step);
  g_test_add_func("/redteam/damaged_checkpoints", test_damaged_checkpoints);
  g_test_add_func("/redteam/special_files", test_special_files);
  g_test_add_func("/redteam/recv_never_run", test_recv_never_run);
  g_test_add_func("/redteam/recv_ended", test_recv_ended);
  g_test_add_func("/redteam/register_graph_bounds", test_register_graph_bounds);
  g_test_add_func("/redteam/nul_in_requests", test_nul_in_requests);
  return g_test_run();
}

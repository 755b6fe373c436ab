/* The bulk channel: tensors of RecvTensor over plain TCP connections beside gRPC, for tasks that
 * cannot share memory (another host or network namespace), as TensorFlow's verbs and MPI
 * transports sit beside its gRPC. One gRPC connection is what limits a large transfer (one
 * stream, one polling thread writing it: docs/performance.md); here a tensor from 256 KiB is split
 * over two connections, each written by its own thread on the sender straight from the tensor's
 * buffer and read by its own thread on the receiver straight into the new tensor's buffer.
 *
 * Authentication: a receiver offers to use the channel in a RecvTensor request (a gRPC call that
 * passed the server's token and TLS checks); the answer carries the bulk port and single-use
 * 128-bit tickets. The receiver opens one connection per ticket and presents it first; the
 * server keeps a connection only with a valid, unexpired, unused ticket (constant-time compare).
 * Connections are pooled per peer (a link: two connections and a reader thread) and reused.
 *
 * Frames (integers little-endian):
 *   hello   magic u32, version u32, ticket[16]             (receiver -> sender, once)
 *   request magic u32, part u16, n_parts u16, step_id i64, incarnation u64, key_len u32, key
 *   answer  magic u32, code i32, then code != 0: msg_len u32, msg
 *                                     code == 0: dtype i32, rank u32, dims i64[rank],
 *                                                nbytes u64, offset u64, len u64, bytes[len]
 * The hello's answer is an answer with no tensor (code 0: accepted). */
#include "distributed_internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define BULK_MAGIC 0x42544657u /* "WFTB" */
#define BULK_VERSION 1u
#define HELLO_BYTES 24
#define REQUEST_HEAD_BYTES 28
#define MAX_KEY_BYTES 65536
#define MAX_MESSAGE_BYTES 4096
#define MAX_PARTS 8
#define MAX_TICKETS 256
#define TICKET_TTL_US (60 * G_USEC_PER_SEC)
#define MAX_CONNECTIONS 256
#define MAX_UNAUTHENTICATED 32
#define REFUSAL_LOG_US (10 * G_USEC_PER_SEC)
/* A tensor this large goes over both connections of a link; below it the second would cost a
 * wake-up and a round of syscalls on each side for little. */
#define SPLIT_MIN_BYTES ((uint64_t)256 << 10)
#define MAX_LINKS_PER_PEER 4
/* How often a waiting side looks at its step (abort, deadline) and at its peer. */
#define SLICE_MS 50

bool weft__bulk_enabled(void) {
  const char *v = g_getenv("WEFT_BULK_TRANSFER");
  return !(v && (strcmp(v, "0") == 0 || g_ascii_strcasecmp(v, "off") == 0 ||
                 g_ascii_strcasecmp(v, "false") == 0));
}

/* How long a ticket stays valid (WEFT_BULK_TICKET_TTL_MS; the default a minute). */
static gint64 ticket_ttl_us(void) {
  const char *v = g_getenv("WEFT_BULK_TICKET_TTL_MS");
  gint64 ms = v ? g_ascii_strtoll(v, NULL, 10) : 0;
  return ms > 0 ? ms * 1000 : TICKET_TTL_US;
}

/* The most bytes a receiver allocates for one tensor a sender announces
 * (WEFT_BULK_MAX_TENSOR_BYTES; the default 16 GiB): the header comes before the bytes, and the
 * tensor is allocated from it, so a hostile or broken sender must not choose the allocation. */
static uint64_t max_tensor_bytes(void) {
  const char *v = g_getenv("WEFT_BULK_MAX_TENSOR_BYTES");
  gint64 n = v ? g_ascii_strtoll(v, NULL, 10) : 0;
  return n > 0 ? (uint64_t)n : (uint64_t)16 << 30;
}

static int handshake_timeout_ms(void) {
  const char *v = g_getenv("WEFT_BULK_HANDSHAKE_MS");
  int ms = v ? atoi(v) : 0;
  return ms > 0 ? ms : 5000;
}

/* ---------------------------------------------------------------------------------------------
 * Bytes on the wire */

static void put_u32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; k--) v = (v << 8) | p[k];
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; k--) v = (v << 8) | p[k];
  return v;
}

/* Why a wait on a socket ends early: a deadline (monotonic us, 0: none), a step whose abort
 * stops it (NULL: none), a flag set when the server stops. */
typedef struct waiter {
  gint64 deadline_us;
  weft__step_t *step;
  const gint *stopping;
} waiter_t;

typedef enum { IO_OK, IO_EOF, IO_ERROR, IO_TIMEOUT, IO_STOPPED } io_result_t;

/* Every bulk socket blocks for at most a slice (SO_RCVTIMEO, SO_SNDTIMEO): a thread copies as
 * much as arrives or fits in one call, without a wake-up per segment, and still looks at its
 * step, deadline and server between slices. */
static void set_slices(int fd) {
  struct timeval tv = {0, SLICE_MS * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Reads or writes n bytes, waiting in slices so a deadline, an abort or a stop ends it. */
static io_result_t transfer_all(int fd, void *buf, size_t n, bool reading, const waiter_t *w) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = reading ? recv(fd, p, n, MSG_WAITALL) : send(fd, p, n, MSG_NOSIGNAL);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
      continue;
    }
    if (r == 0 && reading) return IO_EOF;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return IO_ERROR;
    if (w->stopping && g_atomic_int_get(w->stopping)) return IO_STOPPED;
    if (w->deadline_us && g_get_monotonic_time() >= w->deadline_us) return IO_TIMEOUT;
    if (w->step) {
      weft_status_t *st = weft__step_status(w->step, NULL);
      if (st) {
        weft_status_free(st);
        return IO_STOPPED;
      }
    }
  }
  return IO_OK;
}

static const char *io_what(io_result_t r) {
  switch (r) {
    case IO_EOF: return "the connection was closed";
    case IO_TIMEOUT: return "it timed out";
    case IO_STOPPED: return "it was stopped";
    default: return "the connection failed";
  }
}

/* Writes an answer frame with an error (code != 0) or the hello's acceptance (code 0). */
static bool send_status(int fd, weft_code_t code, const char *message, const waiter_t *w) {
  size_t len = message ? strlen(message) : 0;
  if (len > MAX_MESSAGE_BYTES) len = MAX_MESSAGE_BYTES;
  uint8_t head[12];
  put_u32(head, BULK_MAGIC);
  put_u32(head + 4, (uint32_t)code);
  put_u32(head + 8, (uint32_t)len);
  if (transfer_all(fd, head, code ? 12 : 8, false, w) != IO_OK) return false;
  return len == 0 || !code || transfer_all(fd, (void *)message, len, false, w) == IO_OK;
}

/* Reads an answer's magic and code, and for an error its message into *status. */
static weft_status_t *read_answer_head(int fd, const char *peer, const waiter_t *w,
                                       weft_code_t *code, weft_status_t **status) {
  uint8_t head[8];
  *status = NULL;
  io_result_t r = transfer_all(fd, head, 8, true, w);
  if (r != IO_OK) {
    return weft_status_new(r == IO_TIMEOUT ? WEFT_DEADLINE_EXCEEDED : WEFT_UNAVAILABLE,
                           "Bulk channel to %s: no answer (%s)", peer, io_what(r));
  }
  if (get_u32(head) != BULK_MAGIC) {
    return weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: an answer without the magic", peer);
  }
  *code = (weft_code_t)get_u32(head + 4);
  if (*code == WEFT_OK) return NULL;
  uint8_t lenb[4];
  r = transfer_all(fd, lenb, 4, true, w);
  uint32_t len = r == IO_OK ? get_u32(lenb) : 0;
  if (r != IO_OK || len > MAX_MESSAGE_BYTES || *code < 0 || *code > 16) {
    return weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: a malformed error answer", peer);
  }
  char *msg = g_malloc(len + 1);
  r = transfer_all(fd, msg, len, true, w);
  msg[len] = '\0';
  if (r == IO_OK) *status = weft_status_new(*code, "%s", msg);
  g_free(msg);
  if (r != IO_OK) {
    return weft_status_new(WEFT_UNAVAILABLE, "Bulk channel to %s: a truncated error answer", peer);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The sender: a listening socket, one thread per connection */

typedef struct ticket {
  uint8_t bytes[16];
  gint64 expires_us;
} ticket_t;

/* A tensor two or more parts' requests wait for: the first asks the worker for it. */
typedef struct pending {
  int refs;           /* under the server's lock */
  char *id;           /* "step/key" */
  int parts_left;     /* requests still to be answered from it */
  bool ready;
  weft_status_t *status;
  weft_tensor_t *tensor;
  gint64 created_us;
} pending_t;

struct weft__bulk_server {
  weft__worker_t *worker;
  int handshake_ms; /* a new connection's hello, or the rest of a request, must come by then */
  gint64 pending_ttl_us; /* how long a tensor sent in parts waits for its other parts' requests */
  int fd;
  int port;
  int wake[2];
  GThread *acceptor;
  GMutex lock;
  GCond cond;
  gint stopping;
  GHashTable *conns;  /* conn_t* -> itself */
  GPtrArray *ended;   /* GThread* of connections that ended, to join */
  int unauthenticated;
  ticket_t tickets[MAX_TICKETS];
  int n_tickets;
  GHashTable *pending; /* id -> pending_t* */
  gint transfers;      /* parts answered with bytes */
  gint64 refusals_logged_us; /* when a refusal was last logged (monotonic; 0: never) */
  int refusals_unlogged;     /* refusals since then, not logged */
};

typedef struct conn {
  weft__bulk_server_t *server;
  int fd;
  GThread *thread;
  bool authenticated;
} conn_t;

static void pending_unref_locked(pending_t *p) {
  if (--p->refs > 0) return;
  weft_status_free(p->status);
  weft_tensor_unref(p->tensor);
  g_free(p->id);
  g_free(p);
}

typedef struct pending_cb {
  weft__bulk_server_t *server;
  pending_t *pending;
} pending_cb_t;

static void pending_done(void *user_data, weft_status_t *status, weft_tensor_t *tensor) {
  pending_cb_t *cb = user_data;
  weft__bulk_server_t *s = cb->server;
  g_mutex_lock(&s->lock);
  cb->pending->ready = true;
  cb->pending->status = status;
  cb->pending->tensor = tensor;
  g_cond_broadcast(&s->cond);
  pending_unref_locked(cb->pending);
  g_mutex_unlock(&s->lock);
  g_free(cb);
}

/* The peer closed its side (or sent more while it should wait): the wait is over. */
static bool peer_gone(int fd) {
  struct pollfd pfd = {fd, POLLIN | POLLRDHUP, 0};
  return poll(&pfd, 1, 0) > 0;
}

/* Drops pending tensors whose other parts nobody came for within a ticket's lifetime (a peer
 * that asked for one part of several and went quiet must not hold the tensor for good). */
static void sweep_pending_locked(weft__bulk_server_t *s) {
  gint64 now = g_get_monotonic_time(), ttl_us = s->pending_ttl_us;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, s->pending);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    pending_t *p = value;
    if (p->ready && now - p->created_us > ttl_us) {
      g_hash_table_iter_steal(&it);
      pending_unref_locked(p);
    }
  }
}

static void part_range(uint64_t nbytes, int part, int n_parts, uint64_t *offset, uint64_t *len) {
  uint64_t chunk = (nbytes + (uint64_t)n_parts - 1) / (uint64_t)n_parts;
  chunk = (chunk + 4095) & ~(uint64_t)4095; /* pages: neither reader touches the other's */
  uint64_t start = MIN(nbytes, chunk * (uint64_t)part);
  *offset = start;
  *len = MIN(nbytes - start, chunk);
}

/* Answers one request: waits for the tensor as the gRPC RecvTensor does (until it is sent, the
 * step aborts or is dropped), or until the receiver goes away. False: drop the connection. */
static bool serve_request(conn_t *c, int part, int n_parts, int64_t step_id, guint64 incarnation,
                          const char *key) {
  weft__bulk_server_t *s = c->server;
  waiter_t w = {0, NULL, &s->stopping};
  char *id = g_strdup_printf("%" G_GINT64_FORMAT "/%s", step_id, key);
  g_mutex_lock(&s->lock);
  pending_t *p = g_hash_table_lookup(s->pending, id);
  bool first = !p;
  if (first) {
    sweep_pending_locked(s);
    p = g_new0(pending_t, 1);
    p->id = id;
    p->refs = 2; /* the table's, the worker callback's */
    p->parts_left = n_parts;
    p->created_us = g_get_monotonic_time();
    g_hash_table_insert(s->pending, p->id, p);
  } else {
    g_free(id);
  }
  p->refs++;
  g_mutex_unlock(&s->lock);
  if (first && n_parts > 1) {
    /* The acceptor sleeps without a timeout while nothing waits for parts: wake it so that it
     * sweeps this entry should its other parts never be asked for. */
    ssize_t n = write(s->wake[1], "x", 1);
    (void)n; /* a full pipe already wakes it */
  }
  if (first) {
    pending_cb_t *cb = g_new(pending_cb_t, 1);
    cb->server = s;
    cb->pending = p;
    weft__worker_recv_tensor(s->worker, step_id, key, incarnation, pending_done, cb);
  }
  g_mutex_lock(&s->lock);
  bool gone = false;
  while (!p->ready && !g_atomic_int_get(&s->stopping) && !gone) {
    g_cond_wait_until(&s->cond, &s->lock, g_get_monotonic_time() + SLICE_MS * 1000);
    if (!p->ready) gone = peer_gone(c->fd);
  }
  weft_status_t *st = NULL;
  weft_tensor_t *t = NULL;
  if (p->ready && p->status) st = weft_status_new(p->status->code, "%s", p->status->message);
  else if (p->ready) t = weft_tensor_ref(p->tensor);
  if (--p->parts_left <= 0 && g_hash_table_lookup(s->pending, p->id) == p) {
    g_hash_table_steal(s->pending, p->id);
    pending_unref_locked(p);
  }
  pending_unref_locked(p);
  g_mutex_unlock(&s->lock);
  if (gone || (!t && !st)) {
    weft_status_free(st);
    return false;
  }
  if (!st && (t->dtype == WEFT_DT_STRING || weft_dtype_size(t->dtype) == 0)) {
    st = weft_status_new(WEFT_UNIMPLEMENTED, "Bulk channel: '%s' is a %s tensor, which goes over "
                         "gRPC", key, weft_dtype_name(t->dtype));
  }
  if (st) {
    bool ok = send_status(c->fd, st->code, st->message, &w);
    weft_status_free(st);
    weft_tensor_unref(t);
    return ok;
  }
  uint64_t nbytes = weft_tensor_nbytes(t), offset, len;
  part_range(nbytes, part, n_parts, &offset, &len);
  uint8_t head[8 + 8 + 8 * WEFT_MAX_RANK + 24];
  size_t at = 0;
  put_u32(head, BULK_MAGIC);
  put_u32(head + 4, 0);
  put_u32(head + 8, (uint32_t)t->dtype);
  put_u32(head + 12, (uint32_t)t->rank);
  at = 16;
  for (int k = 0; k < t->rank; k++, at += 8) put_u64(head + at, (uint64_t)t->dims[k]);
  put_u64(head + at, nbytes);
  put_u64(head + at + 8, offset);
  put_u64(head + at + 16, len);
  at += 24;
  bool ok = transfer_all(c->fd, head, at, false, &w) == IO_OK &&
            transfer_all(c->fd, (uint8_t *)weft_tensor_data(t) + offset, len, false, &w) == IO_OK;
  weft_tensor_unref(t);
  if (ok) g_atomic_int_inc(&s->transfers);
  return ok;
}

/* Checks the hello's ticket: known, unexpired, unused (then used up). Constant time per ticket. */
static bool take_ticket(weft__bulk_server_t *s, const uint8_t *bytes) {
  gint64 now = g_get_monotonic_time();
  bool found = false;
  g_mutex_lock(&s->lock);
  for (int k = 0; k < s->n_tickets; k++) {
    uint8_t diff = 0;
    for (int b = 0; b < 16; b++) diff |= (uint8_t)(s->tickets[k].bytes[b] ^ bytes[b]);
    bool match = diff == 0 && s->tickets[k].expires_us > now;
    if (match || s->tickets[k].expires_us <= now) {
      s->tickets[k] = s->tickets[--s->n_tickets];
      k--;
      found = found || match;
    }
  }
  g_mutex_unlock(&s->lock);
  return found;
}

static void refuse(conn_t *c, weft_code_t code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void refuse(conn_t *c, weft_code_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  waiter_t w = {g_get_monotonic_time() + 1000 * 1000, NULL, &c->server->stopping};
  send_status(c->fd, code, msg, &w);
  /* Anyone who reaches the port can make refusals as fast as it can connect: at most one line
   * every REFUSAL_LOG_US, so an attack cannot flood the log (and the disk under it). */
  weft__bulk_server_t *s = c->server;
  gint64 now = g_get_monotonic_time();
  g_mutex_lock(&s->lock);
  bool log = s->refusals_logged_us == 0 || now - s->refusals_logged_us >= REFUSAL_LOG_US;
  int unlogged = s->refusals_unlogged;
  if (log) {
    s->refusals_logged_us = now;
    s->refusals_unlogged = 0;
  } else {
    s->refusals_unlogged++;
  }
  g_mutex_unlock(&s->lock);
  if (log && unlogged > 0) {
    weft__log(WEFT_LOG_WARNING, "bulk", "%s (and %d refusals not logged before it)", msg,
              unlogged);
  } else if (log) {
    weft__log(WEFT_LOG_WARNING, "bulk", "%s", msg);
  }
  g_free(msg);
}

static void serve_connection(conn_t *c) {
  weft__bulk_server_t *s = c->server;
  uint8_t hello[HELLO_BYTES];
  waiter_t hw = {g_get_monotonic_time() + (gint64)s->handshake_ms * 1000, NULL,
                 &s->stopping};
  io_result_t r = transfer_all(c->fd, hello, sizeof hello, true, &hw);
  g_mutex_lock(&s->lock);
  s->unauthenticated--;
  g_mutex_unlock(&s->lock);
  if (r != IO_OK) {
    if (r != IO_STOPPED)
      refuse(c, WEFT_UNAUTHENTICATED, "Bulk channel: no ticket (%s)", io_what(r));
    return;
  }
  if (get_u32(hello) != BULK_MAGIC || get_u32(hello + 4) != BULK_VERSION) {
    refuse(c, WEFT_UNAUTHENTICATED, "Bulk channel: not a Weft bulk hello (magic %08x, version %u)",
           get_u32(hello), get_u32(hello + 4));
    return;
  }
  if (!take_ticket(s, hello + 8)) {
    refuse(c, WEFT_UNAUTHENTICATED, "Bulk channel: unknown, used or expired ticket");
    return;
  }
  c->authenticated = true;
  waiter_t w = {0, NULL, &s->stopping};
  if (!send_status(c->fd, WEFT_OK, NULL, &w)) return;
  for (;;) {
    uint8_t head[REQUEST_HEAD_BYTES];
    /* An idle pooled connection waits for its next request as long as it likes. */
    struct pollfd pfd = {c->fd, POLLIN, 0};
    while (!g_atomic_int_get(&s->stopping) && poll(&pfd, 1, 1000) == 0) {
    }
    if (g_atomic_int_get(&s->stopping)) return;
    waiter_t rw = {g_get_monotonic_time() + (gint64)s->handshake_ms * 1000, NULL,
                   &s->stopping};
    r = transfer_all(c->fd, head, 1, true, &w);
    if (r == IO_EOF) return; /* the receiver closed its link */
    if (r == IO_OK) r = transfer_all(c->fd, head + 1, sizeof head - 1, true, &rw);
    if (r != IO_OK) {
      if (r != IO_STOPPED) refuse(c, WEFT_INVALID_ARGUMENT, "Bulk request: truncated (%s)",
                                  io_what(r));
      return;
    }
    int part = head[4] | head[5] << 8, n_parts = head[6] | head[7] << 8;
    int64_t step_id = (int64_t)get_u64(head + 8);
    guint64 incarnation = get_u64(head + 16);
    uint32_t key_len = get_u32(head + 24);
    if (get_u32(head) != BULK_MAGIC) {
      refuse(c, WEFT_INVALID_ARGUMENT, "Bulk request: bad magic %08x", get_u32(head));
      return;
    }
    if (n_parts < 1 || n_parts > MAX_PARTS || part >= n_parts) {
      refuse(c, WEFT_INVALID_ARGUMENT, "Bulk request: part %d of %d (1 to %d parts)", part,
             n_parts, MAX_PARTS);
      return;
    }
    if (key_len == 0 || key_len > MAX_KEY_BYTES) {
      refuse(c, WEFT_INVALID_ARGUMENT, "Bulk request: key of %u bytes (1 to %d)", key_len,
             MAX_KEY_BYTES);
      return;
    }
    char *key = g_malloc(key_len + 1);
    r = transfer_all(c->fd, key, key_len, true, &rw);
    key[key_len] = '\0';
    if (r != IO_OK || strlen(key) != key_len) {
      if (r != IO_STOPPED)
        refuse(c, WEFT_INVALID_ARGUMENT, "Bulk request: %s key",
               r == IO_OK ? "a NUL in its" : "truncated");
      g_free(key);
      return;
    }
    bool ok = serve_request(c, part, n_parts, step_id, incarnation, key);
    g_free(key);
    if (!ok) return;
  }
}

static gpointer connection_main(gpointer data) {
  conn_t *c = data;
  weft__bulk_server_t *s = c->server;
  serve_connection(c);
  g_mutex_lock(&s->lock);
  g_hash_table_remove(s->conns, c);
  close(c->fd);
  g_ptr_array_add(s->ended, c->thread);
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->lock);
  g_free(c);
  /* The acceptor joins this thread now rather than at the next connection: after a flood of
   * connections their stacks are given back while the port is quiet. */
  ssize_t n = write(s->wake[1], "x", 1);
  (void)n; /* a full pipe already wakes it */
  return NULL;
}

static void join_ended_locked(weft__bulk_server_t *s, GPtrArray *out) {
  for (guint k = 0; k < s->ended->len; k++) g_ptr_array_add(out, s->ended->pdata[k]);
  g_ptr_array_set_size(s->ended, 0);
}

static gpointer accept_main(gpointer data) {
  weft__bulk_server_t *s = data;
  for (;;) {
    struct pollfd pfd[2] = {{s->fd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
    /* While tensors wait for their other parts, look at them every second (the sweep). */
    g_mutex_lock(&s->lock);
    int timeout_ms = g_hash_table_size(s->pending) > 0 ? 1000 : -1;
    g_mutex_unlock(&s->lock);
    if (poll(pfd, 2, timeout_ms) < 0 && errno != EINTR) break;
    if (g_atomic_int_get(&s->stopping)) break;
    if (pfd[1].revents & POLLIN) {
      char drain[256];
      while (read(s->wake[0], drain, sizeof drain) > 0) {
      }
    }
    GPtrArray *done = g_ptr_array_new();
    g_mutex_lock(&s->lock);
    join_ended_locked(s, done);
    sweep_pending_locked(s);
    g_mutex_unlock(&s->lock);
    for (guint k = 0; k < done->len; k++) g_thread_join(done->pdata[k]);
    g_ptr_array_free(done, TRUE);
    if (!(pfd[0].revents & POLLIN)) continue;
    int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) g_usleep(100 * 1000);
      continue;
    }
    set_slices(fd);
    g_mutex_lock(&s->lock);
    bool room = g_hash_table_size(s->conns) < MAX_CONNECTIONS &&
                s->unauthenticated < MAX_UNAUTHENTICATED;
    conn_t *c = NULL;
    if (room) {
      c = g_new0(conn_t, 1);
      c->server = s;
      c->fd = fd;
      GError *error = NULL;
      c->thread = g_thread_try_new("weft-bulk", connection_main, c, &error);
      if (c->thread) {
        g_hash_table_add(s->conns, c);
        s->unauthenticated++;
      } else {
        g_clear_error(&error);
        g_free(c);
        c = NULL;
      }
    }
    g_mutex_unlock(&s->lock);
    if (!c) close(fd); /* too many: the receiver falls back to gRPC */
  }
  return NULL;
}

weft_status_t *weft__bulk_server_new(weft__worker_t *worker, const char *bind_host, int port,
                                     weft__bulk_server_t **out) {
  *out = NULL;
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  const char *host = bind_host && *bind_host ? bind_host : "127.0.0.1";
  char service[16];
  g_snprintf(service, sizeof service, "%d", port);
  int rc = getaddrinfo(host, service, &hints, &res);
  if (rc != 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Bulk channel: cannot bind to '%s': %s", host,
                           gai_strerror(rc));
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool ok = fd >= 0 && bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, 64) == 0;
  freeaddrinfo(res);
  struct sockaddr_storage addr;
  socklen_t alen = sizeof addr;
  if (ok) ok = getsockname(fd, (struct sockaddr *)&addr, &alen) == 0;
  if (!ok) {
    int e = errno;
    if (fd >= 0) close(fd);
    return weft_status_new(WEFT_UNAVAILABLE, "Bulk channel: cannot listen on %s port %d: %s",
                           host, port, g_strerror(e));
  }
  weft__bulk_server_t *s = g_new0(weft__bulk_server_t, 1);
  s->worker = worker;
  s->handshake_ms = handshake_timeout_ms();
  s->pending_ttl_us = ticket_ttl_us();
  s->fd = fd;
  s->port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&addr)->sin_port);
  g_mutex_init(&s->lock);
  g_cond_init(&s->cond);
  s->conns = g_hash_table_new(g_direct_hash, g_direct_equal);
  s->ended = g_ptr_array_new();
  s->pending = g_hash_table_new(g_str_hash, g_str_equal);
  GError *error = NULL;
  /* Thread names of 16 characters or more are not set at all (pthread_setname_np): the thread
   * would show in /proc as the program's name, unseen by anyone counting Weft's threads. */
  if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0 ||
      !(s->acceptor = g_thread_try_new("weft-bulk-acc", accept_main, s, &error))) {
    weft_status_t *st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                                        "Bulk channel: cannot start its thread: %s",
                                        error ? error->message : g_strerror(errno));
    g_clear_error(&error);
    s->acceptor = NULL;
    weft__bulk_server_free(s);
    return st;
  }
  *out = s;
  return NULL;
}

int weft__bulk_server_port(const weft__bulk_server_t *s) { return s ? s->port : 0; }

void weft__bulk_server_set_pending_ttl_ms(weft__bulk_server_t *s, int ms) {
  g_mutex_lock(&s->lock);
  s->pending_ttl_us = (gint64)ms * 1000;
  g_mutex_unlock(&s->lock);
  ssize_t n = write(s->wake[1], "x", 1); /* sweep with the new lifetime now */
  (void)n;
}

int weft__bulk_server_pending(weft__bulk_server_t *s) {
  if (!s) return 0;
  g_mutex_lock(&s->lock);
  int n = (int)g_hash_table_size(s->pending);
  g_mutex_unlock(&s->lock);
  return n;
}

gint64 weft__bulk_server_transfers(weft__bulk_server_t *s) {
  return s ? g_atomic_int_get(&s->transfers) : 0;
}

void weft__bulk_server_free(weft__bulk_server_t *s) {
  if (!s) return;
  g_atomic_int_set(&s->stopping, 1);
  if (s->acceptor) {
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
    g_thread_join(s->acceptor);
  }
  g_mutex_lock(&s->lock);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, s->conns);
  while (g_hash_table_iter_next(&it, &key, NULL)) shutdown(((conn_t *)key)->fd, SHUT_RDWR);
  g_cond_broadcast(&s->cond);
  while (g_hash_table_size(s->conns) > 0) g_cond_wait(&s->cond, &s->lock);
  GPtrArray *done = g_ptr_array_new();
  join_ended_locked(s, done);
  g_hash_table_iter_init(&it, s->pending);
  gpointer value;
  while (g_hash_table_iter_next(&it, NULL, &value)) pending_unref_locked(value);
  g_mutex_unlock(&s->lock);
  for (guint k = 0; k < done->len; k++) g_thread_join(done->pdata[k]);
  g_ptr_array_free(done, TRUE);
  /* A worker callback still holding a pending tensor has been answered by the worker's
   * shutdown before this (weft_server_stop aborts every step first). */
  g_hash_table_destroy(s->pending);
  g_hash_table_destroy(s->conns);
  g_ptr_array_free(s->ended, TRUE);
  if (s->wake[0] > 0) close(s->wake[0]);
  if (s->wake[1] > 0) close(s->wake[1]);
  close(s->fd);
  g_mutex_clear(&s->lock);
  g_cond_clear(&s->cond);
  g_free(s);
}

void weft__bulk_issue_tickets(weft__bulk_server_t *s, Weft__RecvTensorResponse *resp,
                              weft__bulk_tickets_t *tickets) {
  if (!s || !weft__bulk_enabled()) return;
  gint64 now = g_get_monotonic_time();
  g_mutex_lock(&s->lock);
  for (int k = 0; k < s->n_tickets; k++) {
    if (s->tickets[k].expires_us <= now) s->tickets[k--] = s->tickets[--s->n_tickets];
  }
  int n = 0;
  for (; n < WEFT_BULK_LINK_PARTS && s->n_tickets < MAX_TICKETS; n++) {
    ticket_t *t = &s->tickets[s->n_tickets++];
    if (getrandom(t->bytes, 16, 0) != 16) {
      s->n_tickets--;
      break;
    }
    t->expires_us = now + ticket_ttl_us();
    memcpy(tickets->bytes[n], t->bytes, 16);
    tickets->items[n].data = tickets->bytes[n];
    tickets->items[n].len = 16;
  }
  if (n < WEFT_BULK_LINK_PARTS) s->n_tickets -= n; /* a ticket alone opens no link */
  g_mutex_unlock(&s->lock);
  if (n < WEFT_BULK_LINK_PARTS) return; /* the table is full: no link this time */
  resp->bulk_port = (uint32_t)s->port;
  resp->n_bulk_tickets = (size_t)n;
  resp->bulk_tickets = tickets->items;
}

/* ---------------------------------------------------------------------------------------------
 * The receiver: links pooled per peer */

typedef struct xfer xfer_t;

/* Two authenticated connections to one sender and the thread that reads the second. */
typedef struct link {
  int fd[WEFT_BULK_LINK_PARTS];
  GThread *reader[WEFT_BULK_LINK_PARTS]; /* [k]: reads part k of a transfer ([0]: unused) */
  struct reader_arg {
    struct link *link;
    int part;
  } arg[WEFT_BULK_LINK_PARTS];
  GMutex lock;
  GCond cond;
  xfer_t *job[WEFT_BULK_LINK_PARTS]; /* the transfer whose part k reader k reads; NULL: none */
  bool quit;
} link_t;

/* One tensor's transfer over a link. */
struct xfer {
  const char *peer;
  weft_dtype_t dtype;
  int n_parts;
  waiter_t wait;
  GMutex lock;
  GCond cond;
  weft_tensor_t *tensor;                     /* made from the first header read */
  weft_status_t *status[WEFT_BULK_LINK_PARTS]; /* a part that failed: the link is broken */
  weft_status_t *answer;                     /* the sender's own error answer */
  int parts_done;
};

typedef struct peer_links {
  GQueue idle;          /* link_t* */
  int total;            /* idle and in use */
  gint64 quiet_until_us; /* a link could not be opened: no offers before then (monotonic) */
  int failures;          /* links that could not be opened since the last one that could */
} peer_links_t;

/* How long a receiver stops offering after a link to that peer could not be opened (a port it
 * cannot reach): each offer would cost the sender tickets and the receiver a connect(), up to
 * CONNECT_TIMEOUT_S of a step's time where a firewall drops the packets. Doubled after each
 * further failure, up to RETRY_MAX_US, so that a port that stays unreachable costs a step
 * almost nothing; a link that opens resets it. */
#define RETRY_AFTER_US ((gint64)30 * G_USEC_PER_SEC)
#define RETRY_MAX_US ((gint64)3600 * G_USEC_PER_SEC)
#define CONNECT_TIMEOUT_S 2

static GMutex pool_lock;
static GHashTable *pool; /* peer address -> peer_links_t* */

static weft_status_t *part_error(const xfer_t *x, io_result_t r, const char *what) {
  return weft_status_new(r == IO_TIMEOUT ? WEFT_DEADLINE_EXCEEDED : WEFT_UNAVAILABLE,
                         "Bulk channel to %s: %s (%s)", x->peer, what, io_what(r));
}

/* Reads one part's answer straight into the tensor (made here when this header is the first). */
static weft_status_t *read_part(xfer_t *x, int fd, int part) {
  weft_code_t code = WEFT_OK;
  weft_status_t *answer = NULL;
  weft_status_t *st = read_answer_head(fd, x->peer, &x->wait, &code, &answer);
  if (st) return st;
  if (answer) {
    g_mutex_lock(&x->lock);
    if (!x->answer) x->answer = answer;
    else weft_status_free(answer);
    g_mutex_unlock(&x->lock);
    return NULL;
  }
  uint8_t head[8];
  io_result_t r = transfer_all(fd, head, 8, true, &x->wait);
  if (r != IO_OK) return part_error(x, r, "a truncated answer");
  weft_dtype_t dtype = (weft_dtype_t)get_u32(head);
  uint32_t rank = get_u32(head + 4);
  if (dtype != x->dtype || rank > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: an answer of dtype %d and rank %u "
                           "for a _Recv of %s", x->peer, (int)dtype, rank,
                           weft_dtype_name(x->dtype));
  }
  uint8_t rest[8 * WEFT_MAX_RANK + 24];
  r = transfer_all(fd, rest, 8 * rank + 24, true, &x->wait);
  if (r != IO_OK) return part_error(x, r, "a truncated answer");
  int64_t dims[WEFT_MAX_RANK];
  uint64_t elements = 1;
  bool overflow = false;
  for (uint32_t k = 0; k < rank; k++) {
    dims[k] = (int64_t)get_u64(rest + 8 * k);
    if (dims[k] < 0) {
      return weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: an answer whose dimension %u is "
                             "%" G_GINT64_FORMAT, x->peer, k, dims[k]);
    }
    if (dims[k] > 0 && elements > G_MAXINT64 / (uint64_t)dims[k]) overflow = true;
    else elements *= (uint64_t)dims[k];
  }
  uint64_t nbytes = get_u64(rest + 8 * rank), offset = get_u64(rest + 8 * rank + 8);
  uint64_t len = get_u64(rest + 8 * rank + 16), want_offset, want_len;
  size_t size = weft_dtype_size(dtype);
  overflow = overflow || size == 0 || elements > G_MAXINT64 / size || elements * size != nbytes;
  part_range(nbytes, part, x->n_parts, &want_offset, &want_len);
  if (overflow || offset != want_offset || len != want_len) {
    return weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: an inconsistent answer (%" G_GUINT64_FORMAT
                           " elements of %s in %" G_GUINT64_FORMAT " bytes, part %d at %"
                           G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT ")", x->peer, elements,
                           weft_dtype_name(dtype), nbytes, part, offset, len);
  }
  if (nbytes > max_tensor_bytes()) {
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "Bulk channel to %s: an answer of %"
                           G_GUINT64_FORMAT " bytes, over the receiver's limit of %"
                           G_GUINT64_FORMAT " (WEFT_BULK_MAX_TENSOR_BYTES)", x->peer, nbytes,
                           max_tensor_bytes());
  }
  g_mutex_lock(&x->lock);
  if (!x->tensor) {
    st = weft__tensor_alloc(NULL, dtype, (int)rank, dims, &x->tensor);
  } else if (x->tensor->rank != (int)rank ||
             memcmp(x->tensor->dims, dims, sizeof(int64_t) * rank) != 0) {
    st = weft_status_new(WEFT_INTERNAL, "Bulk channel to %s: the parts disagree on the shape",
                         x->peer);
  }
  uint8_t *data = st ? NULL : weft_tensor_data(x->tensor);
  g_mutex_unlock(&x->lock);
  if (st) return st;
  r = transfer_all(fd, data + offset, len, true, &x->wait);
  return r == IO_OK ? NULL : part_error(x, r, "the tensor's bytes stopped");
}

static void part_finished(xfer_t *x, int part, weft_status_t *st) {
  g_mutex_lock(&x->lock);
  x->status[part] = st;
  x->parts_done++;
  g_cond_broadcast(&x->cond);
  g_mutex_unlock(&x->lock);
}

static gpointer reader_main(gpointer data) {
  const struct reader_arg *a = data;
  link_t *l = a->link;
  int k = a->part;
  g_mutex_lock(&l->lock);
  for (;;) {
    while (!l->job[k] && !l->quit) g_cond_wait(&l->cond, &l->lock);
    if (l->quit) break;
    xfer_t *x = l->job[k];
    g_mutex_unlock(&l->lock);
    weft_status_t *st = read_part(x, l->fd[k], k);
    g_mutex_lock(&l->lock);
    l->job[k] = NULL;
    part_finished(x, k, st);
  }
  g_mutex_unlock(&l->lock);
  return NULL;
}

static void link_free(link_t *l) {
  if (!l) return;
  g_mutex_lock(&l->lock);
  l->quit = true;
  g_cond_broadcast(&l->cond);
  g_mutex_unlock(&l->lock);
  for (int k = 1; k < WEFT_BULK_LINK_PARTS; k++)
    if (l->reader[k]) g_thread_join(l->reader[k]);
  for (int k = 0; k < WEFT_BULK_LINK_PARTS; k++)
    if (l->fd[k] >= 0) close(l->fd[k]);
  g_mutex_clear(&l->lock);
  g_cond_clear(&l->cond);
  g_free(l);
}

static peer_links_t *peer_links_locked(const char *address) {
  if (!pool) pool = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  peer_links_t *p = g_hash_table_lookup(pool, address);
  if (!p) {
    p = g_new0(peer_links_t, 1);
    g_queue_init(&p->idle);
    g_hash_table_insert(pool, g_strdup(address), p);
  }
  return p;
}

/* A link leaves the pool for good (closed, or never added). */
static void link_drop(const char *address, link_t *l) {
  g_mutex_lock(&pool_lock);
  peer_links_locked(address)->total--;
  g_mutex_unlock(&pool_lock);
  link_free(l);
}

static void log_once(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void log_once(const char *fmt, ...) {
  static gint logged;
  if (!g_atomic_int_compare_and_exchange(&logged, 0, 1)) return;
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  weft__log(WEFT_LOG_INFO, "bulk", "%s (RecvTensor falls back to gRPC; logged once)", msg);
  g_free(msg);
}

bool weft__bulk_should_offer(const char *address, weft_dtype_t dtype) {
  if (!address || !weft__bulk_enabled() || dtype == WEFT_DT_STRING || weft_dtype_size(dtype) == 0)
    return false;
  g_mutex_lock(&pool_lock);
  peer_links_t *p = peer_links_locked(address);
  bool offer = p->idle.length == 0 && p->total < MAX_LINKS_PER_PEER &&
               g_get_monotonic_time() >= p->quiet_until_us;
  g_mutex_unlock(&pool_lock);
  return offer;
}

/* One connection of a link: connect, hello with the ticket, the sender's acceptance. */
static int open_connection(const char *host, int port, const uint8_t *ticket, char **why) {
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  char service[16];
  g_snprintf(service, sizeof service, "%d", port);
  int rc = getaddrinfo(host, service, &hints, &res);
  if (rc != 0) {
    *why = g_strdup_printf("cannot resolve '%s': %s", host, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    struct timeval tv = {CONNECT_TIMEOUT_S, 0}; /* bounds connect() */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *why = g_strdup_printf("cannot connect to %s port %d: %s", host, port, g_strerror(errno));
    return -1;
  }
  set_slices(fd);
  uint8_t hello[HELLO_BYTES];
  put_u32(hello, BULK_MAGIC);
  put_u32(hello + 4, BULK_VERSION);
  memcpy(hello + 8, ticket, 16);
  waiter_t w = {g_get_monotonic_time() + 5 * G_USEC_PER_SEC, NULL, NULL};
  weft_code_t code = WEFT_OK;
  weft_status_t *answer = NULL, *st = NULL;
  io_result_t r = transfer_all(fd, hello, sizeof hello, false, &w);
  if (r == IO_OK) st = read_answer_head(fd, host, &w, &code, &answer);
  if (r != IO_OK || st || answer) {
    *why = r != IO_OK ? g_strdup_printf("the hello failed (%s)", io_what(r))
                      : g_strdup(weft_status_message(st ? st : answer));
    weft_status_free(st);
    weft_status_free(answer);
    close(fd);
    return -1;
  }
  return fd;
}

void weft__bulk_after_recv(const char *address, const Weft__RecvTensorResponse *resp) {
  if (!resp || resp->bulk_port == 0 || resp->bulk_port > 65535 ||
      resp->n_bulk_tickets != WEFT_BULK_LINK_PARTS || !weft__bulk_enabled())
    return;
  for (size_t k = 0; k < resp->n_bulk_tickets; k++)
    if (resp->bulk_tickets[k].len != 16) return;
  char *host = NULL;
  int grpc_port = 0;
  if (!weft__address_split(address, &host, &grpc_port)) return;
  g_mutex_lock(&pool_lock);
  peer_links_t *p = peer_links_locked(address);
  bool room = p->total < MAX_LINKS_PER_PEER;
  if (room) p->total++;
  g_mutex_unlock(&pool_lock);
  if (!room) {
    g_free(host);
    return;
  }
  link_t *l = g_new0(link_t, 1);
  g_mutex_init(&l->lock);
  g_cond_init(&l->cond);
  char *why = NULL;
  for (int k = 0; k < WEFT_BULK_LINK_PARTS; k++) l->fd[k] = -1;
  for (int k = 0; k < WEFT_BULK_LINK_PARTS && !why; k++)
    l->fd[k] = open_connection(host, (int)resp->bulk_port, resp->bulk_tickets[k].data, &why);
  GError *error = NULL;
  for (int k = 1; k < WEFT_BULK_LINK_PARTS && !why; k++) {
    l->arg[k].link = l;
    l->arg[k].part = k;
    if (!(l->reader[k] = g_thread_try_new("weft-bulk-read", reader_main, &l->arg[k], &error))) {
      why = g_strdup_printf("cannot start a thread: %s", error->message);
      g_clear_error(&error);
    }
  }
  if (why) {
    log_once("Bulk channel to %s: %s", address, why);
    g_free(why);
    link_drop(address, l);
    g_mutex_lock(&pool_lock); /* p stays valid: the pool never removes a peer */
    gint64 wait_us = RETRY_AFTER_US << MIN(p->failures, 7);
    p->quiet_until_us = g_get_monotonic_time() + MIN(wait_us, RETRY_MAX_US);
    p->failures++;
    g_mutex_unlock(&pool_lock);
  } else {
    weft__log(WEFT_LOG_DEBUG, "bulk", "Bulk link to %s port %u open", address, resp->bulk_port);
    g_mutex_lock(&pool_lock);
    p->failures = 0;
    g_queue_push_tail(&p->idle, l);
    g_mutex_unlock(&pool_lock);
  }
  g_free(host);
}

/* An idle link to the peer whose connections are still open, or NULL. */
static link_t *checkout(const char *address) {
  for (;;) {
    g_mutex_lock(&pool_lock);
    link_t *l = g_queue_pop_head(&peer_links_locked(address)->idle);
    g_mutex_unlock(&pool_lock);
    if (!l) return NULL;
    bool gone = false;
    for (int k = 0; k < WEFT_BULK_LINK_PARTS; k++) gone = gone || peer_gone(l->fd[k]);
    if (!gone) return l;
    link_drop(address, l); /* the sender restarted or closed it */
  }
}

static bool write_request(int fd, int part, int n_parts, int64_t step_id, guint64 incarnation,
                          const char *key, const waiter_t *w) {
  size_t key_len = strlen(key);
  uint8_t *frame = g_malloc(REQUEST_HEAD_BYTES + key_len);
  put_u32(frame, BULK_MAGIC);
  frame[4] = (uint8_t)part;
  frame[5] = 0;
  frame[6] = (uint8_t)n_parts;
  frame[7] = 0;
  put_u64(frame + 8, (uint64_t)step_id);
  put_u64(frame + 16, incarnation);
  put_u32(frame + 24, (uint32_t)key_len);
  memcpy(frame + REQUEST_HEAD_BYTES, key, key_len);
  bool ok = transfer_all(fd, frame, REQUEST_HEAD_BYTES + key_len, false, w) == IO_OK;
  g_free(frame);
  return ok;
}

/* How many of a link's connections a tensor of SPLIT_MIN_BYTES or more is split over
 * (WEFT_BULK_PARTS, 1 to WEFT_BULK_LINK_PARTS; default all). Two measured best of 2, 3 and 4 on
 * two cores (docs/performance.md, "The bulk channel's data path"), so a link has two; the
 * comparison reruns with a larger WEFT_BULK_LINK_PARTS and this switch. */
static int split_parts(void) {
  const char *v = g_getenv("WEFT_BULK_PARTS");
  int n = v ? atoi(v) : 0;
  return n >= 1 && n <= WEFT_BULK_LINK_PARTS ? n : WEFT_BULK_LINK_PARTS;
}

/* The receiver's own timing of each transfer beside a benchmark's wall clock: for the bulk
 * channel from the request written to the last byte read. */
void weft__transfer_trace(uint64_t nbytes, int n_parts, gint64 us) {
  /* Opened once and written with one append per line: an fopen and fclose per tensor cost the
   * step it traces about 15 us (weft bench traces task 1 of its netns rows). */
  static gsize opened = 0;
  static int fd = -1;
  if (g_once_init_enter(&opened)) {
    const char *path = g_getenv("WEFT_BULK_TRACE");
    if (path && *path) fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    g_once_init_leave(&opened, 1);
  }
  if (fd < 0) return;
  char line[80];
  int n = g_snprintf(line, sizeof line, "%" G_GUINT64_FORMAT " %d %" G_GINT64_FORMAT "\n", nbytes,
                     n_parts, us);
  ssize_t written = write(fd, line, (size_t)n);
  (void)written; /* a trace for measuring: a full disk loses lines, not the transfer */
}

weft_status_t *weft__bulk_recv(const weft__peer_t *peer, weft__step_t *step, const char *key,
                               guint64 incarnation, weft_dtype_t dtype, uint64_t *last_nbytes,
                               weft_tensor_t **out, bool *handled) {
  *out = NULL;
  *handled = false;
  if (!weft__bulk_enabled() || dtype == WEFT_DT_STRING || weft_dtype_size(dtype) == 0 ||
      strlen(key) > MAX_KEY_BYTES)
    return NULL;
  link_t *l = checkout(peer->address);
  if (!l) return NULL;
  xfer_t x = {0};
  x.peer = peer->name;
  x.dtype = dtype;
  x.n_parts = *last_nbytes >= SPLIT_MIN_BYTES ? split_parts() : 1;
  x.wait.deadline_us = weft__step_deadline(step);
  x.wait.step = step;
  int64_t step_id = weft__step_id(step);
  gint64 start_us = g_get_monotonic_time();
  if (!write_request(l->fd[0], 0, x.n_parts, step_id, incarnation, key, &x.wait)) {
    /* Nothing reached the sender: gRPC carries this one. */
    log_once("Bulk channel to %s: the request could not be written", peer->name);
    link_drop(peer->address, l);
    return NULL;
  }
  *handled = true;
  g_mutex_init(&x.lock);
  g_cond_init(&x.cond);
  bool started = true;
  for (int k = 1; k < x.n_parts; k++) {
    started = started && write_request(l->fd[k], k, x.n_parts, step_id, incarnation, key,
                                       &x.wait);
    if (started) {
      g_mutex_lock(&l->lock);
      l->job[k] = &x;
      g_cond_broadcast(&l->cond);
      g_mutex_unlock(&l->lock);
    } else {
      part_finished(&x, k, weft_status_new(WEFT_UNAVAILABLE, "Bulk channel to %s: the request "
                                           "for part %d could not be written", peer->name, k));
    }
  }
  part_finished(&x, 0, read_part(&x, l->fd[0], 0));
  g_mutex_lock(&x.lock);
  while (x.parts_done < x.n_parts) g_cond_wait(&x.cond, &x.lock);
  g_mutex_unlock(&x.lock);
  weft_status_t *st = NULL;
  bool broken = false;
  for (int k = 0; k < x.n_parts; k++) {
    broken = broken || x.status[k];
    if (x.status[k] && !st) st = x.status[k];
    else weft_status_free(x.status[k]);
  }
  if (st) {
    /* An abort or deadline ended the wait: the step's own status says why. */
    weft_status_t *step_st = weft__step_status(step, NULL);
    if (step_st) {
      weft_status_free(st);
      st = step_st;
    } else if (g_get_monotonic_time() >= x.wait.deadline_us) {
      weft_status_free(st);
      st = weft_status_new(WEFT_DEADLINE_EXCEEDED, "Step %" G_GINT64_FORMAT " ran out of time "
                           "receiving '%s' from %s", step_id, key, peer->name);
    }
    weft_status_free(x.answer);
  } else if (x.answer) {
    st = x.answer;
  }
  if (st) weft_tensor_unref(x.tensor);
  else {
    weft__transfer_trace(weft_tensor_nbytes(x.tensor), x.n_parts, g_get_monotonic_time() - start_us);
    *out = x.tensor;
    *last_nbytes = weft_tensor_nbytes(x.tensor);
  }
  g_mutex_clear(&x.lock);
  g_cond_clear(&x.cond);
  if (broken || !started) {
    link_drop(peer->address, l);
  } else {
    g_mutex_lock(&pool_lock);
    g_queue_push_tail(&peer_links_locked(peer->address)->idle, l);
    g_mutex_unlock(&pool_lock);
  }
  return st;
}

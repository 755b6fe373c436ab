/* gRPC's standard health checking service (grpc.health.v1.Health/Check) on every Weft server,
 * and its client (weft_health_check, `weft health`): what Kubernetes probes, load balancers and
 * grpc_health_probe ask. The messages are plain protobuf, not Weft's framing, because those
 * clients know nothing of it. A running server is SERVING for "", "weft.Master" and
 * "weft.Worker"; any other service is NOT_FOUND, as the protocol says. */
#include "distributed_internal.h"

#include <grpc/byte_buffer_reader.h>
#include <string.h>

#include "health.pb-c.h"

/* A service name is a few dozen bytes: anything much larger is not a health check. */
#define MAX_HEALTH_REQUEST_BYTES 1024

#define HEALTH_CHECK_METHOD "/grpc.health.v1.Health/Check"

static bool known_service(const char *service) {
  return !service || !*service || strcmp(service, "weft.Master") == 0 ||
         strcmp(service, "weft.Worker") == 0;
}

/* The bytes of a byte buffer (g_free), at most `max`; NULL when larger. */
static char *buffer_bytes(grpc_byte_buffer *bb, size_t max, size_t *len) {
  *len = 0;
  if (!bb) return g_strdup("");
  size_t n = grpc_byte_buffer_length(bb);
  if (n > max) return NULL;
  grpc_byte_buffer_reader reader;
  if (!grpc_byte_buffer_reader_init(&reader, bb)) return NULL;
  grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
  grpc_byte_buffer_reader_destroy(&reader);
  *len = GRPC_SLICE_LENGTH(all);
  char *bytes = g_malloc(*len + 1);
  memcpy(bytes, GRPC_SLICE_START_PTR(all), *len);
  bytes[*len] = '\0';
  grpc_slice_unref(all);
  return bytes;
}

weft_status_t *weft__health_answer(grpc_byte_buffer *payload, grpc_byte_buffer **out) {
  *out = NULL;
  size_t len = 0;
  char *bytes = buffer_bytes(payload, MAX_HEALTH_REQUEST_BYTES, &len);
  if (!bytes) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the request is larger than %d bytes or unreadable",
                           HEALTH_CHECK_METHOD, MAX_HEALTH_REQUEST_BYTES);
  }
  Grpc__Health__V1__HealthCheckRequest *req =
      grpc__health__v1__health_check_request__unpack(NULL, len, (const uint8_t *)bytes);
  g_free(bytes);
  if (!req) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the request is not a grpc.health.v1.HealthCheckRequest",
                           HEALTH_CHECK_METHOD);
  }
  weft_status_t *st = NULL;
  if (!known_service(req->service)) {
    st = weft_status_new(WEFT_NOT_FOUND,
                         "%s: unknown service '%s' (this server has '', 'weft.Master' and "
                         "'weft.Worker')",
                         HEALTH_CHECK_METHOD, req->service);
  }
  grpc__health__v1__health_check_request__free_unpacked(req, NULL);
  if (st) return st;
  Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
  resp.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
  uint8_t packed[8];
  size_t n = grpc__health__v1__health_check_response__pack(&resp, packed);
  grpc_slice slice = grpc_slice_from_copied_buffer((const char *)packed, n);
  *out = grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  return NULL;
}

weft_status_t *weft_health_check(const char *target, const char *service,
                                 const weft_session_options_t *opts, int64_t timeout_ms,
                                 weft_health_status_t *status) {
  *status = WEFT_HEALTH_UNKNOWN;
  char *address = NULL;
  weft__security_t *security = NULL;
  weft__master_t *local = NULL;
  weft_status_t *st = weft__target_peer(target, opts, &address, &security, &local);
  if (st) return st;
  /* Even a server of this process is asked over gRPC: the check is of what it serves. */
  if (local) weft__master_unref(local);
  Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
  req.service = (char *)(service ? service : "");
  size_t len = grpc__health__v1__health_check_request__get_packed_size(&req);
  uint8_t *bytes = g_malloc(len + 1);
  grpc__health__v1__health_check_request__pack(&req, bytes);
  char *answer = NULL;
  size_t answer_len = 0;
  st = weft__rpc_raw_secure(address, security, HEALTH_CHECK_METHOD, bytes, len,
                            timeout_ms > 0 ? timeout_ms : 5000, &answer, &answer_len);
  g_free(bytes);
  weft__security_unref(security);
  if (st) {
    weft_status_prefix(st, "Health check of %s", address);
    g_free(address);
    return st;
  }
  Grpc__Health__V1__HealthCheckResponse *resp =
      grpc__health__v1__health_check_response__unpack(NULL, answer_len, (const uint8_t *)answer);
  g_free(answer);
  if (!resp) {
    st = weft_status_new(WEFT_INTERNAL, "Health check of %s: the answer is not a "
                         "grpc.health.v1.HealthCheckResponse", address);
  } else {
    int v = resp->status;
    *status = v >= 0 && v <= WEFT_HEALTH_SERVICE_UNKNOWN ? (weft_health_status_t)v
                                                         : WEFT_HEALTH_UNKNOWN;
    grpc__health__v1__health_check_response__free_unpacked(resp, NULL);
  }
  g_free(address);
  return st;
}

const char *weft_health_status_name(weft_health_status_t status) {
  switch (status) {
    case WEFT_HEALTH_SERVING: return "SERVING";
    case WEFT_HEALTH_NOT_SERVING: return "NOT_SERVING";
    case WEFT_HEALTH_SERVICE_UNKNOWN: return "SERVICE_UNKNOWN";
    default: return "UNKNOWN";
  }
}

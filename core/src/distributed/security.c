/* Transport security and the cluster token (docs/security.md): the PEM files of TLS and mutual
 * TLS read once into a shared, immutable object that servers, masters, workers and remote
 * sessions hold a reference to; gRPC credentials made from it for servers and channels; and the
 * server-side check that every call carries the cluster token, compared in constant time. */
#include "distributed_internal.h"

#include <grpc/grpc_security.h>
/* OpenSSL comes with gRPC (grpc.pc requires openssl): used only to check, before gRPC sees them,
 * that a certificate and a key belong together, because gRPC reports that mismatch as an
 * unbindable port (a server) or an "empty address list" (a client). */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string.h>

#define AUTH_KEY "authorization"
#define AUTH_PREFIX "Bearer "

struct weft__security {
  gint refcount;
  bool tls;
  bool server;    /* a server's (its peers are verified against cert_pem without a CA) */
  char *ca_pem;   /* NULL: the system's roots (client) / no client certificates (server) */
  char *cert_pem; /* with key_pem: this side's certificate chain */
  char *key_pem;
  char *token;        /* NULL: no token sent or required */
  char *auth_value;   /* "Bearer <token>" */
  char *channel_key;  /* identifies the TLS material, for caching channels */
};

static weft_status_t *read_file(const char *what, const char *path, char **out) {
  *out = NULL;
  GError *error = NULL;
  char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, &error)) {
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "Cannot read the %s file '%s': %s",
                                        what, path, error->message);
    g_error_free(error);
    return st;
  }
  if (len == 0 || strlen(text) != len) {
    g_free(text);
    return weft_status_new(WEFT_INVALID_ARGUMENT, "The %s file '%s' is %s", what, path,
                           len == 0 ? "empty" : "not text (it holds a NUL byte)");
  }
  *out = text;
  return NULL;
}

static weft_status_t *read_pem(const char *what, const char *path, char **out) {
  weft_status_t *st = read_file(what, path, out);
  if (!st && !strstr(*out, "-----BEGIN ")) {
    g_free(*out);
    *out = NULL;
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "The %s file '%s' holds no PEM block", what, path);
  }
  return st;
}

static weft_status_t *read_token(const char *path, char **out) {
  char *text = NULL;
  weft_status_t *st = read_file("auth token", path, &text);
  if (st) return st;
  g_strstrip(text); /* a trailing newline is not part of the token */
  if (!*text) {
    g_free(text);
    return weft_status_new(WEFT_INVALID_ARGUMENT, "The auth token file '%s' is empty", path);
  }
  /* The token travels as an HTTP/2 header value: printable ASCII only. */
  for (const char *p = text; *p; p++) {
    if (*p < 0x20 || *p > 0x7e) {
      g_free(text);
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "The auth token file '%s' holds a character that is not printable "
                             "ASCII",
                             path);
    }
  }
  *out = text;
  return NULL;
}

/* An encrypted key would make OpenSSL prompt on the terminal; gRPC cannot use one anyway. */
static int no_passphrase(char *buf, int size, int rwflag, void *user) {
  (void)buf;
  (void)size;
  (void)rwflag;
  (void)user;
  return 0;
}

/* INVALID_ARGUMENT naming both files when the key is not the private key of the chain's first
 * (leaf) certificate, or when either cannot be parsed. */
static weft_status_t *check_key_pair(const char *cert_file, const char *cert_pem,
                                     const char *key_file, const char *key_pem) {
  weft_status_t *st = NULL;
  BIO *cert_bio = BIO_new_mem_buf(cert_pem, -1);
  X509 *cert = cert_bio ? PEM_read_bio_X509(cert_bio, NULL, no_passphrase, NULL) : NULL;
  BIO *key_bio = BIO_new_mem_buf(key_pem, -1);
  EVP_PKEY *key = key_bio ? PEM_read_bio_PrivateKey(key_bio, NULL, no_passphrase, NULL) : NULL;
  if (cert == NULL) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "The TLS certificate file '%s' holds no readable certificate (a PEM "
                         "CERTIFICATE block)", cert_file);
  } else if (key == NULL) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "The TLS key file '%s' holds no readable private key (an unencrypted "
                         "PEM PRIVATE KEY block)", key_file);
  } else if (X509_check_private_key(cert, key) != 1) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "The TLS key file '%s' does not match the certificate in '%s' (the key "
                         "is not the private key of that certificate)", key_file, cert_file);
  }
  ERR_clear_error(); /* OpenSSL's error queue is per thread: leave nothing for gRPC to find */
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(key_bio);
  BIO_free(cert_bio);
  return st;
}

weft_status_t *weft__security_new(bool tls, bool server, const char *cert_file,
                                  const char *key_file, const char *ca_file,
                                  const char *token_file, weft__security_t **out) {
  *out = NULL;
  if ((cert_file && *cert_file) != (key_file && *key_file)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "A TLS certificate needs its key and a key its certificate: got %s "
                           "'%s' without %s",
                           cert_file && *cert_file ? "certificate" : "key",
                           cert_file && *cert_file ? cert_file : key_file,
                           cert_file && *cert_file ? "a key" : "a certificate");
  }
  weft__security_t *s = g_new0(weft__security_t, 1);
  s->refcount = 1;
  s->tls = tls;
  s->server = server;
  weft_status_t *st = NULL;
  if (tls && ca_file && *ca_file) st = read_pem("TLS CA", ca_file, &s->ca_pem);
  if (!st && tls && cert_file && *cert_file) st = read_pem("TLS certificate", cert_file, &s->cert_pem);
  if (!st && tls && key_file && *key_file) st = read_pem("TLS key", key_file, &s->key_pem);
  if (!st && s->cert_pem && s->key_pem)
    st = check_key_pair(cert_file, s->cert_pem, key_file, s->key_pem);
  if (!st && token_file && *token_file) st = read_token(token_file, &s->token);
  if (st) {
    weft__security_unref(s);
    return st;
  }
  if (s->token) s->auth_value = g_strconcat(AUTH_PREFIX, s->token, NULL);
  if (tls) {
    GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
    const char *parts[] = {s->ca_pem, s->cert_pem, s->key_pem};
    for (int k = 0; k < 3; k++) {
      g_checksum_update(sum, (const guchar *)(parts[k] ? parts[k] : ""), -1);
      g_checksum_update(sum, (const guchar *)"\n--\n", 4);
    }
    s->channel_key = g_strconcat("tls:", g_checksum_get_string(sum), NULL);
    g_checksum_free(sum);
  } else {
    s->channel_key = g_strdup("plain");
  }
  *out = s;
  return NULL;
}

weft__security_t *weft__security_ref(weft__security_t *s) {
  if (s) g_atomic_int_inc(&s->refcount);
  return s;
}

void weft__security_unref(weft__security_t *s) {
  if (!s || !g_atomic_int_dec_and_test(&s->refcount)) return;
  g_free(s->ca_pem);
  g_free(s->cert_pem);
  if (s->key_pem) memset(s->key_pem, 0, strlen(s->key_pem));
  g_free(s->key_pem);
  if (s->token) memset(s->token, 0, strlen(s->token));
  if (s->auth_value) memset(s->auth_value, 0, strlen(s->auth_value));
  g_free(s->token);
  g_free(s->auth_value);
  g_free(s->channel_key);
  g_free(s);
}

bool weft__security_tls(const weft__security_t *s) { return s && s->tls; }

bool weft__security_mutual(const weft__security_t *s) { return s && s->tls && s->ca_pem; }

bool weft__security_has_token(const weft__security_t *s) { return s && s->token; }

const char *weft__security_channel_key(const weft__security_t *s) {
  return s ? s->channel_key : "plain";
}

grpc_server_credentials *weft__security_server_credentials(const weft__security_t *s) {
  if (!s || !s->tls || !s->cert_pem) return grpc_insecure_server_credentials_create();
  grpc_ssl_pem_key_cert_pair pair = {s->key_pem, s->cert_pem};
  return grpc_ssl_server_credentials_create_ex(
      s->ca_pem, &pair, 1,
      s->ca_pem ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
      NULL);
}

grpc_channel_credentials *weft__security_channel_credentials(const weft__security_t *s) {
  if (!s || !s->tls) return grpc_insecure_credentials_create();
  grpc_ssl_pem_key_cert_pair pair = {s->key_pem, s->cert_pem};
  /* A server without a CA file verifies its peer tasks against its own certificate chain: the
   * tasks of a cluster share one certificate, or chains that end in the same CA (a full-chain
   * file). The alternative, the system's roots, would make every private CA fail. */
  const char *roots = s->ca_pem ? s->ca_pem : (s->server ? s->cert_pem : NULL);
  return grpc_ssl_credentials_create(roots, s->cert_pem ? &pair : NULL, NULL, NULL);
}

const char *weft__security_auth_value(const weft__security_t *s) {
  return s ? s->auth_value : NULL;
}

const char *weft__security_auth_key(void) { return AUTH_KEY; }

/* Equal strings, in time that depends only on the length of `expected`. */
static bool equal_constant_time(const char *expected, size_t n_expected, const char *given,
                                size_t n_given) {
  volatile unsigned char diff = (unsigned char)(n_expected != n_given);
  for (size_t k = 0; k < n_expected; k++) {
    unsigned char g = k < n_given ? (unsigned char)given[k] : 0;
    diff |= (unsigned char)expected[k] ^ g;
  }
  return diff == 0;
}

bool weft__security_client_allowed(const weft__security_t *server, const weft__security_t *client) {
  if (!server || !server->token) return true;
  if (!client || !client->token) return false;
  return equal_constant_time(server->token, strlen(server->token), client->token,
                             strlen(client->token));
}

weft_status_t *weft__security_check_call(const weft__security_t *s, const grpc_metadata_array *md,
                                         const char *method) {
  if (!s || !s->token) return NULL;
  const grpc_slice *value = NULL;
  for (size_t k = 0; k < md->count; k++) {
    if (grpc_slice_str_cmp(md->metadata[k].key, AUTH_KEY) == 0) {
      value = &md->metadata[k].value;
      break;
    }
  }
  if (!value) {
    return weft_status_new(WEFT_UNAUTHENTICATED,
                           "%s: this server requires the cluster auth token and the call carried "
                           "none (set --auth-token-file, or "
                           "weft_session_options_set_auth_token_file)",
                           method);
  }
  size_t n = GRPC_SLICE_LENGTH(*value);
  const char *bytes = (const char *)GRPC_SLICE_START_PTR(*value);
  size_t n_auth = strlen(s->auth_value);
  if (!equal_constant_time(s->auth_value, n_auth, bytes, n)) {
    return weft_status_new(WEFT_UNAUTHENTICATED,
                           "%s: the call's auth token is wrong (it does not match this server's "
                           "cluster token)",
                           method);
  }
  return NULL;
}

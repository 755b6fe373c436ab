/* TensorFlow's "Hello, distributed TensorFlow!" in Weft's C API: start a local one-task server
 * (TensorFlow's create_local_server), open a session on its grpc:// target, and fetch a string
 * constant through it. With --target grpc://HOST:PORT it uses a running `weftd` instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

static void check(weft_status_t *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "hello_distributed: %s: %s: %s\n", what, weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  exit(1);
}

int main(int argc, char **argv) {
  const char *target = NULL;
  if (argc == 3 && strcmp(argv[1], "--target") == 0) {
    target = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "Usage: hello_distributed [--target grpc://HOST:PORT]\n");
    return 2;
  }
  weft_server_t *server = NULL;
  if (!target) {
    check(weft_server_new_local(true, &server), "create_local_server");
    target = weft_server_target(server);
  }
  printf("Server target: %s\n", target);

  const char *text = "Hello, distributed TensorFlow!";
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_tensor_t *value = weft_tensor_new_string(text, strlen(text));
  weft_const(g, "c", value, &st);
  weft_tensor_unref(value);
  check(st, "constant");

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_target(opts, target);
  weft_session_t *s = weft_session_new(g, opts, &st);
  check(st, "session");
  const char *fetch[] = {"c"};
  weft_tensor_t *out = NULL;
  check(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0), "run");
  const weft_string_t *str = weft_tensor_data(out);
  printf("%.*s\n", (int)str->len, str->data);
  weft_tensor_unref(out);

  check(weft_session_close(s), "close");
  weft_session_free(s);
  weft_session_options_free(opts);
  weft_graph_free(g);
  weft_server_free(server);
  return 0;
}

/* A client of the SIMACC backend, built against the installed client library (pkg-config weft):
 * a small dense layer y = softmax(relu(x W + b)) pinned to /device:SIMACC:0. SIMACC has kernels
 * for MatMul, AddV2 and Relu but none for Softmax, so the session runs with soft placement, which
 * moves Softmax to a device that has a kernel for it (the first GPU-like one, else the CPU); the
 * program prints where every node ran (log_device_placement prints it too) and the result.
 *
 *   WEFT_PLUGIN_PATH=<folder of libweft-simacc.so> ./simacc-demo
 *
 * Exit status 0 when the numbers match the same layer computed here in double precision. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

static int fail(const char *what, weft_status_t *st) {
  fprintf(stderr, "simacc-demo: %s: %s\n", what, weft_status_message(st));
  weft_status_free(st);
  return 1;
}

int main(void) {
  const float x[2][3] = {{1, -2, 0.5f}, {0.25f, 3, -1}};
  const float w[3][4] = {{0.5f, -1, 2, 0}, {1, 0.5f, -0.5f, 0.25f}, {-1, 2, 1, -2}};
  const float b[4] = {0.1f, -0.2f, 0.3f, 0};
  const int64_t dx[2] = {2, 3}, dw[2] = {3, 4}, db[1] = {4};

  weft_status_t *st = NULL;
  weft_graph_t *g = weft_graph_new();
  weft_tensor_t *tx = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dx, x, sizeof x, &st);
  weft_tensor_t *tw = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dw, w, sizeof w, &st);
  weft_tensor_t *tb = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, db, b, sizeof b, &st);
  if (st) return fail("tensors", st);

  weft_graph_push_device(g, "/device:SIMACC:0");
  weft_output_t in = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, dx, &st);
  weft_output_t W = st ? in : weft_const(g, "W", tw, &st);
  weft_output_t B = st ? in : weft_const(g, "b", tb, &st);
  weft_output_t mm = st ? in : weft_matmul(g, "matmul", in, W, false, false, &st);
  weft_output_t add = st ? in : weft_binary(g, "AddV2", "add", mm, B, &st);
  weft_output_t relu = st ? in : weft_unary(g, "Relu", "relu", add, &st);
  weft_output_t probs = st ? in : weft_unary(g, "Softmax", "softmax", relu, &st);
  weft_graph_pop_device(g);
  (void)probs;
  if (st) return fail("building the graph", st);

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, true);
  weft_session_options_set_log_device_placement(opts, true);
  weft_session_t *s = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  if (st) return fail("creating the session", st);
  const char *feed = "x", *fetch = "softmax";
  weft_tensor_t *y = NULL;
  st = weft_session_run(s, &feed, &tx, 1, &fetch, &y, 1, NULL, 0);
  if (st) return fail("running", st);

  const char *nodes[] = {"W", "b", "matmul", "add", "relu", "softmax"};
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
    printf("placement %s %s\n", nodes[i], weft_session_node_device(s, nodes[i]));

  /* The same layer in double. */
  int bad = 0;
  const float *got = weft_tensor_data(y);
  for (int r = 0; r < 2; r++) {
    double h[4], sum = 0;
    for (int j = 0; j < 4; j++) {
      double acc = b[j];
      for (int k = 0; k < 3; k++) acc += (double)x[r][k] * w[k][j];
      h[j] = acc > 0 ? acc : 0;
    }
    double mx = h[0];
    for (int j = 1; j < 4; j++) mx = h[j] > mx ? h[j] : mx;
    for (int j = 0; j < 4; j++) sum += exp(h[j] - mx);
    printf("y[%d] =", r);
    for (int j = 0; j < 4; j++) {
      double want = exp(h[j] - mx) / sum;
      printf(" %.6f", got[r * 4 + j]);
      if (fabs(got[r * 4 + j] - want) > 1e-5) bad = 1;
    }
    printf("\n");
  }
  printf("%s\n", bad ? "MISMATCH" : "OK");

  weft_tensor_unref(y);
  weft_tensor_unref(tx);
  weft_tensor_unref(tw);
  weft_tensor_unref(tb);
  weft_session_free(s);
  weft_graph_free(g);
  return bad;
}

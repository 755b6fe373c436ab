/* The local part of TensorFlow's device-placement guide, in Weft's C API: a variable pinned to the
 * CPU, a device function that sends MatMuls to the GPU when there is one, an integer variable
 * pinned to /gpu:0 that soft placement moves to a device with a kernel (unless the GPU is CUDA's),
 * and control dependencies that order an update before a read. Runs with log_device_placement
 * on, so it prints where every node went, then the results. This is the demo `scripts/demo.sh`
 * runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

static void check(weft_status_t *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "placement example: %s: %s: %s\n", what, weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  exit(1);
}

/* TensorFlow's classic device function: MatMul on the GPU, everything else on the CPU. */
static const char *matmul_on_gpu(void *user_data, const char *op, const char *node_name) {
  (void)user_data;
  (void)node_name;
  return strcmp(op, "MatMul") == 0 ? "/gpu:0" : "/cpu:0";
}

static weft_tensor_t *matrix(int rows, int cols, float start) {
  int64_t dims[2] = {rows, cols};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 2, dims);
  float *p = weft_tensor_data(t);
  for (int k = 0; k < rows * cols; k++) p[k] = start + (float)k;
  return t;
}

static void print_fetch(weft_session_t *s, const char *name) {
  weft_tensor_t *out = NULL;
  const char *fetch[] = {name};
  check(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0), name);
  char *text = weft_tensor_to_string(out, 16);
  printf("%s = %s\n", name, text);
  free(text);
  weft_tensor_unref(out);
}

int main(void) {
  weft_plugins_load_default();
  printf("Devices:\n");
  for (int k = 0; k < weft_devices_count(); k++) {
    const weft_device_info_t *d = weft_devices_get(k);
    printf("  %s (%s)\n", d->name, d->description);
  }

  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;

  /* 1. A variable pinned to the CPU, with its initializer and read colocated with it. */
  weft_graph_push_device(g, "/cpu:0");
  weft_tensor_t *w0 = matrix(2, 3, 1.0f);
  weft_output_t w_init = weft_const(g, "weights_init", w0, &st);
  check(st, "weights_init");
  weft_tensor_unref(w0);
  weft_output_t weights = weft_variable(g, "weights", w_init, &st);
  check(st, "weights");
  weft_graph_pop_device(g);

  /* 2. A device function: the MatMul asks for /gpu:0, its inputs for /cpu:0. */
  weft_graph_push_device_fn(g, matmul_on_gpu, NULL);
  weft_tensor_t *x0 = matrix(3, 2, 0.5f);
  weft_output_t x = weft_const(g, "x", x0, &st);
  check(st, "x");
  weft_tensor_unref(x0);
  weft_matmul(g, "product", weights, x, false, false, &st);
  check(st, "product");
  weft_graph_pop_device(g);

  /* 3. An integer step variable pinned to /gpu:0. TensorFlow's guide uses int32, which has no GPU
   * kernel there; Weft's Vulkan backend does have int32 variables, so the step is int64 (as
   * TensorFlow's own global_step is), which Vulkan does not support: soft placement moves it,
   * with its initializer and increment, to the CPU. On a CUDA device it stays: CUDA has int64
   * variables, as TensorFlow's GPU kernels do. */
  weft_graph_push_device(g, "/gpu:0");
  weft_tensor_t *zero = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
  weft_output_t step_init = weft_const(g, "step_init", zero, &st);
  check(st, "step_init");
  weft_tensor_unref(zero);
  weft_variable(g, "global_step", step_init, &st);
  check(st, "global_step");
  weft_graph_pop_device(g);

  /* 4. Control dependencies: the step is incremented before it is read. */
  weft_tensor_t *one = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
  *(int64_t *)weft_tensor_data(one) = 1;
  weft_output_t one_c = weft_const(g, "one", one, &st);
  check(st, "one");
  weft_tensor_unref(one);
  weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "increment_step");
  weft_op_add_input(b, weft_out(weft_graph_node(g, "global_step"), 0));
  weft_op_add_input(b, one_c);
  weft_node_t *increment = NULL;
  check(weft_op_finish(b, &increment), "increment_step");
  weft_graph_push_control_deps(g, &increment, 1);
  weft_unary(g, "Identity", "step_after_increment",
             weft_out(weft_graph_node(g, "global_step"), 0), &st);
  check(st, "step_after_increment");
  weft_graph_pop_control_deps(g);

  weft_global_variables_initializer(g, "init", &st);
  check(st, "init");

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_log_device_placement(opts, true);
  weft_session_options_set_allow_soft_placement(opts, true);
  weft_session_t *s = weft_session_new(g, opts, &st);
  check(st, "session");
  weft_session_options_free(opts);

  printf("Placement (log_device_placement, on stderr):\n");
  fflush(stdout);
  const char *init[] = {"init"};
  check(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1), "init");
  print_fetch(s, "product");
  print_fetch(s, "step_after_increment");
  print_fetch(s, "step_after_increment");
  printf("global_step was placed on %s\n", weft_session_node_device(s, "global_step"));

  weft_session_free(s);
  weft_graph_free(g);
  return 0;
}

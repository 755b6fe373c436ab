/* frames_internal.h: the executor for steps with TensorFlow 1.x control flow (frames.c). The
 * plain executor (executor.c) hands a step to it when the step has Switch, Merge, Enter, Exit,
 * NextIteration, LoopCond or ControlTrigger nodes. */
#ifndef WEFT_FRAMES_INTERNAL_H
#define WEFT_FRAMES_INTERNAL_H

#include "exec_internal.h"

typedef struct weft__cf_executor weft__cf_executor_t;

/* Whether the step has control-flow nodes (and so needs this executor). */
bool weft__cf_needed(const weft__executor_params_t *params);
weft_status_t *weft__cf_executor_new(const weft__executor_params_t *params,
                                     weft__cf_executor_t **out);
void weft__cf_executor_free(weft__cf_executor_t *ex);
/* As weft__executor_run; a fetch whose value is dead is INVALID_ARGUMENT "Retval[i] does not
 * have value", TensorFlow's words. */
weft_status_t *weft__cf_executor_run(weft__cf_executor_t *ex, const weft__run_args_t *args,
                                     weft_tensor_t **fetched);

/* What lives as long as one step (TensorFlow's per-step container): the TensorArrays. Each step
 * has one, zeroed (g_mutex_init) when the step starts; kernels reach it through
 * weft_kernel_ctx.step_resources. */
struct weft__step_resources {
  GMutex lock;
  GHashTable *arrays; /* name -> TensorArray (flow_kernels.c), made on first use */
  GHashTable *stacks; /* name -> stack (stack_kernels.c), made on first use */
};
/* Frees what the step made. */
void weft__step_resources_clear(weft__step_resources_t *r);

/* Registers the core's CPU kernels for the control-flow ops, Assert and the TensorArray ops
 * (flow_kernels.c); called once when the plugins are loaded. */
void weft__flow_kernels_register(void);
/* The stack ops' kernels (stack_kernels.c), registered by weft__flow_kernels_register, and the
 * step's stacks, freed by weft__step_resources_clear. */
void weft__stack_kernels_register(void);
void weft__step_stacks_clear(weft__step_resources_t *r);

#endif /* WEFT_FRAMES_INTERNAL_H */

/* vk_internal.h: what the files of the Vulkan plugin share: the Vulkan entry points loaded at run
 * time, the physical devices found, the device API the kernels record work through (memory,
 * dispatch of the embedded compute shaders, fills and copies), and the kernel helpers.
 *
 * The plugin sees only the SDK headers (weft/plugin.h, weft/types.h), the helpers it shares with
 * the other plugins (plugins/common/plugin_common.h), the Vulkan headers, libc, libdl and
 * pthreads. It never links libvulkan: the loader is dlopen'ed when devices are first
 * counted, so a machine without Vulkan still loads the plugin and is told why there is no
 * device. Names shared between files start with weft__vk_ and stay hidden (the module is built
 * with hidden visibility; only weft_plugin_entry is exported). */
#ifndef WEFT_VK_INTERNAL_H
#define WEFT_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "gpu_kernels.h"
#include "plugin_common.h"
#include "shaders/vk_ops.h"
#include "weft/plugin.h"
#include "weft/types.h"
#include "weft/vulkan.h"

#define WEFT_VK_PLUGIN_NAME "vulkan"
#define WEFT_VK_DEVICE_TYPE "VULKAN"

/* Helpers that are the same in every plugin live in plugins/common (weft_pc_*); the Vulkan
 * kernels call them under the weft__vk_ names used here, so that the plugin's code reads one way
 * whichever file a helper lives in. */

/* The host table handed to init(); valid for the life of the process once the plugin loaded. */
#define weft__vk_host weft_pc_host

/* Returns from the enclosing function when a status-returning call fails. */

/* ---------------------------------------------------------------------------------------------
 * Vulkan entry points (vk_loader.c), resolved through vkGetInstanceProcAddr once the instance
 * exists. Device-level functions come through the instance too (the loader's trampolines
 * dispatch them to the right driver), so one table serves every device. */

#define WEFT_VK_INSTANCE_FNS(X)                 \
  X(DestroyInstance)                            \
  X(EnumeratePhysicalDevices)                   \
  X(GetPhysicalDeviceProperties)                \
  X(GetPhysicalDeviceQueueFamilyProperties)     \
  X(GetPhysicalDeviceMemoryProperties)          \
  X(EnumerateDeviceExtensionProperties)         \
  X(CreateDevice)                               \
  X(DestroyDevice)                              \
  X(GetDeviceQueue)                             \
  X(DeviceWaitIdle)                             \
  X(QueueSubmit)                                \
  X(CreateCommandPool)                          \
  X(DestroyCommandPool)                         \
  X(AllocateCommandBuffers)                     \
  X(FreeCommandBuffers)                         \
  X(BeginCommandBuffer)                         \
  X(EndCommandBuffer)                           \
  X(ResetCommandBuffer)                         \
  X(CreateFence)                                \
  X(DestroyFence)                               \
  X(WaitForFences)                              \
  X(ResetFences)                                \
  X(CreateBuffer)                               \
  X(DestroyBuffer)                              \
  X(GetBufferMemoryRequirements)                \
  X(AllocateMemory)                             \
  X(FreeMemory)                                 \
  X(BindBufferMemory)                           \
  X(MapMemory)                                  \
  X(UnmapMemory)                                \
  X(CreateShaderModule)                         \
  X(DestroyShaderModule)                        \
  X(CreateDescriptorSetLayout)                  \
  X(DestroyDescriptorSetLayout)                 \
  X(CreatePipelineLayout)                       \
  X(DestroyPipelineLayout)                      \
  X(CreatePipelineCache)                        \
  X(DestroyPipelineCache)                       \
  X(CreateComputePipelines)                     \
  X(DestroyPipeline)                            \
  X(CreateDescriptorPool)                       \
  X(DestroyDescriptorPool)                      \
  X(ResetDescriptorPool)                        \
  X(AllocateDescriptorSets)                     \
  X(UpdateDescriptorSets)                       \
  X(CmdBindPipeline)                            \
  X(CmdBindDescriptorSets)                      \
  X(CmdPushConstants)                           \
  X(CmdDispatch)                                \
  X(CmdCopyBuffer)                              \
  X(CmdFillBuffer)                              \
  X(CmdPipelineBarrier)

typedef struct weft_vk_fns {
  PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
  PFN_vkCreateInstance CreateInstance;
  PFN_vkEnumerateInstanceVersion EnumerateInstanceVersion; /* NULL on a Vulkan 1.0 loader */
  PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2; /* NULL before 1.1 */
#define WEFT_VK_FN_FIELD(name) PFN_vk##name name;
  WEFT_VK_INSTANCE_FNS(WEFT_VK_FN_FIELD)
#undef WEFT_VK_FN_FIELD
} weft_vk_fns_t;

extern weft_vk_fns_t weft__vkf;

/* One physical device with a compute queue, as enumerated (vk_loader.c). */
typedef struct weft_vk_physical {
  VkPhysicalDevice handle;
  uint32_t queue_family;
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties memory;
  weft_device_props_t weft_props; /* what device_properties reports */
} weft_vk_physical_t;

/* Loads libvulkan.so.1, creates the instance and enumerates devices, once per process. Returns
 * the number of usable devices; when 0, *why_none is a static sentence saying why. */
int weft__vk_instance_devices(const char **why_none);
const weft_vk_physical_t *weft__vk_physical(int ordinal);
VkInstance weft__vk_instance(void);
/* Destroys the instance (after every device is closed). */
void weft__vk_instance_shutdown(void);
/* (Re-)registers the exit handler that closes every open device and destroys the instance, so
 * that drivers are torn down cleanly (and leak checkers stay quiet). Called after each step that
 * may make the driver register exit handlers of its own: handlers run last-registered first,
 * and ours must run before the driver's. The handler is idempotent. */
void weft__vk_arm_exit_handler(void);
/* "VkResult -4 (VK_ERROR_DEVICE_LOST)" style names for messages. */
const char *weft__vk_result_name(VkResult r);

/* ---------------------------------------------------------------------------------------------
 * Embedded SPIR-V (generated vk_spirv.c) and the shaders the kernels use. */

typedef struct weft_vk_spirv {
  const char *name;
  const uint32_t *code;
  size_t size; /* bytes */
} weft_vk_spirv_t;

extern const weft_vk_spirv_t weft__vk_spirv_table[];
extern const size_t weft__vk_spirv_count;

typedef enum weft_vk_shader {
  VK_SH_UNARY = 0,
  VK_SH_BINARY,
  VK_SH_CAST,
  VK_SH_GATHER,
  VK_SH_MATMUL,
  VK_SH_REDUCE_ROWS,
  VK_SH_REDUCE_COLS,
  VK_SH_SOFTMAX,
  VK_SH_SELECT,
  VK_SH_RESIZE,
  VK_SH_BATCH_NORM,
  VK_SH_DEPTHWISE,
  VK_SH_COUNT
} weft_vk_shader_t;

/* The SPIR-V of a shader, or NULL if the build lacks it. */
const weft_vk_spirv_t *weft__vk_shader_code(weft_vk_shader_t shader);
const char *weft__vk_shader_name(weft_vk_shader_t shader);

/* ---------------------------------------------------------------------------------------------
 * Devices: vk_device.c (open, close), vk_alloc.c (memory), vk_staging.c (batches, copies, fills),
 * vk_pipeline.c (dispatch), over the record and the locking rules in vk_device.h. The backend's
 * device handle is a weft_vk_device_t*; a device pointer (what alloc hands the core and kernels
 * see in weft_tensor_view_t.data) is a weft_vk_mem_t*.
 *
 * Work is recorded into a command buffer under the device lock and submitted in batches: when a
 * batch grows past a threshold, when the host reads device memory (copy_from_device) and on
 * synchronize. Every recorded command is preceded by a full compute/transfer memory barrier, so
 * commands run in the order they were recorded, which is the order the executor issued them. */

typedef struct weft_vk_device weft_vk_device_t;
typedef struct weft_vk_block weft_vk_block_t;

typedef struct weft_vk_mem {
  VkBuffer buffer;        /* the block's buffer */
  VkDeviceSize offset;    /* where this allocation starts in it */
  VkDeviceSize size;      /* bytes asked for */
  VkDeviceSize reserved;  /* bytes set aside (size rounded up to the allocation alignment) */
  weft_vk_block_t *block;
  struct weft_vk_mem *live_next; /* the device's set of live allocations (weft__vk_lookup) */
} weft_vk_mem_t;

weft_status_t *weft__vk_device_open(int ordinal, const weft_device_options_t *opts,
                                    weft_vk_device_t **out);
/* The device interface (plugins/common/gpu_kernels.h): close, alloc, free, the copies,
 * synchronize and memory_usage, with weft_backend_t's signatures (device: a weft_vk_device_t *). */
WEFT_PC_DEVICE_API(weft__vk)
/* Closes every device still open (at process exit); false if one was busy and stayed open. */
bool weft__vk_close_all_devices(void);

/* "VULKAN:0" */
const char *weft__vk_device_name(const weft_vk_device_t *dev);
/* Most workgroups one dispatch may have along x (and y). */
uint32_t weft__vk_max_groups(const weft_vk_device_t *dev);
/* Largest buffer range a shader may bind. */
uint64_t weft__vk_max_binding(const weft_vk_device_t *dev);

/* Records one dispatch of `shader` with push constants (at most 128 bytes, a multiple of 4) and
 * up to 4 buffers bound at bindings 0..n_bufs-1 (device pointers; NULL binds a dummy). */
#define VK_MAX_BINDINGS 4
#define VK_MAX_PUSH 128
weft_status_t *weft__vk_dispatch(weft_vk_device_t *dev, weft_vk_shader_t shader, const void *push,
                                 uint32_t push_size, void *const *bufs, int n_bufs, uint32_t gx,
                                 uint32_t gy, uint32_t gz);
/* The same for the shaders that take their op and dtype (VK_DT_*) as specialization constants
 * (SPEC_OP, SPEC_DTYPE: unary, binary and the reductions): the pipeline of that pair, made on
 * first use and kept with the device. weft__vk_dispatch refuses those shaders. */
weft_status_t *weft__vk_dispatch_op(weft_vk_device_t *dev, weft_vk_shader_t shader, uint32_t op,
                                    uint32_t dtype, const void *push, uint32_t push_size,
                                    void *const *bufs, int n_bufs, uint32_t gx, uint32_t gy,
                                    uint32_t gz);
/* ---- What the device services (vk_services.c) lend other plugins' kernels ---- */

VkDevice weft__vk_device_handle(const weft_vk_device_t *dev);
uint32_t weft__vk_queue_family(const weft_vk_device_t *dev);
const VkPhysicalDeviceLimits *weft__vk_limits(const weft_vk_device_t *dev);
/* The allocation behind a device pointer, when it is a live allocation of dev; else
 * INVALID_ARGUMENT naming `what` (no memory behind ptr is read before it is found in the set). */
weft_status_t *weft__vk_lookup(weft_vk_device_t *dev, const void *ptr, const char *what,
                               weft_vk_mem_t *out);
/* The cached pipeline of another plugin's SPIR-V (created on first request; sizes checked by the
 * caller), laid out like the backend's own: VK_MAX_BINDINGS storage buffers, VK_MAX_PUSH bytes of
 * push constants. */
weft_status_t *weft__vk_foreign_pipeline(weft_vk_device_t *dev, const char *name,
                                         const uint32_t *spirv, size_t spirv_bytes,
                                         uint32_t push_size, uint32_t n_buffers,
                                         weft_vulkan_pipeline_t **out);
/* Records one dispatch of a foreign pipeline over exactly its n_buffers device pointers. */
weft_status_t *weft__vk_foreign_dispatch(weft_vk_device_t *dev, weft_vulkan_pipeline_t *pipeline,
                                         const void *push, uint32_t push_size,
                                         void *const *bufs, uint32_t n_bufs, uint32_t gx,
                                         uint32_t gy, uint32_t gz);

/* Records a fill of the first nbytes (rounded up to 4) of dst with a 32-bit pattern. */
weft_status_t *weft__vk_fill(weft_vk_device_t *dev, void *dst, size_t nbytes, uint32_t pattern);

/* ---------------------------------------------------------------------------------------------
 * Kernel helpers (vk_util.c). */

/* A new status naming the kernel's node: "node 'name': message". */
#define weft__vk_error weft_pc_error
#define VK_SHAPE_STR_LEN WEFT_PC_SHAPE_STR_LEN
#define weft__vk_shape_str weft_pc_shape_str
#define weft__vk_dtype_name weft_pc_dtype_name
#define weft__vk_dtype_size weft_pc_dtype_size
/* The shader dtype code of a tensor dtype, or -1 for one the shaders do not handle. */
int weft__vk_dt(weft_dtype_t dtype);

weft_vk_device_t *weft__vk_ctx_device(weft_kernel_ctx_t *ctx);
#define weft__vk_input weft_pc_input
#define weft__vk_output weft_pc_output
/* Device scratch memory freed after compute returns (work recorded before then keeps using it
 * safely: later users of the memory are recorded after). */
weft_status_t *weft__vk_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out);
/* Reads an integer tensor (host memory) of at most max_n elements into out. */
#define weft__vk_read_indices weft_pc_read_indices
#define weft__vk_attr_bool weft_pc_attr_bool
#define weft__vk_attr_float weft_pc_attr_float
/* Fails with INVALID_ARGUMENT when a tensor has more elements or bytes than a shader can index
 * (32-bit element indices, the device's largest binding). */
weft_status_t *weft__vk_check_size(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                   const char *what);
/* Workgroups for n items of VK_LOCAL_SIZE threads (grid-stride shaders cover the rest). */
uint32_t weft__vk_groups(weft_kernel_ctx_t *ctx, uint64_t n_items);

/* Broadcasting (TensorFlow/numpy rules) of 2 or 3 operands, collapsed: size-1 dims dropped,
 * neighbouring dims with the same broadcast pattern merged (rank >= 1 always). */
typedef weft_pc_bcast_t weft_vk_bcast_t;
/* INVALID_ARGUMENT "Incompatible shapes: [..] vs. [..]" when they do not broadcast. */
#define weft__vk_bcast_init weft_pc_bcast_init

/* Records z = op(x, y) by the binary shader (VK_BIN_* op, alpha its parameter) over the
 * broadcast geometry bc of x (input 0) and y (input 1); z may be x (in place). In vk_launch.c. */
weft_status_t *weft__vk_binary(weft_kernel_ctx_t *ctx, uint32_t op, float alpha,
                               weft_dtype_t dtype, const weft_vk_bcast_t *bc, void *x, void *y,
                               void *z);

/* Records out = gather(in): out element i (row-major over dims[0..rank)) is in element
 * sum(coord[d] * strides[d]). bool tensors (1-byte elements) and 4-byte elements. */
weft_status_t *weft__vk_gather(weft_kernel_ctx_t *ctx, void *out, const void *in,
                               weft_dtype_t dtype, int rank, const int64_t *dims,
                               const int64_t *strides);
/* Most dims the copies accept before collapsing (Tile views each dim as two). */
#define VK_MAX_COPY_DIMS (2 * WEFT_MAX_RANK)
/* The general form: element coord goes from in[in_off + coord . in_strides] to
 * out[out_off + coord . out_strides] (elements, strides >= 0; out_strides NULL: dense). bool
 * only into a dense out at an offset that is a multiple of 4. */
weft_status_t *weft__vk_copy_strided(weft_kernel_ctx_t *ctx, void *out, int64_t out_off,
                                     const int64_t *out_strides, const void *in, int64_t in_off,
                                     const int64_t *in_strides, weft_dtype_t dtype, int rank,
                                     const int64_t *dims);

/* Registers one kernel on VULKAN (at most one type constraint; weft_pc_kernel_spec_t). */
typedef weft_pc_kernel_spec_t weft_vk_kernel_spec_t;
weft_status_t *weft__vk_register(const weft_registrar_t *reg, const weft_vk_kernel_spec_t *spec);
/* Registers op `name` of a kernel table: compute with user_data, constrained on "T" to
 * dtypes[0..n_dtypes), or unconstrained when dtypes is NULL (a bool-only op without T). */
weft_status_t *weft__vk_register_typed(const weft_registrar_t *reg, const char *name,
                                       weft_kernel_compute_fn compute,
                                       const char *const *host_memory, void *user_data,
                                       const weft_dtype_t *dtypes, size_t n_dtypes);
/* The same with several type constraints (Cast's SrcT and DstT). */
weft_status_t *weft__vk_register_full(const weft_registrar_t *reg, const char *op,
                                      const weft_type_constraint_t *constraints,
                                      size_t n_constraints, const char *const *host_memory,
                                      weft_kernel_compute_fn compute, void *user_data);

extern const weft_dtype_t weft__vk_types_f[];    /* float */
extern const weft_dtype_t weft__vk_types_fi[];   /* float, int32 */
extern const weft_dtype_t weft__vk_types_fib[];  /* float, int32, bool */

/* The device steps of the kernels the GPU backends share (vk_launch.c); init installs it as
 * weft_pc_launch. */
extern const weft_pc_launch_t weft__vk_launch;

weft_status_t *weft__vk_register_state(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_math(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_nn(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_array(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_image(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_norm(const weft_registrar_t *reg);
weft_status_t *weft__vk_register_conv(const weft_registrar_t *reg);

#endif /* WEFT_VK_INTERNAL_H */

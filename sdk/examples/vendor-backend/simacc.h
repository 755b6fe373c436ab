/* What the files of the SIMACC example backend share: the simulated device, its memory handles
 * and the kernels' registration. */
#ifndef SIMACC_H
#define SIMACC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"

#define SIMACC_DEVICE_TYPE "SIMACC"

/* The host table init() received; valid for the life of the process. */
extern const weft_host_t *simacc_host;

typedef struct simacc_device simacc_device_t;

/* A device pointer as Weft sees it (a view's data): a handle, never the bytes themselves. The
 * bytes live in a separate allocation, the simulated device memory, which only this plugin's
 * kernels and copy functions touch. */
typedef struct simacc_buf {
  uint32_t magic; /* SIMACC_BUF_MAGIC while the buffer is alive */
  size_t size;
  simacc_device_t *device;
  unsigned char *bytes;
} simacc_buf_t;

#define SIMACC_BUF_MAGIC 0x51AACC01u

/* The device memory behind a view's data (NULL for an empty tensor); NULL and *st set when the
 * pointer is not a live SIMACC buffer (a kernel handed host memory by mistake). */
void *simacc_bytes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *view, weft_status_t **st);

/* Registers every SIMACC kernel (simacc_kernels.c). */
weft_status_t *simacc_register_kernels(const weft_registrar_t *reg);

#endif /* SIMACC_H */

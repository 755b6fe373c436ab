/* What the files of the FusedSwish example plugin share. */
#ifndef SWISH_H
#define SWISH_H

#include "weft/plugin.h"

/* The host table init() received; valid for the life of the process. */
extern const weft_host_t *swish_host;

#ifdef SWISH_WITH_VULKAN
/* Registers the VULKAN kernel of FusedSwish (swish_vulkan.c). */
weft_status_t *swish_register_vulkan(const weft_registrar_t *reg);
#endif

#endif /* SWISH_H */

/* memory.c: weft_free and weft_strv_free, which free what the client API hands to its caller, so
 * that weft.h names no allocator of GLib's. The library allocates those strings and buffers
 * with GLib, whose allocator is the C library's malloc (GLib >= 2.46), so free() and g_free()
 * stay correct for programs written before weft_free existed. */
#include "base_internal.h"

void weft_free(void *ptr) { g_free(ptr); }

void weft_strv_free(char **strv) { g_strfreev(strv); }

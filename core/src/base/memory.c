/* memory.c: weft_free and weft_strv_free, which free what the client API hands to its caller, so
 * that weft.h names no allocator of GLib's. The library allocates those strings and buffers
 * with GLib, whose allocator is the C library's malloc (GLib >= 2.46), so free() and g_free()
 * stay correct for programs written before weft_free existed. And weft__malloc_trim, the one
 * place the library hands free memory back to the system. */
#include "base_internal.h"

#include <malloc.h>

void weft_free(void *ptr) { g_free(ptr); }

void weft_strv_free(char **strv) { g_strfreev(strv); }

void weft__malloc_trim(void) {
#if !defined(__SANITIZE_ADDRESS__)
  malloc_trim(0);
#endif
}

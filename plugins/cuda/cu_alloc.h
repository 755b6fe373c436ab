/* cu_alloc.h: the CUDA plugin's caching device-memory allocator (an "arena" per device), in the
 * spirit of TensorFlow's BFC allocator: device memory is reserved in large regions and carved
 * into chunks (256-byte granularity, best fit from size-class bins, split on allocation,
 * neighbours merged on free), so the hot path never calls cudaMalloc or cudaFree.
 *
 * The arena never touches the memory it manages: addresses are numbers and regions come from
 * callbacks, so the same code runs over cudaMalloc in the plugin and over fake regions in
 * tests/test_cuda.c on machines without a GPU. It is plain C with no CUDA or Weft dependency.
 *
 * Thread safety: every function takes the arena's lock. Ownership: the arena owns its
 * bookkeeping; regions are released through the callbacks by weft__cu_arena_destroy (and, when
 * growing fails, regions that are entirely free are released and the growth retried). */
#ifndef WEFT_CU_ALLOC_H
#define WEFT_CU_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Every chunk starts on, and is a multiple of, this many bytes. */
#define WEFT_CU_ARENA_ALIGN 256u

typedef struct weft_cu_arena weft_cu_arena_t;

typedef struct weft_cu_arena_ops {
  /* Reserves `bytes` of device memory at *base; returns 0, or non-zero when the device has no
   * room for it. */
  int (*reserve)(void *ctx, size_t bytes, void **base);
  /* Gives a region back (base as reserve returned it). */
  void (*release)(void *ctx, void *base);
  void *ctx;
} weft_cu_arena_ops_t;

typedef enum weft_cu_arena_result {
  WEFT_CU_ARENA_OK = 0,
  WEFT_CU_ARENA_OVER_LIMIT,   /* the arena's limit (or its fixed pool) has no room */
  WEFT_CU_ARENA_DEVICE_FULL,  /* reserve failed: the device itself has no room */
  WEFT_CU_ARENA_HOST_MEMORY,  /* the bookkeeping could not get host memory */
  WEFT_CU_ARENA_TOO_LARGE,    /* the size overflows */
} weft_cu_arena_result_t;

typedef struct weft_cu_arena_stats {
  uint64_t in_use;       /* bytes in chunks handed out (rounded sizes) */
  uint64_t peak_in_use;
  uint64_t reserved;     /* bytes of regions taken from the device */
  uint64_t limit;        /* 0: none */
  uint64_t largest_free; /* largest free chunk */
  uint64_t n_live;       /* allocations not yet freed */
  uint64_t n_allocs;     /* allocations ever made */
  uint64_t n_regions;
  int grow;
} weft_cu_arena_stats_t;

/* A new, empty arena (NULL when out of host memory). limit: most bytes of regions it may
 * reserve (0: no limit). grow: reserve more regions on demand; without it the arena only has
 * what weft__cu_arena_reserve took up front. ops is copied. */
weft_cu_arena_t *weft__cu_arena_new(const weft_cu_arena_ops_t *ops, uint64_t limit, int grow);
/* Reserves one region of `bytes` now (the up-front share of memory_fraction). */
weft_cu_arena_result_t weft__cu_arena_reserve(weft_cu_arena_t *a, uint64_t bytes);
/* *ptr = nbytes of device memory (NULL for 0 bytes). */
weft_cu_arena_result_t weft__cu_arena_alloc(weft_cu_arena_t *a, size_t nbytes, void **ptr);
/* Returns 0, or -1 when ptr was not handed out by this arena (nothing changes then). NULL is
 * fine. */
int weft__cu_arena_free(weft_cu_arena_t *a, void *ptr);
void weft__cu_arena_stats(weft_cu_arena_t *a, weft_cu_arena_stats_t *out);
/* Releases every region, live allocations or not, and the arena. */
void weft__cu_arena_destroy(weft_cu_arena_t *a);

/* "1234 bytes (1.2 KiB)" into buf; returns buf. */
const char *weft__cu_bytes_str(uint64_t bytes, char *buf, size_t len);
/* What an out-of-memory message says about the arena: "N bytes (..) in use in K allocations,
 * R bytes (..) reserved, limit L bytes (..), largest free block F bytes (..)". Returns buf. */
const char *weft__cu_arena_describe(const weft_cu_arena_stats_t *s, char *buf, size_t len);

#endif /* WEFT_CU_ALLOC_H */

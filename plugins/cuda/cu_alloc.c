/* cu_alloc.c: the caching device-memory allocator of the CUDA plugin (see cu_alloc.h).
 *
 * Regions are address ranges reserved through a callback. Each region is a doubly linked list
 * of chunks in address order; a chunk is either handed out or free. Free chunks sit in one of
 * WEFT_CU_ARENA_BINS size-class bins (bin b holds sizes in [256 * 2^b, 256 * 2^(b+1))):
 * allocation takes the best fit of the first bin that can hold the request, splits off the
 * rest, and a free merges the chunk with free neighbours before binning it. Handed-out chunks
 * are found again by address through an open-addressing hash table. Regions grow by doubling
 * (2 MiB, 4 MiB, ... up to 1 GiB at a time) within the limit; when the device refuses, smaller
 * sizes are tried, then regions that are entirely free are given back and the growth retried
 * once. */
#include "cu_alloc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN ((uint64_t)WEFT_CU_ARENA_ALIGN)
#define N_BINS 48
#define FIRST_REGION ((uint64_t)2 << 20)
#define MAX_REGION_STEP ((uint64_t)1 << 30)

typedef struct region region_t;

typedef struct chunk {
  uint64_t addr, size;
  bool used;
  struct chunk *prev, *next;   /* address order within the region */
  struct chunk *fprev, *fnext; /* the bin's free list */
  region_t *region;
} chunk_t;

struct region {
  void *base;
  uint64_t addr, size;
  chunk_t *first;
  region_t *next;
};

struct weft_cu_arena {
  pthread_mutex_t lock;
  weft_cu_arena_ops_t ops;
  uint64_t limit;
  bool grow;
  region_t *regions;
  chunk_t *bins[N_BINS];
  /* handed-out chunks by address: linear probing, capacity a power of two */
  chunk_t **slots;
  size_t cap, live;
  uint64_t reserved, in_use, peak, n_allocs, next_region;
};

/* ---------------------------------------------------------------------------------------------
 * The address table */

static size_t slot_of(const weft_cu_arena_t *a, uint64_t addr) {
  uint64_t h = (addr / ALIGN) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h ^ (h >> 29)) & (a->cap - 1);
}

static bool table_grow(weft_cu_arena_t *a) {
  size_t cap = a->cap ? a->cap * 2 : 256;
  chunk_t **slots = calloc(cap, sizeof *slots);
  if (slots == NULL) return false;
  chunk_t **old = a->slots;
  size_t old_cap = a->cap;
  a->slots = slots;
  a->cap = cap;
  for (size_t i = 0; i < old_cap; i++) {
    if (old[i] == NULL) continue;
    size_t s = slot_of(a, old[i]->addr);
    while (slots[s] != NULL) s = (s + 1) & (cap - 1);
    slots[s] = old[i];
  }
  free(old);
  return true;
}

static bool table_put(weft_cu_arena_t *a, chunk_t *c) {
  if ((a->live + 1) * 2 > a->cap && !table_grow(a)) return false;
  size_t s = slot_of(a, c->addr);
  while (a->slots[s] != NULL) s = (s + 1) & (a->cap - 1);
  a->slots[s] = c;
  a->live++;
  return true;
}

/* Removes and returns the chunk at addr, or NULL. Deletion shifts later members of the probe
 * run back, so lookups never need tombstones. */
static chunk_t *table_take(weft_cu_arena_t *a, uint64_t addr) {
  if (a->cap == 0) return NULL;
  size_t s = slot_of(a, addr);
  while (a->slots[s] != NULL && a->slots[s]->addr != addr) s = (s + 1) & (a->cap - 1);
  chunk_t *found = a->slots[s];
  if (found == NULL) return NULL;
  a->slots[s] = NULL;
  a->live--;
  size_t hole = s;
  for (size_t i = (s + 1) & (a->cap - 1); a->slots[i] != NULL; i = (i + 1) & (a->cap - 1)) {
    size_t home = slot_of(a, a->slots[i]->addr);
    /* Move it into the hole when the hole lies on its probe path (between home and i). */
    bool on_path = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
    if (on_path) {
      a->slots[hole] = a->slots[i];
      a->slots[i] = NULL;
      hole = i;
    }
  }
  return found;
}

/* ---------------------------------------------------------------------------------------------
 * Bins */

static int bin_of(uint64_t size) {
  uint64_t units = size / ALIGN;
  int b = 0;
  while (units > 1 && b < N_BINS - 1) {
    units >>= 1;
    b++;
  }
  return b;
}

static void bin_insert(weft_cu_arena_t *a, chunk_t *c) {
  int b = bin_of(c->size);
  c->fprev = NULL;
  c->fnext = a->bins[b];
  if (a->bins[b] != NULL) a->bins[b]->fprev = c;
  a->bins[b] = c;
}

static void bin_remove(weft_cu_arena_t *a, chunk_t *c) {
  if (c->fprev != NULL) c->fprev->fnext = c->fnext;
  else a->bins[bin_of(c->size)] = c->fnext;
  if (c->fnext != NULL) c->fnext->fprev = c->fprev;
  c->fprev = c->fnext = NULL;
}

/* The smallest free chunk of at least `size` in the first bin that has one. */
static chunk_t *find_free(weft_cu_arena_t *a, uint64_t size) {
  for (int b = bin_of(size); b < N_BINS; b++) {
    chunk_t *best = NULL;
    for (chunk_t *c = a->bins[b]; c != NULL; c = c->fnext)
      if (c->size >= size && (best == NULL || c->size < best->size)) best = c;
    if (best != NULL) return best;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Regions */

static weft_cu_arena_result_t add_region(weft_cu_arena_t *a, uint64_t size) {
  region_t *r = calloc(1, sizeof *r);
  chunk_t *c = calloc(1, sizeof *c);
  if (r == NULL || c == NULL) {
    free(r);
    free(c);
    return WEFT_CU_ARENA_HOST_MEMORY;
  }
  void *base = NULL;
  if (a->ops.reserve(a->ops.ctx, (size_t)size, &base) != 0 || base == NULL) {
    free(r);
    free(c);
    return WEFT_CU_ARENA_DEVICE_FULL;
  }
  r->base = base;
  r->addr = (uint64_t)(uintptr_t)base;
  r->size = size;
  r->first = c;
  r->next = a->regions;
  a->regions = r;
  c->addr = r->addr;
  c->size = size;
  c->region = r;
  bin_insert(a, c);
  a->reserved += size;
  return WEFT_CU_ARENA_OK;
}

/* Gives back every region that is one free chunk; returns how many bytes that freed. */
static uint64_t release_free_regions(weft_cu_arena_t *a) {
  uint64_t freed = 0;
  region_t **link = &a->regions;
  while (*link != NULL) {
    region_t *r = *link;
    if (r->first->next == NULL && !r->first->used) {
      bin_remove(a, r->first);
      *link = r->next;
      a->ops.release(a->ops.ctx, r->base);
      a->reserved -= r->size;
      freed += r->size;
      free(r->first);
      free(r);
    } else {
      link = &r->next;
    }
  }
  return freed;
}

static weft_cu_arena_result_t grow_for(weft_cu_arena_t *a, uint64_t need) {
  if (!a->grow && a->regions != NULL) return WEFT_CU_ARENA_OVER_LIMIT;
  uint64_t room = a->limit ? (a->limit > a->reserved ? a->limit - a->reserved : 0) : UINT64_MAX;
  if (need > room) {
    /* Free regions count against the limit; giving them back may make room. */
    if (a->grow && release_free_regions(a) > 0)
      room = a->limit ? (a->limit > a->reserved ? a->limit - a->reserved : 0) : UINT64_MAX;
    if (need > room) return WEFT_CU_ARENA_OVER_LIMIT;
  }
  uint64_t size = need > a->next_region ? need : a->next_region;
  if (size > room) size = room;
  size = (size + ALIGN - 1) / ALIGN * ALIGN;
  if (size < need) size = need;
  weft_cu_arena_result_t r;
  for (;;) {
    r = add_region(a, size);
    if (r != WEFT_CU_ARENA_DEVICE_FULL || size == need) break;
    uint64_t half = (size / 2 + ALIGN - 1) / ALIGN * ALIGN;
    size = half > need ? half : need;
  }
  if (r == WEFT_CU_ARENA_DEVICE_FULL && release_free_regions(a) > 0) r = add_region(a, need);
  if (r == WEFT_CU_ARENA_OK && a->next_region < MAX_REGION_STEP) a->next_region *= 2;
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * The arena */

weft_cu_arena_t *weft__cu_arena_new(const weft_cu_arena_ops_t *ops, uint64_t limit, int grow) {
  weft_cu_arena_t *a = calloc(1, sizeof *a);
  if (a == NULL) return NULL;
  pthread_mutex_init(&a->lock, NULL);
  a->ops = *ops;
  a->limit = limit;
  a->grow = grow != 0;
  a->next_region = FIRST_REGION;
  return a;
}

weft_cu_arena_result_t weft__cu_arena_reserve(weft_cu_arena_t *a, uint64_t bytes) {
  bytes = (bytes + ALIGN - 1) / ALIGN * ALIGN;
  if (bytes == 0) return WEFT_CU_ARENA_OK;
  pthread_mutex_lock(&a->lock);
  weft_cu_arena_result_t r = WEFT_CU_ARENA_OVER_LIMIT;
  if (a->limit == 0 || a->reserved + bytes <= a->limit) r = add_region(a, bytes);
  pthread_mutex_unlock(&a->lock);
  return r;
}

weft_cu_arena_result_t weft__cu_arena_alloc(weft_cu_arena_t *a, size_t nbytes, void **ptr) {
  *ptr = NULL;
  if (nbytes == 0) return WEFT_CU_ARENA_OK;
  if ((uint64_t)nbytes > UINT64_MAX - ALIGN) return WEFT_CU_ARENA_TOO_LARGE;
  uint64_t size = ((uint64_t)nbytes + ALIGN - 1) / ALIGN * ALIGN;
  pthread_mutex_lock(&a->lock);
  weft_cu_arena_result_t r = WEFT_CU_ARENA_OK;
  chunk_t *c = find_free(a, size);
  if (c == NULL) {
    r = grow_for(a, size);
    if (r == WEFT_CU_ARENA_OK) c = find_free(a, size);
    if (r == WEFT_CU_ARENA_OK && c == NULL) r = WEFT_CU_ARENA_OVER_LIMIT;
  }
  if (c != NULL) {
    chunk_t *rest = NULL;
    if (c->size - size >= ALIGN) {
      rest = calloc(1, sizeof *rest);
      if (rest == NULL) r = WEFT_CU_ARENA_HOST_MEMORY;
    }
    if (r == WEFT_CU_ARENA_OK) {
      bin_remove(a, c);
      if (rest != NULL) {
        rest->addr = c->addr + size;
        rest->size = c->size - size;
        rest->region = c->region;
        rest->prev = c;
        rest->next = c->next;
        if (c->next != NULL) c->next->prev = rest;
        c->next = rest;
        c->size = size;
        bin_insert(a, rest);
      }
      c->used = true;
      if (!table_put(a, c)) {
        /* Undo: back to a free chunk (merging the split-off rest again). */
        c->used = false;
        if (rest != NULL) {
          bin_remove(a, rest);
          c->size += rest->size;
          c->next = rest->next;
          if (rest->next != NULL) rest->next->prev = c;
          free(rest);
        }
        bin_insert(a, c);
        r = WEFT_CU_ARENA_HOST_MEMORY;
      } else {
        a->in_use += c->size;
        if (a->in_use > a->peak) a->peak = a->in_use;
        a->n_allocs++;
        *ptr = (void *)(uintptr_t)c->addr;
      }
    } else {
      free(rest);
    }
  }
  pthread_mutex_unlock(&a->lock);
  return r;
}

int weft__cu_arena_free(weft_cu_arena_t *a, void *ptr) {
  if (ptr == NULL) return 0;
  pthread_mutex_lock(&a->lock);
  chunk_t *c = table_take(a, (uint64_t)(uintptr_t)ptr);
  if (c == NULL) {
    pthread_mutex_unlock(&a->lock);
    return -1;
  }
  c->used = false;
  a->in_use -= c->size;
  chunk_t *n = c->next;
  if (n != NULL && !n->used) {
    bin_remove(a, n);
    c->size += n->size;
    c->next = n->next;
    if (n->next != NULL) n->next->prev = c;
    free(n);
  }
  chunk_t *p = c->prev;
  if (p != NULL && !p->used) {
    bin_remove(a, p);
    p->size += c->size;
    p->next = c->next;
    if (c->next != NULL) c->next->prev = p;
    free(c);
    c = p;
  }
  bin_insert(a, c);
  pthread_mutex_unlock(&a->lock);
  return 0;
}

void weft__cu_arena_stats(weft_cu_arena_t *a, weft_cu_arena_stats_t *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&a->lock);
  out->in_use = a->in_use;
  out->peak_in_use = a->peak;
  out->reserved = a->reserved;
  out->limit = a->limit;
  out->n_live = a->live;
  out->n_allocs = a->n_allocs;
  out->grow = a->grow;
  for (region_t *r = a->regions; r != NULL; r = r->next) out->n_regions++;
  for (int b = N_BINS - 1; b >= 0 && out->largest_free == 0; b--)
    for (chunk_t *c = a->bins[b]; c != NULL; c = c->fnext)
      if (c->size > out->largest_free) out->largest_free = c->size;
  pthread_mutex_unlock(&a->lock);
}

void weft__cu_arena_destroy(weft_cu_arena_t *a) {
  if (a == NULL) return;
  region_t *r = a->regions;
  while (r != NULL) {
    region_t *next = r->next;
    chunk_t *c = r->first;
    while (c != NULL) {
      chunk_t *cn = c->next;
      free(c);
      c = cn;
    }
    a->ops.release(a->ops.ctx, r->base);
    free(r);
    r = next;
  }
  free(a->slots);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

const char *weft__cu_bytes_str(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    return buf;
  }
  double v = (double)bytes / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, len, "%llu bytes (%.1f %s)", (unsigned long long)bytes, v, units[u]);
  return buf;
}

const char *weft__cu_arena_describe(const weft_cu_arena_stats_t *s, char *buf, size_t len) {
  char in_use[48], reserved[48], limit[48], largest[48];
  weft__cu_bytes_str(s->in_use, in_use, sizeof in_use);
  weft__cu_bytes_str(s->reserved, reserved, sizeof reserved);
  weft__cu_bytes_str(s->largest_free, largest, sizeof largest);
  if (s->limit) weft__cu_bytes_str(s->limit, limit, sizeof limit);
  else snprintf(limit, sizeof limit, "none");
  snprintf(buf, len,
           "%s in use in %llu allocations, %s reserved, limit %s, largest free block %s", in_use,
           (unsigned long long)s->n_live, reserved, limit, largest);
  return buf;
}

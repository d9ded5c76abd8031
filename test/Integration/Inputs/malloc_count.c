/* Preloaded (LD_PRELOAD) by workspace.test: counts the process's calls of
 * malloc, calloc, realloc, aligned_alloc, memalign and posix_memalign
 * (glibc's own functions do the work) and exports the count as
 * malloc_count(). */
#define _GNU_SOURCE
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static long count;

long malloc_count(void) { return __atomic_load_n(&count, __ATOMIC_RELAXED); }

static void counted(void) { __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED); }

void *malloc(size_t n) {
  counted();
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  counted();
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  counted();
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
  counted();
  return __libc_memalign(a, n);
}
void *memalign(size_t a, size_t n) {
  counted();
  return __libc_memalign(a, n);
}
int posix_memalign(void **p, size_t a, size_t n) {
  counted();
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}

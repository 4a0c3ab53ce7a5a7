/* size.c - checked size arithmetic for every size derived from input.
 *
 * A count read from a file header, a plan or a wire frame is untrusted: an
 * unchecked `count * elem` can wrap to a small number, the allocation
 * succeeds and the code then writes far past it.  These helpers make the
 * wrap impossible by construction and turn it into an error that names the
 * file and the field, before anything is allocated. */
#include "ground/ground.h"

#include <stdlib.h>
#include <string.h>

/* The checked result of `a OP b` (overflow: it wrapped). */
static int size_result(int overflow, uint64_t r, uint64_t a, char op, uint64_t b, size_t *out,
                       const char *file, const char *field, rt_error *err)
{
    if (overflow || r > RT_SIZE_LIMIT)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %s: %llu %c %llu is too large", file, field,
                       (unsigned long long)a, op, (unsigned long long)b);
    *out = (size_t)r;
    return 0;
}

int rt_size_mul(uint64_t a, uint64_t b, size_t *out, const char *file, const char *field,
                rt_error *err)
{
    uint64_t r = 0;
    int overflow = rt_mul_overflows(a, b, &r);
    return size_result(overflow, r, a, 'x', b, out, file, field, err);
}

int rt_size_add(uint64_t a, uint64_t b, size_t *out, const char *file, const char *field,
                rt_error *err)
{
    uint64_t r = 0;
    int overflow = rt_add_overflows(a, b, &r);
    return size_result(overflow, r, a, '+', b, out, file, field, err);
}

/* count x elem bytes (at least 1), zeroed or not. */
static void *alloc_array(uint64_t count, size_t elem, int zeroed, const char *file,
                         const char *field, rt_error *err)
{
    size_t bytes = 0;
    if (rt_size_mul(count, elem, &bytes, file, field, err))
        return NULL;
    void *p = zeroed ? calloc(bytes ? bytes : 1, 1) : malloc(bytes ? bytes : 1);
    if (!p)
        rt_fail(err, RT_EXIT_RUNTIME, "%s: %s: out of memory (%zu bytes)", file, field, bytes);
    return p;
}

void *rt_alloc_array(uint64_t count, size_t elem, const char *file, const char *field,
                     rt_error *err)
{
    return alloc_array(count, elem, 0, file, field, err);
}

void *rt_calloc_array(uint64_t count, size_t elem, const char *file, const char *field,
                      rt_error *err)
{
    return alloc_array(count, elem, 1, file, field, err);
}

int rt_grow_array(void **p, uint64_t *cap, uint64_t need, size_t elem, rt_error *err)
{
    if (need <= *cap)
        return 0;
    uint64_t n = *cap ? *cap : 64, bytes;
    while (n < need)
        n *= 2;
    if (rt_mul_overflows(n, elem, &bytes) || bytes > RT_SIZE_LIMIT)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%llu items)", (unsigned long long)n);
    void *q = realloc(*p, (size_t)bytes);
    if (!q)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%llu items)", (unsigned long long)n);
    *p = q;
    *cap = n;
    return 0;
}

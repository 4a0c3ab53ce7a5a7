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

/* Control bytes a text file may hold: \t \n \v \f \r. */
static int binary_byte(unsigned char c)
{
    return c < 0x20 && (c < '\t' || c > '\r');
}

size_t rt_text_find_binary(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (binary_byte((unsigned char)s[i]))
            return i;
    return n;
}

size_t rt_utf8_bom_len(const char *s, size_t n)
{
    return n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3) ? 3 : 0;
}

size_t rt_utf8_bom_strip(char *buf, size_t n)
{
    size_t bom = rt_utf8_bom_len(buf, n);
    if (bom)
        memmove(buf, buf + bom, n - bom + 1);
    return n - bom;
}

const char *rt_compressed_by(const char *head, size_t n)
{
    static const struct {
        const char *name, *magic;
        size_t len;
    } kinds[] = {{"gzip", "\x1f\x8b", 2},
                 {"xz",
                  "\xfd"
                  "7zXZ\0",
                  6},
                 {"bzip2", "BZh", 3},
                 {"zstd", "\x28\xb5\x2f\xfd", 4}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (n >= kinds[i].len && !memcmp(head, kinds[i].magic, kinds[i].len))
            return kinds[i].name;
    return NULL;
}

int rt_fail_binary_head(rt_error *err, const char *path, const char *head, size_t n,
                        unsigned char byte)
{
    if (n >= 4 && !memcmp(head, "PK\x03\x04", 4)) /* MovieLens comes as ml-100k.zip */
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:1: binary data: a zip archive? take the file out first ('unzip -p "
                       "FILE MEMBER', e.g. into a pipe read as '-')",
                       path);
    const char *how = rt_compressed_by(head, n);
    if (!how)
        return rt_fail_binary(err, path, 1, byte);
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s:1: binary data: compressed with %s? decompress it first ('%s -dc FILE', "
                   "or into a pipe read as '-')",
                   path, how, how);
}

int rt_fail_binary(rt_error *err, const char *path, uint64_t line, unsigned char byte)
{
    return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: binary data (byte 0x%02x) in a text file", path,
                   (unsigned long long)line, byte);
}

/* npy.c - NumPy .npy (format 1.0) output and input for dense 2-D matrices. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Header: magic, version 1.0, little-endian u16 header length, then a Python
 * dict literal padded with spaces to a multiple of 64 bytes, ending in '\n'. */
int rt_npy_write_header(FILE *fp, const char *descr, uint64_t rows, uint64_t cols, const char *path,
                        rt_error *err)
{
    char dict[256];
    int n = snprintf(dict, sizeof(dict),
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%llu, %llu), }", descr,
                     (unsigned long long)rows, (unsigned long long)cols);
    size_t total = rt_round_up(10 + (size_t)n + 1, 64);
    size_t hlen = total - 10;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    char pad[256];
    memset(pad, ' ', sizeof(pad));
    if (rt_write_all(fp, pre, sizeof(pre), path, err) ||
        rt_write_all(fp, dict, (size_t)n, path, err) ||
        rt_write_all(fp, pad, hlen - (size_t)n - 1, path, err) ||
        rt_write_all(fp, "\n", 1, path, err))
        return -1;
    return 0;
}

int rt_npy_write_f32(const char *path, const float *data, uint64_t rows, uint64_t cols,
                     size_t row_stride_floats, rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    if (rt_npy_write_header(of.fp, "<f4", rows, cols, path, err))
        goto fail;
    for (uint64_t r = 0; r < rows; r++)
        if (rt_write_all(of.fp, data + r * row_stride_floats, cols * sizeof(float), path, err))
            goto fail;
    return rt_outfile_commit(&of, err);
fail:
    rt_outfile_abort(&of);
    return -1;
}

int rt_npy_write_i32(const char *path, const int32_t *data, uint64_t rows, uint64_t cols,
                     rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    if (rt_npy_write_header(of.fp, "<i4", rows, cols, path, err) ||
        rt_write_all(of.fp, data, rows * cols * sizeof(int32_t), path, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

/* The header dict must describe a C-order 2-D array of `descr` ('<f4' or
 * '<i4'): "'descr': '<f4'", "'fortran_order': False", "'shape': (R, C)". */
static int parse_dict(const char *dict, const char *descr, unsigned long long *r,
                      unsigned long long *c)
{
    const char *shape = strstr(dict, "'shape': (");
    char want[32];
    int end = 0;
    snprintf(want, sizeof(want), "'descr': '%s'", descr);
    if (!strstr(dict, want) || !strstr(dict, "'fortran_order': False") || !shape ||
        sscanf(shape, "'shape': (%llu, %llu)%n", r, c, &end) != 2 || end == 0)
        return -1;
    /* sscanf's %llu takes a sign: only digits are a size. */
    for (const char *p = shape + 10; p < shape + end - 1; p++)
        if (*p == '-' || *p == '+')
            return -1;
    return 0;
}

int rt_npy_open(const char *path, const char *descr, FILE **out, uint64_t *rows, uint64_t *cols,
                rt_error *err)
{
    *out = NULL;
    FILE *fp = rt_fopen_read(path, RT_READ_OWN, err);
    if (!fp)
        return -1;
    unsigned char pre[10];
    char dict[65536 + 1];
    unsigned long long r = 0, c = 0;
    size_t bytes = 0;
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY\x01\x00", 8) != 0)
        goto bad;
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (fread(dict, 1, hlen, fp) != hlen || memchr(dict, '\0', hlen))
        goto bad;
    dict[hlen] = '\0';
    if (parse_dict(dict, descr, &r, &c))
        goto bad;
    /* The data must be exactly rows x cols cells: checked before anyone allocates. */
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", path);
    }
    uint64_t cells;
    if (rt_mul_overflows(r, c, &cells) || rt_size_mul(cells, 4, &bytes, path, "shape", err)) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_INPUT, "%s: shape (%llu, %llu) is impossible", path, r, c);
    }
    if ((uint64_t)sb.st_size != 10 + hlen + bytes) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: shape (%llu, %llu) needs %zu data bytes, the file has %lld", path, r, c,
                       bytes, (long long)sb.st_size - 10 - (long long)hlen);
    }
    *out = fp;
    *rows = r;
    *cols = c;
    return 0;
bad:
    if (ferror(fp)) { /* a directory in its place: EISDIR, not a malformed header */
        int e = errno;
        fclose(fp);
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: read failed", path);
    }
    fclose(fp);
    return rt_fail(err, RT_EXIT_INPUT, "%s: not a 2-D %s .npy file", path,
                   !strcmp(descr, "<i4") ? "int32" : "float32");
}

/* Read a whole 2-D .npy of 4-byte cells of dtype `descr` ("<f4" or "<i4"). */
static int npy_read4(const char *path, const char *descr, void **data, uint64_t *rows,
                     uint64_t *cols, rt_error *err)
{
    FILE *fp;
    *data = NULL;
    if (rt_npy_open(path, descr, &fp, rows, cols, err))
        return -1;
    size_t bytes = (size_t)(*rows * *cols * 4);
    *data = malloc(bytes + 1);
    if (!*data) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory (%zu bytes)", path, bytes);
    }
    if (fread(*data, 1, bytes, fp) != bytes) {
        fclose(fp);
        free(*data);
        *data = NULL;
        return rt_fail(err, RT_EXIT_INPUT, "%s: changed while it was read", path);
    }
    fclose(fp);
    return 0;
}

int rt_npy_read_f32(const char *path, float **data, uint64_t *rows, uint64_t *cols, rt_error *err)
{
    void *p = NULL;
    int rc = npy_read4(path, "<f4", &p, rows, cols, err);
    *data = p;
    return rc;
}

int rt_npy_read_i32(const char *path, int32_t **data, uint64_t *rows, uint64_t *cols, rt_error *err)
{
    void *p = NULL;
    int rc = npy_read4(path, "<i4", &p, rows, cols, err);
    *data = p;
    return rc;
}

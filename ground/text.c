/* text.c - the one owner of text input: what a text file may hold, its
 * byte order mark, its line ends, and loading a whole one.
 *
 * Line ends: "\n", "\r\n" and a lone "\r" (old Mac files, Excel's "CSV
 * (Macintosh)") each end a line.  Readers split at '\n' and drop the '\r'
 * of a "\r\n"; rt_text_unify_line_ends turns each lone '\r' into '\n' as
 * the bytes arrive (rt_text_load, the ratings line reader, the hostfile,
 * the token file), so no reader needs to know the third convention and
 * every FILE:LINE counts the lines a text editor shows. */
#define _GNU_SOURCE
#include "ground/ground.h"
#include "ground/progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t rt_text_unify_line_ends(char *s, size_t n, int more)
{
    char *end = s + n;
    for (char *cr = memchr(s, '\r', n); cr; cr = memchr(cr + 1, '\r', (size_t)(end - cr - 1))) {
        if (cr + 1 == end)
            return more ? n - 1 : (*cr = '\n', n);
        if (cr[1] != '\n')
            *cr = '\n';
    }
    return n;
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

int rt_text_comment_line(const char *s)
{
    s += strspn(s, " \t");
    return *s == '#' || *s == '%' || (s[0] == '/' && s[1] == '/');
}

/* '[' then a JSON value (or nothing: a pretty-printed array's first line),
 * the line ending in ']', ',' or '['. */
static int json_array_line(const char *s, size_t n)
{
    while (n > 1 && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
        n--;
    if (!n || *s != '[')
        return 0;
    size_t v = 1;
    while (v < n && (s[v] == ' ' || s[v] == '\t'))
        v++;
    return (v == n || strchr("[{\"-0123456789", s[v])) && strchr("],[", s[n - 1]);
}

int rt_text_json_line(const char *s, size_t n)
{
    return json_array_line(s, n) || (n && *s == '{' && memmem(s, n, "\":", 2));
}

const char *rt_compressed_by(const char *head, size_t n)
{
    static const struct {
        const char *name, *magic;
        size_t len;
    } kinds[] = {{"zip", "PK\x03\x04", 4}, /* MovieLens comes as ml-100k.zip */
                 {"gzip", "\x1f\x8b", 2},
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

int rt_fail_binary_head(rt_error *err, const char *path, const char *head, size_t n, uint64_t line,
                        unsigned char byte)
{
    /* Windows' "Unicode text" (a spreadsheet's export, PowerShell's '>')
     * is UTF-16 behind its byte order mark: every ASCII letter has a 0 byte */
    if (n >= 2 &&
        ((head[0] == '\xff' && head[1] == '\xfe') || (head[0] == '\xfe' && head[1] == '\xff')))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:1: UTF-16 text (its byte order mark says so): rotor reads UTF-8; "
                       "convert it first ('iconv -f UTF-16 -t UTF-8 FILE', or into a pipe read "
                       "as '-')",
                       path);
    const char *how = rt_compressed_by(head, n);
    if (!how)
        return rt_fail_binary(err, path, line, byte);
    if (!strcmp(how, "zip"))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:1: binary data: a zip archive? take the file out first ('unzip -p "
                       "FILE MEMBER', e.g. into a pipe read as '-')",
                       path);
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

int rt_fail_binary_at(rt_error *err, const char *path, const char *buf, size_t len, size_t at)
{
    uint64_t line = 1;
    for (size_t i = 0; i < at; i++)
        line += buf[i] == '\n';
    return rt_fail_binary_head(err, path, buf, len, line, (unsigned char)buf[at]);
}

/* What text_load shows its caller once the first bytes are in. */
typedef struct {
    size_t len;
    rt_text_head_fn fn;
    void *ctx;
    uint64_t max_len; /* 0, or the most bytes the load may hold */
} text_head;

/* The head shown once: when `len` bytes are in or the input ended.  Its
 * failure ends the load (the caller refused what the head says). */
static int show_head(text_head *h, const char *buf, size_t len, int ended, rt_error *err)
{
    if (!h || !h->fn || (len < h->len && !ended))
        return 0;
    rt_text_head_fn fn = h->fn;
    h->fn = NULL;
    return fn(buf, len < h->len ? len : h->len, h->ctx, err);
}

static int text_load(const char *path, rt_read_kind kind, text_head *head, rt_text *t,
                     rt_error *err)
{
    memset(t, 0, sizeof(*t));
    int from_stdin = rt_is_stdio(path);
    t->path = from_stdin ? "standard input" : path;
    int fd = from_stdin ? rt_stdin_dup(err) : rt_open_read(path, kind, err);
    if (fd < 0)
        return -1;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        int e = errno;
        close(fd);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: cannot open", t->path);
    }
    path = t->path;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    rt_progress progress;
    rt_progress_start_reading(&progress, fileno(fp), path);
    for (;;) {
        if (!buf) {
            fclose(fp);
            return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", path);
        }
        /* at most 16 MiB a call, so progress moves on big files */
        size_t want = cap - len - 1 < (16u << 20) ? cap - len - 1 : (16u << 20);
        size_t got = fread(buf + len, 1, want, fp);
        /* a '\r' left unsettled at the end of the last piece meets its follower now */
        size_t from = len && buf[len - 1] == '\r' ? len - 1 : len;
        rt_text_unify_line_ends(buf + from, len + got - from, got == want);
        /* checked as it comes: an endless device (/dev/zero) stops at once */
        size_t at = len + rt_text_find_binary(buf + len, got);
        len += got;
        rt_progress_set(&progress, len);
        if (at < len) {
            rt_progress_end(&progress);
            fclose(fp);
            rt_fail_binary_at(err, path, buf, len, at);
            free(buf);
            return -1;
        }
        if (show_head(head, buf, len, got < want, err)) {
            rt_progress_end(&progress);
            fclose(fp);
            free(buf);
            return -1;
        }
        if (head && head->max_len && len > head->max_len) {
            rt_progress_end(&progress);
            fclose(fp);
            uint64_t line = 1;
            for (size_t i = 0; i < head->max_len; i++) /* the line of the byte past it */
                line += buf[i] == '\n';
            free(buf);
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%llu: the input passes %llu bytes, all that the memory limit "
                           "leaves room for (it is loaded whole); nothing written",
                           path, (unsigned long long)line, (unsigned long long)head->max_len);
        }
        if (got < want)
            break;
        if (len < cap - 1)
            continue;
        cap *= 2;
        /* room for max_len + 1 bytes and the NUL: the byte past max_len
         * tells a longer input from one of max_len (len <= max_len here, so
         * the cap still grows) */
        if (head && head->max_len && cap - 2 > head->max_len) /* not max_len + 2: it may wrap */
            cap = (size_t)head->max_len + 2;
        char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    rt_progress_end(&progress);
    int bad = ferror(fp), e = errno; /* errno of the failed read (a directory: EISDIR) */
    fclose(fp);
    if (bad) {
        free(buf);
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: read failed", path);
    }
    buf[len] = '\0';
    t->data = buf;
    t->len = rt_utf8_bom_strip(buf, len);
    return 0;
}

int rt_text_load(const char *path, rt_text *t, rt_error *err)
{
    return text_load(path, RT_READ_DATA, NULL, t, err);
}

int rt_text_load_head(const char *path, size_t head, rt_text_head_fn fn, void *ctx,
                      uint64_t max_len, rt_text *t, rt_error *err)
{
    text_head h = {.len = head, .fn = fn, .ctx = ctx, .max_len = max_len};
    return text_load(path, RT_READ_DATA, &h, t, err);
}

int rt_text_load_own(const char *path, rt_text *t, rt_error *err)
{
    return text_load(path, RT_READ_OWN, NULL, t, err);
}

void rt_text_free(rt_text *t)
{
    if (!t->borrowed)
        free(t->data);
    t->data = NULL;
}

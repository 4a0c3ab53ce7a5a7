/* error.c - the rt_error convention: one line of context, an exit code. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* s into msg (cap bytes).  A message too long for it (a path of thousands
 * of bytes) keeps its start and its end, where the cause is ("...: No such
 * file or directory"), with " ... " between. */
static void fit(char *msg, size_t cap, const char *s)
{
    static const char cut[] = " ... ";
    size_t n = strlen(s);
    if (n < cap) {
        memcpy(msg, s, n + 1);
        return;
    }
    size_t head = cap / 4, tail = cap - 1 - head - (sizeof(cut) - 1);
    memmove(msg, s, head);
    memcpy(msg + head, cut, sizeof(cut) - 1);
    memmove(msg + head + sizeof(cut) - 1, s + n - tail, tail);
    msg[cap - 1] = '\0';
}

/* err->msg = fmt's text followed by `suffix` ("" for none), fitted. */
__attribute__((format(printf, 3, 0))) static void error_vset(rt_error *err, const char *suffix,
                                                             const char *fmt, va_list ap)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) { /* out of memory: cut at the end, as before */
        snprintf(err->msg, sizeof(err->msg), "%s", fmt);
        return;
    }
    char *whole = NULL;
    if (*suffix && asprintf(&whole, "%s%s", text, suffix) >= 0) {
        free(text);
        text = whole;
    }
    fit(err->msg, sizeof(err->msg), text);
    free(text);
}

int rt_fail(rt_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, "", fmt, ap);
    va_end(ap);
    return -1;
}

int rt_fail_errno(rt_error *err, int code, int errnum, const char *fmt, ...)
{
    if (!err)
        return -1;
    char reason[256];
    snprintf(reason, sizeof(reason), ": %s", strerror(errnum));
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, reason, fmt, ap);
    va_end(ap);
    return -1;
}

int rt_fail_parse(rt_error *err, const char *path, int line, const char *what)
{
    if (line > 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%d: %s", path, line, what);
    return rt_fail(err, RT_EXIT_INPUT, "%s: %s", path, what);
}

int rt_error_prefix(rt_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char old[sizeof(err->msg) + 2] = ": ";
    memcpy(old + 2, err->msg, sizeof(err->msg));
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, old, fmt, ap);
    va_end(ap);
    return -1;
}

/* Bytes of the well-formed UTF-8 sequence that starts at s (2..4: no
 * overlong forms, surrogates or code points beyond U+10FFFF), else 0. */
static size_t utf8_sequence(const unsigned char *s)
{
    unsigned c = s[0];
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (!len)
        return 0;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

size_t rt_one_line(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (; *s && n + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        size_t seq = c >= 0x80 ? utf8_sequence((const unsigned char *)s) : 0;
        if (seq && n + seq + 5 < cap) { /* text in another script stays readable */
            memcpy(out + n, s, seq);
            n += seq;
            s += seq - 1;
        } else if ((c >= 0x20 && c < 0x7f) || c == '\t') {
            out[n++] = (char)c;
        } else if (c == '\n' || c == '\r') {
            out[n++] = '\\';
            out[n++] = c == '\n' ? 'n' : 'r';
        } else {
            memcpy(out + n, "\\x", 2);
            out[n + 2] = hex[c >> 4];
            out[n + 3] = hex[c & 15];
            n += 4;
        }
    }
    out[n] = '\0';
    return n;
}

void rt_die(const rt_error *err)
{
    char line[4 * sizeof(err->msg) + 8];
    rt_one_line(line, sizeof(line), err->msg);
    fflush(stdout);
    fprintf(stderr, "rotor: error: %s\n", line);
    exit(err->code ? err->code : RT_EXIT_RUNTIME);
}

/* error.c - the rt_error convention: one line of context, an exit code. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 0))) static int error_vset(rt_error *err, int code,
                                                            const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    }
    return -1;
}

int rt_fail(rt_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

int rt_fail_errno(rt_error *err, int code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, fmt, ap);
    va_end(ap);
    if (err) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(errnum));
    }
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
    char line[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    size_t used = (size_t)n < sizeof(line) - 3 ? (size_t)n : sizeof(line) - 3;
    memcpy(line + used, ": ", 2);
    size_t room = sizeof(line) - used - 3;
    size_t old = strnlen(err->msg, room);
    memcpy(line + used + 2, err->msg, old);
    line[used + 2 + old] = '\0';
    memcpy(err->msg, line, sizeof(line));
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

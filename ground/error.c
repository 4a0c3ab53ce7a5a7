/* error.c - the rt_error convention: one line of context, an exit code. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unictype.h>
#include <unistr.h>

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

/* Bytes of the well-formed UTF-8 character at s (2..4) when it is one a
 * terminal shows as text, else 0: controls (C1's 8-bit CSI among them) and
 * format characters (bidirectional overrides that reorder what follows)
 * are escaped like ASCII's. */
static size_t printable_utf8(const char *s)
{
    ucs4_t uc;
    int n = u8_mbtoucr(&uc, (const uint8_t *)s, strnlen(s, 4));
    if (n < 2 || uc_is_general_category_withtable(uc, UC_CATEGORY_MASK_Cc | UC_CATEGORY_MASK_Cf))
        return 0;
    return (size_t)n;
}

size_t rt_one_line(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (; *s && n + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        size_t seq = c >= 0x80 ? printable_utf8(s) : 0;
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

/* error.c - the rt_error convention: one line of context, an exit code. */
#define _GNU_SOURCE
#include "base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int error_vset(rt_error *err, int code, const char *fmt, va_list ap)
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

int rt_error_prefix(rt_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[512], old[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    return -1;
}

void rt_die(const rt_error *err)
{
    fflush(stdout);
    fprintf(stderr, "rotor: error: %s\n", err->msg);
    exit(err->code ? err->code : RT_EXIT_RUNTIME);
}

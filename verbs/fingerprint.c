/*
 * fingerprint.c - do all ranks run the same job?  Compared once, right after
 * the connections are up and before anything else travels.
 *
 * A fingerprint is "name=value" lines: the caller's (plan id, app, options
 * that shape the computation, ...) followed by the transport's own (backend,
 * window geometry, protocol).  Every rank sends its lines to rank 0, which
 * compares each with its own and broadcasts a verdict: empty when all agree,
 * else one line naming the first field that differs and both values.  Every
 * rank then fails with the same message, exit code 2.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"

#include <stdlib.h>
#include <string.h>

#define FP_MAX_BYTES (64 << 10) /* a fingerprint longer than this is refused */
#define VERDICT_BYTES 512

/* This rank's full fingerprint (malloc'd). */
static char *own_fingerprint(const rt_transport *t)
{
    const char *user = t->cfg.fingerprint ? t->cfg.fingerprint : "";
    size_t cap = strlen(user) + 256;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    snprintf(
        s, cap, "%s%stransport=%s\nwindow=%u slots x %zu bytes\nsecurity=%s\npeer timeout=%d ms\n",
        user, *user && user[strlen(user) - 1] != '\n' ? "\n" : "", t->ops->name, t->cfg.n_slots,
        t->cfg.slot_bytes, t->cfg.secure ? "secret" : "insecure", t->cfg.peer_timeout_ms);
    return s;
}

/* The value of field `name` (name_len bytes) in `fp` (len bytes, not
 * terminated), or NULL; *vlen gets its length. */
static const char *field_value(const char *fp, size_t len, const char *name, size_t name_len,
                               size_t *vlen)
{
    const char *p = fp, *end = fp + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if ((size_t)(line_end - p) > name_len && !memcmp(p, name, name_len) && p[name_len] == '=') {
            *vlen = (size_t)(line_end - p) - name_len - 1;
            return p + name_len + 1;
        }
        p = line_end + 1;
    }
    return NULL;
}

/* Compare rank r's fingerprint `b` with rank 0's `a` field by field, in
 * both directions; write the first difference into verdict. */
static void compare(const char *a, size_t alen, const char *b, size_t blen, int r, char *verdict)
{
    for (int pass = 0; pass < 2 && !verdict[0]; pass++) {
        const char *x = pass ? b : a, *y = pass ? a : b;
        size_t xlen = pass ? blen : alen, ylen = pass ? alen : blen;
        const char *p = x, *end = x + xlen;
        while (p < end && !verdict[0]) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *line_end = nl ? nl : end;
            const char *eq = memchr(p, '=', (size_t)(line_end - p));
            if (eq) {
                size_t nlen = (size_t)(eq - p), xv = (size_t)(line_end - eq - 1), yv = 0;
                const char *v = field_value(y, ylen, p, nlen, &yv);
                if (!v || yv != xv || memcmp(v, eq + 1, xv)) {
                    const char *v0 = pass ? v : eq + 1, *vr = pass ? eq + 1 : v;
                    int l0 = (int)(pass ? yv : xv), lr = (int)(pass ? xv : yv);
                    snprintf(verdict, VERDICT_BYTES,
                             "ranks disagree on %.*s: rank %d has %s%.*s%s, rank 0 has %s%.*s%s",
                             (int)nlen, p, r, vr ? "'" : "", vr ? lr : 7, vr ? vr : "nothing",
                             vr ? "'" : "", v0 ? "'" : "", v0 ? l0 : 7, v0 ? v0 : "nothing",
                             v0 ? "'" : "");
                }
            }
            p = line_end + 1;
        }
    }
}

/* Rank 0: receive and compare every rank's fingerprint. */
static int judge(rt_transport *t, const char *own, char *verdict, rt_error *err)
{
    size_t own_len = strlen(own);
    for (int r = 1; r < t->cfg.size; r++) {
        uint64_t len = 0;
        if (t->ops->recv_msg(t, r, &len, sizeof(len), err))
            return -1;
        if (len > FP_MAX_BYTES)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "protocol error: rank %d sent a %llu-byte fingerprint (limit %d)", r,
                           (unsigned long long)len, FP_MAX_BYTES);
        char *fp = malloc(len ? len : 1);
        if (!fp)
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        int rc = len ? t->ops->recv_msg(t, r, fp, len, err) : 0;
        if (rc == 0 && !verdict[0])
            compare(own, own_len, fp, len, r, verdict);
        free(fp);
        if (rc)
            return -1;
    }
    return 0;
}

int rt_transport_check_fingerprint(rt_transport *t, rt_error *err)
{
    if (t->cfg.size < 2)
        return 0;
    char *own = own_fingerprint(t);
    if (!own)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    char verdict[VERDICT_BYTES] = "";
    int rc;
    if (t->cfg.rank == 0) {
        rc = judge(t, own, verdict, err);
        for (int r = 1; rc == 0 && r < t->cfg.size; r++)
            rc = t->ops->send_msg(t, r, verdict, sizeof(verdict), err);
    } else {
        uint64_t len = strlen(own);
        rc = t->ops->send_msg(t, 0, &len, sizeof(len), err);
        if (rc == 0)
            rc = t->ops->send_msg(t, 0, own, len, err);
        if (rc == 0)
            rc = t->ops->recv_msg(t, 0, verdict, sizeof(verdict), err);
    }
    free(own);
    if (rc)
        return rt_error_prefix(err, "comparing job fingerprints");
    verdict[sizeof(verdict) - 1] = '\0';
    if (verdict[0])
        return rt_fail(err, RT_EXIT_INPUT, "%s", verdict);
    return 0;
}

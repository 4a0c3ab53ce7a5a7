/*
 * fingerprint.c - do all ranks run the same job?  Compared once, right after
 * the connections are up and before anything else travels.
 *
 * A fingerprint is "name=value" lines: the build of rotor (when the caller
 * gives it), the caller's (plan id, app, options that shape the
 * computation, ...) and the transport's own (backend, window geometry,
 * protocol).  Every rank sends its lines to rank 0, which
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
    const char *build = t->cfg.build ? t->cfg.build : "";
    size_t cap = strlen(build) + strlen(user) + 256;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    /* The build first: when builds differ, that is what to fix first. */
    int n = t->cfg.build ? snprintf(s, cap, "build=%s\n", build) : 0;
    snprintf(s + n, cap - (size_t)n,
             "%s%stransport=%s\nwindow=%u slots x %zu bytes\nsecurity=%s\npeer timeout=%d ms\n",
             user, *user && user[strlen(user) - 1] != '\n' ? "\n" : "", t->ops->name,
             t->cfg.n_slots, t->cfg.slot_bytes, t->cfg.secure ? "secret" : "insecure",
             t->cfg.peer_timeout_ms);
    return s;
}

/* Compare rank r's fingerprint `b` with rank 0's `a` field by field, in
 * both directions; write the first difference into verdict. */
static void compare(const char *a, size_t alen, const char *b, size_t blen, int r, char *verdict)
{
    rt_field_diff d;
    char v0[VERDICT_BYTES / 2], vr[VERDICT_BYTES / 2];
    if (!rt_fields_diff(a, alen, b, blen, NULL, &d))
        return;
    rt_field_quote(v0, sizeof(v0), d.a, d.a_len);
    rt_field_quote(vr, sizeof(vr), d.b, d.b_len);
    int n =
        snprintf(verdict, VERDICT_BYTES, "ranks disagree on %.*s: rank %d has %s, rank 0 has %s",
                 (int)d.name_len, d.name, r, vr, v0);
    if (n < VERDICT_BYTES && d.name_len == 5 && !memcmp(d.name, "build", 5))
        snprintf(verdict + n, VERDICT_BYTES - (size_t)n,
                 " (every rank must run the same build of rotor: see rotor --version)");
    if (n >= VERDICT_BYTES) /* cut short; the field's name comes first */
        verdict[VERDICT_BYTES - 1] = '\0';
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

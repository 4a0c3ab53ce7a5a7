/*
 * collectives.c - barrier, all-reduce, gather and broadcast for every backend,
 * built on the backend's ordered control messages.
 *
 * Topology: a star around rank 0.  Rank 0 adds contributions strictly in rank
 * order and sends the one result back, so every rank sees bit-identical sums
 * whatever the arrival timing.  Collectives here carry a few hundred bytes
 * per epoch (metrics) or the final model once, so O(size) steps at rank 0 are
 * not a bottleneck at the scales this targets.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"

#include <stdlib.h>
#include <string.h>

static int send_to_all(rt_transport *t, const void *buf, size_t len, rt_error *err)
{
    for (int r = 1; r < t->cfg.size; r++)
        if (t->ops->send_msg(t, r, buf, len, err))
            return -1;
    return 0;
}

int rt_transport_barrier(rt_transport *t, rt_error *err)
{
    uint8_t token = 0xB7;
    if (t->cfg.size < 2)
        return 0;
    if (t->cfg.rank != 0) {
        if (t->ops->send_msg(t, 0, &token, 1, err) || t->ops->recv_msg(t, 0, &token, 1, err))
            return rt_error_prefix(err, "barrier");
        return 0;
    }
    for (int r = 1; r < t->cfg.size; r++)
        if (t->ops->recv_msg(t, r, &token, 1, err))
            return rt_error_prefix(err, "barrier");
    if (send_to_all(t, &token, 1, err))
        return rt_error_prefix(err, "barrier");
    return 0;
}

/* Reduce `n` elements of `elem` bytes with `add(acc, x, n)` in rank order. */
static int allreduce(rt_transport *t, void *v, size_t n, size_t elem,
                     void (*add)(void *acc, const void *x, size_t n), rt_error *err)
{
    if (t->cfg.size < 2 || n == 0)
        return 0;
    size_t bytes = n * elem;
    if (t->cfg.rank != 0) {
        if (t->ops->send_msg(t, 0, v, bytes, err) || t->ops->recv_msg(t, 0, v, bytes, err))
            return rt_error_prefix(err, "all-reduce");
        return 0;
    }
    void *tmp = malloc(bytes);
    if (!tmp)
        return rt_fail(err, RT_EXIT_RUNTIME, "all-reduce: out of memory");
    int rc = 0;
    for (int r = 1; r < t->cfg.size && rc == 0; r++) {
        rc = t->ops->recv_msg(t, r, tmp, bytes, err);
        if (rc == 0)
            add(v, tmp, n);
    }
    free(tmp);
    if (rc == 0)
        rc = send_to_all(t, v, bytes, err);
    if (rc)
        return rt_error_prefix(err, "all-reduce");
    return 0;
}

static void add_f64(void *acc, const void *x, size_t n)
{
    double *a = acc;
    const double *b = x;
    for (size_t i = 0; i < n; i++)
        a[i] += b[i];
}

static void add_i64(void *acc, const void *x, size_t n)
{
    int64_t *a = acc;
    const int64_t *b = x;
    for (size_t i = 0; i < n; i++)
        a[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
}

int rt_transport_allreduce_f64(rt_transport *t, double *v, size_t n, rt_error *err)
{
    return allreduce(t, v, n, sizeof(double), add_f64, err);
}

int rt_transport_allreduce_i64(rt_transport *t, int64_t *v, size_t n, rt_error *err)
{
    return allreduce(t, v, n, sizeof(int64_t), add_i64, err);
}

int rt_transport_gatherv(rt_transport *t, const void *buf, size_t len, void **out_at_root,
                         size_t *lens_at_root, rt_error *err)
{
    uint64_t len64 = len;
    if (t->cfg.rank != 0) {
        if (t->ops->send_msg(t, 0, &len64, sizeof(len64), err) ||
            (len && t->ops->send_msg(t, 0, buf, len, err)))
            return rt_error_prefix(err, "gather");
        return 0;
    }
    int size = t->cfg.size;
    lens_at_root[0] = len;
    size_t total = len;
    for (int r = 1; r < size; r++) {
        if (t->ops->recv_msg(t, r, &len64, sizeof(len64), err))
            return rt_error_prefix(err, "gather");
        lens_at_root[r] = (size_t)len64;
        total += (size_t)len64;
    }
    uint8_t *out = malloc(total ? total : 1);
    if (!out)
        return rt_fail(err, RT_EXIT_RUNTIME, "gather: out of memory for %zu bytes", total);
    memcpy(out, buf, len);
    size_t off = len;
    for (int r = 1; r < size; r++) {
        if (lens_at_root[r] && t->ops->recv_msg(t, r, out + off, lens_at_root[r], err)) {
            free(out);
            return rt_error_prefix(err, "gather");
        }
        off += lens_at_root[r];
    }
    *out_at_root = out;
    return 0;
}

int rt_transport_bcast(rt_transport *t, void *buf, size_t len, rt_error *err)
{
    if (t->cfg.size < 2 || len == 0)
        return 0;
    int rc =
        t->cfg.rank == 0 ? send_to_all(t, buf, len, err) : t->ops->recv_msg(t, 0, buf, len, err);
    return rc ? rt_error_prefix(err, "broadcast") : 0;
}

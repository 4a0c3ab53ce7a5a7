/*
 * collectives.c - barrier, all-reduce, gather and broadcast for every backend,
 * built on the backend's ordered control messages.
 *
 * Two topologies (rt_transport_config.collectives):
 *
 *  tree (default)  log2(P) rounds; no rank handles more than its share.
 *    - all-reduce: recursive doubling, or for long vectors recursive halving
 *      (reduce-scatter) then recursive doubling (all-gather), as Rabenseifner.
 *      Both add along the same fixed binary tree, see reduce_tree below.
 *    - gather: binomial tree towards rank 0 (each rank forwards its subtree,
 *      ranks in order, so the result is the rank-order concatenation).
 *    - broadcast: binomial tree from rank 0.
 *    - barrier: dissemination (round k: send to r + 2^k, hear from r - 2^k).
 *  star            everything through rank 0, which adds in rank order.
 *                  Kept for the benchmark (bench/collectives.sh).
 *
 * Determinism.  The shape of the reduction tree depends only on the rank
 * count, and every pairwise sum is computed as lower + upper, so every rank
 * ends with bit-identical sums whatever the timing.  Integer sums wrap and are
 * exact in any order.  Floating-point sums follow the tree, which differs from
 * a left-to-right rank order from 3 ranks on; rotor's callers give every
 * element a single non-zero contributor (per-worker slots), and x + 0 is exact,
 * so their results equal the serial replay for any tree.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"

#include <stdlib.h>
#include <string.h>

/* Pairwise exchanges go in chunks, each side sending one chunk before it
 * reads the peer's: a chunk (plus the one before it) always fits in what a
 * backend buffers without the receiver's help (TCP socket buffers, 16 RDMA
 * control credits of 16 KiB), so two ranks sending at once never deadlock. */
#define EXCHANGE_CHUNK (16 * 1024)

typedef void (*add_fn)(void *dst, const void *lo, const void *hi, size_t n);

static int send_to(rt_transport *t, int peer, const void *buf, size_t len, rt_error *err)
{
    return len ? t->ops->send_msg(t, peer, buf, len, err) : 0;
}

static int recv_from(rt_transport *t, int peer, void *buf, size_t len, rt_error *err)
{
    return len ? t->ops->recv_msg(t, peer, buf, len, err) : 0;
}

/* Send `slen` bytes to `peer` while receiving `rlen` bytes from it. */
static int exchange(rt_transport *t, int peer, const void *sbuf, size_t slen, void *rbuf,
                    size_t rlen, rt_error *err)
{
    const uint8_t *s = sbuf;
    uint8_t *r = rbuf;
    while (slen > 0 || rlen > 0) {
        size_t ns = slen < EXCHANGE_CHUNK ? slen : EXCHANGE_CHUNK;
        size_t nr = rlen < EXCHANGE_CHUNK ? rlen : EXCHANGE_CHUNK;
        if (send_to(t, peer, s, ns, err) || recv_from(t, peer, r, nr, err))
            return -1;
        s += ns, slen -= ns;
        r += nr, rlen -= nr;
    }
    return 0;
}

/* ---- star (rank 0 does everything) ---- */

static int star_send_to_all(rt_transport *t, const void *buf, size_t len, rt_error *err)
{
    for (int r = 1; r < t->cfg.size; r++)
        if (send_to(t, r, buf, len, err))
            return -1;
    return 0;
}

static int star_barrier(rt_transport *t, rt_error *err)
{
    uint8_t token = 0xB7;
    if (t->cfg.rank != 0)
        return send_to(t, 0, &token, 1, err) || recv_from(t, 0, &token, 1, err) ? -1 : 0;
    for (int r = 1; r < t->cfg.size; r++)
        if (recv_from(t, r, &token, 1, err))
            return -1;
    return star_send_to_all(t, &token, 1, err);
}

static int star_allreduce(rt_transport *t, uint8_t *v, size_t n, size_t elem, add_fn add,
                          uint8_t *tmp, rt_error *err)
{
    size_t bytes = n * elem;
    if (t->cfg.rank != 0)
        return send_to(t, 0, v, bytes, err) || recv_from(t, 0, v, bytes, err) ? -1 : 0;
    for (int r = 1; r < t->cfg.size; r++) {
        if (recv_from(t, r, tmp, bytes, err))
            return -1;
        add(v, v, tmp, n);
    }
    return star_send_to_all(t, v, bytes, err);
}

static int star_bcast(rt_transport *t, void *buf, size_t len, rt_error *err)
{
    return t->cfg.rank == 0 ? star_send_to_all(t, buf, len, err) : recv_from(t, 0, buf, len, err);
}

/* ---- tree ---- */

static int dissemination_barrier(rt_transport *t, rt_error *err)
{
    int r = t->cfg.rank, p = t->cfg.size;
    uint8_t token = 0xB7;
    for (int k = 1; k < p; k <<= 1)
        if (send_to(t, (r + k) % p, &token, 1, err) ||
            recv_from(t, (r - k + p) % p, &token, 1, err))
            return -1;
    return 0;
}

/*
 * The reduction tree.  pof2 = the largest power of two <= P, extra = P - pof2.
 * Ranks 2i and 2i+1 (i < extra) are first added as a pair (2i's vector
 * first); the pair then acts as virtual rank i, and rank r >= 2 extra as
 * virtual rank r - extra.  Among the pof2 virtual ranks, round j pairs v with
 * v ^ 2^j and both take lower + upper.  For P = 6: ((x0+x1) + (x2+x3)) + (x4 + x5).
 */
typedef struct reduce_tree {
    int pof2, extra;
    int vrank; /* -1: this rank handed its vector to its pair and waits */
} reduce_tree;

static reduce_tree tree_of(int rank, int size)
{
    reduce_tree rt = {.pof2 = 1};
    while (rt.pof2 * 2 <= size)
        rt.pof2 *= 2;
    rt.extra = size - rt.pof2;
    if (rank < 2 * rt.extra)
        rt.vrank = rank % 2 ? -1 : rank / 2;
    else
        rt.vrank = rank - rt.extra;
    return rt;
}

static int real_rank(const reduce_tree *rt, int vrank)
{
    return vrank < rt->extra ? 2 * vrank : vrank + rt->extra;
}

/* v = lower + upper where lower is whichever of mine/theirs belongs to the
 * smaller virtual rank. */
static void add_ordered(add_fn add, uint8_t *v, const uint8_t *theirs, size_t n, int mine_lower)
{
    if (mine_lower)
        add(v, v, theirs, n);
    else
        add(v, theirs, v, n);
}

/* All-reduce by recursive doubling: log2(pof2) rounds of whole vectors. */
static int doubling_allreduce(rt_transport *t, const reduce_tree *rt, uint8_t *v, size_t n,
                              size_t elem, add_fn add, uint8_t *tmp, rt_error *err)
{
    size_t bytes = n * elem;
    for (int mask = 1; mask < rt->pof2; mask <<= 1) {
        int vpeer = rt->vrank ^ mask;
        if (exchange(t, real_rank(rt, vpeer), v, bytes, tmp, bytes, err))
            return -1;
        add_ordered(add, v, tmp, n, rt->vrank < vpeer);
    }
    return 0;
}

/* Reduce-scatter by recursive halving, in the same round order as
 * doubling_allreduce (so the same tree), then all-gather back.  Each round
 * halves the range this rank is responsible for: the lower rank of a pair
 * keeps the lower half. */
static int halving_allreduce(rt_transport *t, const reduce_tree *rt, uint8_t *v, size_t n,
                             size_t elem, add_fn add, uint8_t *tmp, rt_error *err)
{
    size_t lo[32], hi[32];
    size_t cur_lo = 0, cur_hi = n;
    int rounds = 0;
    for (int mask = 1; mask < rt->pof2; mask <<= 1, rounds++) {
        int vpeer = rt->vrank ^ mask, lower = rt->vrank < vpeer;
        size_t mid = cur_lo + (cur_hi - cur_lo) / 2;
        size_t keep_lo = lower ? cur_lo : mid, keep_hi = lower ? mid : cur_hi;
        size_t give_lo = lower ? mid : cur_lo, give_hi = lower ? cur_hi : mid;
        if (exchange(t, real_rank(rt, vpeer), v + give_lo * elem, (give_hi - give_lo) * elem, tmp,
                     (keep_hi - keep_lo) * elem, err))
            return -1;
        add_ordered(add, v + keep_lo * elem, tmp, keep_hi - keep_lo, lower);
        lo[rounds] = cur_lo, hi[rounds] = cur_hi;
        cur_lo = keep_lo, cur_hi = keep_hi;
    }
    for (int j = rounds - 1; j >= 0; j--) { /* all-gather: undo the halvings */
        int vpeer = rt->vrank ^ (1 << j);
        size_t other_lo = cur_lo == lo[j] ? cur_hi : lo[j];
        size_t other_hi = cur_lo == lo[j] ? hi[j] : cur_lo;
        if (exchange(t, real_rank(rt, vpeer), v + cur_lo * elem, (cur_hi - cur_lo) * elem,
                     v + other_lo * elem, (other_hi - other_lo) * elem, err))
            return -1;
        cur_lo = lo[j], cur_hi = hi[j];
    }
    return 0;
}

/* Vectors at least this long (and with an element per virtual rank) are
 * reduce-scattered: 2 (P-1)/P of the vector per rank instead of log2 P. */
#define HALVING_MIN_BYTES (64 * 1024)

static int tree_allreduce(rt_transport *t, uint8_t *v, size_t n, size_t elem, add_fn add,
                          uint8_t *tmp, rt_error *err)
{
    reduce_tree rt = tree_of(t->cfg.rank, t->cfg.size);
    int r = t->cfg.rank;
    size_t bytes = n * elem;
    if (r < 2 * rt.extra) { /* fold the pair (r even gets r + 1's vector) */
        if (rt.vrank < 0)
            return send_to(t, r - 1, v, bytes, err) || recv_from(t, r - 1, v, bytes, err) ? -1 : 0;
        if (recv_from(t, r + 1, tmp, bytes, err))
            return -1;
        add(v, v, tmp, n);
    }
    int rc = bytes >= HALVING_MIN_BYTES && n >= (size_t)rt.pof2
                 ? halving_allreduce(t, &rt, v, n, elem, add, tmp, err)
                 : doubling_allreduce(t, &rt, v, n, elem, add, tmp, err);
    if (rc == 0 && r < 2 * rt.extra)
        rc = send_to(t, r + 1, v, bytes, err);
    return rc;
}

/* Binomial tree from rank 0: receive from the parent, then send to the
 * children, largest subtree first. */
static int tree_bcast(rt_transport *t, void *buf, size_t len, rt_error *err)
{
    int r = t->cfg.rank, p = t->cfg.size, mask = 1;
    while (mask < p) {
        if (r & mask) {
            if (recv_from(t, r - mask, buf, len, err))
                return -1;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (r + mask < p && send_to(t, r + mask, buf, len, err))
            return -1;
    return 0;
}

/* ---- gather ---- */

/* What one rank holds while gathering: the contributions of ranks
 * first .. first + count - 1, concatenated, and their lengths. */
typedef struct gather_buf {
    uint8_t *data;
    size_t bytes, cap;
    uint64_t *lens; /* `size` entries */
    int count;
} gather_buf;

static int gather_append(gather_buf *g, size_t more, rt_error *err)
{
    if (g->data && g->bytes + more <= g->cap)
        return 0;
    size_t cap = g->cap ? g->cap : 4096;
    while (cap < g->bytes + more)
        cap *= 2;
    uint8_t *d = realloc(g->data, cap);
    if (!d)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %zu bytes", cap);
    g->data = d, g->cap = cap;
    return 0;
}

/* Receive the subtree of `count` ranks that `child` gathered. */
static int gather_from(rt_transport *t, gather_buf *g, int child, int count, rt_error *err)
{
    uint64_t *lens = g->lens + g->count;
    if (recv_from(t, child, lens, (size_t)count * sizeof(uint64_t), err))
        return -1;
    size_t more = 0;
    for (int i = 0; i < count; i++)
        more += (size_t)lens[i];
    if (gather_append(g, more, err) || recv_from(t, child, g->data + g->bytes, more, err))
        return -1;
    g->bytes += more;
    g->count += count;
    return 0;
}

static int gather_to(rt_transport *t, const gather_buf *g, int parent, rt_error *err)
{
    return send_to(t, parent, g->lens, (size_t)g->count * sizeof(uint64_t), err) ||
                   send_to(t, parent, g->data, g->bytes, err)
               ? -1
               : 0;
}

/* Star: every rank is rank 0's child with a subtree of one.  Tree: binomial,
 * rank r's children are r + 1, r + 2, r + 4, ... below its lowest set bit. */
static int gather(rt_transport *t, gather_buf *g, rt_error *err)
{
    int r = t->cfg.rank, p = t->cfg.size;
    if (t->cfg.collectives == RT_COLLECTIVES_STAR) {
        if (r != 0)
            return gather_to(t, g, 0, err);
        for (int q = 1; q < p; q++)
            if (gather_from(t, g, q, 1, err))
                return -1;
        return 0;
    }
    for (int mask = 1; mask < p; mask <<= 1) {
        if (r & mask)
            return gather_to(t, g, r - mask, err);
        if (r + mask < p) {
            int count = p - (r + mask) < mask ? p - (r + mask) : mask;
            if (gather_from(t, g, r + mask, count, err))
                return -1;
        }
    }
    return 0;
}

/* ---- public entry points ---- */

static void add_f64(void *dst, const void *lo, const void *hi, size_t n)
{
    double *d = dst;
    const double *a = lo, *b = hi;
    for (size_t i = 0; i < n; i++)
        d[i] = a[i] + b[i];
}

static void add_i64(void *dst, const void *lo, const void *hi, size_t n)
{
    int64_t *d = dst;
    const int64_t *a = lo, *b = hi;
    for (size_t i = 0; i < n; i++)
        d[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
}

static int allreduce(rt_transport *t, void *v, size_t n, size_t elem, add_fn add, rt_error *err)
{
    if (t->cfg.size < 2 || n == 0)
        return 0;
    uint8_t *tmp = calloc(n, elem);
    if (!tmp)
        return rt_fail(err, RT_EXIT_RUNTIME, "all-reduce: out of memory");
    int rc = t->cfg.collectives == RT_COLLECTIVES_STAR
                 ? star_allreduce(t, v, n, elem, add, tmp, err)
                 : tree_allreduce(t, v, n, elem, add, tmp, err);
    free(tmp);
    return rc ? rt_error_prefix(err, "all-reduce") : 0;
}

int rt_transport_allreduce_f64(rt_transport *t, double *v, size_t n, rt_error *err)
{
    return allreduce(t, v, n, sizeof(double), add_f64, err);
}

int rt_transport_allreduce_i64(rt_transport *t, int64_t *v, size_t n, rt_error *err)
{
    return allreduce(t, v, n, sizeof(int64_t), add_i64, err);
}

int rt_transport_barrier(rt_transport *t, rt_error *err)
{
    if (t->cfg.size < 2)
        return 0;
    int rc = t->cfg.collectives == RT_COLLECTIVES_STAR ? star_barrier(t, err)
                                                       : dissemination_barrier(t, err);
    return rc ? rt_error_prefix(err, "barrier") : 0;
}

int rt_transport_bcast(rt_transport *t, void *buf, size_t len, rt_error *err)
{
    if (t->cfg.size < 2 || len == 0)
        return 0;
    int rc = t->cfg.collectives == RT_COLLECTIVES_STAR ? star_bcast(t, buf, len, err)
                                                       : tree_bcast(t, buf, len, err);
    return rc ? rt_error_prefix(err, "broadcast") : 0;
}

int rt_transport_gatherv(rt_transport *t, const void *buf, size_t len, void **out_at_root,
                         size_t *lens_at_root, rt_error *err)
{
    gather_buf g = {.lens = calloc((size_t)t->cfg.size, sizeof(uint64_t))};
    int rc = g.lens ? gather_append(&g, len, err) : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (rc == 0) {
        if (len)
            memcpy(g.data, buf, len);
        g.bytes = len;
        g.lens[0] = len;
        g.count = 1;
        rc = gather(t, &g, err);
    }
    if (rc == 0 && t->cfg.rank == 0) {
        for (int r = 0; r < t->cfg.size; r++)
            lens_at_root[r] = (size_t)g.lens[r];
        *out_at_root = g.data;
        g.data = NULL;
    }
    free(g.data);
    free(g.lens);
    return rc ? rt_error_prefix(err, "gather") : 0;
}

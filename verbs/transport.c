/* transport.c - backend selection and the thin public wrappers. */
#define _GNU_SOURCE
#include "verbs/backend.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

void rt_transport_config_init(rt_transport_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->kind = RT_TRANSPORT_AUTO;
    cfg->n_slots = 2;
    cfg->connect_timeout_ms = 30000;
    cfg->handshake_timeout_ms = 5000;
    cfg->peer_timeout_ms = RT_PEER_TIMEOUT_MS;
    cfg->gid_index = -1;
}

const rt_opt_choice rt_transport_kinds[] = {{"auto", RT_TRANSPORT_AUTO},
                                            {"tcp", RT_TRANSPORT_TCP},
                                            {"ib", RT_TRANSPORT_IB},
                                            {"rdma", RT_TRANSPORT_IB},
                                            {NULL, 0}};

int rt_transport_kind_parse(const char *s, rt_transport_kind *out)
{
    for (const rt_opt_choice *c = rt_transport_kinds; c->name; c++)
        if (!strcmp(s, c->name)) {
            *out = (rt_transport_kind)c->value;
            return 0;
        }
    return -1;
}

int rt_transport_ib_available(char *why, size_t why_len)
{
    return rt_ib_probe(why, why_len);
}

int rt_transport_base_init(rt_transport *t, const struct rt_transport_ops *ops,
                           const rt_transport_config *cfg, rt_error *err)
{
    t->ops = ops;
    t->cfg = *cfg;
    t->cfg.slot_bytes = rt_round_up(cfg->slot_bytes ? cfg->slot_bytes : 1, RT_ALIGN);
    t->peers = calloc((size_t)cfg->size, sizeof(rt_peer));
    if (!t->peers)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (cfg->peers)
        memcpy(t->peers, cfg->peers, (size_t)cfg->size * sizeof(rt_peer));
    t->cfg.peers = t->peers;
    return 0;
}

void rt_transport_base_free(rt_transport *t)
{
    free(t->peers);
    t->peers = NULL;
}

static int check_config(const rt_transport_config *cfg, rt_error *err)
{
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size)
        return rt_fail(err, RT_EXIT_INPUT, "transport: rank %d is outside 0..%d", cfg->rank,
                       cfg->size - 1);
    if (cfg->size > 1 && !cfg->peers)
        return rt_fail(err, RT_EXIT_INPUT, "transport: %d ranks but no peer addresses", cfg->size);
    if (cfg->size > 1 && cfg->ring.custom &&
        (cfg->ring.next < 0 || cfg->ring.next >= cfg->size || cfg->ring.next == cfg->rank ||
         cfg->ring.prev < 0 || cfg->ring.prev >= cfg->size || cfg->ring.prev == cfg->rank))
        return rt_fail(err, RT_EXIT_INPUT,
                       "transport: rank %d: ring neighbours %d and %d are not other ranks",
                       cfg->rank, cfg->ring.next, cfg->ring.prev);
    if (cfg->n_slots < 2 || cfg->initial_occupied >= cfg->n_slots)
        return rt_fail(err, RT_EXIT_INPUT,
                       "transport: need n_slots >= 2 and initial_occupied < n_slots (got %u, %u)",
                       cfg->n_slots, cfg->initial_occupied);
    return 0;
}

/* True when some peer address is on loopback, where rdma_cm cannot route
 * (rotor launch's hostfiles are 127.0.0.1).  Every rank reads the same
 * hostfile, so every rank reaches the same answer. */
static int peers_on_loopback(const rt_transport_config *cfg)
{
    for (int r = 0; cfg->peers && r < cfg->size; r++) {
        const char *h = cfg->peers[r].host;
        if (!strncmp(h, "127.", 4) || !strcmp(h, "localhost") || !strcmp(h, "::1"))
            return 1;
    }
    return 0;
}

static int open_backend(const rt_transport_config *cfg, rt_transport **out, rt_error *err)
{
    switch (cfg->kind) {
    case RT_TRANSPORT_TCP:
        return rt_tcp_open(cfg, out, err);
    case RT_TRANSPORT_IB:
        return rt_ib_open(cfg, out, err);
    case RT_TRANSPORT_AUTO:
    default: {
        char why[256] = "";
        if (cfg->size > 1 && peers_on_loopback(cfg)) {
            rt_info("transport: auto chose tcp (peer addresses are on loopback, which RDMA "
                    "cannot route)");
            return rt_tcp_open(cfg, out, err);
        }
        if (rt_ib_probe(why, sizeof(why))) {
            rt_info("transport: auto chose ib");
            return rt_ib_open(cfg, out, err);
        }
        rt_info("transport: auto chose tcp (%s)", why[0] ? why : "no RDMA device");
        return rt_tcp_open(cfg, out, err);
    }
    }
}

int rt_transport_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err)
{
    *out = NULL;
    if (check_config(cfg, err))
        return -1;
    if (sodium_init() < 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "transport: libsodium cannot be initialised");
    if (open_backend(cfg, out, err))
        return -1;
    /* TCP authenticates each connection as it is made; RDMA cannot in the
     * rdma_cm exchange, so its ranks prove the secret to each other here,
     * before anything else crosses the connections (then the backend may
     * tell its peers what only authenticated ones may know). */
    int authenticated = !strcmp((*out)->ops->name, "tcp");
    if ((!authenticated && rt_transport_authenticate_peers(*out, err)) ||
        ((*out)->ops->authenticated && (*out)->ops->authenticated(*out, err)) ||
        rt_transport_check_fingerprint(*out, err)) {
        rt_transport_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

void rt_transport_abort(rt_transport *t, const char *why)
{
    if (t && t->ops->abort)
        t->ops->abort(t, why ? why : "an error");
}

void rt_transport_close(rt_transport *t)
{
    if (t)
        t->ops->close(t);
}

const char *rt_transport_name(const rt_transport *t)
{
    return t->ops->name;
}

int rt_transport_rank(const rt_transport *t)
{
    return t->cfg.rank;
}

int rt_transport_size(const rt_transport *t)
{
    return t->cfg.size;
}

uint32_t rt_transport_n_slots(const rt_transport *t)
{
    return t->cfg.n_slots;
}

size_t rt_transport_slot_bytes(const rt_transport *t)
{
    return t->cfg.slot_bytes;
}

void *rt_transport_slot(rt_transport *t, uint32_t slot)
{
    if (slot >= t->cfg.n_slots)
        return NULL;
    return t->ops->slot(t, slot);
}

int rt_transport_pass(rt_transport *t, uint32_t src_slot, size_t len, uint32_t block,
                      uint32_t epoch, rt_error *err)
{
    if (t->cfg.size < 2)
        return rt_fail(err, RT_EXIT_RUNTIME, "transport: pass needs at least 2 ranks");
    if (src_slot >= t->cfg.n_slots || len > t->cfg.slot_bytes)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "transport: pass of slot %u, %zu bytes outside the window (%u x %zu)",
                       src_slot, len, t->cfg.n_slots, t->cfg.slot_bytes);
    return t->ops->pass(t, src_slot, len, block, epoch, err);
}

int rt_transport_wait_arrival(rt_transport *t, rt_arrival *out, int timeout_ms, rt_error *err)
{
    if (t->cfg.size < 2)
        return rt_fail(err, RT_EXIT_RUNTIME, "transport: no previous rank to wait for");
    return t->ops->wait_arrival(t, out, timeout_ms, err);
}

int rt_transport_flush(rt_transport *t, rt_error *err)
{
    if (t->cfg.size < 2)
        return 0;
    return t->ops->flush(t, err);
}

void rt_transport_get_stats(const rt_transport *t, rt_transport_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (t->ops->get_stats)
        t->ops->get_stats(t, out);
}

/*
 * backend.h - what a transport backend implements (internal to verbs/).
 *
 * A backend embeds `struct rt_transport` as the first member of its own
 * state.  It provides the ring pass and reliable, per-peer ordered control
 * messages; collectives.c builds barrier/all-reduce/gather/bcast on top of
 * those, so every backend has identical collective semantics.
 */
#ifndef ROTOR_VERBS_BACKEND_H
#define ROTOR_VERBS_BACKEND_H

#include "verbs/transport.h"

struct rt_transport_ops {
    const char *name;
    void (*close)(rt_transport *t);
    void *(*slot)(rt_transport *t, uint32_t slot);
    int (*pass)(rt_transport *t, uint32_t src_slot, size_t len, uint32_t block, uint32_t epoch,
                rt_error *err);
    int (*wait_arrival)(rt_transport *t, rt_arrival *out, int timeout_ms, rt_error *err);
    int (*flush)(rt_transport *t, rt_error *err);
    /* Control messages: reliable and ordered per (sender, receiver) pair.
     * recv_msg receives exactly `len` bytes that `peer` sent with send_msg
     * of the same length.  Both block; both fail when the peer is lost. */
    int (*send_msg)(rt_transport *t, int peer, const void *buf, size_t len, rt_error *err);
    int (*recv_msg)(rt_transport *t, int peer, void *buf, size_t len, rt_error *err);
    void (*get_stats)(const rt_transport *t, rt_transport_stats *out);
    /* Optional: called once every rank has proven the job secret, before
     * anything else crosses the connections (RDMA sends its window here). */
    int (*authenticated)(rt_transport *t, rt_error *err);
    /* This rank stops because of its own error `why`: fail the transport
     * (first failure wins) and tell the peers, so that they report the
     * cause rather than a lost connection. */
    void (*abort)(rt_transport *t, const char *why);
};

struct rt_transport {
    const struct rt_transport_ops *ops;
    rt_transport_config cfg; /* copy; cfg.peers points into `peers` below */
    rt_peer *peers;
};

/* Backends.  Each returns 0 and *out, or -1 with err set. */
int rt_tcp_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err);
int rt_ib_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err);
int rt_ib_probe(char *why, size_t why_len); /* 1 when an active RDMA port exists */

/* Shared helpers for backends: copy cfg (and peers) into t. */
int rt_transport_base_init(rt_transport *t, const struct rt_transport_ops *ops,
                           const rt_transport_config *cfg, rt_error *err);
void rt_transport_base_free(rt_transport *t);

/* Every rank proves to every other that it knows the job key, over control
 * messages (auth.c; for backends without authentication at connect). */
int rt_transport_authenticate_peers(rt_transport *t, rt_error *err);

/* Compare every rank's fingerprint with rank 0's (fingerprint.c). */
int rt_transport_check_fingerprint(rt_transport *t, rt_error *err);

#endif

/* auth.c - MACs and nonces for connection authentication (see auth.h). */
#include "verbs/auth.h"
#include "verbs/backend.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

void auth_nonce(uint8_t nonce[AUTH_NONCE_BYTES])
{
    randombytes_buf(nonce, AUTH_NONCE_BYTES);
}

void auth_tag(const rt_transport_config *cfg, const char *role, const void *ctx, size_t ctx_len,
              const uint8_t nonce[AUTH_NONCE_BYTES], uint8_t tag[AUTH_TAG_BYTES])
{
    memset(tag, 0, AUTH_TAG_BYTES);
    if (!cfg->secure)
        return;
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, cfg->job_key, sizeof(cfg->job_key));
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)role, strlen(role) + 1);
    crypto_auth_hmacsha512256_update(&st, ctx, ctx_len);
    crypto_auth_hmacsha512256_update(&st, nonce, AUTH_NONCE_BYTES);
    crypto_auth_hmacsha512256_final(&st, tag);
    sodium_memzero(&st, sizeof(st));
}

int auth_check(const rt_transport_config *cfg, const char *role, const void *ctx, size_t ctx_len,
               const uint8_t nonce[AUTH_NONCE_BYTES], const uint8_t tag[AUTH_TAG_BYTES])
{
    if (!cfg->secure)
        return 1;
    uint8_t want[AUTH_TAG_BYTES];
    auth_tag(cfg, role, ctx, ctx_len, nonce, want);
    int ok = crypto_verify_32(want, tag) == 0;
    sodium_memzero(want, sizeof(want));
    return ok;
}

int rt_transport_job_key(const char *secret, size_t len, uint8_t key[RT_JOB_KEY_BYTES],
                         rt_error *err)
{
    if (sodium_init() < 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "libsodium cannot be initialised");
    if (len == 0)
        return rt_fail(err, RT_EXIT_INPUT, "the job secret is empty");
    static const unsigned char label[] = "rotor job key v1";
    crypto_generichash(key, RT_JOB_KEY_BYTES, (const unsigned char *)secret, len, label,
                       sizeof(label) - 1);
    return 0;
}

int rt_transport_new_secret(char *hex, size_t cap, rt_error *err)
{
    if (sodium_init() < 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "libsodium cannot be initialised");
    uint8_t raw[32];
    if (cap < 2 * sizeof(raw) + 1)
        return rt_fail(err, RT_EXIT_RUNTIME, "secret buffer too small");
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2hex(hex, cap, raw, sizeof(raw));
    sodium_memzero(raw, sizeof(raw));
    return 0;
}

void rt_transport_wipe_secret(void *secret, size_t len)
{
    sodium_memzero(secret, len);
}

/* The identity a peer answer is bound to: who answers whom. */
typedef struct peer_pair {
    int32_t from, to;
} peer_pair;

#define ROLE_PEER "rotor peer proof"

/* Every rank proves to every other that it knows the job key, over the
 * backend's control messages: a fresh nonce to each peer, then each peer's
 * answer MAC(K, "rotor peer proof" | (from, to) | our nonce).  For backends
 * whose connection setup cannot run a challenge and response of its own
 * (RDMA: the rdma_cm private data is one message each way).  Small messages
 * only, sent to everyone before anyone waits, so no order can deadlock. */
int rt_transport_authenticate_peers(rt_transport *t, rt_error *err)
{
    int size = t->cfg.size, me = t->cfg.rank;
    if (!t->cfg.secure || size < 2)
        return 0;
    uint8_t(*mine)[AUTH_NONCE_BYTES] = calloc((size_t)size, AUTH_NONCE_BYTES);
    uint8_t(*theirs)[AUTH_NONCE_BYTES] = calloc((size_t)size, AUTH_NONCE_BYTES);
    int rc = mine && theirs ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (int p = 0; rc == 0 && p < size; p++)
        if (p != me) {
            auth_nonce(mine[p]);
            rc = t->ops->send_msg(t, p, mine[p], AUTH_NONCE_BYTES, err);
        }
    for (int p = 0; rc == 0 && p < size; p++)
        if (p != me)
            rc = t->ops->recv_msg(t, p, theirs[p], AUTH_NONCE_BYTES, err);
    for (int p = 0; rc == 0 && p < size; p++)
        if (p != me) {
            peer_pair pair = {me, p};
            uint8_t tag[AUTH_TAG_BYTES];
            auth_tag(&t->cfg, ROLE_PEER, &pair, sizeof(pair), theirs[p], tag);
            rc = t->ops->send_msg(t, p, tag, sizeof(tag), err);
        }
    /* Every answer is read before any is judged: a rank that stopped at the
     * first wrong answer would close while others still wrote to it, and
     * they would report a broken pipe instead of the failed proof. */
    uint8_t(*tags)[AUTH_TAG_BYTES] = rc == 0 ? calloc((size_t)size, AUTH_TAG_BYTES) : NULL;
    if (rc == 0 && !tags)
        rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (int p = 0; rc == 0 && p < size; p++)
        if (p != me)
            rc = t->ops->recv_msg(t, p, tags[p], AUTH_TAG_BYTES, err);
    for (int p = 0; rc == 0 && p < size; p++) {
        peer_pair pair = {p, me};
        if (p != me && !auth_check(&t->cfg, ROLE_PEER, &pair, sizeof(pair), mine[p], tags[p]))
            rc = rt_fail(err, RT_EXIT_INPUT,
                         "authentication failed: rank %d (%s:%d) does not know this job's "
                         "secret (different ROTOR_TOKEN or --token-file?)",
                         p, t->cfg.peers[p].host, t->cfg.peers[p].port);
    }
    free(tags);
    free(mine);
    free(theirs);
    return rc;
}

/*
 * auth.h - proof that a peer knows the job's secret (internal to verbs/).
 *
 * Both backends authenticate every connection with the same challenge and
 * response: each side sends a fresh random nonce and answers the other
 * side's nonce with MAC(job key, role | context | nonce), HMAC-SHA-512-256
 * from libsodium.  The role label differs for the two directions, so one
 * side's answer can never be reflected back as the other's, and a recorded
 * answer is useless against a new nonce.  The job key is derived from the
 * secret by the tools (rt_transport_job_key); a transport without a key runs
 * insecure and all its MACs are zero.
 */
#ifndef ROTOR_VERBS_AUTH_H
#define ROTOR_VERBS_AUTH_H

#include "verbs/transport.h"

#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE_BYTES 16
#define AUTH_TAG_BYTES 32

/* Fresh random nonce (libsodium's CSPRNG). */
void auth_nonce(uint8_t nonce[AUTH_NONCE_BYTES]);

/* tag = MAC(key, role | ctx[0..ctx_len) | nonce); all zeros without a key. */
void auth_tag(const rt_transport_config *cfg, const char *role, const void *ctx, size_t ctx_len,
              const uint8_t nonce[AUTH_NONCE_BYTES], uint8_t tag[AUTH_TAG_BYTES]);

/* 1 when `tag` is what auth_tag gives for these inputs (constant time).
 * Without a key every tag passes (the insecure mode). */
int auth_check(const rt_transport_config *cfg, const char *role, const void *ctx, size_t ctx_len,
               const uint8_t nonce[AUTH_NONCE_BYTES], const uint8_t tag[AUTH_TAG_BYTES]);

#endif

/*
 * pmix.c - no hostfile under mpirun or srun: ranks find each other through
 * the launcher's PMIx server.
 *
 * Every rank asks PMIx for its rank, the job size and how many ranks share
 * its node, picks a free port itself (the kernel's choice for port 0), and
 * publishes "PORT HOST" under the key rotor.peer; a fence with data
 * collection then gives every rank every other rank's entry.  HOST is
 * 127.0.0.1 when the whole job is on one node (the TCP ring never leaves
 * the machine) and the node's host name otherwise.  PMIx is finalized right
 * after the exchange: nothing later needs it.
 *
 * The job secret can travel this way too.  When none was given (no
 * ROTOR_TOKEN, no --token-file, no --insecure: see cfg->pmix_secret), rank 0
 * makes one with libsodium's generator (rt_transport_new_secret) and
 * publishes it under rotor.secret in the same fence; every other rank reads
 * it from rank 0's entries.  That is safe because a PMIx server hands
 * published data only to the processes of this job (its clients are the
 * processes the launcher started, registered in the job's namespace; mpirun
 * and srun run one server per job or step), which is exactly the set of
 * processes that should know the secret; it never appears in an environment
 * or on a command line.  A secret given explicitly still wins.
 *
 * Built only when pkg-config finds pmix (Debian: libpmix-dev); otherwise
 * rt_pmix_compiled() is 0 and asking for PMIx says how to get it.
 */
#define _GNU_SOURCE
#include "engine/engine.h"
#include "verbs/netaddr.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef ROTOR_HAVE_PMIX
#include <pmix.h>

#define PEER_KEY "rotor.peer"
#define SECRET_KEY "rotor.secret"

int rt_pmix_compiled(void)
{
    return 1;
}

/* A uint32-sized job or node attribute (PMIX_JOB_SIZE, PMIX_LOCAL_SIZE). */
static int get_u32(const pmix_proc_t *who, const char *key, uint32_t *out, rt_error *err)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(who, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: cannot get %s: %s", key, PMIx_Error_string(rc));
    int ok = 1;
    if (v->type == PMIX_UINT32)
        *out = v->data.uint32;
    else if (v->type == PMIX_UINT16)
        *out = v->data.uint16;
    else
        ok = 0;
    PMIX_VALUE_RELEASE(v);
    return ok ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "PMIx: %s has an unexpected type", key);
}

/* Rank r's published "PORT HOST" into peer, checked. */
static int get_peer(const pmix_proc_t *me, int r, rt_peer *peer, rt_error *err)
{
    pmix_proc_t who;
    PMIX_LOAD_PROCID(&who, me->nspace, (pmix_rank_t)r);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&who, PEER_KEY, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: rank %d published no address: %s", r,
                       PMIx_Error_string(rc));
    int port = 0, n = 0;
    const char *s = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
    int ok = sscanf(s, "%d %n", &port, &n) == 1 && port >= 1 && port <= 65535 && s[n] &&
             strlen(s + n) < sizeof(peer->host) && !strpbrk(s + n, " \t\r\n");
    if (ok) {
        snprintf(peer->host, sizeof(peer->host), "%s", s + n);
        peer->port = port;
    }
    PMIX_VALUE_RELEASE(v);
    return ok ? 0
              : rt_fail(err, RT_EXIT_RUNTIME, "PMIx: rank %d published a bad address '%.64s'", r,
                        s);
}

/* Pick a free port and publish "PORT HOST" (not yet committed). */
static int put_address(const pmix_proc_t *me, rt_group *g, char *host, size_t cap, int *port,
                       rt_error *err)
{
    uint32_t local = 0;
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&wild, PMIX_LOCAL_SIZE, &local, err))
        return -1;
    snprintf(host, cap, "127.0.0.1");
    if ((int)local != g->size && gethostname(host, cap))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "PMIx: gethostname");
    host[cap - 1] = '\0';
    if (rt_net_free_port(host, port, err))
        return rt_error_prefix(err, "PMIx");
    char entry[300];
    snprintf(entry, sizeof(entry), "%d %s", *port, host);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, entry, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, PEER_KEY, &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (rc != PMIX_SUCCESS)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: publishing this rank's address: %s",
                       PMIx_Error_string(rc));
    return 0;
}

/* Rank 0: make the job secret and publish it (not yet committed). */
static int put_secret(rt_group *g, rt_error *err)
{
    if (rt_transport_new_secret(g->secret, sizeof(g->secret), err))
        return -1;
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, g->secret, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, SECRET_KEY, &v);
    rt_transport_wipe_secret(v.data.string, strlen(v.data.string));
    PMIX_VALUE_DESTRUCT(&v);
    if (rc != PMIX_SUCCESS)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: publishing the job secret: %s",
                       PMIx_Error_string(rc));
    return 0;
}

/* Ranks other than 0: rank 0's secret, which must look like one
 * rt_transport_new_secret made (64 hex digits). */
static int get_secret(const pmix_proc_t *me, rt_group *g, rt_error *err)
{
    pmix_proc_t root;
    PMIX_LOAD_PROCID(&root, me->nspace, 0);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&root, SECRET_KEY, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: rank 0 published no job secret: %s",
                       PMIx_Error_string(rc));
    char *s = v->type == PMIX_STRING && v->data.string ? v->data.string : NULL;
    size_t n = s ? strlen(s) : 0;
    int ok = n == sizeof(g->secret) - 1 && strspn(s, "0123456789abcdef") == n;
    if (ok)
        memcpy(g->secret, s, n + 1);
    if (s)
        rt_transport_wipe_secret(s, n);
    PMIX_VALUE_RELEASE(v);
    return ok ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "PMIx: rank 0 published a malformed job secret");
}

/* Publish what this job needs (our address when want_peers, the secret from
 * rank 0 when want_secret), fence with data collection, read everyone's. */
static int exchange(const pmix_proc_t *me, rt_group *g, int want_peers, int want_secret,
                    rt_error *err)
{
    char host[256] = "";
    int port = 0;
    if (want_peers && put_address(me, g, host, sizeof(host), &port, err))
        return -1;
    if (want_secret && g->rank == 0 && put_secret(g, err))
        return -1;
    pmix_status_t rc = PMIx_Commit();
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Fence(&wild, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: exchanging %s: %s",
                       want_peers ? "addresses" : "the job secret", PMIx_Error_string(rc));
    if (want_secret && g->rank != 0 && get_secret(me, g, err))
        return -1;
    if (!want_peers)
        return 0;
    g->peers = calloc((size_t)g->size, sizeof(rt_peer));
    if (!g->peers)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (int r = 0; r < g->size; r++)
        if (get_peer(me, r, &g->peers[r], err))
            return -1;
    rt_debug("PMIx: rank %d of %d listens on %s:%d", g->rank, g->size, host, port);
    return 0;
}

/* Rank and size from PMIx, checked against what the environment said. */
static int identity(const pmix_proc_t *me, const rt_group_config *cfg, rt_group *g, rt_error *err)
{
    uint32_t size = 0;
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&wild, PMIX_JOB_SIZE, &size, err))
        return -1;
    if (size < 1 || size > 65535 || me->rank >= size)
        return rt_fail(err, RT_EXIT_RUNTIME, "PMIx: rank %u of a job of %u", me->rank, size);
    if ((cfg->rank >= 0 && (uint32_t)cfg->rank != me->rank) ||
        (cfg->size >= 0 && (uint32_t)cfg->size != size))
        return rt_fail(err, RT_EXIT_INPUT, "PMIx says rank %u of %u, but %s says rank %d of %d",
                       me->rank, size, cfg->source ? cfg->source : "the flags", cfg->rank,
                       cfg->size);
    g->rank = (int)me->rank;
    g->size = (int)size;
    g->local_rank = cfg->local_rank >= 0 ? cfg->local_rank : g->rank;
    snprintf(g->source, sizeof(g->source), "pmix");
    return 0;
}

int rt_pmix_group(const rt_group_config *cfg, rt_group *g, rt_error *err)
{
    pmix_proc_t me;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return rt_fail(err, RT_EXIT_INPUT,
                       "PMIX_RANK is set but the launcher's PMIx server cannot be reached (%s): "
                       "run under mpirun or srun --mpi=pmix, or pass --rank/--size and --hostfile",
                       PMIx_Error_string(rc));
    int ret = identity(&me, cfg, g, err);
    int want_peers = !cfg->hostfile || !*cfg->hostfile;
    if (ret == 0 && g->size > 1 && (want_peers || cfg->pmix_secret))
        ret = exchange(&me, g, want_peers, cfg->pmix_secret, err);
    PMIx_Finalize(NULL, 0);
    if (ret)
        rt_group_free(g);
    return ret;
}

#else /* no PMIx at build time */

int rt_pmix_compiled(void)
{
    return 0;
}

int rt_pmix_group(const rt_group_config *cfg, rt_group *g, rt_error *err)
{
    (void)cfg;
    (void)g;
    return rt_fail(err, RT_EXIT_INPUT,
                   "this rotor was built without PMIx (Debian: libpmix-dev), so it cannot find "
                   "its peers through the launcher: pass --hostfile");
}

#endif

/*
 * group.c - who we are in the group: rank, size, local rank and where every
 * rank listens.
 *
 * Rank and size come from the config (flags, or the launcher's environment
 * as read by tools/launch_env.c); with neither, this is a single process
 * (rank 0 of 1).  Under a launcher with a PMIx server and no hostfile,
 * they and every rank's address come from PMIx (pmix.c).  Otherwise more
 * than one rank needs a hostfile with one line per rank, in rank order:
 *   host            port = base_port + rank
 *   host:port
 *   host port
 *   [ipv6]:port     (a bare IPv6 literal without brackets takes base_port + rank)
 * '#' starts a comment; blank lines are ignored.  Errors name the file and
 * line: "FILE:LINE: what was wrong" (exit code 2).
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_BASE_PORT 18515

/* Fill rank/size/local_rank from the config. */
static int resolve_identity(const rt_group_config *cfg, rt_group *g, rt_error *err)
{
    if (cfg->rank >= 0 || cfg->size >= 0) {
        if (cfg->size < 0 || (cfg->rank < 0 && cfg->size != 1))
            return rt_fail(err, RT_EXIT_INPUT,
                           "the rank and the group size must be given together (got only the "
                           "%s)",
                           cfg->size < 0 ? "rank" : "group size");
        g->rank = cfg->rank < 0 ? 0 : cfg->rank;
        g->size = cfg->size;
        g->local_rank = -1;
        snprintf(g->source, sizeof(g->source), "%s", cfg->source ? cfg->source : "flags");
        return 0;
    }
    g->rank = 0;
    g->size = 1;
    g->local_rank = 0;
    snprintf(g->source, sizeof(g->source), "single process");
    return 0;
}

int rt_group_resolve(const rt_group_config *cfg, rt_group *group, rt_error *err)
{
    memset(group, 0, sizeof(*group));
    int pmix = cfg->pmix && (!cfg->hostfile || !*cfg->hostfile); /* peers from PMIx */
    if (cfg->pmix ? rt_pmix_group(cfg, group, err) : resolve_identity(cfg, group, err))
        return -1;
    if (group->size < 1)
        return rt_fail(err, RT_EXIT_INPUT, "group size must be at least 1 (got %d from %s)",
                       group->size, group->source);
    if (group->rank >= group->size)
        return rt_fail(err, RT_EXIT_INPUT, "rank %d is not below the group size %d (from %s)",
                       group->rank, group->size, group->source);
    if (cfg->local_rank >= 0)
        group->local_rank = cfg->local_rank;
    if (group->local_rank < 0)
        group->local_rank = group->rank;
    if (group->size == 1 || pmix)
        return 0;

    const char *hostfile = cfg->hostfile;
    if (!hostfile || !*hostfile)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%d ranks (from %s) need a hostfile: pass --hostfile or set "
                       "ROTOR_HOSTFILE",
                       group->size, group->source);
    int base = cfg->base_port > 0 ? cfg->base_port : DEFAULT_BASE_PORT;
    return rt_hostfile_read(hostfile, group->size, base, &group->peers, err);
}

void rt_group_forget_secret(rt_group *group)
{
    rt_transport_wipe_secret(group->secret, sizeof(group->secret));
}

void rt_group_free(rt_group *group)
{
    free(group->peers);
    group->peers = NULL;
    rt_group_forget_secret(group);
}

/* ---- hostfile ---- */

static int parse_port(const char *s, int *port)
{
    int p;
    if (rt_parse_int(s, &p) || p < 1 || p > 65535)
        return -1;
    *port = p;
    return 0;
}

/* What a host name or address may hold: LDH names (and '_', which some
 * sites use), IPv4, IPv6 with a zone ("fe80::1%eth0").  Anything else
 * (a stray byte, another encoding) could never resolve, and is better named
 * here, with its line, than by the resolver at start-up. */
#define HOST_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%"

/* Parse one non-blank line (comments already stripped, trimmed).  port is
 * left at 0 when the line has none. */
static int parse_line(char *line, rt_peer *peer, const char **why)
{
    char *host = line, *port = NULL;
    char *sp = line + strcspn(line, " \t");
    if (*sp) { /* "host port" */
        *sp++ = '\0';
        port = sp + strspn(sp, " \t");
        if (port[strcspn(port, " \t")]) {
            *why = "expected \"host\", \"host:port\" or \"host port\"";
            return -1;
        }
    }
    if (host[0] == '[') { /* [v6] or [v6]:port */
        char *rb = strchr(host, ']');
        if (!rb) {
            *why = "missing ']' after an IPv6 address";
            return -1;
        }
        *rb = '\0';
        if (rb[1] == ':' && !port)
            port = rb + 2;
        else if (rb[1]) {
            *why = "unexpected text after ']'";
            return -1;
        }
        host++;
    } else {
        char *colon = strchr(host, ':');
        if (colon && colon == strrchr(host, ':')) { /* host:port */
            if (port) {
                *why = "two ports (host:port and a separate port)";
                return -1;
            }
            *colon = '\0';
            port = colon + 1;
        }
        /* more than one ':' is a bare IPv6 literal without a port */
    }
    if (!*host) {
        *why = "empty host name";
        return -1;
    }
    if (host[strspn(host, HOST_CHARS)]) {
        *why = "a host name is letters, digits, '.', '-' and '_' (an IPv6 address: hex digits, "
               "':' and '%')";
        return -1;
    }
    if (strlen(host) >= sizeof(peer->host)) {
        *why = "host name too long";
        return -1;
    }
    snprintf(peer->host, sizeof(peer->host), "%s", host);
    peer->port = 0;
    if (port && parse_port(port, &peer->port)) {
        *why = "port must be a number in 1..65535";
        return -1;
    }
    return 0;
}

/* Strip a comment and surrounding whitespace in place. */
static char *trim(char *s)
{
    s[strcspn(s, "#\r\n")] = '\0';
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The entry of line `lineno` (comments stripped, trimmed, not blank) into
 * p[n], the rank's port from base_port when the line names none. */
static int add_entry(const char *path, int lineno, char *line, int base_port, rt_peer *p, int n,
                     rt_error *err)
{
    const char *why = NULL;
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", line); /* parse_line cuts line up */
    if (parse_line(line, &p[n], &why))
        return rt_fail(err, RT_EXIT_INPUT, "%s:%d: bad hostfile entry '%s': %s", path, lineno, copy,
                       why);
    if (p[n].port == 0) {
        if (base_port + n > 65535 || base_port + n < 1)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%d: no port, and base port %d + rank %d is not a valid port", path,
                           lineno, base_port, n);
        p[n].port = base_port + n;
    }
    /* Two ranks at one address: found at parse time, with its line,
     * rather than by a rank that connects to itself. */
    for (int r = 0; r < n; r++)
        if (p[r].port == p[n].port && !strcasecmp(p[r].host, p[n].host))
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%d: rank %d has the address of rank %d (%s:%d): every rank "
                           "needs its own port",
                           path, lineno, n, r, p[n].host, p[n].port);
    return 0;
}

/* One entry per rank from the lines of `text` (rt_text_load's: binary
 * bytes refused, line ends unified, no byte order mark). */
static int read_entries(const char *path, char *text, int size, int base_port, rt_peer *p,
                        rt_error *err)
{
    int n = 0, lineno = 0;
    for (char *s = text; *s;) {
        lineno++;
        char *e = strchr(s, '\n');
        if (e)
            *e = '\0';
        char *line = trim(s);
        s = e ? e + 1 : s + strlen(s);
        if (!*line)
            continue;
        if (n == size)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%d: more than %d hostfile entries (one per rank expected)", path,
                           lineno, size);
        if (add_entry(path, lineno, line, base_port, p, n, err))
            return -1;
        n++;
    }
    if (n < size)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: hostfile has %d entr%s (%d lines), need %d (one per rank)", path, n,
                       n == 1 ? "y" : "ies", lineno, size);
    return 0;
}

int rt_hostfile_read(const char *path, int size, int base_port, rt_peer **peers, rt_error *err)
{
    *peers = NULL;
    if (size < 1)
        return rt_fail(err, RT_EXIT_INPUT, "%s: group size %d, need at least 1", path, size);
    rt_text t;
    if (rt_text_load(path, &t, err))
        return rt_error_prefix(err, "hostfile");
    rt_peer *p = calloc((size_t)size, sizeof(*p));
    int rc = p ? read_entries(t.path, t.data, size, base_port, p, err)
               : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    rt_text_free(&t);
    if (rc) {
        free(p);
        return -1;
    }
    *peers = p;
    return 0;
}

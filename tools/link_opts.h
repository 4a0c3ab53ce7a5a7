/* link_opts.h - the options of the commands that join a group of processes
 * and open a transport (`rotor train`, `rotor bench-link`): where the peers
 * are and how to reach them.  One table, so both commands spell and check
 * them alike. */
#ifndef ROTOR_TOOLS_LINK_OPTS_H
#define ROTOR_TOOLS_LINK_OPTS_H

#include "engine/engine.h"

typedef struct link_opts {
    rt_group_config group;
    rt_transport_config transport;
    int peer_timeout_s;     /* --peer-timeout, seconds (the transport takes ms) */
    const char *token_file; /* --token-file: the job secret (else ROTOR_TOKEN) */
    int insecure;           /* --insecure: several processes without a secret */
} link_opts;

/* The table, for a group whose dest is a link_opts (title "transport options"). */
extern const rt_opt link_options[];

/* Defaults before parsing: rank and size from the environment, base port
 * 18515, the transport's defaults, and a silent peer tolerated for
 * peer_timeout_s seconds (0 = forever). */
void link_opts_init(link_opts *l, int peer_timeout_s);
/* After parsing: carry the values the table cannot store directly. */
void link_opts_finish(link_opts *l);

/* Once the options are parsed: rank, size and hostfile from the launcher's
 * environment where flags gave none, the group resolved, and the job secret
 * (--token-file, ROTOR_TOKEN, or none with --insecure) in l->transport.
 * Returns 0 with *g filled (rt_group_free it), or -1 with err. */
int link_opts_join(link_opts *l, rt_group *g, rt_error *err);

#endif

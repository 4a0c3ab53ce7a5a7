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
    int peer_timeout_s; /* --peer-timeout, seconds (the transport takes ms) */
} link_opts;

/* The table, for a group whose dest is a link_opts (title "transport options"). */
extern const rt_opt link_options[];

/* Defaults before parsing: rank and size from the environment, base port
 * 18515, the transport's defaults, and a silent peer tolerated for
 * peer_timeout_s seconds (0 = forever). */
void link_opts_init(link_opts *l, int peer_timeout_s);
/* After parsing: carry the values the table cannot store directly. */
void link_opts_finish(link_opts *l);

#endif

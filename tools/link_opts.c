/* link_opts.c - the group and transport options (see link_opts.h). */
#include "tools/link_opts.h"
#include "tools/launch_env.h"

#include <string.h>

const rt_opt link_options[] = {
    {.name = "hostfile",
     .type = RT_OPT_PATH,
     .offset = offsetof(link_opts, group.hostfile),
     .metavar = "FILE",
     .help = "one line per rank: host[:port] (needed for more than one process unless the "
             "launcher provides ROTOR_HOSTFILE)"},
    {.name = "base-port",
     .type = RT_OPT_INT,
     .offset = offsetof(link_opts, group.base_port),
     .metavar = "N",
     .def = "18515",
     .min = 1,
     .max = 65535,
     .help = "port of rank r for hostfile lines without one: N + r"},
    {.name = "transport",
     .type = RT_OPT_ENUM,
     .offset = offsetof(link_opts, transport.kind),
     .def = "auto",
     .choices = rt_transport_kinds,
     .help = "auto: ib when a device with an active port exists, else tcp"},
    {.name = "ib-dev",
     .type = RT_OPT_STRING,
     .offset = offsetof(link_opts, transport.ib_dev),
     .metavar = "NAME",
     .help = "RDMA device (default: the one owning the hostfile address)"},
    {.name = "ib-port",
     .type = RT_OPT_INT,
     .offset = offsetof(link_opts, transport.ib_port),
     .metavar = "N",
     .min = 1,
     .max = 255,
     .help = "RDMA port (default: the address's port)"},
    {.name = "gid-index",
     .type = RT_OPT_INT,
     .offset = offsetof(link_opts, transport.gid_index),
     .metavar = "N",
     .min = 0,
     .max = 65535,
     .help = "RoCE GID index (default: auto-detect the RoCE v2 GID of the address)"},
    {.name = "event-mode",
     .type = RT_OPT_FLAG,
     .offset = offsetof(link_opts, transport.event_mode),
     .help = "wait for RDMA completions on a channel instead of busy-polling"},
    {.name = "peer-timeout",
     .type = RT_OPT_INT,
     .offset = offsetof(link_opts, peer_timeout_s),
     .metavar = "S",
     .min = 0,
     .max = 2000000,
     .help = "a peer that sends nothing, not even a heartbeat, for S seconds is lost (0: "
             "never; a peer that dies is always detected at once)"},
    {.name = "token-file",
     .type = RT_OPT_PATH,
     .offset = offsetof(link_opts, token_file),
     .metavar = "FILE",
     .help = "the job secret, which every connection must prove it knows (default: "
             "$ROTOR_TOKEN, which rotor launch sets)"},
    {.name = "insecure",
     .type = RT_OPT_FLAG,
     .offset = offsetof(link_opts, insecure),
     .help = "run several processes without a secret: anyone who reaches the ports can join"},
    {0}};

void link_opts_init(link_opts *l, int peer_timeout_s)
{
    memset(l, 0, sizeof(*l));
    l->group.rank = l->group.size = l->group.local_rank = -1;
    rt_transport_config_init(&l->transport);
    l->peer_timeout_s = peer_timeout_s;
}

void link_opts_finish(link_opts *l)
{
    l->transport.peer_timeout_ms = l->peer_timeout_s * 1000;
}

int link_opts_join(link_opts *l, rt_group *g, rt_error *err)
{
    if (rt_launch_env_group(&l->group, err) || rt_group_resolve(&l->group, g, err))
        return -1;
    if (rt_launch_env_secret(&l->transport, l->token_file, l->insecure, g->size, err)) {
        rt_group_free(g);
        return -1;
    }
    return 0;
}

/* link_opts.c - the group and transport options (see link_opts.h). */
#include "tools/link_opts.h"
#include "tools/commands.h"
#include "tools/launch_env.h"

#include <string.h>

const rt_opt link_options[] = {
    RT_PATH_OPT("hostfile", 0, link_opts, group.hostfile, "FILE", NULL, 0,
                "one line per rank: host[:port] (needed for more than one process unless the "
                "launcher provides ROTOR_HOSTFILE)"),
    RT_INT_OPT("base-port", 0, link_opts, group.base_port, "N", "18515", 1, 65535, 0,
               "port of rank r for hostfile lines without one: N + r"),
    RT_ENUM_OPT("transport", 0, link_opts, transport.kind, rt_transport_kinds, "auto",
                "auto: ib when a device with an active port exists, else tcp"),
    RT_STRING_OPT("ib-dev", 0, link_opts, transport.ib_dev, "NAME", NULL, 0,
                  "RDMA device (default: the one owning the hostfile address)"),
    RT_INT_OPT("ib-port", 0, link_opts, transport.ib_port, "N", NULL, 1, 255, 0,
               "RDMA port (default: the address's port)"),
    RT_INT_OPT("gid-index", 0, link_opts, transport.gid_index, "N", NULL, 0, 65535, 0,
               "RoCE GID index (default: auto-detect the RoCE v2 GID of the address)"),
    RT_FLAG_OPT("event-mode", 0, link_opts, transport.event_mode,
                "wait for RDMA completions on a channel instead of busy-polling"),
    RT_INT_OPT("peer-timeout", 0, link_opts, peer_timeout_s, "S", NULL, 0, 2000000, 0,
               "a peer that sends nothing, not even a heartbeat, for S seconds is lost (0: "
               "never; a peer that dies is always detected at once)"),
    RT_PATH_OPT("token-file", 0, link_opts, token_file, "FILE", NULL, 0,
                "the job secret (the file's one line of text), which every connection must "
                "prove it knows (default: "
                "$ROTOR_TOKEN, which rotor launch sets; else, under mpirun or srun without a "
                "hostfile, one made for the job and shared through PMIx)"),
    RT_FLAG_OPT("insecure", 0, link_opts, insecure,
                "run several processes without a secret: anyone who reaches the ports can join"),
    {0}};

void link_opts_init(link_opts *l, int peer_timeout_s)
{
    memset(l, 0, sizeof(*l));
    l->group.rank = l->group.size = l->group.local_rank = -1;
    rt_transport_config_init(&l->transport);
    l->transport.build = rotor_build_identity();
    l->peer_timeout_s = peer_timeout_s;
}

void link_opts_finish(link_opts *l)
{
    l->transport.peer_timeout_ms = l->peer_timeout_s * 1000;
}

int link_opts_join(link_opts *l, rt_group *g, rt_error *err)
{
    if (rt_launch_env_group(&l->group, err))
        return -1;
    /* Through PMIx, a job given no secret gets one made for it there. */
    l->group.pmix_secret =
        l->group.pmix && !l->insecure && !rt_launch_env_secret_given(l->token_file);
    if (rt_group_resolve(&l->group, g, err))
        return -1;
    int rc = rt_launch_env_secret(&l->transport, l->token_file, l->insecure, g, err);
    rt_group_forget_secret(g); /* the transport keeps only the key */
    if (rc) {
        rt_group_free(g);
        return -1;
    }
    return 0;
}

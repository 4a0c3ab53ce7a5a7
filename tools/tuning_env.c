/* tuning_env.c - read the environment variables of tuning_env.h. */
#include "tools/tuning_env.h"

#include <stdlib.h>

void rt_env_apply_log_level(void)
{
    const char *s = getenv("ROTOR_LOG");
    if (!s)
        return;
    int level = rt_log_level_parse(s);
    if (level < 0)
        rt_warn("ROTOR_LOG=%s is not debug, info, warn or error: ignored", s);
    else
        rt_log_level = level;
}

int rt_env_local_size(void)
{
    static const char *const vars[] = {"ROTOR_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *s = getenv(vars[i]);
        int v;
        if (s && rt_parse_int(s, &v) == 0 && v > 0)
            return v;
    }
    return 0;
}

void rt_env_tune_transport(rt_transport_config *cfg)
{
    const char *s = getenv("ROTOR_TCP_SOCKBUF");
    int bytes;
    if (!s)
        return;
    if (rt_parse_int(s, &bytes) || bytes < 0)
        rt_warn("ROTOR_TCP_SOCKBUF=%s is not a byte count: ignored", s);
    else
        cfg->tcp_sockbuf = bytes == 0 ? -1 : bytes;
}

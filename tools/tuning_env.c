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

/* Pinning (engine/pin.c) asks hwloc for cores and nothing else, but
 * hwloc_topology_init dlopens every plugin it finds before any of its own
 * settings can say no: on Debian the PCI, OpenCL and GL device discovery
 * (libpciaccess, libOpenCL, libX11) and the libxml2 XML reader (with ICU),
 * about 2.8 MB of resident relocated libraries in every rank, for I/O
 * objects rotor never asks for and an XML format hwloc also reads without
 * libxml2.  Its environment variable is the only switch that acts before
 * the loading; a value the user gave wins. */
void rt_env_skip_hwloc_plugins(void)
{
    setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml", 0);
}

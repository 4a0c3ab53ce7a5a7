/*
 * tuning_env.h - the environment variables that tune the libraries.
 *
 * Libraries never read the environment; the tools read it here and pass the
 * values down in the libraries' config structs.
 *   ROTOR_LOG=debug|info|warn|error        log level (every command)
 *   ROTOR_LOCAL_SIZE (rotor launch), OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS,
 *   SLURM_NTASKS_PER_NODE                  processes on this host (pinning)
 *   ROTOR_TCP_SOCKBUF=bytes                TCP ring socket buffers (0 = kernel
 *                                          autotuning), for benchmarking
 * and one that tunes hwloc for the commands that pin threads:
 *   HWLOC_PLUGINS_BLACKLIST                set (unless the user set it) to
 *                                          hwloc's I/O and libxml plugins
 */
#ifndef ROTOR_TOOLS_TUNING_ENV_H
#define ROTOR_TOOLS_TUNING_ENV_H

#include "verbs/transport.h"

/* Set rt_log_level from ROTOR_LOG (an unknown value is reported and ignored). */
void rt_env_apply_log_level(void);
/* Processes on this host from the launcher's environment, 0 when unknown. */
int rt_env_local_size(void);
/* Apply ROTOR_TCP_SOCKBUF to cfg->tcp_sockbuf. */
void rt_env_tune_transport(rt_transport_config *cfg);
/* Keep hwloc from loading the plugins rotor has no use for.  Call before
 * any thread starts (setenv) and before the first topology is made. */
void rt_env_skip_hwloc_plugins(void);

#endif

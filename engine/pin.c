/*
 * pin.c - bind worker threads to cores with hwloc.
 *
 * Worker t of the process with local rank L (processes on one host) goes to
 * core (L * threads + t).  RT_PIN_AUTO pins only when every worker thread on
 * the host gets a core of its own; oversubscribed runs (e.g. 2 processes x 2
 * threads on a 2-core laptop) are left to the OS scheduler.
 */
#include "engine.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdlib.h>

void rt_pin_current_thread(const rt_group *group, int threads, int t, rt_pin_mode mode);

static int local_size_from_env(void)
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

void rt_pin_current_thread(const rt_group *group, int threads, int t, rt_pin_mode mode)
{
    if (mode == RT_PIN_NO)
        return;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    if (cores <= 0)
        cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int local = group->local_rank >= 0 ? group->local_rank : 0;
    int local_size = local_size_from_env();
    if (local_size == 0)
        local_size = group->size == 1 ? 1 : local + 1;
    int index = local * threads + t;
    int fits = local_size * threads <= cores;
    if (cores > 0 && (mode == RT_PIN_YES || fits)) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(index % cores));
        if (!core)
            core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(index % cores));
        if (core && core->cpuset) {
            hwloc_bitmap_t set = hwloc_bitmap_dup(core->cpuset);
            hwloc_bitmap_singlify(set);
            if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
                rt_debug("pin: could not bind worker %d to core %d", t, index % cores);
            else
                rt_debug("pin: worker %d on core %d", t, index % cores);
            hwloc_bitmap_free(set);
        }
    } else if (t == 0) {
        rt_debug("pin: %d x %d worker threads on %d cores: not pinning", local_size, threads,
                 cores);
    }
    hwloc_topology_destroy(topo);
}

/*
 * pin.c - bind worker threads to cores with hwloc.
 *
 * Worker t of the process with local rank L (processes on one host) goes to
 * core (L * threads + t).  RT_PIN_AUTO pins only when every worker thread of
 * every process on the host gets a core of its own, which needs the number
 * of processes on the host (local_size: the tools read it from rotor launch's
 * or the MPI / Slurm environment).  When that number is unknown and there
 * are several ranks, AUTO does not pin: pinning one process's workers to cores the
 * others also run on would only make them compete.  Oversubscribed runs
 * (e.g. 2 processes x 2 threads on a 2-core laptop) are left to the OS.
 */
#include "engine/engine.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdlib.h>

void rt_pin_current_thread(const rt_group *group, int local_size, int threads, int t,
                           rt_pin_mode mode);

static hwloc_topology_t topology;
static int topology_ok;
static pthread_once_t topology_once = PTHREAD_ONCE_INIT;

static void load_topology(void)
{
    if (hwloc_topology_init(&topology) != 0)
        return;
    if (hwloc_topology_load(topology) != 0) {
        hwloc_topology_destroy(topology);
        return;
    }
    topology_ok = 1;
}

static int should_pin(const rt_group *group, int local_size, int threads, int cores,
                      rt_pin_mode mode)
{
    if (mode == RT_PIN_YES)
        return 1;
    if (local_size <= 0 && group->size == 1)
        local_size = 1;
    return local_size > 0 && local_size * threads <= cores;
}

void rt_pin_current_thread(const rt_group *group, int local_size, int threads, int t,
                           rt_pin_mode mode)
{
    if (mode == RT_PIN_NO)
        return;
    pthread_once(&topology_once, load_topology);
    if (!topology_ok)
        return;
    hwloc_obj_type_t type = HWLOC_OBJ_CORE;
    int cores = hwloc_get_nbobjs_by_type(topology, type);
    if (cores <= 0) {
        type = HWLOC_OBJ_PU;
        cores = hwloc_get_nbobjs_by_type(topology, type);
    }
    if (cores <= 0 || !should_pin(group, local_size, threads, cores, mode)) {
        if (t == 0)
            rt_debug("pin: %d worker threads per process on %d cores: not pinning", threads, cores);
        return;
    }
    int local = group->local_rank >= 0 ? group->local_rank : 0;
    int index = (local * threads + t) % cores;
    hwloc_obj_t obj = hwloc_get_obj_by_type(topology, type, (unsigned)index);
    if (!obj || !obj->cpuset)
        return;
    hwloc_bitmap_t set = hwloc_bitmap_dup(obj->cpuset);
    hwloc_bitmap_singlify(set);
    if (hwloc_set_cpubind(topology, set, HWLOC_CPUBIND_THREAD) != 0)
        rt_debug("pin: could not bind worker %d to core %d", t, index);
    else
        rt_debug("pin: worker %d on core %d", t, index);
    hwloc_bitmap_free(set);
}

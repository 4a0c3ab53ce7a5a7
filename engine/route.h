/*
 * route.h - where the blocks go for one split of the plan's workers
 * (internal to the engine).
 *
 * The plan's schedule says which worker visits which block at every step
 * (partition.h).  With the workers split P nodes x T threads (worker w on
 * node w / T), a block leaves a node right after its visit there when its
 * next visitor (cyclically, into the next epoch) is on another node.  The
 * route lists, for one node, the blocks it passes after each step and the
 * blocks it receives in each epoch, in the order they travel.  The transport
 * moves blocks around one ring, so the route is refused unless every node
 * passes blocks to one node only (and so receives from one node only).
 */
#ifndef ROTOR_ENGINE_ROUTE_H
#define ROTOR_ENGINE_ROUTE_H

#include "partition/partition.h"

typedef struct rt_route {
    uint32_t next, prev;  /* ring neighbours (= this node when P == 1) */
    uint32_t *depart_off; /* B+1: blocks passed after step s are depart[depart_off[s] ..
                             depart_off[s+1]), in passing order */
    uint32_t *depart;     /* blocks */
    uint32_t *arrive;     /* blocks received in one epoch, in arrival order */
    uint32_t n_arrive;
    uint32_t slots_needed; /* window slots that hold every node's blocks at any
                              step boundary (same on every node) */
} rt_route;

/* The route of node `node` of `nodes` x `threads` (nodes * threads = the
 * plan's workers).  Fails (exit 2) when the schedule needs more than a ring. */
int rt_route_build(const rt_plan *plan, uint32_t nodes, uint32_t threads, uint32_t node,
                   rt_route *route, rt_error *err);
void rt_route_free(rt_route *route);

#endif

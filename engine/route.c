/* route.c - a split's block itinerary from the plan's schedule (route.h). */
#include "engine/route.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* One node's ring neighbours and block counts during a build. */
typedef struct route_node {
    uint32_t next, prev; /* NONE until the schedule passes a block out of (into) it */
    uint64_t held;       /* blocks on (or travelling to) the node */
    uint64_t in_step;    /* blocks it receives after the current step */
    uint64_t out_step;   /* blocks it passes after the current step */
} route_node;

/* Scratch of one build: who visits each block when, and every node. */
typedef struct route_scratch {
    uint32_t *visitor; /* [b * W + k]: worker of block b's k-th visit in an epoch */
    uint32_t *nth;     /* [s * W + w]: which visit of its block (s, w) is */
    route_node *node;  /* nodes */
} route_scratch;

static void scratch_free(route_scratch *x)
{
    free(x->visitor);
    free(x->nth);
    free(x->node);
}

static int scratch_init(route_scratch *x, const rt_plan *p, uint32_t nodes, rt_error *err)
{
    uint32_t W = p->workers, B = p->blocks;
    memset(x, 0, sizeof(*x));
    x->visitor = malloc(sizeof(uint32_t) * (size_t)W * B);
    x->nth = malloc(sizeof(uint32_t) * (size_t)W * B);
    x->node = calloc(nodes, sizeof(route_node));
    uint32_t *count = calloc(B, sizeof(uint32_t));
    if (!x->visitor || !x->nth || !x->node || !count) {
        free(count);
        scratch_free(x);
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory (route)");
    }
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = rt_plan_schedule_block(p, s, w);
            x->nth[(size_t)s * W + w] = count[b];
            x->visitor[(size_t)b * W + count[b]++] = w;
        }
    free(count);
    for (uint32_t n = 0; n < nodes; n++)
        x->node[n].next = x->node[n].prev = NONE;
    return 0;
}

/* Record a pass from node `from` to node `to`; one ring only. */
static int link_nodes(route_scratch *x, const rt_plan *p, uint32_t nodes, uint32_t threads,
                      uint32_t from, uint32_t to, rt_error *err)
{
    route_node *f = &x->node[from], *t = &x->node[to];
    uint32_t clash = f->next != NONE && f->next != to ? f->next : NONE;
    uint32_t from2 = t->prev != NONE && t->prev != from ? t->prev : NONE;
    if (clash != NONE || from2 != NONE)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: with %u process%s x %u thread%s the schedule passes blocks %s node "
                       "%u %s nodes %u and %u; the transport moves blocks around one ring (each "
                       "node passes to one other)",
                       p->dir, nodes, nodes == 1 ? "" : "es", threads, threads == 1 ? "" : "s",
                       clash != NONE ? "from" : "to", clash != NONE ? from : to,
                       clash != NONE ? "to" : "from", clash != NONE ? clash : from2,
                       clash != NONE ? to : from);
    f->next = to;
    t->prev = from;
    return 0;
}

/* Append one block to a growing list (capacity W * B is never exceeded). */
static void push(uint32_t *list, uint32_t *n, uint32_t b)
{
    list[(*n)++] = b;
}

int rt_route_build(const rt_plan *p, uint32_t nodes, uint32_t threads, uint32_t node, rt_route *r,
                   rt_error *err)
{
    uint32_t W = p->workers, B = p->blocks, span = p->pipeline * threads;
    memset(r, 0, sizeof(*r));
    route_scratch x;
    if (scratch_init(&x, p, nodes, err))
        return -1;
    r->depart_off = calloc((size_t)B + 1, sizeof(uint32_t));
    r->depart = malloc(sizeof(uint32_t) * (size_t)W * B);
    r->arrive = malloc(sizeof(uint32_t) * (size_t)W * B);
    if (!r->depart_off || !r->depart || !r->arrive) {
        scratch_free(&x);
        rt_route_free(r);
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory (route)");
    }
    uint32_t n_depart = 0;
    uint64_t peak = 0;
    for (uint32_t n = 0; n < nodes; n++)
        x.node[n].held = span;
    for (uint32_t s = 0; s < B; s++) {
        for (uint32_t n = 0; n < nodes; n++)
            x.node[n].in_step = x.node[n].out_step = 0;
        /* Node by node, thread by thread: the order blocks are passed in. */
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = rt_plan_schedule_block(p, s, w);
            uint32_t k = x.nth[(size_t)s * W + w];
            uint32_t from = w / threads, to = x.visitor[(size_t)b * W + (k + 1) % W] / threads;
            if (to == from)
                continue;
            if (link_nodes(&x, p, nodes, threads, from, to, err)) {
                scratch_free(&x);
                rt_route_free(r);
                return -1;
            }
            x.node[from].out_step++;
            x.node[to].in_step++;
            if (from == node)
                push(r->depart, &n_depart, b);
            if (to == node)
                push(r->arrive, &r->n_arrive, b);
        }
        r->depart_off[s + 1] = n_depart;
        /* At the boundary a node's window holds what stays, what leaves
         * (until its transfer completes) and what arrives. */
        for (uint32_t n = 0; n < nodes; n++) {
            route_node *d = &x.node[n];
            if (d->held + d->in_step > peak)
                peak = d->held + d->in_step;
            d->held = d->held - d->out_step + d->in_step;
        }
    }
    r->next = x.node[node].next == NONE ? node : x.node[node].next;
    r->prev = x.node[node].prev == NONE ? node : x.node[node].prev;
    scratch_free(&x);
    r->slots_needed = (uint32_t)peak;
    return 0;
}

void rt_route_free(rt_route *r)
{
    free(r->depart_off);
    free(r->depart);
    free(r->arrive);
    memset(r, 0, sizeof(*r));
}

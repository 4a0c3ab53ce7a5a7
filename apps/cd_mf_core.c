/* cd_mf_core.c - the CCD++ phase machine of cd-mf (see cd_mf.h for the phase
 * sequence).  Nothing here knows about the engine or the network: cd_mf.c
 * forwards the engine's callbacks here and does the all-reduce, and the unit
 * tests drive the same functions through an in-memory schedule. */
#include "apps/cd_mf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cd_phase_of(uint64_t rotation, uint32_t k, uint32_t inner, cd_phase *ph)
{
    uint64_t per = cd_rotations_per_outer(k, inner);
    uint64_t q = rotation % per;
    memset(ph, 0, sizeof(*ph));
    ph->outer = rotation / per;
    ph->rank = (uint32_t)(q / (2ull * inner));
    ph->inner = (uint32_t)(q % (2ull * inner) / 2);
    ph->kind = (int)(q & 1);
    ph->sub_rank = (ph->rank + k - 1) % k;
    ph->eval = q == per - 1;
    if (ph->kind == CD_PHASE_U && ph->inner == 0 && k > 1) {
        /* Nothing to take out before the very first rank; nothing to add
         * back in outer iteration 0, where W = 0.  With k = 1 the two would
         * cancel, so both are skipped and E^ simply carries on. */
        ph->subtract = !(ph->outer == 0 && ph->rank == 0);
        ph->add_back = ph->outer > 0;
    }
}

/* ---- payload layout ---- */

static size_t hdr_bytes(void)
{
    return rt_round_up(sizeof(cd_payload_hdr), RT_ALIGN);
}
static size_t f32_bytes(uint32_t n)
{
    return rt_round_up((size_t)n * sizeof(float), RT_ALIGN);
}
static size_t f64_bytes(uint32_t n)
{
    return rt_round_up((size_t)n * sizeof(double), RT_ALIGN);
}

size_t cd_payload_max_bytes(uint32_t max_cols)
{
    size_t u = hdr_bytes() + 2 * f32_bytes(max_cols);
    size_t v = hdr_bytes() + 2 * f64_bytes(2 * max_cols);
    return u > v ? u : v;
}

/* The i-th array of a payload of `n` columns: floats v[n] in the U phase,
 * accumulator pairs acc[2n] in the V phase. */
static float *payload_v(void *payload, uint32_t n, int i)
{
    return (float *)((char *)payload + hdr_bytes() + (size_t)i * f32_bytes(n));
}
static double *payload_acc(void *payload, uint32_t n, int i)
{
    return (double *)((char *)payload + hdr_bytes() + (size_t)i * f64_bytes(2 * n));
}

static size_t payload_len(const cd_phase *ph, uint32_t n)
{
    if (ph->kind == CD_PHASE_U)
        return hdr_bytes() + (ph->subtract ? 2 : 1) * f32_bytes(n);
    return hdr_bytes() + (ph->eval ? 2 : 1) * f64_bytes(2 * n);
}

static uint32_t phase_flags(const cd_phase *ph)
{
    return (ph->subtract ? CD_PF_SUBTRACT : 0) | (ph->add_back ? CD_PF_ADD_BACK : 0) |
           (ph->eval ? CD_PF_EVAL : 0);
}

/* ---- setup ---- */

static int worker_init(cd_core *c, cd_worker *w, uint32_t id, const rt_shard *sh, rt_error *err)
{
    uint32_t B = c->plan->blocks, k = c->opt.mf.k;
    w->id = id;
    w->n_rows = sh->n_rows;
    w->shard = sh;
    if (sh->worker != id || sh->n_rows != rt_plan_worker_rows(c->plan, id))
        return rt_fail(err, RT_EXIT_INPUT, "cd-mf: shard of worker %u does not match the plan", id);
    /* E = R - W H^T = R, since W starts at zero. */
    if (cd_cells_build(&w->train, sh->train, sh->train_off, B, err) ||
        cd_cells_build(&w->test, sh->test, sh->test_off, B, err))
        return rt_error_prefix(err, "worker %u", id);
    w->U = rt_alloc((size_t)k * w->n_rows * sizeof(float));
    w->acc = rt_alloc(2 * (size_t)w->n_rows * sizeof(double));
    if (!w->U || !w->acc)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for worker %u (%u rows)", id,
                       w->n_rows);
    return 0;
}

int cd_core_init(cd_core *c, const cd_opts *opt, const rt_plan *plan, const rt_shard *shards,
                 uint32_t first_worker, uint32_t n_workers, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->opt = *opt;
    c->plan = plan;
    c->first_worker = first_worker;
    c->n_workers = n_workers;
    c->workers = calloc(n_workers, sizeof(cd_worker));
    c->blocks = calloc(plan->blocks, sizeof(cd_block));
    if (!c->workers || !c->blocks)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory");
    for (uint32_t l = 0; l < n_workers; l++)
        if (worker_init(c, &c->workers[l], first_worker + l, &shards[l], err))
            return -1;
    return 0;
}

void cd_core_free(cd_core *c)
{
    if (c->workers)
        for (uint32_t l = 0; l < c->n_workers; l++) {
            cd_worker *w = &c->workers[l];
            cd_cells_free(&w->train);
            cd_cells_free(&w->test);
            rt_free(w->U);
            rt_free(w->acc);
        }
    if (c->blocks)
        for (uint32_t b = 0; b < c->plan->blocks; b++)
            rt_free(c->blocks[b].V);
    free(c->workers);
    free(c->blocks);
    memset(c, 0, sizeof(*c));
}

/* First time block b is home here: its slice of H, initialised. */
static int block_state(cd_core *c, uint32_t b, rt_error *err)
{
    cd_block *bl = &c->blocks[b];
    uint32_t k = c->opt.mf.k;
    if (bl->V)
        return 0;
    bl->n_cols = rt_plan_block_cols(c->plan, b);
    bl->V = rt_alloc((size_t)k * bl->n_cols * sizeof(float));
    if (!bl->V)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for block %u", b);
    uint32_t kp = rt_mf_padded_rank(k);
    float *h = rt_alloc(kp * sizeof(float));
    if (!h)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for block %u", b);
    const uint32_t *cols = c->plan->block_col_ids + c->plan->block_col_offset[b];
    for (uint32_t j = 0; j < bl->n_cols; j++) {
        rt_mf_init_vector(h, k, kp, &c->opt.mf, 1, cols[j]);
        for (uint32_t r = 0; r < k; r++)
            bl->V[(size_t)r * bl->n_cols + j] = h[r];
    }
    rt_free(h);
    return 0;
}

/* ---- the rotation callbacks ---- */

int cd_core_block_home(cd_core *c, uint32_t b, uint64_t rotation, void *payload, size_t *len,
                       rt_error *err)
{
    cd_phase ph;
    if (block_state(c, b, err))
        return -1;
    cd_phase_of(rotation, c->opt.mf.k, c->opt.inner, &ph);
    cd_block *bl = &c->blocks[b];
    uint32_t n = bl->n_cols;
    cd_payload_hdr *h = payload;
    memset(h, 0, sizeof(*h));
    h->magic = CD_PAYLOAD_MAGIC;
    h->kind = (uint32_t)ph.kind;
    h->rotation = rotation;
    h->block = b;
    h->n_cols = n;
    h->flags = phase_flags(&ph);
    *len = payload_len(&ph, n);
    if (ph.kind == CD_PHASE_U) {
        memcpy(payload_v(payload, n, 0), bl->V + (size_t)ph.rank * n, n * sizeof(float));
        if (ph.subtract)
            memcpy(payload_v(payload, n, 1), bl->V + (size_t)ph.sub_rank * n, n * sizeof(float));
    } else {
        memset(payload_acc(payload, n, 0), 0, *len - hdr_bytes());
    }
    return 0;
}

static int check_payload(const cd_phase *ph, uint32_t b, uint64_t rotation, const void *payload,
                         size_t len, uint32_t n, rt_error *err)
{
    const cd_payload_hdr *h = payload;
    if (len != payload_len(ph, n) || h->magic != CD_PAYLOAD_MAGIC || h->block != b ||
        h->rotation != rotation || h->n_cols != n || h->kind != (uint32_t)ph->kind ||
        h->flags != phase_flags(ph))
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "cd-mf: block %u arrived with a payload for another phase "
                       "(rotation %llu, %zu bytes)",
                       b, (unsigned long long)rotation, len);
    return 0;
}

int cd_core_visit(cd_core *c, uint32_t worker, uint32_t b, uint64_t rotation, void *payload,
                  size_t len, rt_error *err)
{
    cd_phase ph;
    cd_phase_of(rotation, c->opt.mf.k, c->opt.inner, &ph);
    uint32_t n = rt_plan_block_cols(c->plan, b);
    if (worker < c->first_worker || worker - c->first_worker >= c->n_workers)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: worker %u is not on this node", worker);
    if (check_payload(&ph, b, rotation, payload, len, n, err))
        return -1;
    cd_worker *w = &c->workers[worker - c->first_worker];
    cd_span train = cd_cells_block(&w->train, b), test = cd_cells_block(&w->test, b);
    const float *u = w->U + (size_t)ph.rank * w->n_rows;

    if (ph.kind == CD_PHASE_U) {
        const float *v = payload_v(payload, n, 0);
        cd_adjust adj = {0};
        if (ph.subtract) {
            adj.u_sub = w->U + (size_t)ph.sub_rank * w->n_rows;
            adj.v_sub = payload_v(payload, n, 1);
        }
        if (ph.add_back) {
            adj.u_add = u;
            adj.v_add = v;
        }
        cd_kernel_u(&train, &adj, v, w->acc);
        if (ph.subtract || ph.add_back)
            cd_kernel_adjust(&test, &adj);
        return 0;
    }
    w->ssq += cd_kernel_v(&train, u, payload_acc(payload, n, 0), ph.eval);
    if (ph.eval)
        w->tssq += cd_kernel_v(&test, u, payload_acc(payload, n, 1), 1);
    return 0;
}

int cd_core_block_end(cd_core *c, uint32_t b, uint64_t rotation, const void *payload, size_t len,
                      rt_error *err)
{
    cd_phase ph;
    cd_phase_of(rotation, c->opt.mf.k, c->opt.inner, &ph);
    cd_block *bl = &c->blocks[b];
    if (!bl->V)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: block %u ended at a node it never left", b);
    uint32_t n = bl->n_cols;
    if (check_payload(&ph, b, rotation, payload, len, n, err))
        return -1;
    if (ph.kind != CD_PHASE_V)
        return 0;
    void *p = (void *)payload; /* payload_acc serves the writers too */
    float *v = bl->V + (size_t)ph.rank * n;
    cd_solve(payload_acc(p, n, 0), n, c->opt.mf.lambda, v);
    if (ph.eval) {
        bl->part[0] = cd_loss_delta(v, payload_acc(p, n, 0), n);
        bl->part[1] = cd_loss_delta(v, payload_acc(p, n, 1), n);
    }
    return 0;
}

size_t cd_core_sums_len(const rt_plan *plan)
{
    return 3 * ((size_t)plan->workers + plan->blocks);
}

static double sum_squares(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

int cd_core_rotation_end(cd_core *c, uint64_t rotation, double *sums)
{
    cd_phase ph;
    uint32_t k = c->opt.mf.k, W = c->plan->workers;
    cd_phase_of(rotation, k, c->opt.inner, &ph);
    if (ph.kind == CD_PHASE_U) {
        for (uint32_t l = 0; l < c->n_workers; l++) {
            cd_worker *w = &c->workers[l];
            cd_solve(w->acc, w->n_rows, c->opt.mf.lambda, w->U + (size_t)ph.rank * w->n_rows);
            memset(w->acc, 0, 2 * (size_t)w->n_rows * sizeof(double));
        }
        return 0;
    }
    if (!ph.eval)
        return 0;
    /* Slots: 3 per worker (train ssq, test ssq, |W rows|^2), then 3 per
     * block (train delta, test delta, |H block|^2); zero where not ours. */
    memset(sums, 0, cd_core_sums_len(c->plan) * sizeof(double));
    for (uint32_t l = 0; l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        double *s = sums + 3 * (size_t)w->id;
        s[0] = w->ssq;
        s[1] = w->tssq;
        s[2] = sum_squares(w->U, (size_t)k * w->n_rows);
        w->ssq = w->tssq = 0;
    }
    for (uint32_t b = 0; b < c->plan->blocks; b++) {
        cd_block *bl = &c->blocks[b];
        if (!bl->V)
            continue;
        double *s = sums + 3 * ((size_t)W + b);
        s[0] = bl->part[0];
        s[1] = bl->part[1];
        s[2] = sum_squares(bl->V, (size_t)k * bl->n_cols);
    }
    return 1;
}

void cd_core_metrics(const cd_core *c, uint64_t rotation, const double *sums, cd_metrics *m)
{
    const rt_plan *p = c->plan;
    double loss = 0, test = 0, norms = 0;
    for (size_t s = 0; s < (size_t)p->workers + p->blocks; s++) {
        loss += sums[3 * s];
        test += sums[3 * s + 1];
        norms += sums[3 * s + 2];
    }
    memset(m, 0, sizeof(*m));
    m->outer = rotation / cd_rotations_per_outer(c->opt.mf.k, c->opt.inner) + 1;
    m->loss = loss > 0 ? loss : 0;
    m->reg = c->opt.mf.lambda * norms;
    m->objective = m->loss + m->reg;
    m->train_rmse = p->nnz_train ? sqrt(m->loss / (double)p->nnz_train) : NAN;
    m->test_rmse = p->nnz_test ? sqrt((test > 0 ? test : 0) / (double)p->nnz_test) : NAN;
}

int cd_core_done(const cd_core *c, uint64_t rotation)
{
    return rotation + 1 >=
           (uint64_t)c->opt.outer * cd_rotations_per_outer(c->opt.mf.k, c->opt.inner);
}

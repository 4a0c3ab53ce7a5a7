/* cd_mf_core.c - the CCD++ phase machine of cd-mf (see cd_mf.h for the phase
 * sequence).  Nothing here knows about the engine or the network: cd_mf.c
 * forwards the engine's callbacks here and does the all-reduce, and the unit
 * tests drive the same functions through an in-memory schedule. */
#include "apps/app_common.h"
#include "apps/cd_mf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t cd_slots(const cd_opts *o)
{
    return o->mf.k + (o->mf.biases ? 2 : 0);
}

int cd_slot_kind(const cd_opts *o, uint32_t slot, uint32_t *rank)
{
    uint32_t first_rank = o->mf.biases ? 2 : 0;
    if (slot >= first_rank) {
        if (rank)
            *rank = slot - first_rank;
        return CD_SLOT_FACTOR;
    }
    return slot == 0 ? CD_SLOT_ROW_BIAS : CD_SLOT_COL_BIAS;
}

/* A bias has one free factor: one solve finds its optimum. */
static uint32_t slot_alternations(const cd_opts *o, uint32_t slot)
{
    return cd_slot_kind(o, slot, NULL) == CD_SLOT_FACTOR ? o->inner : 1;
}

static void phase_flags_of(const cd_opts *o, cd_phase *ph)
{
    uint32_t S = cd_slots(o);
    ph->subtract = ph->add_back = 0;
    ph->sub_slot = (ph->slot + S - 1) % S;
    ph->eval = ph->kind == CD_PHASE_V && ph->slot == S - 1;
    if (ph->kind == CD_PHASE_U && ph->inner == 0 && S > 1) {
        /* Nothing to take out before the very first slot; nothing to add
         * back in outer iteration 0, where every term is still zero.  With
         * one slot the two would cancel, so both are skipped and E^ simply
         * carries on. */
        ph->subtract = !(ph->outer == 0 && ph->slot == 0);
        ph->add_back = ph->outer > 0;
    }
}

void cd_phase_first(const cd_opts *o, cd_phase *ph)
{
    memset(ph, 0, sizeof(*ph));
    ph->kind = CD_PHASE_U;
    phase_flags_of(o, ph);
}

void cd_phase_next(const cd_opts *o, cd_phase *ph, int exit_inner)
{
    if (ph->kind == CD_PHASE_U) {
        ph->kind = CD_PHASE_V;
    } else {
        ph->kind = CD_PHASE_U;
        if (!exit_inner && ph->inner + 1 < slot_alternations(o, ph->slot)) {
            ph->inner++;
        } else {
            ph->inner = 0;
            if (++ph->slot == cd_slots(o)) {
                ph->slot = 0;
                ph->outer++;
            }
        }
    }
    phase_flags_of(o, ph);
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
    size_t v = hdr_bytes() + 3 * f64_bytes(2 * max_cols);
    return u > v ? u : v;
}

/* The i-th array of a payload of `n` columns: floats v[n] in the U phase,
 * accumulator pairs acc[2n] in the V phase (0 train, 1 test, 2 validation). */
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
    return hdr_bytes() + (ph->eval ? 3 : 1) * f64_bytes(2 * n);
}

/* ---- setup ---- */

/* Implicit feedback: every residual is the preference 1 (W is 0); the
 * training cells take the confidences of their ratings. */
static int implicit_cells(const cd_core *c, cd_worker *w, rt_error *err)
{
    cd_cells *held[2] = {&w->valid, &w->test};
    for (int x = 0; x < 2; x++)
        for (uint64_t e = 0; e < cd_cells_count(held[x]); e++)
            held[x]->res[e] = 1.0f;
    return cd_cells_implicit(&w->train, &c->opt, err);
}

static int worker_cells(cd_core *c, cd_worker *w, const rt_shard *sh, rt_error *err)
{
    uint32_t B = c->plan->blocks;
    /* all 0 without validation: an empty set */
    uint8_t *held = rt_mf_validation_mask(c->plan, sh, &c->opt.mf, err);
    if (!held)
        return -1;
    int rc = cd_cells_build(&w->train, sh->train, sh->train_off, B, held, 0, err) ||
             cd_cells_build(&w->valid, sh->train, sh->train_off, B, held, 1, err) ||
             cd_cells_build(&w->test, sh->test, sh->test_off, B, NULL, 0, err) ||
             (c->opt.implicit && implicit_cells(c, w, err));
    free(held);
    return rc ? -1 : 0;
}

/* The factor arrays of one side over n rows (or columns), in one
 * allocation: X (k x n), its biases, the unit factor (all ones) and, with
 * validation, the copies of the best model (else NULL).  NULL when out of
 * memory. */
static void *factor_arrays(const cd_core *c, size_t n, float **X, float **bias, float **ones,
                           float **best_X, float **best_bias)
{
    size_t k = c->opt.mf.k;
    *best_X = *best_bias = NULL;
    rt_part part[] = {RT_PART(*X, k * n), RT_PART(*bias, n), RT_PART(*ones, n),
                      RT_PART(*best_X, k * n), RT_PART(*best_bias, n)};
    void *arrays = rt_alloc_parts(part, c->opt.mf.valid_fraction > 0 ? 5 : 3);
    for (size_t i = 0; arrays && i < n; i++)
        (*ones)[i] = 1.0f;
    return arrays;
}

static int worker_init(cd_core *c, cd_worker *w, uint32_t id, const rt_shard *sh, rt_error *err)
{
    w->id = id;
    w->n_rows = sh->n_rows;
    w->shard = sh;
    if (sh->worker != id || sh->n_rows != rt_plan_worker_rows(c->plan, id))
        return rt_fail(err, RT_EXIT_INPUT, "cd-mf: shard of worker %u does not match the plan", id);
    /* E = R until cd_core_setup takes the mean out; W and biases start at 0. */
    if (worker_cells(c, w, sh, err))
        return rt_error_prefix(err, "worker %u", id);
    size_t n = w->n_rows;
    rt_part solve[] = {RT_PART(w->count, n), RT_PART(w->acc, 2 * n)};
    w->factors = factor_arrays(c, n, &w->U, &w->bias, &w->ones, &w->best_U, &w->best_bias);
    w->solve_arrays = rt_alloc_parts(solve, 2);
    if (!w->factors || !w->solve_arrays)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for worker %u (%u rows)", id,
                       w->n_rows);
    const cd_cells *t = &w->train;
    for (uint64_t r = 0; r < t->run_off[t->blocks]; r++)
        w->count[t->run_row[r]] += t->run_len[r];
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
    rt_mf_early_stop_init(&c->es);
    cd_phase_first(opt, &c->ph);
    if (opt->implicit && (opt->mf.biases || opt->center))
        return rt_fail(err, RT_EXIT_INPUT, "cd-mf: --implicit has no mean and no biases");
    size_t kk = (size_t)opt->mf.k * opt->mf.k;
    rt_part part[] = {RT_PART(c->workers, n_workers), RT_PART(c->blocks, plan->blocks),
                      RT_PART(c->col_count, plan->n_cols + 1), RT_PART(c->gram_w, kk),
                      RT_PART(c->gram_h, kk)}; /* the Grams only for implicit feedback */
    c->arrays = rt_alloc_parts(part, opt->implicit ? 5 : 3);
    if (!c->arrays)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory");
    for (uint32_t l = 0; l < n_workers; l++)
        if (worker_init(c, &c->workers[l], first_worker + l, &shards[l], err))
            return -1;
    return 0;
}

void cd_core_free(cd_core *c)
{
    for (uint32_t l = 0; c->arrays && l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        cd_cells_free(&w->train);
        cd_cells_free(&w->valid);
        cd_cells_free(&w->test);
        rt_free(w->factors);
        rt_free(w->solve_arrays);
    }
    for (uint32_t b = 0; c->arrays && b < c->plan->blocks; b++)
        rt_free(c->blocks[b].factors);
    rt_free(c->arrays);
    memset(c, 0, sizeof(*c));
}

/* Doubles of one block's share of H^T H in the setup vector. */
static size_t setup_gram_len(const cd_opts *o)
{
    return o->implicit ? (size_t)o->mf.k * o->mf.k : 0;
}

size_t cd_core_setup_len(const rt_plan *plan, const cd_opts *o)
{
    return 3 * (size_t)plan->workers + plan->n_cols + plan->blocks * setup_gram_len(o);
}

/* 1 when block b's home worker runs here: that node owns its initial H. */
static int home_here(const cd_core *c, uint32_t b)
{
    uint32_t w = b / c->plan->pipeline;
    return w >= c->first_worker && w - c->first_worker < c->n_workers;
}

/* g += H_b^T H_b of block b's initial H rows (drawn as block_state draws
 * them), in column order. */
static void initial_gram(const cd_core *c, uint32_t b, float *h, double *g)
{
    uint32_t k = c->opt.mf.k, kp = rt_mf_padded_rank(k);
    const uint32_t *cols = c->plan->block_col_ids + c->plan->block_col_offset[b];
    for (uint32_t j = 0; j < rt_plan_block_cols(c->plan, b); j++) {
        rt_mf_init_vector(h, k, kp, &c->opt.mf, 1, cols[j]);
        for (uint32_t r = 0; r < k; r++)
            for (uint32_t q = 0; q < k; q++)
                g[(size_t)r * k + q] += (double)h[r] * h[q];
    }
}

int cd_core_setup_parts(const cd_core *c, double *v, rt_error *err)
{
    const rt_plan *p = c->plan;
    double *col = v + 3 * (size_t)p->workers;
    memset(v, 0, cd_core_setup_len(p, &c->opt) * sizeof(double));
    for (uint32_t l = 0; l < c->n_workers; l++) {
        const cd_worker *w = &c->workers[l];
        const cd_cells *t = &w->train;
        double sum = 0;
        for (uint64_t e = 0; e < cd_cells_count(t); e++)
            sum += t->res[e];
        v[3 * (size_t)w->id] = sum;
        v[3 * (size_t)w->id + 1] = (double)cd_cells_count(t);
        v[3 * (size_t)w->id + 2] = (double)cd_cells_count(&w->valid);
        for (uint32_t b = 0; b < p->blocks; b++) {
            cd_span s = cd_cells_block(t, b);
            double *cb = col + p->block_col_offset[b];
            for (uint64_t e = 0; e < t->entry_off[b + 1] - t->entry_off[b]; e++)
                cb[s.col[e]] += 1;
        }
    }
    size_t gl = setup_gram_len(&c->opt);
    if (!gl)
        return 0;
    float *h = rt_alloc(rt_mf_padded_rank(c->opt.mf.k) * sizeof(float));
    if (!h)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory");
    for (uint32_t b = 0; b < p->blocks; b++)
        if (home_here(c, b))
            initial_gram(c, b, h, col + p->n_cols + b * gl);
    rt_free(h);
    return 0;
}

/* E = R / rating_scale - mu (mu already in those units; exact scaling: a
 * power of two). */
static void subtract_mean(cd_cells *cells, float inv, float mu)
{
    for (uint64_t e = 0; e < cd_cells_count(cells); e++)
        cells->res[e] = cells->res[e] * inv - mu;
}

static double rating_scale(const cd_core *c)
{
    return c->opt.mf.rating_scale > 0 ? c->opt.mf.rating_scale : 1.0;
}

void cd_core_setup(cd_core *c, const double *v)
{
    const rt_plan *p = c->plan;
    double sum = 0, n = 0, nv = 0;
    for (uint32_t w = 0; w < p->workers; w++) { /* worker order: the same on every node */
        sum += v[3 * (size_t)w];
        n += v[3 * (size_t)w + 1];
        nv += v[3 * (size_t)w + 2];
    }
    c->n_train = (uint64_t)n;
    c->n_valid = (uint64_t)nv;
    float inv = (float)(1.0 / rating_scale(c));
    c->mu = (c->opt.center && n > 0 ? (float)(sum / n) : 0.0f) * inv;
    memcpy(c->col_count, v + 3 * (size_t)p->workers, p->n_cols * sizeof(double));
    size_t gl = setup_gram_len(&c->opt);
    const double *g = v + 3 * (size_t)p->workers + p->n_cols;
    for (uint32_t b = 0; b < p->blocks; b++) /* block order: the same on every node */
        for (size_t x = 0; x < gl; x++)
            c->gram_h[x] += g[b * gl + x];
    for (uint32_t l = 0; l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        subtract_mean(&w->train, inv, c->mu);
        subtract_mean(&w->valid, inv, c->mu);
        subtract_mean(&w->test, inv, c->mu);
    }
}

/* First time block b is home here: its slice of H, initialised. */
static int block_state(cd_core *c, uint32_t b, rt_error *err)
{
    cd_block *bl = &c->blocks[b];
    uint32_t k = c->opt.mf.k;
    if (bl->V)
        return 0;
    size_t n = bl->n_cols = rt_plan_block_cols(c->plan, b);
    bl->count = c->col_count + c->plan->block_col_offset[b];
    uint32_t kp = rt_mf_padded_rank(k);
    float *h = rt_alloc(kp * sizeof(float));
    if (!h || !(bl->factors = factor_arrays(c, n, &bl->V, &bl->bias, &bl->ones, &bl->best_V,
                                            &bl->best_bias))) {
        rt_free(h);
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for block %u", b);
    }
    const uint32_t *cols = c->plan->block_col_ids + c->plan->block_col_offset[b];
    for (uint32_t j = 0; j < n; j++) {
        rt_mf_init_vector(h, k, kp, &c->opt.mf, 1, cols[j]);
        for (uint32_t r = 0; r < k; r++)
            bl->V[(size_t)r * n + j] = h[r];
    }
    rt_free(h);
    return 0;
}

/* One factor of a slot over n rows (side_u) or n columns: a factor rank's
 * slice of F, or for a bias slot the bias on its own side and the fixed unit
 * factor on the other. */
static float *slot_factor(const cd_core *c, uint32_t slot, int side_u, float *F, float *bias,
                          float *ones, size_t n)
{
    uint32_t r;
    int kind = cd_slot_kind(&c->opt, slot, &r);
    if (kind == CD_SLOT_FACTOR)
        return F + r * n;
    return side_u == (kind == CD_SLOT_ROW_BIAS) ? bias : ones;
}

static float *slot_u(const cd_core *c, const cd_worker *w, uint32_t slot)
{
    return slot_factor(c, slot, 1, w->U, w->bias, w->ones, w->n_rows);
}

static float *slot_v(const cd_core *c, const cd_block *bl, uint32_t slot)
{
    return slot_factor(c, slot, 0, bl->V, bl->bias, bl->ones, bl->n_cols);
}

static const double *reg_count(const cd_core *c, const double *count)
{
    return c->opt.weighted ? count : NULL;
}

/* ---- the rotation callbacks ---- */

static uint32_t phase_flags(const cd_phase *ph)
{
    return (ph->subtract ? CD_PF_SUBTRACT : 0) | (ph->add_back ? CD_PF_ADD_BACK : 0) |
           (ph->eval ? CD_PF_EVAL : 0);
}

/* The phase of `rotation`: the engine runs rotations in order, so it is the
 * current one. */
static int phase_at(const cd_core *c, uint64_t rotation, rt_error *err)
{
    if (rotation != c->rotation)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: rotation %llu out of order (expected %llu)",
                       (unsigned long long)rotation, (unsigned long long)c->rotation);
    return 0;
}

int cd_core_block_home(cd_core *c, uint32_t b, uint64_t rotation, void *payload, size_t *len,
                       rt_error *err)
{
    const cd_phase *ph = &c->ph;
    if (phase_at(c, rotation, err) || block_state(c, b, err))
        return -1;
    cd_block *bl = &c->blocks[b];
    uint32_t n = bl->n_cols;
    cd_payload_hdr *h = payload;
    memset(h, 0, sizeof(*h));
    h->magic = CD_PAYLOAD_MAGIC;
    h->kind = (uint32_t)ph->kind;
    h->rotation = rotation;
    h->block = b;
    h->n_cols = n;
    h->flags = phase_flags(ph);
    h->slot = ph->slot;
    *len = payload_len(ph, n);
    if (ph->kind == CD_PHASE_U) {
        memcpy(payload_v(payload, n, 0), slot_v(c, bl, ph->slot), n * sizeof(float));
        if (ph->subtract)
            memcpy(payload_v(payload, n, 1), slot_v(c, bl, ph->sub_slot), n * sizeof(float));
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
        h->flags != phase_flags(ph) || h->slot != ph->slot)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "cd-mf: block %u arrived with a payload for another phase "
                       "(rotation %llu, %zu bytes)",
                       b, (unsigned long long)rotation, len);
    return 0;
}

static void visit_u(const cd_core *c, cd_worker *w, uint32_t b, void *payload, uint32_t n)
{
    const cd_phase *ph = &c->ph;
    cd_span train = cd_cells_block(&w->train, b), valid = cd_cells_block(&w->valid, b),
            test = cd_cells_block(&w->test, b);
    const float *v = payload_v(payload, n, 0);
    cd_adjust adj = {0};
    if (ph->subtract) {
        adj.u_sub = slot_u(c, w, ph->sub_slot);
        adj.v_sub = payload_v(payload, n, 1);
    }
    if (ph->add_back) {
        adj.u_add = slot_u(c, w, ph->slot);
        adj.v_add = v;
    }
    /* The column-bias slot's u is fixed: its U phase only adjusts. */
    if (cd_slot_kind(&c->opt, ph->slot, NULL) == CD_SLOT_COL_BIAS)
        cd_kernel_adjust(&train, &adj);
    else
        cd_kernel_u(&train, &adj, v, w->acc);
    if (ph->subtract || ph->add_back) {
        cd_kernel_adjust(&valid, &adj);
        cd_kernel_adjust(&test, &adj);
    }
}

int cd_core_visit(cd_core *c, uint32_t worker, uint32_t b, uint64_t rotation, void *payload,
                  size_t len, rt_error *err)
{
    const cd_phase *ph = &c->ph;
    uint32_t n = rt_plan_block_cols(c->plan, b);
    if (phase_at(c, rotation, err))
        return -1;
    if (worker < c->first_worker || worker - c->first_worker >= c->n_workers)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: worker %u is not on this node", worker);
    if (check_payload(ph, b, rotation, payload, len, n, err))
        return -1;
    cd_worker *w = &c->workers[worker - c->first_worker];
    if (ph->kind == CD_PHASE_U) {
        visit_u(c, w, b, payload, n);
        return 0;
    }
    /* The row-bias slot's v is fixed: nothing to accumulate. */
    if (cd_slot_kind(&c->opt, ph->slot, NULL) == CD_SLOT_ROW_BIAS)
        return 0;
    const float *u = slot_u(c, w, ph->slot);
    cd_span train = cd_cells_block(&w->train, b);
    w->ssq += cd_kernel_v(&train, u, payload_acc(payload, n, 0), ph->eval);
    if (ph->eval) {
        cd_span test = cd_cells_block(&w->test, b), valid = cd_cells_block(&w->valid, b);
        w->tssq += cd_kernel_v(&test, u, payload_acc(payload, n, 1), 1);
        w->vssq += cd_kernel_v(&valid, u, payload_acc(payload, n, 2), 1);
    }
    return 0;
}

int cd_core_block_end(cd_core *c, uint32_t b, uint64_t rotation, const void *payload, size_t len,
                      rt_error *err)
{
    const cd_phase *ph = &c->ph;
    cd_block *bl = &c->blocks[b];
    if (phase_at(c, rotation, err))
        return -1;
    if (!bl->V)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: block %u ended at a node it never left", b);
    uint32_t n = bl->n_cols;
    if (check_payload(ph, b, rotation, payload, len, n, err))
        return -1;
    bl->decrease = 0;
    if (ph->kind != CD_PHASE_V || cd_slot_kind(&c->opt, ph->slot, NULL) == CD_SLOT_ROW_BIAS)
        return 0;
    void *p = (void *)payload; /* payload_acc serves the writers too */
    float *v = slot_v(c, bl, ph->slot);
    const double *acc = payload_acc(p, n, 0), *count = reg_count(c, bl->count);
    if (c->opt.implicit)
        bl->decrease = cd_solve_gram(
            acc, n, c->opt.mf.lambda, count, c->opt.lambda_const, bl->V, c->opt.mf.k, ph->slot,
            c->gram_w + (size_t)ph->slot * c->opt.mf.k, c->opt.unobserved, v);
    else
        bl->decrease = cd_solve(acc, n, c->opt.mf.lambda, count, c->opt.lambda_const, v);
    if (ph->eval)
        for (int s = 0; s < 3; s++)
            bl->part[s] = cd_loss_delta(v, payload_acc(p, n, s), n);
    return 0;
}

/* Doubles per worker and per block in the sums. */
static size_t sums_stride(const cd_opts *o)
{
    return CD_SUMS_PER_SLOT + (o->implicit ? o->mf.k : 0);
}

size_t cd_core_sums_len(const rt_plan *plan, const cd_opts *o)
{
    return sums_stride(o) * ((size_t)plan->workers + plan->blocks);
}

/* sum_x lambda_x (sum_r F[r][x]^2 + bias_x^2): the regulariser's share of
 * rows or columns (lambda_x = lambda count + lambda0, or lambda + lambda0
 * unweighted). */
static double regulariser(const cd_core *c, const float *F, const float *bias, const double *count,
                          size_t n)
{
    uint32_t k = c->opt.mf.k;
    double s = 0;
    for (size_t x = 0; x < n; x++) {
        double q = (double)bias[x] * bias[x];
        for (uint32_t r = 0; r < k; r++)
            q += (double)F[r * n + x] * F[r * n + x];
        s += (c->opt.mf.lambda * (c->opt.weighted ? count[x] : 1.0) + c->opt.lambda_const) * q;
    }
    return s;
}

static double solve_rows(const cd_core *c, cd_worker *w)
{
    const cd_phase *ph = &c->ph;
    const double *count = reg_count(c, w->count);
    float *u = slot_u(c, w, ph->slot);
    if (c->opt.implicit)
        return cd_solve_gram(w->acc, w->n_rows, c->opt.mf.lambda, count, c->opt.lambda_const, w->U,
                             c->opt.mf.k, ph->slot, c->gram_h + (size_t)ph->slot * c->opt.mf.k,
                             c->opt.unobserved, u);
    return cd_solve(w->acc, w->n_rows, c->opt.mf.lambda, count, c->opt.lambda_const, u);
}

static void solve_u(cd_core *c)
{
    int fixed = cd_slot_kind(&c->opt, c->ph.slot, NULL) == CD_SLOT_COL_BIAS;
    for (uint32_t l = 0; l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        w->decrease = fixed ? 0 : solve_rows(c, w);
        memset(w->acc, 0, 2 * (size_t)w->n_rows * sizeof(double));
    }
}

/* g[r] = sum_x F[r][x] F[s][x]: a share of column s of F^T F (rank-major
 * F, k x n), in x order. */
static void gram_share(const float *F, size_t n, uint32_t k, uint32_t s, double *g)
{
    const float *fs = F + (size_t)s * n;
    for (uint32_t r = 0; r < k; r++) {
        const float *fr = F + (size_t)r * n;
        double sum = 0;
        for (size_t x = 0; x < n; x++)
            sum += (double)fr[x] * fs[x];
        g[r] = sum;
    }
}

/* The new column s of F (after a u solve) or G (after a v solve), summed
 * over the worker or block slots in slot order, into both its row and its
 * column. */
static void gram_update(cd_core *c, const double *sums)
{
    const rt_plan *p = c->plan;
    size_t st = sums_stride(&c->opt);
    uint32_t k = c->opt.mf.k, s = c->ph.slot;
    int u = c->ph.kind == CD_PHASE_U;
    size_t first = u ? 0 : p->workers, n = u ? p->workers : p->blocks;
    double *gram = u ? c->gram_w : c->gram_h;
    for (uint32_t r = 0; r < k; r++) {
        double sum = 0;
        for (size_t x = first; x < first + n; x++)
            sum += sums[st * x + CD_SUMS_PER_SLOT + r];
        gram[(size_t)r * k + s] = gram[(size_t)s * k + r] = sum;
    }
}

/* Slots of `sums`: CD_SUMS_PER_SLOT per worker (train ssq, test ssq,
 * validation ssq, the W rows' regulariser, decrease), then per block (train,
 * test, validation delta, the H block's regulariser, decrease); zero where not
 * ours. */
static void fill_sums(cd_core *c, double *sums)
{
    const cd_phase *ph = &c->ph;
    uint32_t W = c->plan->workers, k = c->opt.mf.k;
    size_t st = sums_stride(&c->opt);
    int gram_u = c->opt.implicit && ph->kind == CD_PHASE_U,
        gram_v = c->opt.implicit && ph->kind == CD_PHASE_V;
    memset(sums, 0, cd_core_sums_len(c->plan, &c->opt) * sizeof(double));
    for (uint32_t l = 0; l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        double *s = sums + st * (size_t)w->id;
        if (gram_u)
            gram_share(w->U, w->n_rows, k, ph->slot, s + CD_SUMS_PER_SLOT);
        if (ph->eval) {
            s[0] = w->ssq;
            s[1] = w->tssq;
            s[2] = w->vssq;
            s[3] = regulariser(c, w->U, w->bias, w->count, w->n_rows);
        }
        s[4] = w->decrease;
    }
    for (uint32_t b = 0; b < c->plan->blocks; b++) {
        cd_block *bl = &c->blocks[b];
        if (!bl->V)
            continue;
        double *s = sums + st * ((size_t)W + b);
        if (gram_v)
            gram_share(bl->V, bl->n_cols, k, ph->slot, s + CD_SUMS_PER_SLOT);
        if (ph->eval) {
            for (int x = 0; x < 3; x++)
                s[x] = bl->part[x];
            s[3] = regulariser(c, bl->V, bl->bias, bl->count, bl->n_cols);
        }
        s[4] = bl->decrease;
    }
}

static int decides_exit(const cd_core *c)
{
    return c->opt.inner_eps > 0 && cd_slot_kind(&c->opt, c->ph.slot, NULL) == CD_SLOT_FACTOR;
}

int cd_core_rotation_end(cd_core *c, uint64_t rotation, double *sums)
{
    if (rotation != c->rotation)
        return 0;
    if (c->ph.kind == CD_PHASE_U) {
        solve_u(c);
        if (!c->opt.implicit)
            return 0;
        fill_sums(c, sums); /* the new column of F */
        return 1;
    }
    int reduce = c->ph.eval || decides_exit(c) || c->opt.implicit;
    if (reduce)
        fill_sums(c, sums);
    for (uint32_t l = 0; l < c->n_workers; l++)
        c->workers[l].ssq = c->workers[l].tssq = c->workers[l].vssq = 0;
    return reduce;
}

/* LIBPMF's rule: an alternation whose decrease is below inner_eps times the
 * largest one so far in this outer iteration ends the rank's alternations
 * (the very first alternation of the run, often huge, does not count). */
static int exit_inner(cd_core *c, const double *sums)
{
    if (!decides_exit(c) || !sums)
        return 0;
    const rt_plan *p = c->plan;
    double dec = 0;
    for (size_t s = 0; s < (size_t)p->workers + p->blocks; s++)
        dec += sums[sums_stride(&c->opt) * s + 4];
    if (dec < c->decrease_max * c->opt.inner_eps)
        return 1;
    uint32_t rank = 0;
    cd_slot_kind(&c->opt, c->ph.slot, &rank);
    if (!(c->ph.outer == 0 && rank == 0 && c->ph.inner == 0) && dec > c->decrease_max)
        c->decrease_max = dec;
    return 0;
}

static void metrics_of(const cd_core *c, const double *sums, cd_metrics *m)
{
    const rt_plan *p = c->plan;
    double part[4] = {0, 0, 0, 0};
    for (size_t s = 0; s < (size_t)p->workers + p->blocks; s++)
        for (int x = 0; x < 4; x++)
            part[x] += sums[sums_stride(&c->opt) * s + x];
    memset(m, 0, sizeof(*m));
    m->outer = c->ph.outer + 1;
    if (c->opt.implicit) { /* observed terms, then the sum over all pairs from the Grams */
        size_t kk = (size_t)c->opt.mf.k * c->opt.mf.k;
        double all = 0;
        for (size_t x = 0; x < kk; x++)
            all += c->gram_w[x] * c->gram_h[x];
        m->loss = part[0] + c->opt.unobserved * all;
        m->reg = part[3];
        m->objective = m->loss + m->reg;
        m->train_rmse = m->test_rmse = m->valid_rmse = NAN;
        return;
    }
    m->loss = part[0] > 0 ? part[0] : 0;
    m->reg = part[3];
    m->objective = m->loss + m->reg;
    m->train_rmse = c->n_train ? sqrt(m->loss / (double)c->n_train) : NAN;
    m->test_rmse = p->nnz_test ? sqrt(fmax(part[1], 0) / (double)p->nnz_test) : NAN;
    m->valid_rmse = c->n_valid ? sqrt(fmax(part[2], 0) / (double)c->n_valid) : NAN;
    double s = rating_scale(c); /* back to the ratings' units (exact: a power of two) */
    if (s != 1) {
        m->loss *= s * s, m->reg *= s * s, m->objective *= s * s;
        m->train_rmse *= s, m->test_rmse *= s, m->valid_rmse *= s;
    }
}

/* The model as it is after the closing rotation (the final subtraction is
 * only pending in the residuals) becomes the best one. */
static void keep_best(cd_core *c)
{
    size_t k = c->opt.mf.k;
    for (uint32_t l = 0; l < c->n_workers; l++) {
        cd_worker *w = &c->workers[l];
        memcpy(w->best_U, w->U, k * w->n_rows * sizeof(float));
        memcpy(w->best_bias, w->bias, w->n_rows * sizeof(float));
    }
    for (uint32_t b = 0; b < c->plan->blocks; b++) {
        cd_block *bl = &c->blocks[b];
        if (!bl->V)
            continue;
        memcpy(bl->best_V, bl->V, k * bl->n_cols * sizeof(float));
        memcpy(bl->best_bias, bl->bias, bl->n_cols * sizeof(float));
    }
}

static void early_stopping(cd_core *c, cd_metrics *m)
{
    if (!c->n_valid)
        return;
    if (rt_mf_early_stop_update(&c->es, m->valid_rmse, m->outer, c->opt.mf.early_stop))
        keep_best(c);
    m->best_outer = c->es.best_epoch;
}

int cd_core_advance(cd_core *c, uint64_t rotation, const double *sums, cd_metrics *m)
{
    if (rotation != c->rotation)
        return 0;
    int closes = 0;
    if (c->opt.implicit && sums)
        gram_update(c, sums);
    if (c->ph.kind == CD_PHASE_V) {
        int exit = exit_inner(c, sums);
        closes = c->ph.slot + 1 == cd_slots(&c->opt) &&
                 (exit || c->ph.inner + 1 == slot_alternations(&c->opt, c->ph.slot));
        if (closes && sums) {
            metrics_of(c, sums, m);
            c->outer_done++;
            c->decrease_max = 0;
            early_stopping(c, m);
        }
        cd_phase_next(&c->opt, &c->ph, exit);
    } else {
        cd_phase_next(&c->opt, &c->ph, 0);
    }
    c->rotation++;
    return closes;
}

int cd_core_done(const cd_core *c)
{
    return c->es.stop || c->outer_done >= c->opt.outer;
}

const float *cd_core_saved_U(const cd_core *c, uint32_t l)
{
    return c->es.best_epoch ? c->workers[l].best_U : c->workers[l].U;
}
const float *cd_core_saved_row_bias(const cd_core *c, uint32_t l)
{
    return c->es.best_epoch ? c->workers[l].best_bias : c->workers[l].bias;
}
const float *cd_core_saved_V(const cd_core *c, uint32_t b)
{
    return c->es.best_epoch ? c->blocks[b].best_V : c->blocks[b].V;
}
const float *cd_core_saved_col_bias(const cd_core *c, uint32_t b)
{
    return c->es.best_epoch ? c->blocks[b].best_bias : c->blocks[b].bias;
}

/* ---- training state ---- */

typedef struct cd_scalars {
    cd_phase ph;
    uint64_t rotation, outer_done, best_outer, since_best;
    double decrease_max, best_valid;
    float mu;
    uint32_t k, n_workers, n_blocks; /* n_blocks: blocks whose state lives here */
    int32_t stop;
} cd_scalars;

static int cells_xfer(rt_state_io *io, const char *tag, cd_cells *cl, rt_error *err)
{
    return rt_state_xfer(io, tag, cl->res, cd_cells_count(cl) * sizeof(float), err);
}

/* A factor array, its biases and the best-by-validation copies. */
static int factor_xfer(rt_state_io *io, float *X, float *bias, float *best_X, float *best_bias,
                       size_t k, size_t n, rt_error *err)
{
    return rt_state_xfer(io, "factor", X, k * n * sizeof(float), err) ||
                   rt_state_xfer(io, "bias", bias, n * sizeof(float), err) ||
                   (best_X && (rt_state_xfer(io, "best", best_X, k * n * sizeof(float), err) ||
                               rt_state_xfer(io, "best_bias", best_bias, n * sizeof(float), err)))
               ? -1
               : 0;
}

static int scalars_xfer(cd_core *c, rt_state_io *io, cd_scalars *sc, rt_error *err)
{
    memset(sc, 0, sizeof(*sc));
    sc->ph = c->ph;
    sc->rotation = c->rotation;
    sc->outer_done = c->outer_done;
    sc->best_outer = c->es.best_epoch;
    sc->since_best = c->es.since_best;
    sc->decrease_max = c->decrease_max;
    sc->best_valid = c->es.best_valid;
    sc->mu = c->mu;
    sc->k = c->opt.mf.k;
    sc->n_workers = c->n_workers;
    sc->stop = c->es.stop;
    for (uint32_t b = 0; b < c->plan->blocks; b++)
        sc->n_blocks += c->blocks[b].V != NULL;
    if (rt_state_xfer(io, "cd", sc, sizeof(*sc), err))
        return -1;
    /* Only a state read back can differ from this run. */
    if (sc->k != c->opt.mf.k || sc->n_workers != c->n_workers)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: state of rank %u and %u workers, this run has rank %u and %u",
                       io->r->path, sc->k, sc->n_workers, c->opt.mf.k, c->n_workers);
    c->ph = sc->ph;
    c->rotation = sc->rotation;
    c->outer_done = sc->outer_done;
    c->es.best_epoch = sc->best_outer;
    c->es.since_best = sc->since_best;
    c->decrease_max = sc->decrease_max;
    c->es.best_valid = sc->best_valid;
    c->mu = sc->mu;
    c->es.stop = sc->stop;
    return 0;
}

static int worker_xfer(cd_worker *wk, rt_state_io *io, size_t k, rt_error *err)
{
    double sums[4] = {wk->ssq, wk->tssq, wk->vssq, wk->decrease};
    if (factor_xfer(io, wk->U, wk->bias, wk->best_U, wk->best_bias, k, wk->n_rows, err) ||
        rt_state_xfer(io, "acc", wk->acc, 2 * (size_t)wk->n_rows * sizeof(double), err) ||
        rt_state_xfer(io, "sums", sums, sizeof(sums), err) ||
        cells_xfer(io, "train_res", &wk->train, err) ||
        cells_xfer(io, "valid_res", &wk->valid, err) || cells_xfer(io, "test_res", &wk->test, err))
        return -1;
    wk->ssq = sums[0];
    wk->tssq = sums[1];
    wk->vssq = sums[2];
    wk->decrease = sums[3];
    return 0;
}

int cd_core_state_io(cd_core *c, rt_state_io *io, rt_error *err)
{
    const size_t k = c->opt.mf.k;
    cd_scalars sc;
    size_t kk = c->opt.implicit ? k * k * sizeof(double) : 0; /* the Grams, kept up to date */
    if (scalars_xfer(c, io, &sc, err) || (kk && (rt_state_xfer(io, "gram_w", c->gram_w, kk, err) ||
                                                 rt_state_xfer(io, "gram_h", c->gram_h, kk, err))))
        return -1;
    for (uint32_t l = 0; l < c->n_workers; l++)
        if (worker_xfer(&c->workers[l], io, k, err))
            return -1;
    /* The blocks whose state lives here, by id: a resumed node creates them. */
    uint32_t next = 0;
    for (uint32_t i = 0; i < sc.n_blocks; i++) {
        uint64_t id = 0;
        while (io->w && !c->blocks[next].V)
            next++;
        if (io->w)
            id = next++;
        if (rt_state_xfer(io, "cd_block", &id, sizeof(id), err))
            return -1;
        if (id >= c->plan->blocks)
            return rt_fail(err, RT_EXIT_INPUT, "%s: block %llu is not in the plan", io->r->path,
                           (unsigned long long)id);
        cd_block *bl = &c->blocks[id];
        if (block_state(c, (uint32_t)id, err) ||
            factor_xfer(io, bl->V, bl->bias, bl->best_V, bl->best_bias, k, bl->n_cols, err) ||
            rt_state_xfer(io, "decrease", &bl->decrease, sizeof(double), err))
            return -1;
    }
    return 0;
}

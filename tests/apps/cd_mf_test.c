/* cd_mf_test.c - unit tests of cd-mf: the phase sequence, the kernels, and the
 * solver core replayed through the ring schedule in memory (no engine, no
 * network), checked against the serial reference CCD++ (cd_mf_ref.c). */
#include "apps/cd_mf.h"
#include "tests/apps/cd_mf_ref.h"
#include "tests/apps/mf_toy.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cd_opts opts(uint32_t k, uint32_t outer, uint32_t inner, double lambda, uint64_t seed)
{
    cd_opts o;
    memset(&o, 0, sizeof(o));
    rt_mf_common_defaults(&o.mf);
    o.mf.k = k;
    o.mf.lambda = lambda;
    o.mf.seed = seed;
    o.mf.init_scale = 1.0;
    o.mf.init_uniform = 1;
    o.mf.biases = 1;
    o.outer = outer;
    o.inner = inner;
    o.center = 1;
    o.weighted = 1;
    o.inner_eps = 1e-3;
    return o;
}

/* ---- replay: the engine's rotation loop, nodes emulated in one process ---- */

typedef struct run_out {
    cd_metrics m[16];
    uint32_t n_outer;
    float *W; /* k x n_rows, rank-major, global row order */
    float *H; /* k x n_cols */
    /* What the app saves (cd_core_saved_*: the best by validation when there
     * is a validation set), in the same layout, biases by global id. */
    float *saved_W, *saved_H, *saved_row_bias, *saved_col_bias;
} run_out;

/* The factors of the emulated nodes in global order: the current ones into
 * W/H, the saved ones (and their biases) into the saved_* arrays. */
static void gather(const toy *t, cd_core *cores, uint32_t per_node, const uint32_t *home,
                   uint32_t k, run_out *out)
{
    const rt_plan *p = &t->plan;
    size_t nw = (size_t)p->n_rows * k, nh = (size_t)p->n_cols * k;
    out->W = calloc(nw, sizeof(float)), out->saved_W = calloc(nw, sizeof(float));
    out->H = calloc(nh, sizeof(float)), out->saved_H = calloc(nh, sizeof(float));
    out->saved_row_bias = calloc(p->n_rows, sizeof(float));
    out->saved_col_bias = calloc(p->n_cols, sizeof(float));
    for (uint32_t w = 0; w < p->workers; w++) {
        cd_core *c = &cores[w / per_node];
        const cd_worker *cw = &c->workers[w % per_node];
        const float *sU = cd_core_saved_U(c, w % per_node),
                    *sb = cd_core_saved_row_bias(c, w % per_node);
        for (uint32_t i = 0; i < cw->n_rows; i++) {
            uint32_t g = cw->shard->row_ids[i];
            out->saved_row_bias[g] = sb[i];
            for (uint32_t r = 0; r < k; r++) {
                out->W[(size_t)r * p->n_rows + g] = cw->U[(size_t)r * cw->n_rows + i];
                out->saved_W[(size_t)r * p->n_rows + g] = sU[(size_t)r * cw->n_rows + i];
            }
        }
    }
    for (uint32_t b = 0; b < p->blocks; b++) {
        cd_core *c = &cores[home[b]];
        const cd_block *bl = &c->blocks[b];
        const float *sV = cd_core_saved_V(c, b), *sb = cd_core_saved_col_bias(c, b);
        const uint32_t *cols = p->block_col_ids + p->block_col_offset[b];
        for (uint32_t j = 0; j < bl->n_cols; j++) {
            out->saved_col_bias[cols[j]] = sb[j];
            for (uint32_t r = 0; r < k; r++) {
                out->H[(size_t)r * p->n_cols + cols[j]] = bl->V[(size_t)r * bl->n_cols + j];
                out->saved_H[(size_t)r * p->n_cols + cols[j]] = sV[(size_t)r * bl->n_cols + j];
            }
        }
    }
}

static void replay(toy *t, const cd_opts *o, uint32_t nodes, run_out *out)
{
    rt_plan *p = &t->plan;
    uint32_t W = p->workers, B = p->blocks, per_node = W / nodes;
    rt_error err = {0};
    cd_core *cores = calloc(nodes, sizeof(cd_core));
    for (uint32_t n = 0; n < nodes; n++)
        assert_int_equal(
            cd_core_init(&cores[n], o, p, t->shards + n * per_node, n * per_node, per_node, &err),
            0);
    /* Block homes as in partition.h, for the emulated split. */
    uint32_t *home = calloc(B, sizeof(uint32_t));
    for (uint32_t b = 0; b < B; b++)
        home[b] = b / (p->pipeline * per_node);
    uint32_t max_cols = 0;
    for (uint32_t b = 0; b < B; b++)
        if (rt_plan_block_cols(p, b) > max_cols)
            max_cols = rt_plan_block_cols(p, b);
    size_t slot = cd_payload_max_bytes(max_cols);
    void **pay = calloc(B, sizeof(void *));
    size_t *len = calloc(B, sizeof(size_t));
    for (uint32_t b = 0; b < B; b++)
        pay[b] = rt_alloc(slot);
    size_t ns = cd_core_sums_len(p, o), nsetup = cd_core_setup_len(p, o);
    size_t nmax = ns > nsetup ? ns : nsetup;
    double *sums = calloc(nmax, sizeof(double)), *part = calloc(nmax, sizeof(double));
    /* The setup all-reduce. */
    for (uint32_t n = 0; n < nodes; n++) {
        assert_int_equal(cd_core_setup_parts(&cores[n], part, &err), 0);
        for (size_t x = 0; x < nsetup; x++)
            sums[x] += part[x];
    }
    for (uint32_t n = 0; n < nodes; n++)
        cd_core_setup(&cores[n], sums);

    memset(out, 0, sizeof(*out));
    int done = 0;
    for (uint64_t rot = 0; !done; rot++) {
        for (uint32_t b = 0; b < B; b++) {
            assert_int_equal(cd_core_block_home(&cores[home[b]], b, rot, pay[b], &len[b], &err), 0);
            assert_true(len[b] <= slot);
        }
        for (uint32_t s = 0; s < B; s++)
            for (uint32_t w = 0; w < W; w++) {
                uint32_t b = toy_block(t, s, w);
                assert_int_equal(
                    cd_core_visit(&cores[w / per_node], w, b, rot, pay[b], len[b], &err), 0);
            }
        for (uint32_t b = 0; b < B; b++)
            assert_int_equal(cd_core_block_end(&cores[home[b]], b, rot, pay[b], len[b], &err), 0);
        int reduce = 0;
        memset(sums, 0, ns * sizeof(double));
        for (uint32_t n = 0; n < nodes; n++) {
            reduce = cd_core_rotation_end(&cores[n], rot, part);
            for (size_t x = 0; reduce && x < ns; x++)
                sums[x] += part[x]; /* the all-reduce */
        }
        for (uint32_t n = 0; n < nodes; n++) {
            cd_metrics m;
            if (cd_core_advance(&cores[n], rot, reduce ? sums : NULL, &m) && n == 0) {
                assert_true(m.outer >= 1 && m.outer <= 16);
                out->m[m.outer - 1] = m;
                out->n_outer = (uint32_t)m.outer;
            }
        }
        done = cd_core_done(&cores[0]);
    }

    gather(t, cores, per_node, home, o->mf.k, out);
    for (uint32_t n = 0; n < nodes; n++)
        cd_core_free(&cores[n]);
    for (uint32_t b = 0; b < B; b++)
        rt_free(pay[b]);
    free(cores), free(home), free(pay), free(len), free(sums), free(part);
}

static void run_out_free(run_out *r)
{
    free(r->W);
    free(r->H);
    free(r->saved_W), free(r->saved_H), free(r->saved_row_bias), free(r->saved_col_bias);
}

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-12);
}

/* ---- tests ---- */

static void test_phase_sequence(void **state)
{
    (void)state;
    cd_opts o = opts(3, 2, 2, 0.1, 1); /* slots: row bias, column bias, ranks 0..2 */
    cd_phase ph;
    uint32_t r = 9;
    assert_int_equal(cd_slots(&o), 5);
    assert_int_equal(cd_slot_kind(&o, 0, NULL), CD_SLOT_ROW_BIAS);
    assert_int_equal(cd_slot_kind(&o, 1, NULL), CD_SLOT_COL_BIAS);
    assert_int_equal(cd_slot_kind(&o, 3, &r), CD_SLOT_FACTOR);
    assert_int_equal(r, 1);
    cd_phase_first(&o, &ph); /* U(row bias) of outer 0: nothing to adjust */
    assert_true(ph.kind == CD_PHASE_U && ph.slot == 0 && ph.inner == 0);
    assert_false(ph.subtract || ph.add_back || ph.eval);
    cd_phase_next(&o, &ph, 0); /* V(row bias) */
    assert_true(ph.kind == CD_PHASE_V && ph.slot == 0 && !ph.eval);
    cd_phase_next(&o, &ph, 0); /* a bias has one alternation: U(column bias) */
    assert_true(ph.kind == CD_PHASE_U && ph.slot == 1 && ph.subtract && ph.sub_slot == 0);
    assert_false(ph.add_back);
    cd_phase_next(&o, &ph, 0);
    cd_phase_next(&o, &ph, 0); /* U(rank 0, t = 0) */
    assert_true(ph.kind == CD_PHASE_U && ph.slot == 2 && ph.inner == 0 && ph.subtract);
    cd_phase_next(&o, &ph, 0);
    cd_phase_next(&o, &ph, 0); /* U(rank 0, t = 1): no adjustment after t = 0 */
    assert_true(ph.slot == 2 && ph.inner == 1);
    assert_false(ph.subtract || ph.add_back);
    cd_phase_next(&o, &ph, 0);
    cd_phase_next(&o, &ph, 0); /* U(rank 1, t = 0) */
    assert_true(ph.slot == 3 && ph.inner == 0);
    cd_phase_next(&o, &ph, 1); /* V, then the early exit: U(rank 2, t = 0) */
    cd_phase_next(&o, &ph, 1);
    assert_true(ph.kind == CD_PHASE_U && ph.slot == 4 && ph.inner == 0 && ph.sub_slot == 3);
    cd_phase_next(&o, &ph, 0); /* V(rank 2): the last slot may close the outer */
    assert_true(ph.kind == CD_PHASE_V && ph.eval);
    cd_phase_next(&o, &ph, 0);
    cd_phase_next(&o, &ph, 0);
    assert_true(ph.eval && ph.inner == 1);
    cd_phase_next(&o, &ph, 0); /* U(row bias) of outer 1: rank 2 out, bias back */
    assert_true(ph.outer == 1 && ph.slot == 0 && ph.subtract && ph.sub_slot == 4 && ph.add_back);
    /* One slot (k = 1, no biases): add-back and subtraction would cancel. */
    cd_opts one = opts(1, 2, 3, 0.1, 1);
    one.mf.biases = 0;
    cd_phase_first(&one, &ph);
    for (int x = 0; x < 20; x++, cd_phase_next(&one, &ph, 0)) {
        assert_false(ph.subtract || ph.add_back);
        assert_int_equal(ph.eval, x % 2 == 1);
        assert_int_equal(ph.outer, x / 6);
    }
}

static void test_kernels(void **state)
{
    (void)state;
    /* One block: rows 0,0,1,2,2,2 (three runs); 3 block-local columns. */
    rt_entry ent[6] = {{0, 0, 1}, {0, 2, 2}, {1, 1, 3}, {2, 0, 4}, {2, 1, 5}, {2, 2, 6}};
    uint64_t off[2] = {0, 6};
    cd_cells cells, tcells;
    rt_error err = {0};
    assert_int_equal(cd_cells_build(&cells, ent, off, 1, NULL, 0, &err), 0);
    assert_int_equal(cd_cells_build(&tcells, ent, off, 1, NULL, 0, &err), 0);
    assert_int_equal(cells.run_off[1], 3);
    assert_int_equal(cells.run_len[2], 3);
    cd_span s = cd_cells_block(&cells, 0), ts = cd_cells_block(&tcells, 0);
    assert_int_equal(s.n_runs, 3);
    float u_sub[3] = {0.5f, -1, 2}, v_sub[3] = {1, 2, -0.5f};
    float u_add[3] = {1, 0.25f, -1}, v[3] = {0.5f, 1.5f, -2};
    double acc[6] = {0};
    cd_adjust adj = {u_sub, v_sub, u_add, v};
    cd_kernel_u(&s, &adj, v, acc);
    double enum_[3] = {0}, eden[3] = {0};
    for (int e = 0; e < 6; e++) {
        uint32_t i = ent[e].row, j = ent[e].col;
        float r = ent[e].val - u_sub[i] * v_sub[j] + u_add[i] * v[j];
        assert_true(fabsf(cells.res[e] - r) < 1e-6f);
        enum_[i] += (double)r * v[j];
        eden[i] += (double)v[j] * v[j];
    }
    for (int i = 0; i < 3; i++) {
        assert_true(fabs(acc[2 * i] - enum_[i]) < 1e-9);
        assert_true(fabs(acc[2 * i + 1] - eden[i]) < 1e-12);
    }
    /* Test residuals get exactly the same adjustment. */
    cd_kernel_adjust(&ts, &adj);
    assert_memory_equal(tcells.res, cells.res, 6 * sizeof(float));
    /* Only subtraction, then nothing: the kernel leaves residuals alone. */
    cd_adjust only_sub = {u_sub, v_sub, NULL, NULL};
    cd_kernel_adjust(&ts, &only_sub);
    for (int e = 0; e < 6; e++)
        assert_true(fabsf(tcells.res[e] - (cells.res[e] - u_sub[ent[e].row] * v_sub[ent[e].col])) <
                    1e-6f);
    float before[6];
    memcpy(before, cells.res, sizeof(before));
    double acc2[6] = {0};
    cd_kernel_u(&s, NULL, v, acc2);
    assert_memory_equal(before, cells.res, sizeof(before));
    assert_true(fabs(acc2[4] - enum_[2]) < 1e-9);
    /* A long run (more than the 4-way unrolling) sums like the plain loop. */
    rt_entry longrun[11];
    float lv[11];
    double lnum = 0, lden = 0;
    for (uint32_t e = 0; e < 11; e++) {
        longrun[e] = (rt_entry){0, e, 0.5f * (float)e - 2};
        lv[e] = 0.25f * (float)(e % 5) - 0.5f;
        lnum += (double)longrun[e].val * lv[e];
        lden += (double)lv[e] * lv[e];
    }
    uint64_t loff[2] = {0, 11};
    cd_cells lc;
    assert_int_equal(cd_cells_build(&lc, longrun, loff, 1, NULL, 0, &err), 0);
    cd_span ls = cd_cells_block(&lc, 0);
    double lacc[2] = {0};
    cd_kernel_u(&ls, NULL, lv, lacc);
    assert_true(fabs(lacc[0] - lnum) < 1e-9 && fabs(lacc[1] - lden) < 1e-9);
    cd_cells_free(&lc);
    /* V phase sums over columns; ssq only when asked. */
    double vacc[6] = {0};
    assert_true(cd_kernel_v(&s, u_add, vacc, 0) == 0);
    double ssq = cd_kernel_v(&s, u_add, vacc, 1), essq = 0;
    for (int e = 0; e < 6; e++)
        essq += (double)cells.res[e] * cells.res[e];
    assert_true(fabs(ssq - essq) < 1e-9);
    /* column 1: entries 2 (row 1) and 4 (row 2), accumulated twice */
    double cn = (double)cells.res[2] * u_add[1] + (double)cells.res[4] * u_add[2];
    double cd = (double)u_add[1] * u_add[1] + (double)u_add[2] * u_add[2];
    assert_true(fabs(vacc[2] - 2 * cn) < 1e-9 && fabs(vacc[3] - 2 * cd) < 1e-12);
    /* Solve; an empty row with lambda = 0 gives 0, not NaN; the decrease is
     * sum (lambda_i + den_i) (old - new)^2; counts weight lambda. */
    double sacc[4] = {3, 1, 0, 0}, count[2] = {4, 0};
    float out[2] = {1, 0};
    assert_true(fabs(cd_solve(sacc, 2, 0.5, NULL, 0, out) - 1.5 * 1.0) < 1e-12);
    assert_true(fabsf(out[0] - 2.0f) < 1e-7f);
    cd_solve(sacc, 2, 0.0, NULL, 0, out);
    assert_true(out[0] == 3.0f && out[1] == 0.0f);
    cd_solve(sacc, 2, 0.5, count, 0, out); /* 3 / (0.5 * 4 + 1) */
    assert_true(out[0] == 1.0f && out[1] == 0.0f);
    /* lambda0 adds to lambda count (3 / (0.5 * 4 + 2 + 1)), to a count of
     * 0 (row 1: 0 / 2) and to the decrease's weight. */
    double dec = cd_solve(sacc, 2, 0.5, count, 2, out);
    assert_true(out[0] == 0.6f && out[1] == 0.0f);
    assert_true(fabs(dec - 5.0 * (1.0 - (double)0.6f) * (1.0 - (double)0.6f)) < 1e-12);
    cd_solve(sacc, 2, 0.5, NULL, 1.5, out); /* 3 / (0.5 + 1.5 + 1) */
    assert_true(out[0] == 1.0f);
    /* A filter takes only the entries whose flag matches. */
    uint8_t held[6] = {0, 1, 0, 0, 1, 0};
    cd_cells kept, out_cells;
    assert_int_equal(cd_cells_build(&kept, ent, off, 1, held, 0, &err), 0);
    assert_int_equal(cd_cells_build(&out_cells, ent, off, 1, held, 1, &err), 0);
    assert_int_equal(cd_cells_count(&kept), 4);
    assert_int_equal(cd_cells_count(&out_cells), 2);
    assert_int_equal(kept.run_off[1], 3);      /* rows 0, 1, 2 */
    assert_int_equal(out_cells.run_off[1], 2); /* rows 0, 2 */
    assert_true(out_cells.res[0] == 2 && out_cells.res[1] == 5 && out_cells.col[1] == 1);
    cd_cells_free(&kept);
    cd_cells_free(&out_cells);
    /* Loss delta: v^2 den - 2 v num. */
    float dv[2] = {2, -1};
    double dacc[4] = {1, 4, 3, 5};
    assert_true(fabs(cd_loss_delta(dv, dacc, 2) - (16 - 4 + 5 + 6)) < 1e-12);
    /* Entries not grouped by row are refused. */
    rt_entry bad[3] = {{1, 0, 1}, {0, 1, 1}, {1, 2, 1}};
    uint64_t boff[2] = {0, 3};
    cd_cells c3;
    assert_int_equal(cd_cells_build(&c3, bad, boff, 1, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "sorted"));
    cd_cells_free(&cells);
    cd_cells_free(&tcells);
}

/* The core replayed through the ring schedule equals the serial reference
 * to 1e-6 relative after every outer iteration. */
/* Implicit feedback reads ratings as counts: make the toy's non-negative
 * (in the shards and in the reference's list alike). */
static void toy_counts(toy *t)
{
    for (uint32_t w = 0; w < t->plan.workers; w++) {
        const rt_shard *sh = &t->shards[w];
        for (uint64_t e = 0; e < sh->train_off[t->plan.blocks]; e++)
            t->train[w][e].val = fabsf(t->train[w][e].val);
    }
    for (size_t e = 0; e < t->ref.n; e++)
        t->ref.val[e] = fabsf(t->ref.val[e]);
}

static void check_against_reference(cd_opts o)
{
    toy t;
    toy_make(&t, 48, 40, 4, 2, 2, 0.35, 7);
    if (o.implicit)
        toy_counts(&t);
    uint32_t k = o.mf.k, outer = o.outer;
    run_out got;
    replay(&t, &o, 1, &got);
    cd_ref_point ref[16];
    cd_ref_opts ro = {.k = (int)k,
                      .outer = (int)outer,
                      .inner = (int)o.inner,
                      .lambda = o.mf.lambda,
                      .inner_eps = o.inner_eps,
                      .lambda_const = o.lambda_const,
                      .weighted = o.weighted,
                      .biases = o.mf.biases,
                      .center = o.center,
                      .implicit = o.implicit,
                      .confidence = o.confidence,
                      .alpha = o.alpha,
                      .w0 = o.unobserved};
    uint8_t *held = calloc(t.ref.n + 1, 1);
    for (size_t e = 0; e < t.ref.n; e++)
        held[e] = (uint8_t)rt_mf_is_validation(&o.mf, t.ref.row[e], t.ref.col[e]);
    t.ref.held = held;
    float *RW = calloc((size_t)t.plan.n_rows * k, sizeof(float));
    float *RH = calloc((size_t)t.plan.n_cols * k, sizeof(float));
    float *H0 = cd_ref_initial_H(t.plan.n_cols, (int)k, o.mf.seed, o.mf.init_scale);
    assert_non_null(H0);
    assert_int_equal(cd_ref_run(&t.ref, &ro, H0, ref, RW, RH), 0);
    free(H0);
    assert_int_equal(got.n_outer, outer);
    for (uint32_t x = 0; x < outer; x++) {
        assert_int_equal(got.m[x].outer, x + 1);
        if (rel(got.m[x].objective, ref[x].objective) > 1e-6 ||
            rel(got.m[x].test_rmse, ref[x].test_rmse) > 1e-6 ||
            rel(got.m[x].train_rmse, ref[x].train_rmse) > 1e-6 ||
            (o.mf.valid_fraction > 0 && rel(got.m[x].valid_rmse, ref[x].valid_rmse) > 1e-6))
            fail_msg("outer %u: objective %.9g vs %.9g, train %.9g vs %.9g, test %.9g vs %.9g",
                     x + 1, got.m[x].objective, ref[x].objective, got.m[x].train_rmse,
                     ref[x].train_rmse, got.m[x].test_rmse, ref[x].test_rmse);
        if (getenv("CD_MF_TEST_VERBOSE"))
            print_message(
                "k=%u outer %u: objective %.9g (ref %.9g, rel %.2g) train %.6f test %.6f\n", k,
                x + 1, got.m[x].objective, ref[x].objective,
                rel(got.m[x].objective, ref[x].objective), got.m[x].train_rmse, got.m[x].test_rmse);
        if (x > 0) /* CCD++ never increases the objective */
            assert_true(got.m[x].objective <= got.m[x - 1].objective * (1 + 1e-6));
    }
    double maxdiff = 0;
    for (size_t x = 0; x < (size_t)t.plan.n_rows * k; x++)
        maxdiff = fmax(maxdiff, fabs(got.W[x] - RW[x]));
    for (size_t x = 0; x < (size_t)t.plan.n_cols * k; x++)
        maxdiff = fmax(maxdiff, fabs(got.H[x] - RH[x]));
    if (maxdiff > 1e-4)
        fail_msg("factors differ from the reference by %g", maxdiff);
    /* The planted rank-3 signal is learnt. */
    if (k >= 4 && outer >= 5 && !o.implicit)
        assert_true(got.m[outer - 1].train_rmse < 0.5);
    run_out_free(&got);
    free(RW);
    free(RH);
    free(held);
    toy_free(&t);
}

static void test_matches_reference(void **state)
{
    (void)state;
    check_against_reference(opts(4, 6, 2, 0.1, 11));
}

static void test_matches_reference_rank1(void **state)
{
    (void)state;
    cd_opts o = opts(1, 4, 3, 0.5, 11);
    o.mf.biases = 0;
    check_against_reference(o); /* a single slot: nothing is ever subtracted */
}

static void test_matches_reference_no_lambda(void **state)
{
    (void)state;
    check_against_reference(opts(3, 5, 1, 0.0, 11));
}

static void test_matches_reference_unweighted(void **state)
{
    (void)state;
    cd_opts o = opts(4, 5, 3, 2.0, 11);
    o.weighted = 0;
    o.center = 0;
    o.inner_eps = 0;
    check_against_reference(o);
}

/* --lambda-const: every row and column regularised by lambda n + L0
 * (weighted) or lambda + L0 (unweighted); a solve that dropped L0 would
 * miss by far more than the tolerance. */
static void test_matches_reference_lambda_const(void **state)
{
    (void)state;
    cd_opts o = opts(4, 5, 2, 0.1, 11);
    o.lambda_const = 1;
    check_against_reference(o);
    o.weighted = 0;
    o.lambda_const = 0.5;
    check_against_reference(o);
}

/* Early exit on (inner 8, a large epsilon), and a validation set. */
static void test_matches_reference_early_exit_validation(void **state)
{
    (void)state;
    cd_opts o = opts(5, 6, 8, 0.05, 11);
    o.inner_eps = 0.05;
    o.mf.valid_fraction = 0.2;
    check_against_reference(o);
}

static cd_opts implicit_opts(uint32_t k, uint32_t outer, uint32_t inner, double lambda)
{
    cd_opts o = opts(k, outer, inner, lambda, 11);
    o.implicit = 1;
    o.mf.biases = o.center = 0;
    o.alpha = 2;
    o.unobserved = 0.3;
    return o;
}

/* Implicit feedback, through the Gram matrices, equals the dense loops over
 * every pair of the reference. */
static void test_implicit_matches_reference(void **state)
{
    (void)state;
    check_against_reference(implicit_opts(4, 6, 2, 0.1));
}

static void test_implicit_matches_reference_unweighted_log(void **state)
{
    (void)state;
    cd_opts o = implicit_opts(5, 5, 3, 0.5);
    o.weighted = 0;
    o.confidence = CD_CONF_LOG;
    o.alpha = 10;
    o.unobserved = 1;
    o.inner_eps = 0;
    check_against_reference(o);
}

static void test_implicit_matches_reference_binary_early_exit(void **state)
{
    (void)state;
    cd_opts o = implicit_opts(3, 6, 8, 0.02);
    o.confidence = CD_CONF_BINARY;
    o.alpha = 5;
    o.unobserved = 0.05;
    o.inner_eps = 0.05;
    check_against_reference(o);
}

static void test_implicit_rank1(void **state)
{
    (void)state;
    check_against_reference(implicit_opts(1, 4, 3, 0.2));
}

static void test_implicit_matches_reference_lambda_const(void **state)
{
    (void)state;
    cd_opts o = implicit_opts(4, 5, 2, 0.1);
    o.lambda_const = 2;
    check_against_reference(o);
}

/* A rating outside the confidence's domain is an input error. */
static void test_implicit_rejects_negative_ratings(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 16, 16, 2, 2, 2, 0.5, 1);
    toy_counts(&t);
    t.train[1][0].val = -2;
    cd_opts o = implicit_opts(2, 1, 1, 0.1);
    cd_core c;
    rt_error err = {0};
    assert_int_equal(cd_core_init(&c, &o, &t.plan, t.shards, 0, 2, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    if (!strstr(err.msg, "rating -2"))
        fail_msg("%s", err.msg);
    cd_core_free(&c);
    o.confidence = CD_CONF_BINARY; /* any rating will do */
    assert_int_equal(cd_core_init(&c, &o, &t.plan, t.shards, 0, 2, &err), 0);
    cd_core_free(&c);
    toy_free(&t);
}

/* Two emulated nodes of two workers give the same bits as one of four. */
static void split_is_bit_identical(cd_opts o)
{
    toy t;
    toy_make(&t, 37, 29, 4, 2, 2, 0.4, 3);
    if (o.implicit)
        toy_counts(&t);
    run_out a, b, c;
    replay(&t, &o, 1, &a);
    replay(&t, &o, 2, &b);
    replay(&t, &o, 4, &c);
    assert_int_equal(a.n_outer, 3);
    size_t wb = (size_t)t.plan.n_rows * 3 * sizeof(float),
           hb = (size_t)t.plan.n_cols * 3 * sizeof(float);
    assert_memory_equal(a.W, b.W, wb);
    assert_memory_equal(a.H, b.H, hb);
    assert_memory_equal(a.W, c.W, wb);
    assert_memory_equal(a.H, c.H, hb);
    for (int x = 0; x < 3; x++) {
        assert_memory_equal(&a.m[x], &b.m[x], sizeof(cd_metrics));
        assert_memory_equal(&a.m[x], &c.m[x], sizeof(cd_metrics));
    }
    /* ... and a different seed gives a different model. */
    o.mf.seed = 6;
    run_out d;
    replay(&t, &o, 1, &d);
    assert_true(memcmp(a.H, d.H, hb) != 0);
    run_out_free(&a), run_out_free(&b), run_out_free(&c), run_out_free(&d);
    toy_free(&t);
}

static void test_split_is_bit_identical(void **state)
{
    (void)state;
    split_is_bit_identical(opts(3, 3, 2, 0.05, 5));
}

static void test_implicit_split_is_bit_identical(void **state)
{
    (void)state;
    cd_opts o = implicit_opts(3, 3, 2, 0.05);
    o.mf.seed = 5;
    split_is_bit_identical(o);
}

/* With a validation set and --early-stop 2, an overfitting run (lambda
 * 0.003, rank 6 on a rank-3 problem) stops two outer iterations after its best
 * validation RMSE, which is the smallest one logged; the model it saves is
 * that best one: bit for bit the last model of a run of exactly best_outer
 * outer iterations on the same validation split, and not its own last one. */
static void test_validation_early_stop(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 48, 40, 4, 2, 2, 0.35, 7);
    cd_opts o = opts(6, 16, 1, 0.003, 11);
    o.mf.valid_fraction = 0.25;
    o.mf.early_stop = 2;
    run_out got;
    replay(&t, &o, 2, &got);
    const cd_metrics *last = &got.m[got.n_outer - 1];
    /* The epoch it stops at, fixed by the data and the seed: a change in
     * the stopping rule or in the validation split shows here. */
    assert_int_equal(got.n_outer, 4);
    assert_int_equal(last->best_outer, 2);
    for (uint32_t x = 0; x < got.n_outer; x++) {
        assert_true(isfinite(got.m[x].valid_rmse));
        if (x + 1 != last->best_outer)
            assert_true(got.m[x].valid_rmse > got.m[last->best_outer - 1].valid_rmse);
    }

    cd_opts upto = o;
    upto.outer = (uint32_t)last->best_outer;
    upto.mf.early_stop = 0;
    run_out best;
    replay(&t, &upto, 1, &best);
    assert_int_equal(best.n_outer, last->best_outer);
    size_t nw = (size_t)t.plan.n_rows * o.mf.k * sizeof(float),
           nh = (size_t)t.plan.n_cols * o.mf.k * sizeof(float);
    assert_memory_equal(got.saved_W, best.W, nw);
    assert_memory_equal(got.saved_H, best.H, nh);
    assert_memory_equal(got.saved_row_bias, best.saved_row_bias, t.plan.n_rows * sizeof(float));
    assert_memory_equal(got.saved_col_bias, best.saved_col_bias, t.plan.n_cols * sizeof(float));
    assert_true(memcmp(got.saved_H, got.H, nh) != 0); /* training went on past the best */
    run_out_free(&got);
    run_out_free(&best);
    toy_free(&t);
}

/* A block arriving with another phase's payload is an error, not garbage. */
static void test_rejects_foreign_payload(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 16, 16, 2, 2, 2, 0.5, 1);
    cd_opts o = opts(2, 1, 1, 0.1, 1);
    cd_core c;
    rt_error err = {0};
    assert_int_equal(cd_core_init(&c, &o, &t.plan, t.shards, 0, 2, &err), 0);
    void *pay = rt_alloc(cd_payload_max_bytes(16));
    size_t len = 0;
    assert_int_equal(cd_core_block_home(&c, 1, 0, pay, &len, &err), 0);
    assert_int_equal(cd_core_visit(&c, 0, 1, 0, pay, len, &err), 0);
    assert_int_equal(cd_core_visit(&c, 0, 1, 1, pay, len, &err), -1); /* wrong rotation */
    assert_non_null(strstr(err.msg, "rotation 1"));
    ((cd_payload_hdr *)pay)->slot = 1; /* another slot's payload */
    assert_int_equal(cd_core_visit(&c, 0, 1, 0, pay, len, &err), -1);
    assert_non_null(strstr(err.msg, "block 1"));
    ((cd_payload_hdr *)pay)->slot = 0;
    assert_int_equal(cd_core_visit(&c, 0, 2, 0, pay, len, &err), -1);      /* wrong block */
    assert_int_equal(cd_core_visit(&c, 0, 1, 0, pay, len - 64, &err), -1); /* truncated */
    assert_int_equal(cd_core_visit(&c, 5, 1, 0, pay, len, &err), -1);      /* not our worker */
    rt_free(pay);
    cd_core_free(&c);
    toy_free(&t);
}

/* ---- options: `rotor train --app cd-mf ...` hands these to parse/check ---- */

static int parse(void **o, rt_error *err, int argc, ...)
{
    char *argv[16] = {"cd-mf"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    *o = NULL;
    memset(err, 0, sizeof(*err));
    return rt_app_parse(&rt_app_cd_mf, argc, argv, o, err);
}

static void expect_bad(const char *what, int argc, ...)
{
    char *argv[16] = {"cd-mf"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    void *o = NULL;
    rt_error err = {0};
    assert_int_equal(rt_app_parse(&rt_app_cd_mf, argc, argv, &o, &err), -1);
    assert_null(o);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    if (!strstr(err.msg, what) || strchr(err.msg, '\n'))
        fail_msg("message '%s' should be one line naming %s", err.msg, what);
}

static void test_options(void **state)
{
    (void)state;
    void *p;
    rt_error err;
    assert_int_equal(parse(&p, &err, 11, "--rank", "7", "--outer", "4", "--inner", "2",
                           "--lambda=0.5", "--seed", "9", "--init-scale"),
                     -1); /* a value is missing */
    assert_int_equal(parse(&p, &err, 10, "--rank", "7", "--outer", "4", "--inner", "2",
                           "--lambda=0.5", "--seed", "9"),
                     0);
    const cd_opts *o = p;
    assert_int_equal(o->mf.k, 7);
    assert_int_equal(o->outer, 4);
    assert_int_equal(o->inner, 2);
    assert_true(o->mf.lambda == 0.5);
    assert_int_equal(o->mf.seed, 9);
    free(p);
    assert_int_equal(parse(&p, &err, 1), 0); /* defaults */
    o = p;
    assert_true(o->mf.k >= 1 && o->outer >= 1 && o->inner >= 1 && o->mf.lambda >= 0);
    free(p);
    assert_int_equal(parse(&p, &err, 3, "--lambda", "0"), 0); /* lambda = 0 is allowed */
    free(p);
}

static void test_rejects_rank(void **state)
{
    (void)state;
    expect_bad("--rank", 3, "--rank", "0");
    expect_bad("--rank", 3, "--rank", "-2");
    expect_bad("--rank", 3, "--rank", "x");
}

static void test_rejects_lambda(void **state)
{
    (void)state;
    expect_bad("--lambda", 3, "--lambda", "-1");
    expect_bad("--lambda", 2, "--lambda=-0.001");
    expect_bad("--lambda", 3, "--lambda", "nan");
}

static void test_rejects_inner_outer(void **state)
{
    (void)state;
    expect_bad("--inner", 3, "--inner", "0");
    expect_bad("--inner", 3, "--inner", "-1");
    expect_bad("--outer", 3, "--outer", "0");
    expect_bad("--frobnicate", 3, "--frobnicate", "1");
}

static void test_rejects_bad_hyperparameters(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"--validation-fraction", "0"},    {"--validation-fraction", "0.51"},
        {"--validation-fraction", "-0.1"}, {"--early-stop", "0"},
        {"--inner-eps", "-1e-3"},          {"--inner-eps", "nan"},
    };
    for (size_t x = 0; x < sizeof(bad) / sizeof(bad[0]); x++)
        expect_bad(bad[x][0], 3, bad[x][0], bad[x][1]);
    void *p;
    rt_error err;
    assert_int_equal(
        parse(&p, &err, 7, "--validation-fraction", "0.5", "--early-stop", "3", "--inner-eps", "0"),
        0);
    const cd_opts *o = p;
    assert_true(o->mf.valid_fraction == 0.5 && o->mf.early_stop == 3 && o->inner_eps == 0);
    free(p);
    /* --early-stop without a validation set is refused by check. */
    assert_int_equal(parse(&p, &err, 3, "--early-stop", "3"), 0);
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.app = RT_PLAN_MF;
    assert_int_equal(rt_app_cd_mf.check(p, &plan, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "--validation-fraction"));
    free(p);
}

static void test_rejects_other_plans(void **state)
{
    (void)state;
    void *p;
    rt_error err;
    assert_int_equal(parse(&p, &err, 1), 0);
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    snprintf(plan.dir, sizeof(plan.dir), "some/plan");
    plan.app = RT_PLAN_LDA;
    assert_int_equal(rt_app_cd_mf.check(p, &plan, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "lda"));
    assert_non_null(strstr(err.msg, "cd-mf"));
    plan.app = RT_PLAN_MF;
    assert_int_equal(rt_app_cd_mf.check(p, &plan, &err), 0);
    assert_int_equal(rt_app_cd_mf.plan_app, RT_PLAN_MF);
    assert_string_equal(rt_app_cd_mf.name, "cd-mf");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_sequence),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_matches_reference_rank1),
        cmocka_unit_test(test_matches_reference_no_lambda),
        cmocka_unit_test(test_matches_reference_unweighted),
        cmocka_unit_test(test_matches_reference_lambda_const),
        cmocka_unit_test(test_matches_reference_early_exit_validation),
        cmocka_unit_test(test_validation_early_stop),
        cmocka_unit_test(test_split_is_bit_identical),
        cmocka_unit_test(test_implicit_matches_reference),
        cmocka_unit_test(test_implicit_matches_reference_unweighted_log),
        cmocka_unit_test(test_implicit_matches_reference_binary_early_exit),
        cmocka_unit_test(test_implicit_rank1),
        cmocka_unit_test(test_implicit_matches_reference_lambda_const),
        cmocka_unit_test(test_implicit_rejects_negative_ratings),
        cmocka_unit_test(test_implicit_split_is_bit_identical),
        cmocka_unit_test(test_rejects_foreign_payload),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_rejects_rank),
        cmocka_unit_test(test_rejects_lambda),
        cmocka_unit_test(test_rejects_inner_outer),
        cmocka_unit_test(test_rejects_bad_hyperparameters),
        cmocka_unit_test(test_rejects_other_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

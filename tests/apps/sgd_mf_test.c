/* sgd_mf_test.c - the SGD-MF core replayed through the ring schedule in
 * memory (no engine, no network): any split of the workers over nodes gives
 * the same bits; the saved model, loaded back through the app's hooks,
 * predicts exactly what the trained state predicts; and a run whose state
 * is saved, freed, loaded into a fresh core and continued ends bit-identical
 * to a straight run; --lambda-const's shares are L0 / n of every row's and
 * column's training ratings, whatever the split. */
#include "apps/app_common.h"
#include "apps/sgd_mf.h"
#include "tests/apps/mf_toy.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static sgd_opts opts(uint32_t k, uint32_t epochs, int schedule, int biases)
{
    sgd_opts o;
    memset(&o, 0, sizeof(o));
    rt_mf_common_defaults(&o.mf);
    o.mf.k = k;
    o.mf.lambda = 0.05;
    o.mf.init_scale = 0.3;
    o.mf.biases = biases;
    o.lr = 0.02;
    o.decay = 0.9;
    o.lambda_bias = 0.05;
    o.schedule = schedule;
    o.epochs = epochs;
    o.center = 1;
    return o;
}

/* ---- replay: `nodes` emulated nodes, the all-reduce done in memory ---- */

typedef struct run {
    toy *t;
    sgd_opts o;
    uint32_t nodes, per_node;
    sgd_core *cores;
    rt_mf_held_out *held; /* per node, with validation */
    uint32_t *home;       /* block -> node */
    float **pay;          /* block payloads */
    size_t *len, slot;
    double *total;
    sgd_epoch last;
    uint64_t next; /* next rotation */
} run;

static double toy_mean(const toy *t)
{
    double s = 0;
    for (size_t i = 0; i < t->ref.n; i++)
        s += t->ref.val[i];
    return s / (double)t->ref.n;
}

/* The mean of the ratings fitted as rt_mf_train_mean adds them up. */
static double fit_mean(const run *r)
{
    double sum = 0, n = 0;
    for (uint32_t node = 0; node < r->nodes; node++)
        for (uint32_t t = 0; t < r->per_node; t++) {
            const rt_shard *s = &r->held[node].fit[t];
            double w = 0;
            for (uint64_t i = 0; i < s->train_off[r->t->plan.blocks]; i++)
                w += s->train[i].val;
            sum += w;
            n += (double)s->train_off[r->t->plan.blocks];
        }
    return sum / n;
}

static void run_open(run *r, toy *t, const sgd_opts *o, uint32_t nodes)
{
    rt_plan *p = &t->plan;
    rt_error err = {0};
    memset(r, 0, sizeof(*r));
    r->t = t;
    r->o = *o;
    r->nodes = nodes;
    r->per_node = p->workers / nodes;
    r->cores = calloc(nodes, sizeof(sgd_core));
    int validation = o->mf.valid_fraction > 0;
    double mean = toy_mean(t);
    if (validation) {
        r->held = calloc(nodes, sizeof(rt_mf_held_out));
        for (uint32_t n = 0; n < nodes; n++)
            assert_int_equal(rt_mf_held_out_split(&r->held[n], p, t->shards + n * r->per_node,
                                                  r->per_node, &o->mf, &err),
                             0);
        mean = fit_mean(r);
    }
    for (uint32_t n = 0; n < nodes; n++)
        assert_int_equal(sgd_core_init(&r->cores[n], o, p,
                                       validation ? r->held[n].fit : t->shards + n * r->per_node,
                                       n * r->per_node, r->per_node, mean,
                                       validation ? &r->held[n] : NULL, &err),
                         0);
    /* --lambda-const's setup all-reduce, in memory: every node adds its
     * column counts into one vector, every node takes the totals. */
    size_t n_setup = sgd_core_setup_len(&r->cores[0]);
    if (n_setup) {
        double *v = calloc(n_setup, sizeof(double));
        for (uint32_t n = 0; n < nodes; n++)
            sgd_core_setup_parts(&r->cores[n], v);
        for (uint32_t n = 0; n < nodes; n++)
            sgd_core_setup(&r->cores[n], v);
        free(v);
    }
    r->home = calloc(p->blocks, sizeof(uint32_t));
    r->pay = calloc(p->blocks, sizeof(float *));
    r->len = calloc(p->blocks, sizeof(size_t));
    r->slot = rt_mf_slot_bytes(p, rt_mf_padded_rank(o->mf.k), sgd_payload_extra(o));
    for (uint32_t b = 0; b < p->blocks; b++) {
        r->home[b] = b / (p->pipeline * r->per_node);
        r->pay[b] = rt_alloc(r->slot);
    }
    r->total = calloc(sgd_core_sums_len(&r->cores[0]), sizeof(double));
}

static void run_close(run *r)
{
    for (uint32_t n = 0; n < r->nodes; n++) {
        sgd_core_free(&r->cores[n]);
        if (r->held)
            rt_mf_held_out_free(&r->held[n]);
    }
    free(r->held);
    for (uint32_t b = 0; b < r->t->plan.blocks; b++)
        rt_free(r->pay[b]);
    free(r->cores), free(r->home), free(r->pay), free(r->len), free(r->total);
}

/* rt_mf_cols_gather in memory: every node puts in its home blocks, the
 * buffers are summed, and every node takes the whole H out. */
static void gather_cols(run *r)
{
    const rt_plan *p = &r->t->plan;
    size_t len = p->n_cols * (r->o.mf.k + 1);
    double *total = calloc(len, sizeof(double));
    for (uint32_t c = 0; c < r->nodes; c++)
        rt_mf_cols_clear(sgd_core_cols(&r->cores[c]));
    for (uint32_t b = 0; b < p->blocks; b++)
        rt_mf_cols_put(sgd_core_cols(&r->cores[r->home[b]]), p, b, r->pay[b]);
    for (uint32_t c = 0; c < r->nodes; c++)
        for (size_t x = 0; x < len; x++)
            total[x] += sgd_core_cols(&r->cores[c])->sum[x];
    for (uint32_t c = 0; c < r->nodes; c++) {
        memcpy(sgd_core_cols(&r->cores[c])->sum, total, len * sizeof(double));
        rt_mf_cols_take(sgd_core_cols(&r->cores[c]));
    }
    free(total);
}

/* One rotation; returns the stop flag. */
static int run_rotation(run *r)
{
    const rt_plan *p = &r->t->plan;
    uint32_t W = p->workers, B = p->blocks;
    rt_error err = {0};
    for (uint32_t b = 0; b < B; b++) {
        sgd_core_block_home(&r->cores[r->home[b]], b, r->next, r->pay[b], &r->len[b]);
        assert_true(r->len[b] > 0 && r->len[b] <= r->slot);
    }
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = toy_block(r->t, s, w);
            sgd_core_visit(&r->cores[w / r->per_node], w, b, r->pay[b]);
        }
    if (sgd_core_cols(&r->cores[0]))
        gather_cols(r);
    for (uint32_t c = 0; c < r->nodes; c++)
        sgd_core_score_held(&r->cores[c]);
    size_t n = sgd_core_sums_len(&r->cores[0]);
    memset(r->total, 0, n * sizeof(double));
    for (uint32_t c = 0; c < r->nodes; c++)
        for (size_t x = 0; x < n; x++)
            r->total[x] += sgd_core_sums(&r->cores[c])[x];
    int stop = 0;
    for (uint32_t c = 0; c < r->nodes; c++) {
        memcpy(sgd_core_sums(&r->cores[c]), r->total, n * sizeof(double));
        assert_int_equal(sgd_core_epoch_end(&r->cores[c], r->next, &r->last, &stop, &err), 0);
    }
    r->next++;
    return stop;
}

static void run_to_end(run *r)
{
    while (!run_rotation(r))
        ;
}

/* The model in global order: W (n_rows x k), H (n_cols x k), biases. */
typedef struct dense {
    float *W, *H, *bu, *bi;
} dense;

static void run_dense(const run *r, dense *d)
{
    const rt_plan *p = &r->t->plan;
    uint32_t k = r->o.mf.k, kp = rt_mf_padded_rank(k);
    d->W = calloc((size_t)p->n_rows * k, sizeof(float));
    d->H = calloc((size_t)p->n_cols * k, sizeof(float));
    d->bu = calloc(p->n_rows, sizeof(float));
    d->bi = calloc(p->n_cols, sizeof(float));
    for (uint32_t w = 0; w < p->workers; w++) {
        const sgd_core *c = &r->cores[w / r->per_node];
        uint32_t t = w % r->per_node;
        const uint32_t *ids = p->worker_row_ids + p->worker_row_offset[w];
        for (uint32_t i = 0; i < rt_plan_worker_rows(p, w); i++) {
            memcpy(d->W + (size_t)ids[i] * k, c->m.W[t] + (size_t)i * kp, k * sizeof(float));
            if (c->m.bu)
                d->bu[ids[i]] = c->m.bu[t][i];
        }
    }
    for (uint32_t b = 0; b < p->blocks; b++) {
        uint32_t n = rt_plan_block_cols(p, b);
        const uint32_t *ids = p->block_col_ids + p->block_col_offset[b];
        for (uint32_t j = 0; j < n; j++) {
            memcpy(d->H + (size_t)ids[j] * k, r->pay[b] + (size_t)j * kp, k * sizeof(float));
            if (r->o.mf.biases)
                d->bi[ids[j]] = rt_mf_payload_biases(r->pay[b], n, kp)[j];
        }
    }
}

static void dense_free(dense *d)
{
    free(d->W), free(d->H), free(d->bu), free(d->bi);
}

static void assert_same_model(const run *a, const run *b)
{
    const rt_plan *p = &a->t->plan;
    uint32_t k = a->o.mf.k;
    dense x, y;
    run_dense(a, &x);
    run_dense(b, &y);
    assert_memory_equal(x.W, y.W, (size_t)p->n_rows * k * sizeof(float));
    assert_memory_equal(x.H, y.H, (size_t)p->n_cols * k * sizeof(float));
    assert_memory_equal(x.bu, y.bu, p->n_rows * sizeof(float));
    assert_memory_equal(x.bi, y.bi, p->n_cols * sizeof(float));
    assert_memory_equal(&a->last, &b->last, sizeof(sgd_epoch));
    dense_free(&x);
    dense_free(&y);
}

/* ---- tests ---- */

static void test_split_is_bit_identical(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 60, 48, 4, 2, 2, 0.3, 11);
    sgd_opts o = opts(6, 12, LR_BOLD, 1);
    run one, two;
    run_open(&one, &t, &o, 1);
    run_open(&two, &t, &o, 2);
    run_rotation(&one);
    double first = one.last.train_rmse;
    run_to_end(&one);
    run_to_end(&two);
    assert_int_equal(one.next, 12);
    assert_true(one.last.train_rmse < 0.9 * first); /* it trained */
    assert_same_model(&one, &two);
    /* A different seed gives a different model. */
    sgd_opts o2 = o;
    o2.mf.seed = 2;
    run other;
    run_open(&other, &t, &o2, 1);
    run_to_end(&other);
    assert_true(other.last.train_rmse != one.last.train_rmse);
    run_close(&one);
    run_close(&two);
    run_close(&other);
    toy_free(&t);
}

/* A plan directory holding only the id files the model writer copies. */
static void write_ids(const char *dir, const char *name, uint64_t n, char prefix)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (uint64_t i = 0; i < n; i++)
        fprintf(fp, "%c%llu\n", prefix, (unsigned long long)(i * 7 + 3));
    assert_int_equal(fclose(fp), 0);
}

static void check_roundtrip(int biases)
{
    toy t;
    toy_make(&t, 50, 40, 2, 2, 1, 0.3, 5);
    sgd_opts o = opts(5, 4, LR_FIXED, biases);
    run r;
    run_open(&r, &t, &o, 1);
    run_to_end(&r);

    char dir[] = "/tmp/rotor_sgd_model_XXXXXX", out[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(t.plan.dir, sizeof(t.plan.dir), "%s", dir);
    write_ids(dir, "rows.ids", t.plan.n_rows, 'u');
    write_ids(dir, "cols.ids", t.plan.n_cols, 'i');
    snprintf(out, sizeof(out), "%s/model", dir);
    dense d;
    run_dense(&r, &d);
    json_t *meta = json_pack("{s:s, s:f, s:b}", "app", "sgd-mf", "mu", (double)r.cores[0].mu,
                             "biases", biases);
    rt_error err = {0};
    assert_int_equal(rt_mf_model_write(out, &t.plan, &o.mf, d.W, d.H, biases ? d.bu : NULL,
                                       biases ? d.bi : NULL, meta, &err),
                     0);

    rt_model m;
    assert_int_equal(rt_model_open(out, &m, &err), 0);
    assert_ptr_equal(m.app, &rt_app_sgd_mf);
    rt_idmap *rows, *cols;
    m.app->model_ids(m.impl, &rows, &cols);
    assert_int_equal(rows->n, t.plan.n_rows);
    assert_string_equal(rt_idmap_str(cols, 2), "i17");
    /* Every rating of every worker, train and test: the loaded model
     * predicts exactly what the trained state predicts. */
    const sgd_core *c = &r.cores[0];
    uint32_t kp = c->m.kp, n_pred = 0;
    for (uint32_t w = 0; w < t.plan.workers; w++) {
        const rt_shard *s = &t.shards[w];
        for (int test = 0; test < 2; test++) {
            const uint64_t *off = test ? s->test_off : s->train_off;
            const rt_entry *e = test ? s->test : s->train;
            for (uint32_t b = 0; b < t.plan.blocks; b++)
                for (uint64_t i = off[b]; i < off[b + 1]; i++) {
                    uint32_t n = rt_plan_block_cols(&t.plan, b);
                    uint32_t grow = s->row_ids[e[i].row];
                    uint32_t gcol = t.plan.block_col_ids[t.plan.block_col_offset[b] + e[i].col];
                    float bu = biases ? c->m.bu[w][e[i].row] : 0.0f;
                    float bi = biases ? rt_mf_payload_biases(r.pay[b], n, kp)[e[i].col] : 0.0f;
                    float want = rt_mf_predict(c->m.W[w] + (size_t)e[i].row * kp,
                                               r.pay[b] + (size_t)e[i].col * kp, kp, c->mu, bu, bi);
                    float got = m.app->model_predict(m.impl, grow, gcol);
                    assert_memory_equal(&got, &want, sizeof(float));
                    n_pred++;
                }
        }
    }
    assert_true(n_pred > 200);
    rt_model_close(&m);
    dense_free(&d);
    run_close(&r);
    rt_remove_tree(dir);
    toy_free(&t);
}

static void test_model_roundtrip(void **state)
{
    (void)state;
    check_roundtrip(1);
    check_roundtrip(0);
}

/* Each emulated node writes its own state file (its core's state and its
 * home blocks' payloads), or reads it back: one walk for both. */
static void run_xfer(run *r, const char *dir, int load)
{
    rt_error err = {0};
    for (uint32_t n = 0; n < r->nodes; n++) {
        rt_state_head h = {.plan_id = 42,
                           .next_rotation = r->next,
                           .rank = n,
                           .size = r->nodes,
                           .first_worker = n * r->per_node,
                           .n_workers = r->per_node};
        snprintf(h.app, sizeof(h.app), "sgd-mf");
        rt_state_writer w;
        rt_state_reader rd;
        rt_state_io io = {.w = load ? NULL : &w, .r = load ? &rd : NULL};
        if (load)
            assert_int_equal(rt_state_open(&rd, dir, &h, &r->next, &err), 0);
        else
            assert_int_equal(rt_state_create(&w, dir, &h, &err), 0);
        assert_int_equal(sgd_core_state_io(&r->cores[n], &io, &err), 0);
        for (uint32_t b = 0; b < r->t->plan.blocks; b++)
            if (r->home[b] == n)
                assert_int_equal(rt_state_xfer(&io, "payload", r->pay[b], r->slot, &err), 0);
        if (load)
            rt_state_close(&rd);
        else
            assert_int_equal(rt_state_commit(&w, &err), 0);
    }
}

/* `part` opened afresh on `nodes` nodes, run `epochs` epochs, its state
 * saved, freed, and loaded into fresh cores. */
static void run_reopened(run *part, toy *t, const sgd_opts *o, uint32_t nodes, uint64_t epochs)
{
    char dir[] = "/tmp/rotor_sgd_reopen_XXXXXX";
    assert_non_null(mkdtemp(dir));
    run_open(part, t, o, nodes);
    for (uint64_t e = 0; e < epochs; e++)
        assert_false(run_rotation(part));
    run_xfer(part, dir, 0);
    run_close(part);
    run_open(part, t, o, nodes);
    run_xfer(part, dir, 1);
    assert_int_equal(part->next, epochs);
    rt_remove_tree(dir);
}

/* Train 3 epochs, save, free everything, load into fresh cores, train to
 * 9: the same bits as 9 straight epochs (bold driver: the learning rate
 * and the previous loss are part of the state; AdaGrad: the accumulators
 * of W rows and row biases are, and those of H rows and column biases
 * travel in the saved payloads). */
static void check_resume(int adagrad, int biases)
{
    toy t;
    toy_make(&t, 60, 48, 4, 2, 2, 0.3, 13);
    sgd_opts o = opts(6, 9, LR_BOLD, biases);
    o.adagrad = adagrad;
    char dir[] = "/tmp/rotor_sgd_state_XXXXXX";
    assert_non_null(mkdtemp(dir));
    run straight, part;
    run_open(&straight, &t, &o, 2);
    run_to_end(&straight);
    run_open(&part, &t, &o, 2);
    for (int e = 0; e < 3; e++)
        assert_false(run_rotation(&part));
    run_xfer(&part, dir, 0);
    float lr = part.cores[0].lr;
    run_close(&part);
    run_open(&part, &t, &o, 2);
    run_xfer(&part, dir, 1);
    assert_int_equal(part.next, 3);
    assert_true(part.cores[1].lr == lr);
    run_to_end(&part);
    assert_same_model(&straight, &part);
    /* A state written with AdaGrad is refused without it and the other way
     * round, naming what differs. */
    sgd_opts other = o;
    other.adagrad = !adagrad;
    sgd_core c;
    rt_error err = {0};
    uint64_t next;
    rt_state_head want = {.plan_id = 42, .rank = 0, .size = 2, .first_worker = 0, .n_workers = 2};
    snprintf(want.app, sizeof(want.app), "sgd-mf");
    rt_state_reader rd;
    rt_state_io io = {.r = &rd};
    assert_int_equal(sgd_core_init(&c, &other, &t.plan, t.shards, 0, 2, toy_mean(&t), NULL, &err),
                     0);
    assert_int_equal(rt_state_open(&rd, dir, &want, &next, &err), 0);
    assert_int_equal(sgd_core_state_io(&c, &io, &err), -1);
    assert_non_null(strstr(err.msg, "AdaGrad"));
    rt_state_close(&rd);
    sgd_core_free(&c);

    /* A damaged state file is refused, naming the file. */
    char path[4200];
    snprintf(path, sizeof(path), "%s/state-00001.bin", dir);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 200, SEEK_SET), 0);
    fputc(fgetc(fp) ^ 1, fp);
    assert_int_equal(fclose(fp), 0);
    want.rank = 1;
    want.first_worker = 2;
    assert_int_equal(rt_state_open(&rd, dir, &want, &next, &err), -1);
    assert_non_null(strstr(err.msg, "state-00001.bin"));
    rt_state_close(&rd);
    /* ... and so is another split. */
    want.rank = 0;
    want.first_worker = 0;
    want.n_workers = 4;
    assert_int_equal(rt_state_open(&rd, dir, &want, &next, &err), -1);
    assert_non_null(strstr(err.msg, "same split"));
    rt_state_close(&rd);

    run_close(&straight);
    run_close(&part);
    rt_remove_tree(dir);
    toy_free(&t);
}

static void test_resume_is_bit_identical(void **state)
{
    (void)state;
    check_resume(1, 1);
    check_resume(1, 0);
    check_resume(0, 1);
}

/* What --out writes: the best model by validation in place of the last
 * iterate (after the run). */
static void run_use_best(run *r)
{
    for (uint32_t n = 0; n < r->nodes; n++)
        sgd_core_use_best_rows(&r->cores[n]);
    for (uint32_t b = 0; b < r->t->plan.blocks; b++)
        sgd_core_use_best_block(&r->cores[r->home[b]], b, r->pay[b]);
}

static void assert_same_dense(const run *r, const dense *x, const dense *y)
{
    const rt_plan *p = &r->t->plan;
    uint32_t k = r->o.mf.k;
    assert_memory_equal(x->W, y->W, (size_t)p->n_rows * k * sizeof(float));
    assert_memory_equal(x->H, y->H, (size_t)p->n_cols * k * sizeof(float));
    assert_memory_equal(x->bu, y->bu, p->n_rows * sizeof(float));
    assert_memory_equal(x->bi, y->bi, p->n_cols * sizeof(float));
}

/* --validation-fraction with --early-stop on noisy planted data where a
 * rank-12 model with little regularisation overfits: the validation curve
 * turns up, the run stops --early-stop epochs after its best one (the
 * epochs fixed by the data and the seed: a change in the held-out rule or
 * the stopping rule shows here), on any split and after a resume between
 * the best epoch and the stop; the model kept is bit for bit the last one
 * of a run of exactly the best epochs, not the last iterate. */
static void test_validation_early_stop(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 60, 48, 4, 2, 2, 0.25, 23);
    sgd_opts o = opts(12, 60, LR_FIXED, 1);
    o.adagrad = 1;
    o.lr = 0.1;
    o.mf.lambda = o.lambda_bias = 0.001;
    o.mf.valid_fraction = 0.25;
    o.mf.early_stop = 3;
    run one, two, four;
    run_open(&one, &t, &o, 1);
    double curve[60];
    uint32_t epochs = 0;
    for (int stop = 0; !stop;) {
        stop = run_rotation(&one);
        curve[epochs++] = one.last.valid_rmse;
    }
    uint64_t best = one.last.best_epoch;
    assert_int_equal(epochs, 28);
    assert_int_equal(best, 25);
    assert_int_equal(epochs, best + o.mf.early_stop);
    for (uint32_t e = 0; e < epochs; e++) {
        assert_true(isfinite(curve[e]));
        if (e + 1 != best)
            assert_true(curve[e] > curve[best - 1]);
    }
    assert_true(curve[0] > curve[best - 1]); /* it fell, then rose */
    run_open(&two, &t, &o, 2);
    run_open(&four, &t, &o, 4);
    run_to_end(&two);
    run_to_end(&four);
    assert_same_model(&one, &two);
    assert_same_model(&one, &four);

    /* The model kept is that of a run of exactly `best` epochs. */
    dense last, saved, upto;
    run_dense(&one, &last);
    run_use_best(&one);
    run_dense(&one, &saved);
    sgd_opts o_upto = o;
    o_upto.epochs = (uint32_t)best;
    o_upto.mf.early_stop = 0;
    run r_upto;
    run_open(&r_upto, &t, &o_upto, 2);
    run_to_end(&r_upto);
    assert_int_equal(r_upto.next, best);
    run_dense(&r_upto, &upto);
    assert_same_dense(&one, &saved, &upto);
    assert_true(memcmp(saved.H, last.H, (size_t)t.plan.n_cols * o.mf.k * sizeof(float)) != 0);
    assert_true(one.cores[0].best_test_rmse == r_upto.last.test_rmse);

    /* Stopped by --epochs between the best and the stop, saved and resumed
     * with the full --epochs: the same stop and the same model kept. */
    run part;
    run_reopened(&part, &t, &o, 2, best + 1);
    run_to_end(&part);
    assert_int_equal(part.next, epochs);
    assert_int_equal(part.last.best_epoch, best);
    run_use_best(&part);
    dense resumed;
    run_dense(&part, &resumed);
    assert_same_dense(&one, &saved, &resumed);

    dense_free(&last), dense_free(&saved), dense_free(&upto), dense_free(&resumed);
    run_close(&one), run_close(&two), run_close(&four), run_close(&r_upto), run_close(&part);
    toy_free(&t);
}

/* --implicit (BPR, 3 negatives per pair drawn from the block in hand, the
 * decaying rate): one, two and four emulated nodes give the same bits, and
 * so does a run saved after 3 epochs and resumed (the draws follow (seed,
 * epoch, worker, block), no generator state); the training loss falls and
 * the seed and the number of negatives matter. */
static void test_implicit_bpr(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 60, 48, 4, 2, 2, 0.3, 17);
    sgd_opts o = opts(6, 9, LR_DECAY, 1);
    o.implicit = 1;
    o.negatives = 3;
    o.center = 0;
    o.lr = 0.05;
    o.mf.lambda = o.lambda_bias = 0.01;
    run one, two, four, part;
    run_open(&one, &t, &o, 1);
    run_open(&two, &t, &o, 2);
    run_open(&four, &t, &o, 4);
    run_rotation(&one);
    double first = one.last.train_rmse; /* the mean BPR loss */
    run_to_end(&one);
    run_to_end(&two);
    run_to_end(&four);
    /* The toy's pattern of pairs is random: the training loss falls, the
     * held-out pairs' sampled AUC is only a fraction. */
    assert_true(one.last.train_rmse < first);
    assert_true(one.last.test_rmse >= 0 && one.last.test_rmse <= 1);
    assert_same_model(&one, &two);
    assert_same_model(&one, &four);
    assert_true(one.last.train_rmse == four.last.train_rmse);
    assert_true(one.last.test_rmse == four.last.test_rmse);

    run_reopened(&part, &t, &o, 2, 3);
    run_to_end(&part);
    assert_same_model(&one, &part);

    run_close(&part);
    o.mf.seed = 2; /* another start and other negatives */
    run_open(&part, &t, &o, 4);
    run_to_end(&part);
    assert_true(part.last.train_rmse != one.last.train_rmse);
    run_close(&part);
    o.mf.seed = one.o.mf.seed; /* one negative per pair: other steps */
    o.negatives = 1;
    run_open(&part, &t, &o, 2);
    run_to_end(&part);
    assert_true(part.last.train_rmse != one.last.train_rmse);
    run_close(&one), run_close(&two), run_close(&four), run_close(&part);
    toy_free(&t);
}

/* The shares of run r against the toy's ratings with global ids: every
 * row's is L0 / (its training ratings), every column's L0 / (its training
 * ratings on all nodes), validation ratings left out of both. */
static void check_shares(const run *r, const toy *t, double l0)
{
    const rt_plan *p = &t->plan;
    double *rows = calloc(p->n_rows, sizeof(double)), *cols = calloc(p->n_cols, sizeof(double));
    for (size_t i = 0; i < t->ref.n; i++)
        if (!rt_mf_is_validation(&r->o.mf, t->ref.row[i], t->ref.col[i])) {
            rows[t->ref.row[i]]++;
            cols[t->ref.col[i]]++;
        }
    for (uint32_t w = 0; w < p->workers; w++) {
        const sgd_core *c = &r->cores[w / r->per_node];
        const uint32_t *ids = p->worker_row_ids + p->worker_row_offset[w];
        for (uint32_t i = 0; i < rt_plan_worker_rows(p, w); i++)
            assert_true(c->rows[w % r->per_node].reg[i] == (float)(l0 / rows[ids[i]]));
    }
    for (uint32_t n = 0; n < r->nodes; n++)
        for (uint32_t j = 0; j < p->n_cols; j++)
            assert_true(r->cores[n].reg_col[j] == (float)(l0 / cols[p->block_col_ids[j]]));
    free(rows);
    free(cols);
}

/* --lambda-const: the shares count every row's and column's ratings on
 * every node (validation ones left out), any split trains the same bits,
 * a resumed run ends as a straight one, and the shares shrink the model. */
static void test_lambda_const(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 60, 48, 4, 2, 2, 0.3, 29);
    sgd_opts o = opts(6, 8, LR_FIXED, 1);
    o.adagrad = 1;
    o.lr = 0.1;
    o.lambda_const = 3;
    run one, two, four, part, plain;
    run_open(&one, &t, &o, 1);
    run_open(&two, &t, &o, 2);
    run_open(&four, &t, &o, 4);
    check_shares(&one, &t, 3);
    check_shares(&two, &t, 3);
    check_shares(&four, &t, 3);
    run_to_end(&one);
    run_to_end(&two);
    run_to_end(&four);
    assert_same_model(&one, &two);
    assert_same_model(&one, &four);
    run_reopened(&part, &t, &o, 2, 3);
    run_to_end(&part);
    assert_same_model(&one, &part);
    /* Without the shares: a larger model (sum of squares of W and H). */
    sgd_opts o0 = o;
    o0.lambda_const = 0;
    run_open(&plain, &t, &o0, 2);
    assert_null(plain.cores[0].reg_col);
    run_to_end(&plain);
    dense a, b;
    run_dense(&one, &a);
    run_dense(&plain, &b);
    double sa = 0, sb = 0;
    for (size_t i = 0; i < (size_t)t.plan.n_rows * o.mf.k; i++)
        sa += (double)a.W[i] * a.W[i], sb += (double)b.W[i] * b.W[i];
    assert_true(sa < 0.8 * sb);
    dense_free(&a), dense_free(&b);
    run_close(&one), run_close(&two), run_close(&four), run_close(&part), run_close(&plain);
    /* With validation the counts are of the ratings fitted. */
    o.mf.valid_fraction = 0.25;
    run_open(&two, &t, &o, 2);
    check_shares(&two, &t, 3);
    run_close(&two);
    toy_free(&t);
}

/* --rating-scale auto: the power of two nearest the ratings' spread, 1
 * for star ratings and when there is no spread. */
static void test_rating_scale(void **state)
{
    (void)state;
    static const struct {
        double sd, scale;
    } cases[] = {
        {1.126, 1},                                                /* MovieLens 100K */
        {0.919, 1},                                                /* FilmTrust */
        {0.72, 1},  {0.70, 0.5}, {1.40, 1},   {1.42, 2}, {5.2, 4}, /* Jester */
        {22.0, 16}, {25.0, 32},  {0.2, 0.25}, {0, 1},    {NAN, 1}, {INFINITY, 1}, {1e300, 0x1p60},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (rt_mf_rating_scale(cases[i].sd) != cases[i].scale)
            fail_msg("sd %g: scale %g, not %g", cases[i].sd, rt_mf_rating_scale(cases[i].sd),
                     cases[i].scale);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_is_bit_identical),
        cmocka_unit_test(test_model_roundtrip),
        cmocka_unit_test(test_resume_is_bit_identical),
        cmocka_unit_test(test_implicit_bpr),
        cmocka_unit_test(test_validation_early_stop),
        cmocka_unit_test(test_rating_scale),
        cmocka_unit_test(test_lambda_const),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

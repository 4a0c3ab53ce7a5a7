/*
 * ranking_test.c - top-K lists and ranking metrics (apps/ranking.c) against
 * a brute-force reference written here independently: sort every candidate
 * of a user by (score desc, item asc), cut at K, and compute the metrics by
 * their textbook definitions.
 */
#include "apps/apps.h"
#include "apps/mf_common.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ toy data */

typedef struct toy {
    uint32_t rows, cols;
    float *score;      /* rows x cols */
    rt_triplets train; /* excluded pairs */
    rt_triplets test;  /* relevant pairs */
    rt_user_items seen, relevant;
    uint8_t *in_train, *in_test; /* rows x cols, for the reference */
} toy;

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Scores with many ties (few distinct values), some NaN; a few users see
 * almost every item, so they get fewer than K candidates. */
static void toy_make(toy *t, uint32_t rows, uint32_t cols, uint32_t distinct, uint64_t seed)
{
    rt_error err = {0};
    t->rows = rows;
    t->cols = cols;
    t->score = malloc((size_t)rows * cols * sizeof(float));
    rt_triplets_init(&t->train);
    rt_triplets_init(&t->test);
    for (uint32_t u = 0; u < rows; u++)
        for (uint32_t j = 0; j < cols; j++) {
            uint64_t r = next_rand(&seed);
            t->score[(size_t)u * cols + j] = r % 97 == 0 ? NAN : (float)(r % distinct) * 0.25f;
            uint64_t c = next_rand(&seed) % 100;
            if (u % 11 == 3 ? c < 97 : c < 20)
                rt_triplets_push(&t->train, u, j, 1.0f, &err);
            else if (c < 30)
                rt_triplets_push(&t->test, u, j, 1.0f, &err);
        }
    /* A test item also in training counts as not relevant. */
    rt_triplets_push(&t->test, 0, t->train.e[0].col, 1.0f, &err);
    t->in_train = calloc((size_t)rows * cols, 1);
    t->in_test = calloc((size_t)rows * cols, 1);
    for (uint64_t i = 0; i < t->train.n; i++)
        t->in_train[(size_t)t->train.e[i].row * cols + t->train.e[i].col] = 1;
    for (uint64_t i = 0; i < t->test.n; i++)
        t->in_test[(size_t)t->test.e[i].row * cols + t->test.e[i].col] = 1;
    assert_int_equal(rt_user_items_build(&t->train, rows, cols, &t->seen, &err), 0);
    assert_int_equal(rt_user_items_build(&t->test, rows, cols, &t->relevant, &err), 0);
}

static void toy_free(toy *t)
{
    free(t->score);
    free(t->in_train);
    free(t->in_test);
    rt_triplets_free(&t->train);
    rt_triplets_free(&t->test);
    rt_user_items_free(&t->seen);
    rt_user_items_free(&t->relevant);
}

static void toy_scores(const void *ctx, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                       uint32_t n_cols, float *out)
{
    const toy *t = ctx;
    for (uint32_t i = 0; i < n_rows; i++)
        for (uint32_t j = 0; j < n_cols; j++)
            out[(size_t)i * n_cols + j] = t->score[(size_t)rows[i] * t->cols + col0 + j];
}

/* ------------------------------------------------------------ reference */

static int in_train(const toy *t, uint32_t u, uint32_t j)
{
    return t->in_train[(size_t)u * t->cols + j];
}
static int in_test(const toy *t, uint32_t u, uint32_t j)
{
    return t->in_test[(size_t)u * t->cols + j];
}

static const float *sort_scores;
static int by_score_then_item(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sort_scores[x] != sort_scores[y])
        return sort_scores[x] > sort_scores[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* User u's top-k by brute force; returns how many (fewer when the user has
 * fewer candidates). */
static uint32_t ref_topk(const toy *t, uint32_t u, uint32_t k, uint32_t *list)
{
    uint32_t *cand = malloc(t->cols * sizeof(uint32_t)), n = 0;
    for (uint32_t j = 0; j < t->cols; j++)
        if (!in_train(t, u, j) && !isnan(t->score[(size_t)u * t->cols + j]))
            cand[n++] = j;
    sort_scores = t->score + (size_t)u * t->cols;
    qsort(cand, n, sizeof(uint32_t), by_score_then_item);
    n = n < k ? n : k;
    memcpy(list, cand, n * sizeof(uint32_t));
    free(cand);
    return n;
}

static void ref_metrics(const toy *t, uint32_t k, rt_rank_metrics *m)
{
    memset(m, 0, sizeof(*m));
    uint8_t *covered = calloc(t->cols, 1);
    uint32_t *list = malloc(k * sizeof(uint32_t));
    for (uint32_t u = 0; u < t->rows; u++) {
        double rel = 0;
        for (uint32_t j = 0; j < t->cols; j++)
            rel += in_test(t, u, j) && !in_train(t, u, j);
        if (rel == 0)
            continue;
        uint32_t n = ref_topk(t, u, k, list);
        double hits = 0, dcg = 0, idcg = 0, ap = 0;
        for (uint32_t i = 0; i < n; i++) {
            covered[list[i]] = 1;
            if (in_test(t, u, list[i])) {
                hits++;
                dcg += log(2.0) / log(i + 2.0);
                ap += hits / (i + 1);
            }
        }
        for (uint32_t i = 0; i < k && i < rel; i++)
            idcg += log(2.0) / log(i + 2.0);
        m->users++;
        m->relevant += (uint64_t)rel;
        m->precision += hits / k;
        m->recall += hits / rel;
        m->ndcg += dcg / idcg;
        m->map += ap / fmin(rel, k);
    }
    m->precision /= m->users;
    m->recall /= m->users;
    m->ndcg /= m->users;
    m->map /= m->users;
    for (uint32_t j = 0; j < t->cols; j++)
        m->coverage += covered[j];
    m->coverage /= t->cols;
    free(covered);
    free(list);
}

/* ------------------------------------------------------------ tests */

/* One user, items 0..4 scored 5,4,3,2,1; relevant {0, 2}; K = 3: hits at
 * ranks 1 and 3.  Numbers worked out by hand. */
static void test_metrics_by_hand(void **state)
{
    (void)state;
    rt_error err = {0};
    float scores[5] = {5, 4, 3, 2, 1};
    toy t = {.rows = 1, .cols = 5, .score = scores};
    rt_triplets rel, none;
    rt_triplets_init(&rel);
    rt_triplets_init(&none);
    rt_triplets_push(&rel, 0, 0, 1, &err);
    rt_triplets_push(&rel, 0, 2, 1, &err);
    rt_user_items r, seen;
    assert_int_equal(rt_user_items_build(&rel, 1, 5, &r, &err), 0);
    assert_int_equal(rt_user_items_build(&none, 1, 5, &seen, &err), 0);
    rt_scorer s = {.scores = toy_scores, .ctx = &t, .n_rows = 1, .n_cols = 5};
    rt_topk_opts o = {.k = 3, .exclude = &seen};
    rt_rank_metrics m;
    assert_int_equal(rt_rank_evaluate(&s, &r, &o, &m, &err), 0);
    assert_int_equal(m.users, 1);
    assert_true(fabs(m.precision - 2.0 / 3) < 1e-12);
    assert_true(fabs(m.recall - 1.0) < 1e-12);
    assert_true(fabs(m.ndcg - (1 + 0.5) / (1 + 1 / log2(3.0))) < 1e-12); /* 0.919721 */
    assert_true(fabs(m.map - (1.0 + 2.0 / 3) / 2) < 1e-12);
    assert_true(fabs(m.coverage - 3.0 / 5) < 1e-12);
    rt_triplets_free(&rel);
    rt_triplets_free(&none);
    rt_user_items_free(&r);
    rt_user_items_free(&seen);
}

static void check_metrics(uint32_t rows, uint32_t cols, uint32_t k, uint32_t threads,
                          uint32_t batch)
{
    toy t;
    toy_make(&t, rows, cols, 7, rows * 31 + cols);
    rt_error err = {0};
    rt_scorer s = {.scores = toy_scores, .ctx = &t, .n_rows = rows, .n_cols = cols};
    rt_topk_opts o = {.k = k, .threads = threads, .batch = batch, .exclude = &t.seen};
    rt_rank_metrics got, want;
    assert_int_equal(rt_rank_evaluate(&s, &t.relevant, &o, &got, &err), 0);
    ref_metrics(&t, k, &want);
    assert_int_equal(got.users, want.users);
    assert_int_equal(got.relevant, want.relevant);
    assert_true(fabs(got.precision - want.precision) < 1e-12);
    assert_true(fabs(got.recall - want.recall) < 1e-12);
    assert_true(fabs(got.ndcg - want.ndcg) < 1e-12);
    assert_true(fabs(got.map - want.map) < 1e-12);
    assert_true(fabs(got.coverage - want.coverage) < 1e-12);
    toy_free(&t);
}

static void test_metrics_match_reference(void **state)
{
    (void)state;
    check_metrics(23, 40, 5, 1, 0);
    check_metrics(23, 40, 50, 2, 4); /* K above some users' candidates */
}

/* The lists themselves: exactly the reference's, whatever the threads,
 * blocks and tiles (70 users and 5000 items span several of each). */
typedef struct list_check {
    const toy *t;
    uint64_t users_seen;
} list_check;

static int check_sink(void *ctx, const uint32_t *users, uint32_t n, const uint32_t *items,
                      const float *scores, const uint32_t *count, uint32_t k, rt_error *err)
{
    (void)err;
    list_check *c = ctx;
    uint32_t *want = malloc(k * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(users[i], c->users_seen++); /* in user order */
        uint32_t wn = ref_topk(c->t, users[i], k, want);
        assert_int_equal(count[i], wn);
        for (uint32_t j = 0; j < wn; j++) {
            assert_int_equal(items[(size_t)i * k + j], want[j]);
            assert_true(scores[(size_t)i * k + j] ==
                        c->t->score[(size_t)users[i] * c->t->cols + want[j]]);
        }
    }
    free(want);
    return 0;
}

static void test_lists_match_brute_force(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 70, 5000, 50, 9);
    rt_error err = {0};
    rt_scorer s = {.scores = toy_scores, .ctx = &t, .n_rows = 70, .n_cols = 5000};
    uint32_t users[70];
    for (uint32_t u = 0; u < 70; u++)
        users[u] = u;
    static const uint32_t threads[] = {1, 3}, batches[] = {0, 17};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            list_check c = {.t = &t};
            rt_topk_opts o = {
                .k = 32, .threads = threads[a], .batch = batches[b], .exclude = &t.seen};
            assert_int_equal(rt_topk(&s, users, 70, &o, check_sink, &c, &err), 0);
            assert_int_equal(c.users_seen, 70);
        }
    toy_free(&t);
}

static void test_popularity(void **state)
{
    (void)state;
    toy t;
    toy_make(&t, 23, 40, 7, 5);
    float *pop = rt_item_popularity(&t.seen);
    for (uint32_t j = 0; j < t.cols; j++) {
        float n = 0;
        for (uint32_t u = 0; u < t.rows; u++)
            n += in_train(&t, u, j);
        assert_true(pop[j] == n);
    }
    free(pop);
    toy_free(&t);
}

/* Block scores of an MF model equal rt_mf_predict bit for bit, for ranks
 * that leave 1 to 9 chunks per accumulator group unused or used, both
 * kernel paths, any column window. */
static void test_mf_block_scores_equal_predict(void **state)
{
    (void)state;
    static const uint32_t ranks[] = {8, 16, 24, 32, 40, 72};
    uint64_t seed = 3;
    for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++) {
        uint32_t kp = ranks[r], n_rows = 9, n_cols = 45;
        float *W = rt_alloc((size_t)n_rows * kp * sizeof(float));
        float *H = rt_alloc((size_t)n_cols * kp * sizeof(float));
        float bu[9], bi[45], out[9 * 45];
        for (size_t i = 0; i < (size_t)n_rows * kp; i++)
            W[i] = ((float)(next_rand(&seed) % 20001) - 10000.0f) / 7777.0f;
        for (size_t i = 0; i < (size_t)n_cols * kp; i++)
            H[i] = ((float)(next_rand(&seed) % 20001) - 10000.0f) / 3333.0f;
        for (uint32_t i = 0; i < n_rows; i++)
            bu[i] = (float)(next_rand(&seed) % 1000) / 999.0f;
        for (uint32_t j = 0; j < n_cols; j++)
            bi[j] = (float)(next_rand(&seed) % 1000) / 333.0f;
        float *panels = rt_mf_pack_panels(H, n_cols, kp);
        uint32_t rows[9] = {8, 0, 3, 3, 1, 7, 2, 6, 5};
        for (int kernel = 0; kernel < 2; kernel++) {
            if (kernel == RT_MF_KERNEL_AVX2 && rt_mf_kernel_best() != RT_MF_KERNEL_AVX2)
                continue;
            for (int biases = 0; biases < 2; biases++) {
                rt_mf_scores_args a = {.W = W,
                                       .panels = panels,
                                       .bu = biases ? bu : NULL,
                                       .bi = biases ? bi : NULL,
                                       .mu = 3.5f,
                                       .kp = kp,
                                       .kernel = (rt_mf_kernel)kernel};
                static const uint32_t win[][2] = {{0, 45}, {3, 13}, {8, 8}, {41, 4}};
                for (int w = 0; w < 4; w++) {
                    uint32_t c0 = win[w][0], nc = win[w][1];
                    rt_mf_scores_block(&a, rows, n_rows, c0, nc, out);
                    for (uint32_t i = 0; i < n_rows; i++)
                        for (uint32_t j = 0; j < nc; j++) {
                            uint32_t u = rows[i], c = c0 + j;
                            float want =
                                rt_mf_predict(W + (size_t)u * kp, H + (size_t)c * kp, kp, 3.5f,
                                              biases ? bu[u] : 0.0f, biases ? bi[c] : 0.0f);
                            assert_memory_equal(&out[i * nc + j], &want, sizeof(float));
                        }
                }
            }
        }
        rt_free(panels);
        rt_free(W);
        rt_free(H);
    }
}

/* A saved model written here (k = 5, biases, items 3j and 3j+1 sharing one
 * vector and bias, so exact ties), opened through rt_model_open: rt_topk
 * through the model_scores hook equals a brute force over model_predict,
 * ties by item id. */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void test_saved_model_topk_equals_brute_force(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-ranking-XXXXXX", path[4200];
    assert_non_null(mkdtemp(dir));
    enum { USERS = 50, ITEMS = 90, K = 5, TOP = 12 };
    float W[USERS * K], H[ITEMS * K], bu[USERS], bi[ITEMS];
    uint64_t seed = 11;
    for (int i = 0; i < USERS * K; i++)
        W[i] = (float)(next_rand(&seed) % 2001) / 1000.0f - 1.0f;
    for (int j = 0; j < ITEMS; j++) {
        int src = j % 3 == 1 ? j - 1 : j;
        for (int d = 0; d < K; d++)
            H[j * K + d] =
                src == j ? (float)(next_rand(&seed) % 2001) / 1000.0f - 1.0f : H[src * K + d];
        bi[j] = src == j ? (float)(next_rand(&seed) % 100) / 100.0f : bi[src];
    }
    for (int i = 0; i < USERS; i++)
        bu[i] = (float)(next_rand(&seed) % 100) / 100.0f;
    rt_error err = {0};
    static const char *const names[] = {"W.npy", "H.npy", "row_bias.npy", "col_bias.npy"};
    const float *mats[] = {W, H, bu, bi};
    const uint64_t n[] = {USERS, ITEMS, USERS, ITEMS}, c[] = {K, K, 1, 1};
    for (int f = 0; f < 4; f++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
        assert_int_equal(rt_npy_write_f32(path, mats[f], n[f], c[f], c[f], &err), 0);
    }
    char ids[2][2000] = {"", ""};
    for (int i = 0; i < ITEMS; i++) {
        char line[32];
        snprintf(line, sizeof(line), "u%d\n", i);
        if (i < USERS)
            strcat(ids[0], line);
        snprintf(line, sizeof(line), "item-%d\n", 1000 - i);
        strcat(ids[1], line);
    }
    snprintf(path, sizeof(path), "%s/rows.ids", dir);
    write_text(path, ids[0]);
    snprintf(path, sizeof(path), "%s/cols.ids", dir);
    write_text(path, ids[1]);
    snprintf(path, sizeof(path), "%s/model.json", dir);
    write_text(path, "{\"app\": \"sgd-mf\", \"k\": 5, \"mu\": 3.25, \"biases\": true}\n");

    rt_model m;
    assert_int_equal(rt_model_open(dir, &m, &err), 0);
    toy t = {.rows = USERS, .cols = ITEMS};
    t.score = malloc(sizeof(float) * USERS * ITEMS);
    for (uint32_t u = 0; u < USERS; u++)
        for (uint32_t j = 0; j < ITEMS; j++)
            t.score[u * ITEMS + j] = m.app->model_predict(m.impl, u, j);
    rt_triplets none;
    rt_triplets_init(&none);
    for (uint32_t u = 0; u < USERS; u++) /* a few training items per user */
        for (uint32_t j = u % 7; j < ITEMS; j += 11)
            rt_triplets_push(&none, u, j, 1.0f, &err);
    t.train = none;
    t.in_train = calloc(USERS * ITEMS, 1);
    for (uint64_t i = 0; i < none.n; i++)
        t.in_train[none.e[i].row * ITEMS + none.e[i].col] = 1;
    assert_int_equal(rt_user_items_build(&none, USERS, ITEMS, &t.seen, &err), 0);
    rt_scorer s = rt_model_scorer(&m);
    uint32_t users[USERS];
    list_check chk = {.t = &t, .users_seen = 0};
    rt_topk_opts o = {.k = TOP, .threads = 2, .batch = 7, .exclude = &t.seen};
    for (uint32_t u = 0; u < USERS; u++)
        users[u] = u;
    assert_int_equal(rt_topk(&s, users, USERS, &o, check_sink, &chk, &err), 0);
    assert_int_equal(chk.users_seen, USERS);
    rt_model_close(&m);
    free(t.score);
    free(t.in_train);
    rt_triplets_free(&none);
    rt_user_items_free(&t.seen);
    static const char *const all[] = {"W.npy",    "H.npy",    "row_bias.npy", "col_bias.npy",
                                      "rows.ids", "cols.ids", "model.json"};
    for (int f = 0; f < 7; f++) {
        snprintf(path, sizeof(path), "%s/%s", dir, all[f]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_by_hand),
        cmocka_unit_test(test_metrics_match_reference),
        cmocka_unit_test(test_lists_match_brute_force),
        cmocka_unit_test(test_popularity),
        cmocka_unit_test(test_mf_block_scores_equal_predict),
        cmocka_unit_test(test_saved_model_topk_equals_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * ranking.c - top-K lists of items per user and the ranking metrics of
 * those lists (see apps.h).
 *
 * rt_topk scores a block of users against every item in tiles (a few dozen
 * users x a few thousand items, so a tile stays in L2), keeps a min-heap of
 * the K best per user, and hands each block's lists to a sink in user order.
 * Threads share a block by taking tiles of users; a user's list depends only
 * on its scores, so the result is the same for any thread count.  Memory is
 * bounded by the block: tiles x threads and block x K entries, never
 * users x items.
 */
#include "apps/app_common.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    TILE_USERS = 32,   /* users a thread scores together */
    TILE_ITEMS = 2048, /* items per scoring call: 32 x 2048 floats = 256 KiB */
    DEFAULT_BATCH = 4096,
};

/* ------------------------------------------------------------ user items */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void rt_user_items_free(rt_user_items *u)
{
    free(u->off);
    free(u->items);
    memset(u, 0, sizeof(*u));
}

int rt_user_items_build(const rt_triplets *t, uint64_t n_rows, uint64_t n_cols, rt_user_items *out,
                        rt_error *err)
{
    memset(out, 0, sizeof(*out));
    out->n_rows = n_rows;
    out->n_cols = n_cols;
    out->off = calloc(n_rows + 1, sizeof(uint64_t));
    out->items = malloc(t->n * sizeof(uint32_t) + 1);
    uint64_t *fill = calloc(n_rows + 1, sizeof(uint64_t));
    if (!out->off || !out->items || !fill) {
        free(fill);
        rt_user_items_free(out);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %llu user items",
                       (unsigned long long)t->n);
    }
    for (uint64_t i = 0; i < t->n; i++)
        out->off[t->e[i].row + 1]++;
    for (uint64_t r = 0; r < n_rows; r++)
        out->off[r + 1] += out->off[r];
    for (uint64_t i = 0; i < t->n; i++)
        out->items[out->off[t->e[i].row] + fill[t->e[i].row]++] = t->e[i].col;
    /* Sort each row and squeeze out duplicates (a pair rated twice). */
    uint64_t w = 0;
    for (uint64_t r = 0; r < n_rows; r++) {
        uint64_t a = out->off[r], b = out->off[r + 1];
        qsort(out->items + a, b - a, sizeof(uint32_t), cmp_u32);
        out->off[r] = w;
        for (uint64_t i = a; i < b; i++)
            if (i == a || out->items[i] != out->items[i - 1])
                out->items[w++] = out->items[i];
    }
    out->off[n_rows] = w;
    free(fill);
    return 0;
}

int rt_user_items_read(const char *path, rt_rating_format fmt, rt_idmap *rows, rt_idmap *cols,
                       float min_value, rt_user_items *out, uint64_t *unknown, rt_error *err)
{
    rt_triplets t;
    rt_triplets_init(&t);
    rt_ratings_stats st = {0};
    int rc = rt_read_ratings(path, fmt, rows, cols, 0, &t, &st, err);
    if (rc == 0) {
        uint64_t kept = 0;
        for (uint64_t i = 0; i < t.n; i++)
            if (t.e[i].val >= min_value)
                t.e[kept++] = t.e[i];
        t.n = kept;
        rc = rt_user_items_build(&t, rows->n, cols->n, out, err);
    }
    if (unknown)
        *unknown = st.dropped;
    rt_triplets_free(&t);
    return rc;
}

/* The training entries of every shard of an open plan, by global dense ids. */
static int plan_train_pairs(const rt_plan *plan, rt_triplets *t, rt_error *err)
{
    if (rt_triplets_reserve(t, plan->nnz_train, err))
        return -1;
    for (uint32_t w = 0; w < plan->workers; w++) {
        rt_shard sh;
        if (rt_shard_open(plan, w, &sh, err))
            return -1;
        for (uint32_t b = 0; b < plan->blocks; b++) {
            const uint32_t *col_ids = plan->block_col_ids + plan->block_col_offset[b];
            for (uint64_t i = sh.train_off[b]; i < sh.train_off[b + 1]; i++)
                if (rt_triplets_push(t, sh.row_ids[sh.train[i].row], col_ids[sh.train[i].col],
                                     sh.train[i].val, err)) {
                    rt_shard_close(&sh);
                    return -1;
                }
        }
        rt_shard_close(&sh);
    }
    return 0;
}

/* Why the training items cannot come from the plan, and what to do. */
static int no_plan(rt_error *err, const char *model_path, const char *why)
{
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s: %s; give the training ratings with --exclude FILE, or --no-exclude to "
                   "rank every item",
                   model_path, why);
}

int rt_model_plan_items(const char *dir, const rt_model *m, rt_user_items *out, rt_error *err)
{
    char path[4096], why[4096 + 200];
    memset(out, 0, sizeof(*out));
    json_t *meta = rt_app_model_json(dir, path, err);
    if (!meta)
        return -1;
    const char *plan_dir = json_string_value(json_object_get(meta, "plan"));
    const char *plan_id = json_string_value(json_object_get(meta, "plan_id"));
    rt_plan plan;
    rt_error perr = {0};
    int rc = -1;
    if (!plan_dir || !plan_id) {
        rc = no_plan(err, path, "names no plan to read the training items from");
        json_decref(meta);
        return rc;
    }
    if (rt_plan_open(plan_dir, &plan, &perr)) {
        /* rt_json_text kept a name that is not UTF-8 with U+FFFD for its bad
         * bytes: no file has that name, and the user should know why. */
        if (strstr(plan_dir, "\xef\xbf\xbd"))
            snprintf(why, sizeof(why),
                     "its plan's path, recorded as %s, had bytes that are not UTF-8 (JSON keeps "
                     "U+FFFD for them), so the plan cannot be found by it",
                     plan_dir);
        else
            snprintf(why, sizeof(why), "its plan %s cannot be opened (%s)", plan_dir, perr.msg);
        rc = no_plan(err, path, why);
        json_decref(meta);
        return rc;
    }
    rt_idmap *rows, *cols;
    m->app->model_ids(m->impl, &rows, &cols);
    char id[32];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)plan.plan_id);
    if (strcmp(id, plan_id) || plan.n_rows != rows->n || plan.n_cols != cols->n) {
        snprintf(why, sizeof(why), "the plan at %s is not the one it was trained on (plan id %s)",
                 plan_dir, plan_id);
        rc = no_plan(err, path, why);
    } else {
        rt_triplets t;
        rt_triplets_init(&t);
        rc = plan_train_pairs(&plan, &t, err) ||
                     rt_user_items_build(&t, plan.n_rows, plan.n_cols, out, err)
                 ? -1
                 : 0;
        rt_triplets_free(&t);
    }
    rt_plan_close(&plan);
    json_decref(meta);
    return rc;
}

int rt_user_items_exclusions(const char *dir, const rt_model *m, const char *file, int none,
                             rt_user_items *out, const char **source, rt_error *err)
{
    rt_idmap *rows, *cols;
    m->app->model_ids(m->impl, &rows, &cols);
    memset(out, 0, sizeof(*out));
    if (none && file)
        return rt_fail(err, RT_EXIT_INPUT, "--exclude and --no-exclude contradict each other");
    if (none) {
        *source = "none";
        rt_triplets t = {0};
        return rt_user_items_build(&t, rows->n, cols->n, out, err);
    }
    if (file) {
        *source = file;
        return rt_user_items_read(file, RT_FMT_AUTO, rows, cols, -INFINITY, out, NULL, err);
    }
    *source = "plan";
    return rt_model_plan_items(dir, m, out, err);
}

/* ------------------------------------------------------------ scorers */

static void model_scores(const void *ctx, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                         uint32_t n_cols, float *out)
{
    const rt_model *m = ctx;
    m->app->model_scores(m->impl, rows, n_rows, col0, n_cols, out);
}

rt_scorer rt_model_scorer(const rt_model *m)
{
    rt_idmap *rows, *cols;
    m->app->model_ids(m->impl, &rows, &cols);
    return (rt_scorer){.scores = model_scores, .ctx = m, .n_rows = rows->n, .n_cols = cols->n};
}

static void popularity_scores(const void *ctx, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                              uint32_t n_cols, float *out)
{
    (void)rows;
    const float *pop = ctx;
    for (uint32_t i = 0; i < n_rows; i++)
        memcpy(out + (size_t)i * n_cols, pop + col0, n_cols * sizeof(float));
}

rt_scorer rt_popularity_scorer(const float *pop, uint64_t n_rows, uint64_t n_cols)
{
    return (rt_scorer){.scores = popularity_scores, .ctx = pop, .n_rows = n_rows, .n_cols = n_cols};
}

float *rt_item_popularity(const rt_user_items *items)
{
    float *pop = calloc(items->n_cols + 1, sizeof(float));
    if (pop)
        for (uint64_t i = 0; i < items->off[items->n_rows]; i++)
            pop[items->items[i]] += 1.0f;
    return pop;
}

/* ------------------------------------------------------------ top-K heaps */

/* a ranks below b: lower score, or the same score and a larger item id. */
static inline int worse(float sa, uint32_t ia, float sb, uint32_t ib)
{
    return sa < sb || (sa == sb && ia > ib);
}

/* A min-heap (the worst kept entry at the root) of at most k entries. */
typedef struct heap {
    float *score;
    uint32_t *item;
    uint32_t n, k;
} heap;

static void heap_sift_down(heap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && worse(h->score[l], h->item[l], h->score[m], h->item[m]))
            m = l;
        if (r < h->n && worse(h->score[r], h->item[r], h->score[m], h->item[m]))
            m = r;
        if (m == i)
            return;
        float s = h->score[i];
        uint32_t it = h->item[i];
        h->score[i] = h->score[m];
        h->item[i] = h->item[m];
        h->score[m] = s;
        h->item[m] = it;
        i = m;
    }
}

static inline void heap_offer(heap *h, float s, uint32_t item)
{
    if (h->n < h->k) {
        uint32_t i = h->n++;
        while (i > 0) { /* sift up */
            uint32_t p = (i - 1) / 2;
            if (!worse(s, item, h->score[p], h->item[p]))
                break;
            h->score[i] = h->score[p];
            h->item[i] = h->item[p];
            i = p;
        }
        h->score[i] = s;
        h->item[i] = item;
    } else if (worse(h->score[0], h->item[0], s, item)) {
        h->score[0] = s;
        h->item[0] = item;
        heap_sift_down(h, 0);
    }
}

/* Empty the heap into best-first order in place. */
static void heap_sort_best_first(heap *h)
{
    uint32_t n = h->n;
    while (h->n > 1) {
        uint32_t last = --h->n;
        float s = h->score[0];
        uint32_t it = h->item[0];
        h->score[0] = h->score[last];
        h->item[0] = h->item[last];
        h->score[last] = s;
        h->item[last] = it;
        heap_sift_down(h, 0);
    }
    h->n = n;
}

/* ------------------------------------------------------------ rt_topk */

typedef struct topk_block {
    const rt_scorer *s;
    const rt_topk_opts *opt;
    const uint32_t *users; /* this block's users */
    uint32_t n;
    uint32_t *items; /* n x k */
    float *scores;   /* n x k */
    uint32_t *count; /* n */
    atomic_uint next_tile;
} topk_block;

/* Mark the user's excluded items among [col0, col0 + n) with NaN. */
static void mark_excluded(const rt_user_items *ex, uint32_t user, uint32_t col0, uint32_t n,
                          float *row)
{
    if (!ex || user >= ex->n_rows)
        return;
    const uint32_t *a = ex->items + ex->off[user], *b = ex->items + ex->off[user + 1];
    while (a < b) { /* lower bound of col0 */
        const uint32_t *mid = a + (b - a) / 2;
        if (*mid < col0)
            a = mid + 1;
        else
            b = mid;
    }
    for (b = ex->items + ex->off[user + 1]; a < b && *a < col0 + n; a++)
        row[*a - col0] = NAN;
}

/* Score one tile of users against every item and keep their k best. */
static void topk_tile(topk_block *blk, uint32_t first, uint32_t n, float *buf)
{
    const rt_scorer *s = blk->s;
    uint32_t k = blk->opt->k;
    heap h[TILE_USERS];
    for (uint32_t i = 0; i < n; i++)
        h[i] = (heap){.score = blk->scores + (size_t)(first + i) * k,
                      .item = blk->items + (size_t)(first + i) * k,
                      .k = k};
    for (uint64_t c0 = 0; c0 < s->n_cols; c0 += TILE_ITEMS) {
        uint32_t nc = (uint32_t)(s->n_cols - c0 < TILE_ITEMS ? s->n_cols - c0 : TILE_ITEMS);
        s->scores(s->ctx, blk->users + first, n, (uint32_t)c0, nc, buf);
        for (uint32_t i = 0; i < n; i++) {
            float *row = buf + (size_t)i * nc;
            mark_excluded(blk->opt->exclude, blk->users[first + i], (uint32_t)c0, nc, row);
            for (uint32_t j = 0; j < nc; j++)
                if (row[j] == row[j]) /* not NaN */
                    heap_offer(&h[i], row[j], (uint32_t)c0 + j);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        heap_sort_best_first(&h[i]);
        blk->count[first + i] = h[i].n;
    }
}

static void *topk_worker(void *arg)
{
    topk_block *blk = arg;
    float *buf = malloc((size_t)TILE_USERS * TILE_ITEMS * sizeof(float));
    if (!buf)
        return arg; /* non-NULL: failed */
    uint32_t n_tiles = (blk->n + TILE_USERS - 1) / TILE_USERS, t;
    while ((t = atomic_fetch_add(&blk->next_tile, 1)) < n_tiles) {
        uint32_t first = t * TILE_USERS;
        topk_tile(blk, first, blk->n - first < TILE_USERS ? blk->n - first : TILE_USERS, buf);
    }
    free(buf);
    return NULL;
}

/* One block of users on `threads` threads (the caller is one of them). */
static int topk_run_block(topk_block *blk, uint32_t threads, rt_error *err)
{
    pthread_t tid[64];
    uint32_t started = 0;
    int failed = 0;
    atomic_store(&blk->next_tile, 0);
    for (; started + 1 < threads && started < 64; started++) {
        int e = pthread_create(&tid[started], NULL, topk_worker, blk);
        if (e) {
            rt_warn("recommend: cannot start thread %u (%s); going on with fewer", started + 1,
                    strerror(e));
            break;
        }
    }
    if (topk_worker(blk))
        failed = 1;
    for (uint32_t i = 0; i < started; i++) {
        void *ret;
        int e = pthread_join(tid[i], &ret);
        if (e || ret)
            failed = 1;
    }
    return failed ? rt_fail(err, RT_EXIT_RUNTIME, "out of memory while ranking items") : 0;
}

int rt_topk(const rt_scorer *s, const uint32_t *users, uint64_t n_users, const rt_topk_opts *opt,
            rt_topk_sink sink, void *ctx, rt_error *err)
{
    uint32_t k = opt->k, threads = opt->threads ? opt->threads : 1;
    uint32_t batch = opt->batch ? opt->batch : DEFAULT_BATCH;
    if (k == 0)
        return rt_fail(err, RT_EXIT_INPUT, "K must be at least 1");
    if (threads > 64)
        threads = 64;
    topk_block blk = {.s = s, .opt = opt};
    blk.items = malloc((size_t)batch * k * sizeof(uint32_t));
    blk.scores = malloc((size_t)batch * k * sizeof(float));
    blk.count = malloc((size_t)batch * sizeof(uint32_t));
    int rc = 0;
    if (!blk.items || !blk.scores || !blk.count)
        rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory for a block of %u users x K = %u", batch,
                     k);
    for (uint64_t u0 = 0; rc == 0 && u0 < n_users; u0 += batch) {
        blk.users = users + u0;
        blk.n = (uint32_t)(n_users - u0 < batch ? n_users - u0 : batch);
        rc = topk_run_block(&blk, threads, err);
        if (rc == 0)
            rc = sink(ctx, blk.users, blk.n, blk.items, blk.scores, blk.count, k, err) ? -1 : 0;
        if (opt->progress)
            rt_progress_set(opt->progress, u0 + blk.n);
    }
    free(blk.items);
    free(blk.scores);
    free(blk.count);
    return rc;
}

/* ------------------------------------------------------------ metrics */

typedef struct metric_sums {
    const rt_user_items *relevant;
    const rt_user_items *exclude;
    uint8_t *recommended; /* n_cols flags, for the coverage, or NULL */
    rt_rank_metrics *m;
} metric_sums;

static int contains(const uint32_t *a, uint64_t n, uint32_t x)
{
    const uint32_t *p = bsearch(&x, a, n, sizeof(uint32_t), cmp_u32);
    return p != NULL;
}

/* The user's relevant items that can be recommended (not excluded). */
static uint64_t relevant_count(const metric_sums *ms, uint32_t u)
{
    const rt_user_items *r = ms->relevant, *ex = ms->exclude;
    uint64_t n = 0;
    for (uint64_t i = r->off[u]; i < r->off[u + 1]; i++)
        if (!ex || u >= ex->n_rows ||
            !contains(ex->items + ex->off[u], rt_user_items_count(ex, u), r->items[i]))
            n++;
    return n;
}

static int metric_sink(void *ctx, const uint32_t *users, uint32_t n, const uint32_t *items,
                       const float *scores, const uint32_t *count, uint32_t k, rt_error *err)
{
    (void)scores;
    (void)err;
    metric_sums *ms = ctx;
    const rt_user_items *r = ms->relevant;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t u = users[i];
        uint64_t n_rel = relevant_count(ms, u);
        double hits = 0, dcg = 0, idcg = 0, ap = 0;
        for (uint32_t j = 0; j < count[i]; j++) {
            uint32_t item = items[(size_t)i * k + j];
            if (ms->recommended)
                ms->recommended[item] = 1;
            if (contains(r->items + r->off[u], rt_user_items_count(r, u), item)) {
                hits += 1;
                dcg += 1.0 / log2(j + 2.0);
                ap += hits / (j + 1.0);
            }
        }
        for (uint64_t j = 0; j < n_rel && j < k; j++)
            idcg += 1.0 / log2(j + 2.0);
        ms->m->precision += hits / k;
        ms->m->recall += hits / (double)n_rel;
        ms->m->ndcg += dcg / idcg;
        ms->m->map += ap / (double)(n_rel < k ? n_rel : k);
        ms->m->relevant += n_rel;
    }
    return 0;
}

uint32_t *rt_rank_users(const rt_user_items *relevant, const rt_user_items *exclude, uint64_t *n)
{
    metric_sums ms = {.relevant = relevant, .exclude = exclude};
    uint32_t *users = malloc((relevant->n_rows + 1) * sizeof(uint32_t));
    *n = 0;
    for (uint32_t u = 0; users && u < relevant->n_rows; u++)
        if (relevant_count(&ms, u) > 0)
            users[(*n)++] = u;
    return users;
}

int rt_rank_metrics_sum(const rt_scorer *s, const rt_user_items *relevant, const uint32_t *users,
                        uint64_t n_users, const rt_topk_opts *opt, uint8_t *recommended,
                        rt_rank_metrics *sums, rt_error *err)
{
    metric_sums ms = {
        .relevant = relevant, .exclude = opt->exclude, .recommended = recommended, .m = sums};
    if (rt_topk(s, users, n_users, opt, metric_sink, &ms, err))
        return -1;
    sums->users += n_users;
    return 0;
}

int rt_rank_evaluate(const rt_scorer *s, const rt_user_items *relevant, const rt_topk_opts *opt,
                     rt_rank_metrics *out, rt_error *err)
{
    memset(out, 0, sizeof(*out));
    out->k = opt->k;
    uint64_t n = 0;
    uint32_t *users = rt_rank_users(relevant, opt->exclude, &n);
    uint8_t *recommended = calloc(s->n_cols + 1, 1);
    int rc = -1;
    if (!users || !recommended)
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    else if ((rc = rt_rank_metrics_sum(s, relevant, users, n, opt, recommended, out, err)) == 0) {
        double d = n ? (double)n : 1.0;
        out->precision /= d;
        out->recall /= d;
        out->ndcg /= d;
        out->map /= d;
        uint64_t covered = 0;
        for (uint64_t j = 0; j < s->n_cols; j++)
            covered += recommended[j];
        out->coverage = s->n_cols ? (double)covered / (double)s->n_cols : 0.0;
    }
    free(users);
    free(recommended);
    return rc;
}

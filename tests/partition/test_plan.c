/* test_plan.c - rt_plan_write -> rt_plan_open / rt_shard_open round trips,
 * the train/test split, determinism and the reader side's error checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>

#include "partition/partition.h"
#include "tests/common/scratch.h"

/* A small random problem with string ids: n entries over about rows x cols,
 * skewed so balancing has work to do.  LDA values are counts 1..5. */
typedef struct problem {
    rt_idmap rows, cols, test_rows;
    rt_triplets train, test;
} problem;

static void problem_make(problem *p, rt_plan_app app, uint32_t rows, uint32_t cols, uint64_t n,
                         int heldout, uint64_t seed)
{
    rt_error err;
    memset(p, 0, sizeof(*p));
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0);
    char s[64];
    for (uint64_t k = 0; k < n; k++) {
        uint64_t r = rt_rng_below(&rng, rows), c = rt_rng_below(&rng, cols);
        r = r * r / rows; /* skew: low ids are heavy */
        c = c * c / cols;
        uint32_t ri, ci;
        snprintf(s, sizeof(s), "user-%llu", (unsigned long long)r * 7);
        assert_int_equal(rt_idmap_intern(&p->rows, s, strlen(s), &ri, &err), 0);
        snprintf(s, sizeof(s), "i%llu", (unsigned long long)c);
        assert_int_equal(rt_idmap_intern(&p->cols, s, strlen(s), &ci, &err), 0);
        float v = app == RT_PLAN_LDA ? (float)(1 + rt_rng_below(&rng, 5))
                                     : (float)rt_rng_uniform(&rng) * 5.0f;
        assert_int_equal(rt_triplets_push(&p->train, ri, ci, v, &err), 0);
    }
    /* Test entries: some over training rows, or (heldout) over new documents. */
    for (uint64_t k = 0; k < n / 5; k++) {
        uint32_t ri, ci = (uint32_t)rt_rng_below(&rng, p->cols.n);
        if (heldout) {
            snprintf(s, sizeof(s), "doc-%llu", (unsigned long long)rt_rng_below(&rng, 40));
            assert_int_equal(rt_idmap_intern(&p->test_rows, s, strlen(s), &ri, &err), 0);
        } else {
            ri = (uint32_t)rt_rng_below(&rng, p->rows.n);
        }
        float v = app == RT_PLAN_LDA ? (float)(1 + rt_rng_below(&rng, 3)) : -1.5f;
        assert_int_equal(rt_triplets_push(&p->test, ri, ci, v, &err), 0);
    }
}

static void problem_free(problem *p)
{
    rt_idmap_free(&p->rows), rt_idmap_free(&p->cols), rt_idmap_free(&p->test_rows);
    rt_triplets_free(&p->train), rt_triplets_free(&p->test);
}

static int write_plan(const problem *p, rt_plan_app app, int heldout, const char *dir,
                      uint32_t nodes, uint32_t threads, uint32_t c, int force, rt_error *err)
{
    rt_plan_input in = {.app = app,
                        .train = &p->train,
                        .rows = &p->rows,
                        .cols = &p->cols,
                        .test = &p->test,
                        .test_rows = heldout ? &p->test_rows : NULL};
    rt_plan_options opt = {.nodes = nodes,
                           .threads = threads,
                           .pipeline = c,
                           .seed = 7,
                           .force = force,
                           .command_line = "test"};
    return rt_plan_write(dir, &in, &opt, NULL, err);
}

/* "row\tcol\tval" strings of entries, sorted: compare as multisets. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *fmt_entry(const char *r, const char *c, float v)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s\t%s\t%.9g", r, c, (double)v);
    return strdup(buf);
}

static void free_strs(char **s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

/* Open the plan, read every shard and map every entry back to original ids. */
static void check_roundtrip(const problem *p, rt_plan_app app, int heldout, const char *dir)
{
    rt_error err;
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    assert_int_equal(plan.app, app);
    assert_int_equal(plan.n_rows, p->rows.n);
    assert_int_equal(plan.n_cols, p->cols.n);
    assert_int_equal(plan.nnz_train, p->train.n);
    assert_int_equal(plan.nnz_test, p->test.n);
    char **rid, **cid, **tid = NULL;
    uint64_t nr, nc, nt = 0;
    assert_int_equal(rt_plan_read_ids(&plan, "rows", &rid, &nr, &err), 0);
    assert_int_equal(rt_plan_read_ids(&plan, "cols", &cid, &nc, &err), 0);
    if (heldout) {
        assert_int_equal(rt_plan_read_ids(&plan, "test_rows", &tid, &nt, &err), 0);
        assert_int_equal(nt, p->test_rows.n);
    }
    for (uint64_t i = 0; i < nr; i++) /* dense ids keep their original ids */
        assert_string_equal(rid[i], rt_idmap_str(&p->rows, i));
    char **got = calloc(p->train.n + 1, sizeof(char *)),
         **want = calloc(p->train.n + 1, sizeof(char *));
    char **got_t = calloc(p->test.n + 1, sizeof(char *)),
         **want_t = calloc(p->test.n + 1, sizeof(char *));
    uint64_t k = 0, kt = 0, heldout_seen = 0;
    for (uint32_t w = 0; w < plan.workers; w++) {
        rt_shard sh;
        assert_int_equal(rt_shard_open(&plan, w, &sh, &err), 0);
        assert_int_equal(sh.n_rows, rt_plan_worker_rows(&plan, w));
        assert_true((sh.test_row_ids != NULL) == heldout);
        heldout_seen += sh.n_test_rows;
        for (uint32_t b = 0; b < plan.blocks; b++) {
            const uint32_t *cols = plan.block_col_ids + plan.block_col_offset[b];
            for (uint64_t i = sh.train_off[b]; i < sh.train_off[b + 1]; i++) {
                const rt_entry *e = &sh.train[i];
                if (i > sh.train_off[b]) { /* sorted: MF (row, col), LDA (col, row) */
                    const rt_entry *q = e - 1;
                    if (app == RT_PLAN_MF)
                        assert_true(q->row < e->row || (q->row == e->row && q->col <= e->col));
                    else
                        assert_true(q->col < e->col || (q->col == e->col && q->row <= e->row));
                }
                got[k++] = fmt_entry(rid[sh.row_ids[e->row]], cid[cols[e->col]], e->val);
            }
            for (uint64_t i = sh.test_off[b]; i < sh.test_off[b + 1]; i++) {
                const rt_entry *e = &sh.test[i];
                const char *r = heldout ? tid[sh.test_row_ids[e->row]] : rid[sh.row_ids[e->row]];
                got_t[kt++] = fmt_entry(r, cid[cols[e->col]], e->val);
            }
        }
        rt_shard_close(&sh);
    }
    assert_int_equal(k, p->train.n);
    assert_int_equal(kt, p->test.n);
    if (heldout)
        assert_int_equal(heldout_seen, p->test_rows.n);
    for (uint64_t i = 0; i < p->train.n; i++) {
        const rt_entry *e = &p->train.e[i];
        want[i] = fmt_entry(rt_idmap_str(&p->rows, e->row), rt_idmap_str(&p->cols, e->col), e->val);
    }
    for (uint64_t i = 0; i < p->test.n; i++) {
        const rt_entry *e = &p->test.e[i];
        const rt_idmap *rm = heldout ? &p->test_rows : &p->rows;
        want_t[i] = fmt_entry(rt_idmap_str(rm, e->row), rt_idmap_str(&p->cols, e->col), e->val);
    }
    qsort(got, k, sizeof(char *), cmp_str);
    qsort(want, k, sizeof(char *), cmp_str);
    qsort(got_t, kt, sizeof(char *), cmp_str);
    qsort(want_t, kt, sizeof(char *), cmp_str);
    for (uint64_t i = 0; i < k; i++)
        assert_string_equal(got[i], want[i]);
    for (uint64_t i = 0; i < kt; i++)
        assert_string_equal(got_t[i], want_t[i]);
    free_strs(got, k), free_strs(want, k), free_strs(got_t, kt), free_strs(want_t, kt);
    free(rid), free(cid), free(tid);
    rt_plan_close(&plan);
}

static void test_roundtrip_mf(void **state)
{
    (void)state;
    static const uint32_t shapes[][3] = {{1, 1, 1}, {2, 2, 2}, {3, 1, 2}, {1, 3, 3}};
    problem p;
    problem_make(&p, RT_PLAN_MF, 300, 120, 5000, 0, 1);
    for (size_t i = 0; i < 4; i++) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/mf%zu", scratch_dir, i);
        rt_error err;
        assert_int_equal(
            write_plan(&p, RT_PLAN_MF, 0, dir, shapes[i][0], shapes[i][1], shapes[i][2], 0, &err),
            0);
        check_roundtrip(&p, RT_PLAN_MF, 0, dir);
    }
    problem_free(&p);
}

static void test_roundtrip_lda_heldout(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_LDA, 200, 500, 6000, 1, 2);
    const char *dir = scratch_path("lda");
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_LDA, 1, dir, 2, 2, 2, 0, &err), 0);
    check_roundtrip(&p, RT_PLAN_LDA, 1, dir);
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    uint64_t tokens = 0;
    for (uint64_t i = 0; i < p.train.n; i++)
        tokens += (uint64_t)p.train.e[i].val;
    assert_int_equal(plan.tokens_train, tokens);
    rt_plan_close(&plan);
    problem_free(&p);
}

/* Bad LDA counts are refused. */
static void test_lda_bad_count(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_LDA, 50, 50, 500, 0, 3);
    p.train.e[17].val = 0.5f;
    const char *dir = scratch_path("ldabad");
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_LDA, 0, dir, 1, 2, 2, 0, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "train entry 17"));
    assert_int_equal(access(dir, F_OK), -1);
    problem_free(&p);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc(*len + 1);
    assert_int_equal(fread(b, 1, *len, fp), *len);
    fclose(fp);
    return b;
}

/* Same input and options: byte-identical plans; an existing dir needs force. */
static void test_deterministic_and_force(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_MF, 100, 80, 2000, 0, 4);
    const char *a = scratch_path("det-a");
    const char *b = scratch_path("det-b");
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, a, 2, 1, 2, 0, &err), 0);
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, b, 2, 1, 2, 0, &err), 0);
    static const char *files[] = {"plan.json",       "layout.bin", "shard-00000.bin",
                                  "shard-00001.bin", "rows.ids",   "cols.ids"};
    for (size_t i = 0; i < 6; i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof(pa), "%s/%s", a, files[i]);
        snprintf(pb, sizeof(pb), "%s/%s", b, files[i]);
        size_t la, lb;
        char *x = slurp(pa, &la), *y = slurp(pb, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(x, y, la);
        free(x), free(y);
    }
    /* Refuse to overwrite without force; replace with force. */
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, a, 1, 1, 2, 0, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "already exists"));
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, a, 1, 1, 2, 1, &err), 0);
    rt_plan plan;
    assert_int_equal(rt_plan_open(a, &plan, &err), 0);
    assert_int_equal(plan.workers, 1);
    rt_plan_close(&plan);
    /* force never wipes a directory that is not a plan */
    char f[600];
    const char *other = scratch_path("notaplan");
    mkdir(other, 0755);
    snprintf(f, sizeof(f), "%s/precious", other);
    fclose(fopen(f, "w"));
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, other, 1, 1, 2, 1, &err), -1);
    assert_int_equal(access(f, F_OK), 0);
    problem_free(&p);
}

/* rt_shard_release keeps the bytes readable whether the shard is mapped
 * (read again from the file) or read into memory (its pages kept: an
 * anonymous page dropped would read back as zeros, and lda re-reads the
 * shard it released: simulate --calibrate then sampled an empty corpus). */
static void test_release_keeps_bytes(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_MF, 300, 120, 5000, 0, 1);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/release", scratch_dir);
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, dir, 1, 1, 1, 0, &err), 0);
    for (int mapped = 0; mapped < 2; mapped++) {
        rt_plan plan;
        assert_int_equal(
            mapped ? rt_plan_open_mapped(dir, &plan, &err) : rt_plan_open(dir, &plan, &err), 0);
        rt_shard sh;
        assert_int_equal(rt_shard_open(&plan, 0, &sh, &err), 0);
        uint64_t n = sh.train_off[plan.blocks];
        assert_true(n > 1000); /* several pages */
        rt_entry *copy = malloc(n * sizeof(rt_entry));
        assert_non_null(copy);
        memcpy(copy, sh.train, n * sizeof(rt_entry));
        assert_int_equal(rt_shard_release(&sh, sh.map, (const char *)sh.map + sh.map_len, &err), 0);
        assert_memory_equal(sh.train, copy, n * sizeof(rt_entry));
        free(copy);
        rt_shard_close(&sh);
        rt_plan_close(&plan);
    }
    problem_free(&p);
}

/* Flip one byte / truncate a shard: rt_shard_open fails with code 2 naming the file. */
static void test_corrupt_shard(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_MF, 100, 80, 3000, 0, 5);
    char shard[600];
    const char *dir = scratch_path("corrupt");
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, dir, 1, 2, 2, 0, &err), 0);
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    snprintf(shard, sizeof(shard), "%s/shard-00001.bin", dir);
    size_t len;
    char *orig = slurp(shard, &len);
    /* one flipped byte anywhere: header, table, or data */
    size_t where[] = {3, 40, 80, len / 2, len - 1};
    for (size_t i = 0; i < 5; i++) {
        char *b = malloc(len);
        memcpy(b, orig, len);
        b[where[i]] ^= 0x10;
        FILE *fp = fopen(shard, "wb");
        fwrite(b, 1, len, fp);
        fclose(fp);
        free(b);
        rt_shard sh;
        assert_int_equal(rt_shard_open(&plan, 1, &sh, &err), -1);
        assert_int_equal(err.code, RT_EXIT_INPUT);
        assert_non_null(strstr(err.msg, "shard-00001.bin"));
    }
    /* truncated */
    FILE *fp = fopen(shard, "wb");
    fwrite(orig, 1, len - 100, fp);
    fclose(fp);
    rt_shard sh;
    assert_int_equal(rt_shard_open(&plan, 1, &sh, &err), -1);
    assert_non_null(strstr(err.msg, "truncated"));
    /* the intact shard still opens */
    assert_int_equal(rt_shard_open(&plan, 0, &sh, &err), 0);
    rt_shard_close(&sh);
    rt_plan_close(&plan);
    free(orig);
    problem_free(&p);
}

/* A manifest whose schedule was edited is refused; so is a foreign layout. */
static void test_bad_manifest(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_MF, 60, 60, 1000, 0, 6);
    char path[600], path2[600];
    const char *dir = scratch_path("manifest");
    const char *other = scratch_path("manifest2");
    rt_error err;
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, dir, 1, 2, 2, 0, &err), 0);
    p.train.e[0].val += 1; /* a different plan id */
    assert_int_equal(write_plan(&p, RT_PLAN_MF, 0, other, 1, 2, 2, 0, &err), 0);
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    size_t len;
    char *text = slurp(path, &len);
    char *s = strstr(text, "\"schedule\": [\n    [1, 3]");
    assert_non_null(s);
    s[strlen("\"schedule\": [\n    [")] = '3';
    s[strlen("\"schedule\": [\n    [3, ")] = '1';
    FILE *fp = fopen(path, "wb");
    fwrite(text, 1, len, fp);
    fclose(fp);
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "schedule"));
    /* restore, then swap in the other plan's layout */
    s[strlen("\"schedule\": [\n    [")] = '1';
    s[strlen("\"schedule\": [\n    [3, ")] = '3';
    fp = fopen(path, "wb");
    fwrite(text, 1, len, fp);
    fclose(fp);
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    rt_plan_close(&plan);
    snprintf(path, sizeof(path), "%s/layout.bin", dir);
    snprintf(path2, sizeof(path2), "%s/layout.bin", other);
    assert_int_equal(rename(path2, path), 0);
    assert_int_equal(rt_plan_open(dir, &plan, &err), -1);
    assert_non_null(strstr(err.msg, "layout.bin"));
    free(text);
    problem_free(&p);
}

/* The list grows from the smallest reservations (rev28 F6: cap + cap / 2
 * stayed 1 at cap 1, and the next push wrote past the array), with and
 * without a budget below the first growth's 4096. */
static void test_triplets_grow_smallest(void **state)
{
    (void)state;
    rt_error err;
    for (uint64_t start = 0; start <= 3; start++)
        for (uint64_t budget = 0; budget <= 3; budget++) {
            rt_triplets t;
            rt_triplets_init(&t);
            t.budget = budget;
            if (start)
                assert_int_equal(rt_triplets_reserve(&t, start, &err), 0);
            for (uint32_t i = 0; i < 40; i++) {
                assert_int_equal(rt_triplets_push(&t, i, i + 1, (float)i, &err), 0);
                assert_true(t.n <= t.cap);
            }
            for (uint32_t i = 0; i < 40; i++)
                assert_true(t.e[i].row == i && t.e[i].col == i + 1 && t.e[i].val == (float)i);
            rt_triplets_free(&t);
        }
}

/* Seeded split: fraction held out, dense renumbering, unknown test ids dropped. */
static void test_split(void **state)
{
    (void)state;
    rt_error err;
    rt_idmap rows, cols;
    rt_idmap_init(&rows), rt_idmap_init(&cols);
    rt_triplets all, test;
    rt_triplets_init(&all), rt_triplets_init(&test);
    char s[32];
    for (int k = 0; k < 10000; k++) {
        uint32_t r, c;
        snprintf(s, sizeof(s), "%d", (k * 7919) % 1000);
        rt_idmap_intern(&rows, s, strlen(s), &r, &err);
        snprintf(s, sizeof(s), "%d", (k * 104729) % 3001);
        rt_idmap_intern(&cols, s, strlen(s), &c, &err);
        rt_triplets_push(&all, r, c, (float)k, &err);
    }
    uint64_t dropped;
    assert_int_equal(rt_triplets_split(&all, &rows, &cols, 0.2, 9, &test, &dropped, &err), 0);
    assert_int_equal(all.n + test.n + dropped, 10000);
    assert_true(test.n + dropped > 1800 && test.n + dropped < 2200);
    assert_true(dropped > 0); /* many columns have ~3 ratings: some lose them all */
    /* renumbered densely by first appearance in what was kept */
    uint32_t next_r = 0, next_c = 0;
    for (uint64_t i = 0; i < all.n; i++) {
        assert_true(all.e[i].row <= next_r);
        assert_true(all.e[i].col <= next_c);
        next_r += all.e[i].row == next_r;
        next_c += all.e[i].col == next_c;
    }
    assert_int_equal(next_r, rows.n);
    assert_int_equal(next_c, cols.n);
    for (uint64_t i = 0; i < test.n; i++)
        assert_true(test.e[i].row < rows.n && test.e[i].col < cols.n);
    /* values carry over: the kept entry's original ids still match its value */
    for (uint64_t i = 0; i < all.n; i++) {
        int k = (int)all.e[i].val;
        snprintf(s, sizeof(s), "%d", (k * 7919) % 1000);
        assert_string_equal(rt_idmap_str(&rows, all.e[i].row), s);
    }
    rt_idmap_free(&rows), rt_idmap_free(&cols);
    rt_triplets_free(&all), rt_triplets_free(&test);
}

/* A tiny grid budget forces the LPT fallback for most columns; the plan is
 * still complete and better balanced than random.  Also: "dir/" works and a
 * corrupted rows.ids is caught. */
static void test_budget_fallback_and_ids(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_MF, 400, 300, 8000, 0, 8);
    char slash[520], path[600];
    const char *dir = scratch_path("budget");
    snprintf(slash, sizeof(slash), "%s/", dir);
    rt_plan_input in = {
        .app = RT_PLAN_MF, .train = &p.train, .rows = &p.rows, .cols = &p.cols, .test = &p.test};
    rt_plan_options opt = {.nodes = 2, .threads = 2, .seed = 3, .balance_budget = 500};
    rt_plan_summary sum;
    rt_error err;
    assert_int_equal(rt_plan_write(slash, &in, &opt, &sum, &err), 0);
    assert_true(sum.imbalance.col_blocks < sum.random_imbalance.col_blocks);
    assert_true(sum.imbalance.row_blocks < sum.random_imbalance.row_blocks);
    assert_int_equal(sum.blocks, 8);
    check_roundtrip(&p, RT_PLAN_MF, 0, dir);
    /* corrupt one character of rows.ids */
    snprintf(path, sizeof(path), "%s/rows.ids", dir);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 2, SEEK_SET);
    fputc('#', fp);
    fclose(fp);
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    char **ids;
    uint64_t n;
    assert_int_equal(rt_plan_read_ids(&plan, "rows", &ids, &n, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "rows.ids: checksum mismatch"));
    assert_int_equal(rt_plan_read_ids(&plan, "cols", &ids, &n, &err), 0);
    assert_int_equal(n, p.cols.n);
    free(ids);
    rt_plan_close(&plan);
    problem_free(&p);
}

static int by_row_col(const void *x, const void *y)
{
    const rt_entry *a = x, *b = y;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return a->col < b->col ? -1 : a->col > b->col;
}

static int by_col_row(const void *x, const void *y)
{
    const rt_entry *a = x, *b = y;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

static int by_row(const void *x, const void *y)
{
    const rt_entry *a = x, *b = y;
    return a->row < b->row ? -1 : a->row > b->row;
}

/* Inputs already sorted (by user / document) take shortcuts in the block
 * sort: the plans must still be complete and correctly ordered. */
static void test_presorted_inputs(void **state)
{
    (void)state;
    int (*cmps[])(const void *, const void *) = {by_row_col, by_col_row, by_row};
    for (int app = RT_PLAN_MF; app <= RT_PLAN_LDA; app++)
        for (int k = 0; k < 3; k++) {
            problem p;
            problem_make(&p, (rt_plan_app)app, 150, 90, 3000, app == RT_PLAN_LDA, 10 + k);
            qsort(p.train.e, p.train.n, sizeof(rt_entry), cmps[k]);
            qsort(p.test.e, p.test.n, sizeof(rt_entry), cmps[k]);
            char dir[512];
            snprintf(dir, sizeof(dir), "%s/sorted-%d-%d", scratch_dir, app, k);
            rt_error err;
            assert_int_equal(
                write_plan(&p, (rt_plan_app)app, app == RT_PLAN_LDA, dir, 2, 2, 2, 0, &err), 0);
            check_roundtrip(&p, (rt_plan_app)app, app == RT_PLAN_LDA, dir);
            problem_free(&p);
        }
}

/* rt_plan_options.before_commit: files the hook writes into the temporary
 * directory end up in the plan and in plan.json's "files"; a failing hook
 * leaves nothing behind (and never touches an old plan being replaced). */
typedef struct hook_ctx {
    int fail, calls;
    uint64_t plan_id;
    char tmp[512];
} hook_ctx;

static int hook(const char *tmp_dir, uint64_t plan_id, void *ctx, rt_error *err)
{
    hook_ctx *h = ctx;
    h->calls++;
    h->plan_id = plan_id;
    snprintf(h->tmp, sizeof(h->tmp), "%s", tmp_dir);
    /* The plan's own files are already there; plan.json comes later. */
    char path[600];
    snprintf(path, sizeof(path), "%s/layout.bin", tmp_dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/plan.json", tmp_dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/extra.txt", tmp_dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("hello\n", fp);
    fclose(fp);
    if (h->fail)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: hook failed on purpose", path);
    return 0;
}

static int write_plan_hook(const problem *p, const char *dir, int force, hook_ctx *h,
                           rt_plan_summary *sum, rt_error *err)
{
    rt_plan_input in = {.app = RT_PLAN_LDA, .train = &p->train, .rows = &p->rows, .cols = &p->cols};
    rt_plan_options opt = {.nodes = 1,
                           .threads = 2,
                           .seed = 7,
                           .force = force,
                           .before_commit = hook,
                           .before_commit_ctx = h};
    return rt_plan_write(dir, &in, &opt, sum, err);
}

/* Entries of scratch_dir whose name starts with `prefix`. */
static int count_prefixed(const char *prefix)
{
    DIR *d = opendir(scratch_dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void test_before_commit(void **state)
{
    (void)state;
    problem p;
    problem_make(&p, RT_PLAN_LDA, 60, 50, 800, 0, 11);
    char path[600];
    const char *dir = scratch_path("hook-ok");
    hook_ctx h = {0};
    rt_plan_summary sum;
    rt_error err = {0};
    assert_int_equal(write_plan_hook(&p, dir, 0, &h, &sum, &err), 0);
    assert_int_equal(h.calls, 1);
    assert_true(h.plan_id == sum.plan_id);
    assert_string_not_equal(h.tmp, dir);
    assert_int_not_equal(access(h.tmp, F_OK), 0); /* renamed away */
    snprintf(path, sizeof(path), "%s/extra.txt", dir);
    size_t len;
    char *x = slurp(path, &len);
    assert_int_equal(len, 6);
    assert_memory_equal(x, "hello\n", 6);
    free(x);
    /* recorded with size and checksum, like the plan's own files */
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    assert_non_null(root);
    json_t *f = json_object_get(json_object_get(root, "files"), "extra.txt");
    assert_non_null(f);
    assert_int_equal(json_integer_value(json_object_get(f, "bytes")), 6);
    char hex[17];
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)rt_checksum("hello\n", 6));
    assert_string_equal(json_string_value(json_object_get(f, "xxh3")), hex);
    assert_non_null(json_object_get(json_object_get(root, "files"), "layout.bin"));
    json_decref(root);
    rt_plan plan;
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    rt_plan_close(&plan);

    /* A failing hook: error passed through, no plan and no temporary left. */
    const char *bad = scratch_path("hook-fail");
    hook_ctx hf = {.fail = 1};
    memset(&err, 0, sizeof(err));
    assert_int_equal(write_plan_hook(&p, bad, 0, &hf, NULL, &err), -1);
    assert_int_equal(hf.calls, 1);
    assert_int_equal(err.code, RT_EXIT_RUNTIME);
    assert_non_null(strstr(err.msg, "hook failed on purpose"));
    assert_int_equal(count_prefixed("hook-fail"), 0);

    /* ... and with --force over an existing plan, the old plan stays. */
    hook_ctx hr = {.fail = 1};
    memset(&err, 0, sizeof(err));
    snprintf(path, sizeof(path), "%s/extra.txt", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(write_plan_hook(&p, dir, 1, &hr, NULL, &err), -1);
    assert_int_equal(count_prefixed("hook-ok"), 1);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(rt_plan_open(dir, &plan, &err), 0);
    rt_plan_close(&plan);
    problem_free(&p);
}

int main(void)
{
    rt_log_level = RT_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_mf),
        cmocka_unit_test(test_roundtrip_lda_heldout),
        cmocka_unit_test(test_lda_bad_count),
        cmocka_unit_test(test_deterministic_and_force),
        cmocka_unit_test(test_release_keeps_bytes),
        cmocka_unit_test(test_corrupt_shard),
        cmocka_unit_test(test_bad_manifest),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_triplets_grow_smallest),
        cmocka_unit_test(test_budget_fallback_and_ids),
        cmocka_unit_test(test_presorted_inputs),
        cmocka_unit_test(test_before_commit),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}

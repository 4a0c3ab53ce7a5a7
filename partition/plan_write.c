/*
 * plan_write.c - rt_plan_write: balance, sort into blocks, write every file
 * of a plan into a temporary directory and rename it into place.
 */
#include "partition/balance.h"
#include "partition/plan_write.h"
#include "partition/secfile.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- input checks ---- */

static int check_entries(const rt_triplets *t, const char *what, rt_plan_app app, uint64_t n_rows,
                         uint64_t n_cols, rt_error *err)
{
    for (uint64_t i = 0; i < t->n; i++) {
        const rt_entry *e = &t->e[i];
        if (e->row >= n_rows || e->col >= n_cols)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s entry %" PRIu64 ": id (%u, %u) outside %" PRIu64 " x %" PRIu64, what,
                           i, e->row, e->col, n_rows, n_cols);
        if (!isfinite(e->val))
            return rt_fail(err, RT_EXIT_INPUT, "%s entry %" PRIu64 ": value is not finite", what,
                           i);
        if (app == RT_PLAN_LDA && (e->val < 1 || e->val != floorf(e->val) || e->val > 16777216.f))
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s entry %" PRIu64 ": count %g is not an integer >= 1", what, i,
                           (double)e->val);
    }
    return 0;
}

static int check_input(rt_plan_builder *pb, rt_error *err)
{
    const rt_plan_input *in = pb->in;
    const rt_plan_options *opt = pb->opt;
    if (in->app != RT_PLAN_MF && in->app != RT_PLAN_LDA)
        return rt_fail(err, RT_EXIT_INPUT, "plan: unknown app %d", (int)in->app);
    if (!in->train || !in->rows || !in->cols)
        return rt_fail(err, RT_EXIT_INPUT, "plan: training entries and id maps are required");
    if (in->test_rows && !in->test)
        return rt_fail(err, RT_EXIT_INPUT, "plan: held-out documents without test entries");
    if (opt->nodes < 1 || opt->threads < 1)
        return rt_fail(err, RT_EXIT_INPUT, "plan: --nodes and --threads must be at least 1");
    pb->c = opt->pipeline ? opt->pipeline : 2;
    uint64_t W = (uint64_t)opt->nodes * opt->threads, B = W * pb->c;
    if (W > 65536 || B > 1048576)
        return rt_fail(err, RT_EXIT_INPUT, "plan: too many workers (%" PRIu64 ") or blocks", W);
    pb->W = (uint32_t)W;
    pb->B = (uint32_t)B;
    pb->n_rows = in->rows->n;
    pb->n_cols = in->cols->n;
    pb->n_test_rows = in->test_rows ? in->test_rows->n : 0;
    if (in->train->n == 0)
        return rt_fail(err, RT_EXIT_INPUT, "plan: no training entries");
    if (check_entries(in->train, "train", in->app, pb->n_rows, pb->n_cols, err) < 0)
        return -1;
    if (in->test &&
        check_entries(in->test, "test", in->app, in->test_rows ? pb->n_test_rows : pb->n_rows,
                      pb->n_cols, err) < 0)
        return -1;
    if (pb->n_rows < W) /* a worker without rows would only pass blocks on */
        return rt_fail(err, RT_EXIT_INPUT,
                       "plan: only %" PRIu64 " %s for %" PRIu64
                       " workers (nodes x threads): each worker needs one; use fewer",
                       pb->n_rows, in->app == RT_PLAN_LDA ? "training documents" : "rows", W);
    if (pb->n_cols < B)
        rt_warn("only %" PRIu64 " columns for %" PRIu64 " blocks: some blocks are empty",
                pb->n_cols, B);
    return 0;
}

/* An existing output directory is replaced only with force, and only when it
 * looks like a plan (or is empty): never wipe an unrelated directory.  What
 * force cannot replace is refused as such, without a hint to use it. */
static int check_target(const char *dir, int force, rt_error *err)
{
    struct stat sb;
    if (rt_check_out_not_inside_output(dir, "out", err))
        return -1;
    if (stat(dir, &sb) != 0) /* a new one: made after the work, where it can be */
        return rt_check_out_usable(dir, err);
    if (!S_ISDIR(sb.st_mode))
        return rt_fail(err, RT_EXIT_INPUT, "%s: exists and is not a directory", dir);
    char path[4200];
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    int replaceable = access(path, F_OK) == 0;
    if (!replaceable) {
        DIR *d = opendir(dir);
        replaceable = 1;
        for (struct dirent *de; d && (de = readdir(d));)
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                replaceable = 0;
        if (d)
            closedir(d);
    }
    if (!replaceable)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: exists and is not a plan directory; refusing to replace it", dir);
    if (!force)
        return rt_fail(err, RT_EXIT_INPUT, "%s: already exists (use --force to replace it)", dir);
    return 0;
}

/* ---- balancing ---- */

static int balance(rt_plan_builder *pb, rt_error *err)
{
    const rt_plan_input *in = pb->in;
    const rt_plan_options *opt = pb->opt;
    const rt_triplets *t = in->train;
    uint64_t n_w = pb->n_rows > pb->n_test_rows ? pb->n_rows : pb->n_test_rows;
    uint64_t *rw = calloc(n_w ? n_w : 1, sizeof(uint64_t));
    uint64_t *cw = calloc(pb->n_cols ? pb->n_cols : 1, sizeof(uint64_t));
    uint32_t *rr = malloc(sizeof(uint32_t) * (pb->n_rows ? pb->n_rows : 1));
    uint32_t *rc_ = malloc(sizeof(uint32_t) * (pb->n_cols ? pb->n_cols : 1));
    pb->row_worker = malloc(sizeof(uint32_t) * (pb->n_rows ? pb->n_rows : 1));
    pb->col_block = malloc(sizeof(uint32_t) * (pb->n_cols ? pb->n_cols : 1));
    pb->test_row_worker = malloc(sizeof(uint32_t) * (pb->n_test_rows ? pb->n_test_rows : 1));
    int rc = -1;
    if (!rw || !cw || !rr || !rc_ || !pb->row_worker || !pb->col_block || !pb->test_row_worker) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)");
        goto out;
    }
    for (uint64_t i = 0; i < t->n; i++) {
        uint64_t x = rt_entry_weight(in->app, &t->e[i]);
        rw[t->e[i].row] += x;
        cw[t->e[i].col] += x;
        pb->sum.tokens_train += x;
    }
    double t0 = rt_now();
    if (rt_balance_items(rw, pb->n_rows, pb->W, opt->balance, opt->seed, pb->row_worker, err) < 0 ||
        rt_balance_cols(t, in->app, pb->row_worker, pb->W, pb->n_cols, cw, pb->B, opt->balance,
                        opt->seed, opt->balance_budget, pb->col_block, err) < 0)
        goto out;
    if (rt_imbalance_of(t, in->app, pb->row_worker, pb->n_rows, pb->col_block, pb->n_cols, pb->W,
                        pb->B, &pb->sum.imbalance, err) < 0)
        goto out;
    double t1 = rt_now();
    /* What a seeded random assignment would give, for comparison. */
    if (rt_balance_items(rw, pb->n_rows, pb->W, RT_BALANCE_RANDOM, opt->seed, rr, err) < 0 ||
        rt_balance_cols(t, in->app, rr, pb->W, pb->n_cols, cw, pb->B, RT_BALANCE_RANDOM, opt->seed,
                        0, rc_, err) < 0 ||
        rt_imbalance_of(t, in->app, rr, pb->n_rows, rc_, pb->n_cols, pb->W, pb->B,
                        &pb->sum.random_imbalance, err) < 0)
        goto out;
    /* Held-out documents: dealt to workers balanced by their tokens. */
    if (in->test_rows) {
        memset(rw, 0, sizeof(uint64_t) * n_w);
        for (uint64_t i = 0; i < in->test->n; i++)
            rw[in->test->e[i].row] += rt_entry_weight(in->app, &in->test->e[i]);
        if (rt_balance_items(rw, pb->n_test_rows, pb->W, opt->balance, opt->seed ^ 0x7e57,
                             pb->test_row_worker, err) < 0)
            goto out;
    }
    const rt_imbalance *a = &pb->sum.imbalance, *r = &pb->sum.random_imbalance;
    rt_info("balance (%s, %.2f s): imbalance max/mean %s: row blocks %.4f, column blocks %.4f, "
            "cells %.4f (random assignment: %.4f, %.4f, %.4f); rows per worker %.3f, columns "
            "per block %.3f",
            opt->balance == RT_BALANCE_RANDOM ? "random" : "greedy", t1 - t0,
            in->app == RT_PLAN_LDA ? "tokens" : "ratings", a->row_blocks, a->col_blocks, a->cells,
            r->row_blocks, r->col_blocks, r->cells, a->worker_rows, a->block_cols);
    rc = 0;
out:
    free(rw), free(cw), free(rr), free(rc_);
    return rc;
}

/* ---- files ---- */

static void header_init(const rt_plan_builder *pb, rt_file_header *h, uint32_t kind,
                        uint32_t worker)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, RT_FILE_MAGIC, 8);
    h->version = RT_PLAN_FORMAT_VERSION;
    h->kind = kind;
    h->app = (uint32_t)pb->in->app;
    h->worker = worker;
    h->workers = pb->W;
    h->blocks = pb->B;
    h->n_rows = pb->n_rows;
    h->n_cols = pb->n_cols;
    h->plan_id = pb->sum.plan_id;
}

static int write_sectioned(rt_plan_builder *pb, const char *name, const rt_file_header *h,
                           const rt_secdata *secs, uint32_t n, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", pb->tmp, name);
    uint64_t check, bytes;
    if (rt_secfile_write(path, h, secs, n, &check, &bytes, err) < 0)
        return -1;
    return rt_plan_note_file(pb, name, bytes, check, err);
}

static int write_layout(rt_plan_builder *pb, rt_error *err)
{
    rt_file_header h;
    header_init(pb, &h, RT_FILE_LAYOUT, 0);
    rt_secdata secs[] = {
        {RT_SEC_WORKER_ROW_OFFSETS, pb->rows.off, 8 * ((uint64_t)pb->W + 1)},
        {RT_SEC_WORKER_ROW_IDS, pb->rows.ids, 4 * pb->n_rows},
        {RT_SEC_BLOCK_COL_OFFSETS, pb->cols.off, 8 * ((uint64_t)pb->B + 1)},
        {RT_SEC_BLOCK_COL_IDS, pb->cols.ids, 4 * pb->n_cols},
    };
    return write_sectioned(pb, "layout.bin", &h, secs, 4, err);
}

/* Offsets of worker w's B data blocks, relative to its first entry. */
static void block_offsets(const rt_cells *c, uint32_t w, uint32_t B, uint64_t *off)
{
    const uint64_t *co = c->cell_off + (uint64_t)w * B;
    for (uint32_t b = 0; b <= B; b++)
        off[b] = co[b] - co[0];
}

static int write_shard(rt_plan_builder *pb, uint32_t w, uint64_t *off_train, uint64_t *off_test,
                       rt_error *err)
{
    rt_file_header h;
    header_init(pb, &h, RT_FILE_SHARD, w);
    uint32_t B = pb->B;
    block_offsets(&pb->train, w, B, off_train);
    block_offsets(&pb->test, w, B, off_test);
    uint64_t tr0 = pb->train.cell_off[(uint64_t)w * B], te0 = pb->test.cell_off[(uint64_t)w * B];
    rt_secdata secs[5] = {
        {RT_SEC_TRAIN_OFFSETS, off_train, 8 * ((uint64_t)B + 1)},
        {RT_SEC_TRAIN_ENTRIES, pb->train.e + tr0, sizeof(rt_entry) * off_train[B]},
        {RT_SEC_TEST_OFFSETS, off_test, 8 * ((uint64_t)B + 1)},
        {RT_SEC_TEST_ENTRIES, pb->test.e + te0, sizeof(rt_entry) * off_test[B]},
    };
    uint32_t n = 4;
    if (pb->in->test_rows) {
        uint64_t a = pb->test_rows.off[w], z = pb->test_rows.off[w + 1];
        secs[n++] = (rt_secdata){RT_SEC_TEST_ROW_IDS, pb->test_rows.ids + a, 4 * (z - a)};
    }
    char name[64];
    snprintf(name, sizeof(name), "shard-%05u.bin", w);
    return write_sectioned(pb, name, &h, secs, n, err);
}

static int write_shards(rt_plan_builder *pb, rt_error *err)
{
    uint64_t *a = malloc(8 * ((uint64_t)pb->B + 1)), *b = malloc(8 * ((uint64_t)pb->B + 1));
    int rc = a && b ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t w = 0; rc == 0 && w < pb->W; w++)
        rc = write_shard(pb, w, a, b, err);
    free(a), free(b);
    return rc;
}

/* rows.ids / cols.ids / test_rows.ids: one original id per line. */
static int write_ids(rt_plan_builder *pb, const char *name, const rt_idmap *m, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", pb->tmp, name);
    rt_hashed_file f;
    if (rt_hashed_create(&f, path, err))
        return -1;
    int rc = 0;
    for (uint64_t i = 0; i < m->n && rc == 0; i++) {
        const char *s = rt_idmap_str(m, i);
        rc = rt_hashed_put(&f, s, strlen(s), err);
        if (rc == 0)
            rc = rt_hashed_put(&f, "\n", 1, err);
    }
    uint64_t bytes, check;
    if (rt_hashed_close(&f, rc, &bytes, &check, err))
        return -1;
    return rt_plan_note_file(pb, name, bytes, check, err);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Run opt->before_commit and record the regular files it added (in name
 * order, so plan.json stays deterministic). */
static int run_before_commit(rt_plan_builder *pb, rt_error *err)
{
    const rt_plan_options *opt = pb->opt;
    if (!opt->before_commit)
        return 0;
    if (opt->before_commit(pb->tmp, pb->sum.plan_id, opt->before_commit_ctx, err) < 0) {
        if (err && !err->code)
            rt_fail(err, RT_EXIT_RUNTIME, "%s: writing the plan's extra files failed", pb->tmp);
        return -1;
    }
    struct dirent **list;
    int n = scandir(pb->tmp, &list, NULL, by_name);
    if (n < 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot list", pb->tmp);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = list[i]->d_name;
        char path[4200];
        struct stat sb;
        uint64_t bytes = 0, check = 0;
        if (!strcmp(name, ".") || !strcmp(name, "..") || json_object_get(pb->files, name))
            continue;
        if (rt_path_join(path, sizeof(path), pb->tmp, name, err) < 0)
            rc = -1;
        else if (!strcmp(name, "plan.json"))
            rc = rt_fail(err, RT_EXIT_RUNTIME, "%s: plan.json is the plan writer's", path);
        else if (lstat(path, &sb) != 0)
            rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot stat", path);
        else if (S_ISREG(sb.st_mode) && (rt_file_checksum(path, &bytes, &check, err) < 0 ||
                                         rt_plan_note_file(pb, name, bytes, check, err) < 0))
            rc = -1;
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return rc;
}

/* ---- putting it together ---- */

/* A plan id derived from everything that shapes the plan: rerunning the
 * partitioner on the same input with the same options gives the same plan. */
static uint64_t plan_id_of(const rt_plan_builder *pb)
{
    const rt_plan_input *in = pb->in;
    uint64_t x = rt_hash64(pb->opt->seed) ^ rt_hash64(((uint64_t)pb->W << 32) | pb->B);
    x = rt_hash64(x ^ ((uint64_t)in->app << 40) ^ pb->n_rows) ^ rt_hash64(pb->n_cols + 1);
    x ^= rt_checksum(in->train->e, sizeof(rt_entry) * in->train->n);
    if (in->test)
        x = rt_hash64(x) ^ rt_checksum(in->test->e, sizeof(rt_entry) * in->test->n);
    x = rt_hash64(x ^ (uint64_t)pb->opt->balance ^ (uint64_t)pb->c << 20);
    return x ? x : 1;
}

static int build_layout(rt_plan_builder *pb, rt_error *err)
{
    const rt_plan_input *in = pb->in;
    static const rt_triplets none;
    if (rt_groups_build(pb->row_worker, pb->n_rows, pb->W, &pb->rows, err) < 0 ||
        rt_groups_build(pb->col_block, pb->n_cols, pb->B, &pb->cols, err) < 0 ||
        rt_groups_build(pb->test_row_worker, pb->n_test_rows, pb->W, &pb->test_rows, err) < 0)
        return -1;
    if (rt_cells_build(in->train, in->app, pb->n_rows, pb->row_worker, &pb->rows, pb->n_cols,
                       pb->col_block, &pb->cols, pb->W, pb->B, &pb->train, err) < 0)
        return -1;
    const rt_triplets *test = in->test ? in->test : &none;
    int held = in->test_rows != NULL;
    if (rt_cells_build(test, in->app, held ? pb->n_test_rows : pb->n_rows,
                       held ? pb->test_row_worker : pb->row_worker,
                       held ? &pb->test_rows : &pb->rows, pb->n_cols, pb->col_block, &pb->cols,
                       pb->W, pb->B, &pb->test, err) < 0)
        return -1;
    pb->sum.nnz_train = in->train->n;
    pb->sum.nnz_test = test->n;
    pb->sum.duplicates = pb->train.dups;
    if (pb->train.dups)
        rt_warn("%" PRIu64 " duplicate (row, column) training entries kept", pb->train.dups);
    return 0;
}

static int write_all(rt_plan_builder *pb, rt_error *err)
{
    pb->files = json_object();
    if (!pb->files)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (write_layout(pb, err) < 0 || write_shards(pb, err) < 0 ||
        write_ids(pb, "rows.ids", pb->in->rows, err) < 0 ||
        write_ids(pb, "cols.ids", pb->in->cols, err) < 0)
        return -1;
    if (pb->in->test_rows && write_ids(pb, "test_rows.ids", pb->in->test_rows, err) < 0)
        return -1;
    if (run_before_commit(pb, err) < 0)
        return -1;
    return rt_plan_write_manifest(pb, err);
}

/* Move the finished temporary directory to `dir`, replacing an old plan in
 * one step (there is never a moment without a plan). */
static int commit_dir(const rt_plan_builder *pb, const char *dir, rt_error *err)
{
    return rt_dir_replace(pb->tmp, dir, err);
}

static void builder_free(rt_plan_builder *pb)
{
    free(pb->row_worker), free(pb->col_block), free(pb->test_row_worker);
    rt_groups_free(&pb->rows), rt_groups_free(&pb->cols), rt_groups_free(&pb->test_rows);
    rt_cells_free(&pb->train), rt_cells_free(&pb->test);
    json_decref(pb->files);
}

/* Each term is the most one phase holds at once (read off its mallocs):
 *   balance: row and column weights, both assignments and their random
 *     twins, the sort of rows by weight (16 B each), the column pass's
 *     per-entry block and worker (8 B an entry) and its W x B cells;
 *   sort into blocks: two copies of every entry (12 B each, train and
 *     test), the groups' ids and local indices, cell offsets;
 *   files: the apps' side files (lda.words: 16 B a column), stdio and
 *     jansson buffers (the constant).
 * The phases do not overlap in full, so the sum is an upper bound. */
uint64_t rt_plan_write_memory(const rt_plan_input *in, uint64_t W, uint64_t B)
{
    double n = (double)in->train->n, nt = in->test ? (double)in->test->n : 0;
    double R = (double)in->rows->n, C = (double)in->cols->n;
    double Rt = in->test_rows ? (double)in->test_rows->n : 0;
    double cells = (double)W * B;
    double bytes = 8 * n + 48 * R + 16 * Rt + 36 * C + 32 * cells + 64 * ((double)W + B) +
                   24 * (n + nt) + 20 * R + 20 * C + 12 * Rt + 16 * C + (double)(1 << 20);
    return bytes >= 0x1p63 ? UINT64_MAX : (uint64_t)bytes;
}

int rt_plan_write(const char *dir_arg, const rt_plan_input *in, const rt_plan_options *opt,
                  rt_plan_summary *sum, rt_error *err)
{
    double t0 = rt_now();
    /* "out/" and "out" are the same target: the temporary sibling must not
     * end up inside it. */
    char dir[4096];
    if (snprintf(dir, sizeof(dir), "%s", dir_arg) >= (int)sizeof(dir) || !dir[0])
        return rt_fail(err, RT_EXIT_INPUT, "%s: bad output path", dir_arg);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
        dir[n - 1] = '\0';
    rt_plan_builder pb;
    memset(&pb, 0, sizeof(pb));
    pb.in = in;
    pb.opt = opt;
    pb.tmp_hold = -1;
    int rc = -1;
    if (check_input(&pb, err) < 0 || check_target(dir, opt->force, err) < 0)
        goto out;
    pb.sum.plan_id = plan_id_of(&pb);
    pb.sum.workers = pb.W;
    pb.sum.blocks = pb.B;
    double t1 = rt_now();
    if (balance(&pb, err) < 0)
        goto out;
    double t2 = rt_now();
    if (build_layout(&pb, err) < 0)
        goto out;
    double t3 = rt_now();
    rt_debug("plan: checks %.3f s, balance %.3f s, sort into blocks %.3f s", t1 - t0, t2 - t1,
             t3 - t2);
    /* DIR.tmp-PID-XXXXXX (mkdtemp's letters as the tag): the pid lets an
     * interrupted command find and remove its own temporary directory
     * (tools/guard.c), and no one else's. */
    rt_path_parts pp; /* its parent may be new, as a model's may (made now, not before the work) */
    if (rt_split_parent(dir, &pp) != 0) {
        rt_fail(err, RT_EXIT_INPUT, "%s: bad output path", dir);
        goto out;
    }
    if (rt_tmp_dir_name(dir, (int)getpid(), "XXXXXX", pb.tmp, sizeof(pb.tmp), err) ||
        rt_mkdir_p(pp.dir, err))
        goto out;
    if (!mkdtemp(pb.tmp)) {
        rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot create a temporary directory", pb.tmp);
        pb.tmp[0] = '\0';
        goto out;
    }
    chmod(pb.tmp, 0755); /* mkdtemp makes it 0700 */
    pb.tmp_hold = rt_hold_dir(pb.tmp);
    if (write_all(&pb, err) < 0 || commit_dir(&pb, dir, err) < 0) {
        rt_remove_tree(pb.tmp);
        goto out;
    }
    rt_debug("plan: files written in %.3f s", rt_now() - t3);
    pb.sum.seconds = rt_now() - t0;
    rt_info("plan %016" PRIx64 " written to %s: %u workers, %u blocks, %" PRIu64 " train / %" PRIu64
            " test entries (%.2f s)",
            pb.sum.plan_id, dir, pb.W, pb.B, pb.sum.nnz_train, pb.sum.nnz_test, pb.sum.seconds);
    if (sum)
        *sum = pb.sum;
    rc = 0;
out:
    rt_release_dir(pb.tmp_hold);
    builder_free(&pb);
    return rc;
}

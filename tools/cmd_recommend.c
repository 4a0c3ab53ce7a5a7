/*
 * cmd_recommend.c - `rotor recommend`: the K best items for each user of a
 * saved rating model, by original ids, leaving out what the user had in
 * training.
 *
 * The model is opened through the app that wrote it (rt_model_open) and
 * ranked with rt_topk (apps/ranking.c): blocks of users x all items scored
 * by the app's model_scores hook on several threads, a heap of K per user,
 * the blocks written out in user order as they finish, so memory stays
 * bounded by the block whatever the number of users.
 */
#include "apps/apps.h"
#include "tools/commands.h"
#include "tools/guard.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

typedef struct recommend_opts {
    const char *model, *users, *exclude, *out;
    uint32_t top, threads, batch;
    int no_exclude, json, quiet;
} recommend_opts;

static const rt_opt recommend_options[] = {
    ROTOR_MODEL_OPT(recommend_opts, model, "rotor train --out"),
    RT_U32_OPT("top", 'k', recommend_opts, top, "K", NULL, 1, 100000, RT_OPT_REQUIRED,
               "items per user"),
    RT_PATH_OPT("users", 'u', recommend_opts, users, "FILE", NULL, 0,
                "users to recommend for, one original id a line (default: every user)"),
    RT_PATH_OPT("exclude", 0, recommend_opts, exclude, "FILE", NULL, 0,
                "ratings whose items are not recommended to their user (default: the training "
                "ratings in the model's plan)"),
    RT_FLAG_OPT("no-exclude", 0, recommend_opts, no_exclude,
                "rank every item, training items included"),
    RT_PATH_OPT("out", 'o', recommend_opts, out, "FILE", "-", 0,
                "where to write the recommendations (- = standard output; an existing file is "
                "replaced only when empty or an earlier rotor recommend output)"),
    RT_U32_OPT("threads", 't', recommend_opts, threads, "T", "2", 1, 64, 0,
               "threads scoring a block"),
    RT_U32_OPT("batch", 0, recommend_opts, batch, "N", "4096", 1, 1 << 20, 0,
               "users per block (memory: N x K results plus 256 KiB per thread)"),
    RT_FLAG_OPT("json", 0, recommend_opts, json,
                "one JSON object per user and line instead of TSV"),
    RT_FLAG_OPT("quiet", 'q', recommend_opts, quiet, "no progress or summary on standard error"),
    {0}};

/* ------------------------------------------------------------ users */

typedef struct user_list {
    uint32_t *ids;
    uint64_t n, cap;
    uint64_t unknown; /* listed ids the model does not know */
} user_list;

/* Every user of the model, in dense order. */
static int all_users(uint64_t n_rows, const char *model, user_list *u, rt_error *err)
{
    u->ids = rt_alloc_array(n_rows, sizeof(uint32_t), model, "users", err);
    if (!u->ids)
        return -1;
    for (uint64_t i = 0; i < n_rows; i++)
        u->ids[i] = (uint32_t)i;
    u->n = n_rows;
    return 0;
}

static int push_user(user_list *u, uint32_t id, rt_error *err)
{
    if (rt_grow_array((void **)&u->ids, &u->cap, u->n + 1, sizeof(uint32_t), err))
        return -1;
    u->ids[u->n++] = id;
    return 0;
}

/* The ids of `path`, one a line (surrounding blanks ignored, empty lines
 * skipped), mapped to dense ids; unknown ones are counted, and the first is
 * named in a warning. */
static int read_users(const char *path, const rt_idmap *rows, user_list *u, rt_error *err)
{
    rt_linereader lr;
    if (rt_linereader_open(&lr, path, err))
        return -1;
    char *line, first_unknown[64] = "";
    size_t len;
    uint64_t first_line = 0, listed = 0;
    int rc;
    while ((rc = rt_linereader_next(&lr, &line, &len, err)) == 1) {
        while (len && (*line == ' ' || *line == '\t'))
            line++, len--;
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
            len--;
        if (len == 0)
            continue;
        listed++;
        int64_t id = rt_idmap_find(rows, line, len);
        if (id < 0) {
            if (u->unknown++ == 0) {
                snprintf(first_unknown, sizeof(first_unknown), "%.*s", (int)(len < 40 ? len : 40),
                         line);
                first_line = lr.line_no;
            }
            continue;
        }
        if (push_user(u, (uint32_t)id, err)) {
            rc = -1;
            break;
        }
    }
    rt_linereader_close(&lr);
    if (rc < 0)
        return -1;
    if (listed == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no user id in the file", path);
    if (u->n == 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:%llu: none of the %llu users is known to the model (first: '%s')", path,
                       (unsigned long long)first_line, (unsigned long long)listed, first_unknown);
    if (u->unknown)
        rt_warn("%s: %llu of %llu users are unknown to the model and get no recommendations "
                "(first: '%s' on line %llu)",
                path, (unsigned long long)u->unknown, (unsigned long long)listed, first_unknown,
                (unsigned long long)first_line);
    return 0;
}

/* ------------------------------------------------------------ output */

typedef struct writer {
    rt_outfile of;
    const rt_idmap *rows, *cols;
    int json;
    char *buf;
    size_t len, cap;
    uint64_t lines;
} writer;

static int put(writer *w, const char *s, size_t n, rt_error *err)
{
    if (n == 0)
        return 0; /* an empty id (a CSV's empty field) first: memcpy into no buffer yet is UB */
    if (w->len + n > w->cap) {
        size_t cap = (w->len + n) * 2;
        char *p = realloc(w->buf, cap);
        if (!p)
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for the output");
        w->buf = p;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    return 0;
}

static int put_str(writer *w, const char *s, rt_error *err)
{
    return put(w, s, strlen(s), err);
}

static int put_json_string(writer *w, const char *s, rt_error *err)
{
    json_t *js = json_string(s);                           /* NULL for an id that is not UTF-8 */
    char *q = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL; /* quotes and escapes */
    json_decref(js);
    if (!q)
        return rt_fail(err, RT_EXIT_RUNTIME, "cannot encode id '%s' as JSON", s);
    int rc = put_str(w, q, err);
    free(q);
    return rc;
}

static int put_tsv_user(writer *w, const char *user, const uint32_t *items, const float *scores,
                        uint32_t n, rt_error *err)
{
    char num[64];
    for (uint32_t j = 0; j < n; j++) {
        int len = snprintf(num, sizeof(num), "\t%.9g\t%u\n", (double)scores[j], j + 1);
        if (put_str(w, user, err) || put(w, "\t", 1, err) ||
            put_str(w, rt_idmap_str(w->cols, items[j]), err) || put(w, num, (size_t)len, err))
            return -1;
    }
    return 0;
}

static int put_json_user(writer *w, const char *user, const uint32_t *items, const float *scores,
                         uint32_t n, rt_error *err)
{
    char num[48];
    if (put_str(w, "{\"user\": ", err) || put_json_string(w, user, err) ||
        put_str(w, ", \"items\": [", err))
        return -1;
    for (uint32_t j = 0; j < n; j++)
        if ((j && put(w, ", ", 2, err)) || put_json_string(w, rt_idmap_str(w->cols, items[j]), err))
            return -1;
    if (put_str(w, "], \"scores\": [", err))
        return -1;
    for (uint32_t j = 0; j < n; j++) {
        int len = snprintf(num, sizeof(num), "%s%.9g", j ? ", " : "", (double)scores[j]);
        if (put(w, num, (size_t)len, err))
            return -1;
    }
    return put_str(w, "]}\n", err);
}

/* rt_topk_sink: format a block and write it. */
static int write_block(void *ctx, const uint32_t *users, uint32_t n, const uint32_t *items,
                       const float *scores, const uint32_t *count, uint32_t k, rt_error *err)
{
    writer *w = ctx;
    w->len = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *user = rt_idmap_str(w->rows, users[i]);
        const uint32_t *it = items + (size_t)i * k;
        const float *sc = scores + (size_t)i * k;
        if (w->json ? put_json_user(w, user, it, sc, count[i], err)
                    : put_tsv_user(w, user, it, sc, count[i], err))
            return -1;
        w->lines += count[i];
    }
    return rt_write_all(w->of.fp, w->buf, w->len, w->of.path, err);
}

/* ------------------------------------------------------------ the command */

/* Does the file start like an earlier recommend output?  TSV's first line
 * is "USER\tITEM\tSCORE\t1" (ranks count from 1; a ratings file with a
 * fourth column has a timestamp or a rating there), JSON's is {"user": ...}. */
static int looks_like_recommendations(FILE *fp)
{
    char line[4096];
    if (!fgets(line, sizeof(line), fp))
        return 0;
    if (!strncmp(line, "{\"user\": ", 9))
        return 1;
    int tabs = 0;
    for (const char *c = line; *c; c++)
        tabs += *c == '\t';
    size_t n = strcspn(line, "\r\n");
    return tabs == 3 && n >= 2 && !strncmp(line + n - 2, "\t1", 2);
}

/* --out replaces only an empty file or an earlier recommend output, as
 * --metrics, a model, a plan and infer's --out replace only their own
 * kind: a mistyped name never costs a file (a model's model.json, the
 * ratings).  The --users and --exclude files are read before --out is
 * replaced, so they are refused whatever they hold. */
static int check_out(const recommend_opts *o, rt_error *err)
{
    if (rt_is_stdio(o->out))
        return 0;
    if ((o->users && rt_same_file(o->out, o->users)) ||
        (o->exclude && rt_same_file(o->out, o->exclude)))
        return rt_fail(err, RT_EXIT_INPUT, "%s: --out is also --%s; give another path", o->out,
                       o->users && rt_same_file(o->out, o->users) ? "users" : "exclude");
    return rt_check_own_kind(o->out, "out", "the output of an earlier rotor recommend",
                             looks_like_recommendations, err);
}

/* JSON strings are UTF-8: an id of other bytes (a Latin-1 "café" in the
 * ratings) cannot be written there.  Refused before any work, naming one,
 * with the ways out (it failed after the scoring, exit 1). */
static int check_json_ids(const char *model, const rt_idmap *ids, const char *what, rt_error *err)
{
    for (uint64_t i = 0; i < ids->n; i++) {
        const char *id = rt_idmap_str(ids, i);
        if (u8_check((const uint8_t *)id, strlen(id)))
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s: %s id '%s' is not UTF-8 text, which JSON cannot hold: leave out "
                           "--json (tab-separated output keeps ids as bytes), or convert the "
                           "ratings to UTF-8 ('iconv -f latin1 -t utf-8') and partition again",
                           model, what, id);
    }
    return 0;
}

static int recommend(const recommend_opts *o, rt_model *m, rt_error *err)
{
    rt_idmap *rows, *cols;
    m->app->model_ids(m->impl, &rows, &cols);
    user_list users = {0};
    rt_user_items seen = {0};
    const char *source;
    writer w = {.rows = rows, .cols = cols, .json = o->json};
    int rc = -1, opened = 0;
    if (o->json && (check_json_ids(o->model, rows, "user", err) ||
                    check_json_ids(o->model, cols, "item", err)))
        goto out;
    if ((o->users ? read_users(o->users, rows, &users, err)
                  : all_users(rows->n, o->model, &users, err)) ||
        rt_user_items_exclusions(o->model, m, o->exclude, o->no_exclude, &seen, &source, err))
        goto out;
    if (rt_outfile_open(&w.of, o->out, err))
        goto out;
    opened = 1;
    rt_progress progress;
    rt_progress_start(&progress, "recommending", "users", 1, users.n);
    rt_topk_opts topt = {.k = o->top,
                         .threads = o->threads,
                         .batch = o->batch,
                         .exclude = o->no_exclude ? NULL : &seen,
                         .progress = &progress};
    rt_scorer s = rt_model_scorer(m);
    double t0 = rt_now();
    rc = rt_topk(&s, users.ids, users.n, &topt, write_block, &w, err);
    rt_progress_end(&progress);
    if (rc == 0)
        rc = rt_outfile_commit(&w.of, err);
    if (rc == 0) {
        double secs = rt_now() - t0;
        rt_info("recommend: %llu users x %llu items, top %u, %llu recommendations in %.2f s "
                "(%.0f users/s, %u threads); excluded: %s%s",
                (unsigned long long)users.n, (unsigned long long)cols->n, o->top,
                (unsigned long long)w.lines, secs, secs > 0 ? (double)users.n / secs : 0.0,
                o->threads, !strcmp(source, "plan") ? "training items (plan)" : source,
                users.unknown ? "; some listed users unknown (see above)" : "");
    }
out:
    if (rc && opened)
        rt_outfile_abort(&w.of);
    free(users.ids);
    free(w.buf);
    rt_user_items_free(&seen);
    return rc;
}

int cmd_recommend(int argc, char **argv)
{
    recommend_opts o = {0};
    rt_error err = {0};
    if (rotor_parse_options(&rotor_doc_recommend, recommend_options, &o, argc, argv))
        return RT_EXIT_OK;
    if (o.quiet && rt_log_level > RT_LOG_WARN) /* progress and summary off */
        rt_log_level = RT_LOG_WARN;
    if (check_out(&o, &err))
        rt_die(&err);
    rt_guard_output(o.out); /* an interrupted run leaves no OUT.tmp.PID */
    if (rt_guard_start(&err) < 0)
        rt_die(&err);
    rt_model m;
    if (rt_model_open(o.model, &m, &err))
        rt_guard_die(&err);
    if (!m.app->model_scores) {
        rt_fail(&err, RT_EXIT_INPUT,
                "%s: the model is from --app %s; rotor recommend ranks items of rating models",
                o.model, m.app->name);
        rt_model_close(&m);
        rt_guard_die(&err);
    }
    int rc = recommend(&o, &m, &err);
    rt_model_close(&m);
    if (rc)
        rt_guard_die(&err);
    return RT_EXIT_OK;
}

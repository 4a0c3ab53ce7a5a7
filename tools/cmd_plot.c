/*
 * cmd_plot.c - `rotor plot METRICS.json... --out FILE.png|FILE.svg`:
 * convergence curves of runs from the files `rotor train --metrics` writes,
 * overlaid, each labelled with the settings that tell the runs apart.
 *
 * A metrics file is {"app": A, "config": {...}, "epochs": [{...}, ...]}; the
 * x axis is the record's "epoch" (sgd-mf), "outer" (cd-mf) or "iter" (lda),
 * or its "elapsed_s" with --x seconds.  Drawing is gnuplot's (tools/gnuplot.c).
 */
#include "tools/commands.h"
#include "ground/json.h"
#include "tools/plot.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct plot_opts {
    const char **inputs;
    int n_inputs;
    const char *out, *title, *y, *size;
    int seconds, log_y, width, height;
} plot_opts;

static const rt_opt_choice x_axes[] = {{"epoch", 0}, {"seconds", 1}, {NULL, 0}};

static const rt_opt plot_options[] = {
    RT_PATH_OPT("out", 'o', plot_opts, out, "FILE", NULL, RT_OPT_REQUIRED,
                "picture to write: FILE.png or FILE.svg"),
    RT_ENUM_OPT("x", 0, plot_opts, seconds, x_axes, "epoch",
                "x axis: epoch (outer iteration for cd-mf, sweep for lda) or wall seconds since "
                "the run started"),
    RT_STRING_OPT("y", 0, plot_opts, y, "KEYS", NULL, 0,
                  "comma-separated epoch-record fields, e.g. train_rmse,test_rmse, objective, "
                  "perplexity, ll_per_token (default: test_rmse for MF, train_rmse without a test "
                  "set; perplexity for lda)"),
    RT_STRING_OPT("title", 0, plot_opts, title, "TEXT", NULL, 0, "a title above the chart"),
    RT_STRING_OPT("size", 0, plot_opts, size, "WxH", "800x500", 0,
                  "picture size in pixels, 64 to 10000 each"),
    RT_FLAG_OPT("log-y", 0, plot_opts, log_y, "logarithmic y axis"),
    {0}};

typedef struct run {
    const char *path;
    json_t *doc; /* the whole file */
    const char *app;
    json_t *config, *epochs;
} run;

/* ------------------------------------------------------------ options */

static int parse_size(const char *s, int *w, int *h)
{
    char *e;
    long a = strtol(s, &e, 10);
    if (e == s || (*e != 'x' && *e != 'X'))
        return -1;
    const char *t = e + 1;
    long b = strtol(t, &e, 10);
    if (e == t || *e || a < 64 || b < 64 || a > 10000 || b > 10000)
        return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

static int picture_kind(const char *out, int *svg)
{
    const char *dot = strrchr(out, '.');
    if (dot && !strcmp(dot, ".png"))
        *svg = 0;
    else if (dot && !strcmp(dot, ".svg"))
        *svg = 1;
    else
        return -1;
    return 0;
}

/* --out replaces only a picture of the format it writes, as every output
 * replaces only its own kind (rt_check_own_kind): never a metrics file or
 * the ratings under a mistyped name. */
static int is_png(FILE *fp)
{
    unsigned char head[8];
    return fread(head, 1, sizeof(head), fp) == sizeof(head) &&
           !memcmp(head, "\x89PNG\r\n\x1a\n", sizeof(head));
}

static int is_svg(FILE *fp)
{
    char head[1024];
    size_t n = fread(head, 1, sizeof(head) - 1, fp);
    head[n] = '\0';
    return strstr(head, "<svg") != NULL;
}

/* 0 = parsed, 1 = --help printed, -1 = bad usage (err set). */
static int parse(int argc, char **argv, plot_opts *o, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    o->inputs = calloc((size_t)argc, sizeof(char *));
    if (!o->inputs)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    /* the metrics files may come before, between or after the options */
    rt_opt_group g = {.opts = plot_options, .dest = o};
    int rc =
        rt_opts_parse_operands(&rotor_doc_plot, &g, 1, argc, argv, o->inputs, &o->n_inputs, err);
    if (rc)
        return rc;
    int svg;
    if (!o->n_inputs)
        return rt_fail(err, RT_EXIT_INPUT, "plot: needs METRICS.json files (see --help)");
    if (picture_kind(o->out, &svg))
        return rt_fail(err, RT_EXIT_INPUT, "plot: --out '%s' must end in .png or .svg", o->out);
    if (rt_check_own_kind(o->out, "out", svg ? "an SVG picture" : "a PNG picture",
                          svg ? is_svg : is_png, err))
        return -1;
    if (parse_size(o->size, &o->width, &o->height))
        return rt_fail(err, RT_EXIT_INPUT, "plot: --size '%s': expected WxH, 64 to 10000 each",
                       o->size);
    return 0;
}

/* ------------------------------------------------------------ metrics files */

static int load_run(const char *path, run *r, rt_error *err)
{
    memset(r, 0, sizeof(*r));
    r->path = path;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) /* jansson would say "expected '['" */
        return rt_fail(err, RT_EXIT_INPUT, "%s: is a directory, not a metrics file", path);
    r->doc = rt_json_load(path, err);
    if (!r->doc)
        return -1;
    json_t *app = json_object_get(r->doc, "app");
    r->config = json_object_get(r->doc, "config");
    r->epochs = json_object_get(r->doc, "epochs");
    if (!json_is_string(app) || !json_is_object(r->config) || !json_is_array(r->epochs))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: not a metrics file (needs \"app\", \"config\" and \"epochs\"; "
                       "see rotor train --metrics)",
                       path);
    r->app = json_string_value(app);
    return 0;
}

/* A finite number, or -1.  The apps write -1 for a test RMSE they could not
 * measure, so negative values of non-negative quantities count as absent. */
static int record_value(json_t *rec, const char *key, double *v)
{
    json_t *j = json_object_get(rec, key);
    if (!json_is_number(j))
        return -1;
    *v = json_number_value(j);
    if ((strstr(key, "rmse") || strstr(key, "perplexity")) && *v < 0)
        return -1;
    return 0;
}

static int has_value(const run *r, const char *key)
{
    double v;
    for (size_t i = 0; i < json_array_size(r->epochs); i++)
        if (record_value(json_array_get(r->epochs, i), key, &v) == 0)
            return 1;
    return 0;
}

static const char *default_y(const run *r)
{
    if (!strcmp(r->app, "lda"))
        return has_value(r, "perplexity") ? "perplexity" : "ll_per_token";
    return has_value(r, "test_rmse") ? "test_rmse" : "train_rmse";
}

/* The x of a record: its epoch number, or wall seconds ("elapsed_s"; older
 * files: the running sum of per-epoch "seconds"). */
static int record_x(json_t *rec, int seconds, double *sum, double *x)
{
    static const char *const epoch_keys[] = {"epoch", "outer", "iter"};
    if (seconds) {
        double s;
        if (record_value(rec, "elapsed_s", x) == 0)
            return 0;
        if (record_value(rec, "seconds", &s) < 0)
            return -1;
        *x = *sum += s;
        return 0;
    }
    for (size_t k = 0; k < sizeof(epoch_keys) / sizeof(epoch_keys[0]); k++)
        if (record_value(rec, epoch_keys[k], x) == 0)
            return 0;
    return -1;
}

static int build_series(const run *r, const char *key, int seconds, plot_series *s, rt_error *err)
{
    size_t n = json_array_size(r->epochs);
    s->x = calloc(n ? n : 1, sizeof(double));
    s->y = calloc(n ? n : 1, sizeof(double));
    if (!s->x || !s->y)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *rec = json_array_get(r->epochs, i);
        double x, y;
        if (record_x(rec, seconds, &sum, &x) == 0 && record_value(rec, key, &y) == 0) {
            s->x[s->n] = x;
            s->y[s->n++] = y;
        }
    }
    if (!s->n)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no epoch record has both '%s' and %s", r->path, key,
                       seconds ? "'elapsed_s'" : "an epoch number");
    return 0;
}

/* ------------------------------------------------------------ legends */

/* Settings that say what was run; the rest (sizes, transport) describe data
 * and machine and show only when they are what differs. */
static int is_main_setting(const char *key)
{
    static const char *const keys[] = {"k",      "lr",    "lambda", "outer",   "inner",
                                       "topics", "alpha", "beta",   "sampler", "processes"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strcmp(key, keys[i]))
            return 1;
    return 0;
}

static int scalar_text(json_t *v, char *out, size_t cap)
{
    if (json_is_string(v))
        snprintf(out, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, cap, "%g", json_real_value(v));
    else
        return -1;
    return 0;
}

/* Does some run have another value for config[key] (or lack it)? */
static int differs(const run *runs, int n, const char *key)
{
    json_t *first = json_object_get(runs[0].config, key);
    for (int i = 1; i < n; i++)
        if (!json_equal(first, json_object_get(runs[i].config, key)))
            return 1;
    return 0;
}

static int any_difference(const run *runs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *key;
        json_t *v;
        json_object_foreach(runs[i].config, key, v)
        {
            if (differs(runs, n, key))
                return 1;
        }
    }
    return 0;
}

static void append(char *out, size_t cap, const char *text)
{
    size_t n = strlen(out);
    if (n < cap && snprintf(out + n, cap - n, "%s%s", n ? " " : "", text) >= (int)(cap - n))
        out[n] = '\0'; /* an item that does not fit is left out whole */
}

/* "sgd-mf lr=0.05 lambda=0.01": the app, then the settings that differ
 * between the runs; with nothing differing, the main settings; the file name
 * when runs cannot be told apart otherwise. */
static void legend(const run *runs, int n, int i, char *out, size_t cap)
{
    const run *r = &runs[i];
    int apps_differ = 0, diff = any_difference(runs, n);
    for (int j = 1; j < n; j++)
        apps_differ |= strcmp(runs[j].app, runs[0].app) != 0;
    out[0] = '\0';
    append(out, cap, r->app);
    const char *key;
    json_t *v;
    json_object_foreach(r->config, key, v)
    {
        char val[128], item[256];
        if (!(diff ? differs(runs, n, key) : is_main_setting(key)) ||
            scalar_text(v, val, sizeof(val)))
            continue;
        snprintf(item, sizeof(item), "%s=%s", key, val);
        append(out, cap, item);
    }
    if (n > 1 && !diff && !apps_differ) {
        const char *base = strrchr(r->path, '/');
        append(out, cap, base ? base + 1 : r->path);
    }
}

/* ------------------------------------------------------------ command */

/* "test_rmse" or "train_rmse, test_rmse": each key once, in order of use. */
static void add_label(char *label, size_t cap, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = label; (p = strstr(p, key)); p += kl)
        if ((p == label || p[-1] == ' ') && (p[kl] == '\0' || p[kl] == ','))
            return;
    size_t n = strlen(label);
    if (n < cap)
        snprintf(label + n, cap - n, "%s%s", n ? ", " : "", key);
}

/* The curves of one run: each key of --y (comma-separated), or its default. */
static int run_series(const plot_opts *o, const run *runs, int i, size_t n_keys, plot_series *s,
                      size_t *n, char *ylabel, size_t ycap, rt_error *err)
{
    char name[200], keys[512];
    legend(runs, o->n_inputs, i, name, sizeof(name));
    snprintf(keys, sizeof(keys), "%s", o->y ? o->y : default_y(&runs[i]));
    char *save = NULL;
    for (const char *key = strtok_r(keys, ",", &save); key; key = strtok_r(NULL, ",", &save)) {
        plot_series *c = &s[(*n)++];
        if (build_series(&runs[i], key, o->seconds, c, err))
            return -1;
        snprintf(c->title, sizeof(c->title), "%s%s%s", name, n_keys > 1 ? " " : "",
                 n_keys > 1 ? key : "");
        add_label(ylabel, ycap, key);
    }
    return 0;
}

/* The series of every run and y key; one legend entry per curve. */
static int build_chart(const plot_opts *o, const run *runs, plot_series **out, size_t *n_out,
                       char *ylabel, size_t ycap, rt_error *err)
{
    size_t n_keys = 1;
    for (const char *p = o->y; p && *p; p++)
        n_keys += *p == ',';
    if (o->y && (strlen(o->y) >= 512 || strspn(o->y, ",") == strlen(o->y)))
        return rt_fail(err, RT_EXIT_INPUT, "plot: --y '%s': expected KEY[,KEY...]", o->y);
    *out = calloc((size_t)o->n_inputs * n_keys, sizeof(plot_series));
    *n_out = 0;
    if (!*out)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (int i = 0; i < o->n_inputs; i++)
        if (run_series(o, runs, i, n_keys, *out, n_out, ylabel, ycap, err))
            return -1;
    return 0;
}

static void free_chart(plot_series *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        free(s[i].x);
        free(s[i].y);
    }
    free(s);
}

int cmd_plot(int argc, char **argv)
{
    rt_error err = {0};
    plot_opts o;
    int st = parse(argc, argv, &o, &err);
    if (st) {
        free(o.inputs);
        if (st < 0)
            rt_die(&err);
        return RT_EXIT_OK;
    }
    run *runs = calloc((size_t)o.n_inputs, sizeof(run));
    plot_series *series = NULL;
    size_t n_series = 0;
    char ylabel[256] = "";
    int rc = runs ? 0 : rt_fail(&err, RT_EXIT_RUNTIME, "out of memory");
    for (int i = 0; rc == 0 && i < o.n_inputs; i++)
        rc = load_run(o.inputs[i], &runs[i], &err);
    if (rc == 0)
        rc = build_chart(&o, runs, &series, &n_series, ylabel, sizeof(ylabel), &err);
    if (rc == 0) {
        const char *tmp = getenv("TMPDIR");
        plot_chart c = {.out = o.out,
                        .width = o.width,
                        .height = o.height,
                        .title = o.title,
                        .xlabel = o.seconds ? "seconds" : "epoch",
                        .ylabel = ylabel,
                        .log_y = o.log_y,
                        .series = series,
                        .n_series = n_series};
        picture_kind(o.out, &c.svg);
        rc = plot_render(&c, tmp && *tmp ? tmp : "/tmp", &err);
    }
    free_chart(series, n_series);
    for (int i = 0; runs && i < o.n_inputs; i++)
        json_decref(runs[i].doc);
    free(runs);
    free(o.inputs);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}

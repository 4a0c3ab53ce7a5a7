/* metrics.c - see metrics.h. */
#include "apps/metrics.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A metrics file: a JSON object with an "epochs" array. */
static int is_metrics(FILE *fp)
{
    json_t *doc = rt_json_loadf(fp, "metrics file", NULL);
    int metrics = json_is_object(doc) && json_is_array(json_object_get(doc, "epochs"));
    json_decref(doc);
    return metrics;
}

int rt_metrics_check(const char *path, rt_error *err)
{
    /* The document is rewritten whole as epochs end: into a FIFO or a
     * device (written in place) that would be one copy after another. */
    struct stat sb;
    if (path && !rt_is_stdio(path) && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) &&
        !S_ISDIR(sb.st_mode))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --metrics: not a regular file (the file is rewritten whole as epochs "
                       "end)",
                       path);
    return rt_check_own_kind(path, "metrics", "a metrics file (of an earlier run)", is_metrics,
                             err);
}

void rt_metrics_init(rt_metrics *m, const char *path, const char *app, json_t *config)
{
    memset(m, 0, sizeof(*m));
    if (!path || !path[0]) {
        json_decref(config);
        return;
    }
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->t0 = rt_now();
    m->doc = json_object();
    json_object_set_new(m->doc, "app", json_string(app));
    json_object_set_new(m->doc, "config", config ? config : json_object());
    json_object_set_new(m->doc, "epochs", json_array());
}

/* Write the whole document to a temporary and rename it over the file. */
static int write_doc(rt_metrics *m, rt_error *err)
{
    char *text = json_dumps(m->doc, JSON_INDENT(1));
    if (!text)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot encode metrics", m->path);
    rt_outfile of;
    int rc = rt_outfile_open(&of, m->path, err);
    if (rc == 0 && rt_write_all(of.fp, text, strlen(text), m->path, err) == 0 &&
        rt_write_all(of.fp, "\n", 1, m->path, err) == 0)
        rc = rt_outfile_commit_unsynced(&of, err);
    else if (rc == 0) {
        rt_outfile_abort(&of);
        rc = -1;
    }
    free(text);
    m->last_write = rt_now();
    m->pending = 0;
    return rc;
}

int rt_metrics_epoch(rt_metrics *m, json_t *epoch, int last, rt_error *err)
{
    if (!m->doc) {
        json_decref(epoch);
        return 0;
    }
    double now = rt_now();
    json_object_set_new(epoch, "elapsed_s", json_real(now - m->t0));
    json_array_append_new(json_object_get(m->doc, "epochs"), epoch);
    json_object_set_new(m->doc, "peak_rss_kib", json_integer(rt_peak_rss_kib()));
    if (!last && m->last_write > 0 && now - m->last_write < RT_METRICS_EVERY_S) {
        m->pending = 1;
        return 0;
    }
    return write_doc(m, err);
}

int rt_metrics_flush(rt_metrics *m, rt_error *err)
{
    return m->doc && m->pending ? write_doc(m, err) : 0;
}

void rt_metrics_free(rt_metrics *m)
{
    rt_error err = {0};
    if (rt_metrics_flush(m, &err))
        rt_warn("%s", err.msg);
    json_decref(m->doc);
    m->doc = NULL;
}

/* metrics.c - see metrics.h. */
#include "apps/metrics.h"

#include <stdlib.h>
#include <string.h>

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

int rt_metrics_epoch(rt_metrics *m, json_t *epoch, rt_error *err)
{
    if (!m->doc) {
        json_decref(epoch);
        return 0;
    }
    json_object_set_new(epoch, "elapsed_s", json_real(rt_now() - m->t0));
    json_array_append_new(json_object_get(m->doc, "epochs"), epoch);
    json_object_set_new(m->doc, "peak_rss_kib", json_integer(rt_peak_rss_kib()));
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
    return rc;
}

void rt_metrics_free(rt_metrics *m)
{
    json_decref(m->doc);
    m->doc = NULL;
}

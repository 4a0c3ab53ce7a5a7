/* app_options.c - a command's options plus the chosen app's (see app_options.h). */
#include "tools/app_options.h"

#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 16

typedef char group_title[96];

/* own, then without an app every app's table with dest NULL (recognised,
 * values skipped); with one its table filling app_opts, then the other
 * apps' tables, refused with a message naming their app. */
static size_t app_groups(const rt_opt_group *own, size_t n_own, rt_opt_group *g,
                         group_title *titles, const rt_app_desc *app, void *app_opts)
{
    size_t n = 0;
    for (; n < n_own && n < MAX_GROUPS; n++)
        g[n] = own[n];
    if (app && n < MAX_GROUPS)
        g[n++] = (rt_opt_group){.title = app->name, .opts = app->options, .dest = app_opts};
    for (size_t i = 0; rt_apps[i] && n < MAX_GROUPS; i++) {
        if (!app) {
            snprintf(titles[i], sizeof(titles[i]), "%s options", rt_apps[i]->name);
            g[n++] = (rt_opt_group){.title = titles[i], .opts = rt_apps[i]->options};
        } else if (app != rt_apps[i]) {
            snprintf(titles[i], sizeof(titles[i]), "an option of --app %s, not of --app %s",
                     rt_apps[i]->name, app->name);
            g[n++] = (rt_opt_group){
                .title = rt_apps[i]->name, .opts = rt_apps[i]->options, .refuse = titles[i]};
        }
    }
    return n;
}

int parse_with_app(const rt_command_doc *doc, const rt_opt_group *own, size_t n_own,
                   const int *app_index, int argc, char **argv, void **app_opts, rt_error *err)
{
    rt_opt_group g[MAX_GROUPS];
    group_title titles[MAX_GROUPS];
    *app_opts = NULL;
    size_t n = app_groups(own, n_own, g, titles, NULL, NULL);
    int rc = rt_opts_parse(doc, g, n, argc, argv, NULL, err);
    if (rc)
        return rc;
    const rt_app_desc *app = rt_apps[*app_index];
    if (!(*app_opts = rt_app_opts_alloc(app)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    n = app_groups(own, n_own, g, titles, app, *app_opts);
    if (rt_opts_parse(doc, g, n, argc, argv, NULL, err) ||
        (app->opts_done && app->opts_done(*app_opts, err)))
        return -1;
    return 0;
}

const void *app_option_value(const rt_app_desc *app, const void *app_opts, const char *name)
{
    for (const rt_opt *o = app->options; o->name; o++)
        if (!strcmp(o->name, name))
            return (const char *)app_opts + o->offset;
    return NULL;
}

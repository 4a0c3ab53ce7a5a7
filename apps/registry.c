/* registry.c - the apps `rotor train --app` knows, and what tools reach
 * through them: plan side files and saved models. */
#include "apps/app_common.h"
#include "apps/mf_common.h"

#include <stdlib.h>
#include <string.h>

const rt_app_desc *const rt_apps[] = {&rt_app_sgd_mf, &rt_app_cd_mf, &rt_app_lda, NULL};

/* Value = index in rt_apps. */
const rt_opt_choice rt_app_choices[] = {{"sgd-mf", 0}, {"cd-mf", 1}, {"lda", 2}, {NULL, 0}};

const rt_app_desc *rt_app_find(const char *name)
{
    for (size_t i = 0; rt_apps[i]; i++)
        if (!strcmp(rt_apps[i]->name, name))
            return rt_apps[i];
    return NULL;
}

int rt_apps_plan_side_files(const char *tmp_dir, uint64_t plan_id, const rt_plan_input *in,
                            rt_error *err)
{
    for (size_t i = 0; rt_apps[i]; i++)
        if (rt_apps[i]->plan_app == in->app && rt_apps[i]->plan_side_files &&
            rt_apps[i]->plan_side_files(tmp_dir, plan_id, in, err))
            return -1;
    return 0;
}

/* The "app" of DIR/model.json. */
static int model_app(const char *dir, const rt_app_desc **app, rt_error *err)
{
    char path[4096];
    json_t *meta = rt_app_model_json(dir, path, err);
    if (!meta)
        return -1;
    json_t *a = json_is_object(meta) ? json_object_get(meta, "app") : NULL;
    const char *name = json_string_value(a);
    *app = name ? rt_app_find(name) : NULL;
    int rc = 0;
    if (!json_is_object(meta)) /* "[]" said "app" was missing */
        rc = rt_fail(err, RT_EXIT_INPUT, "%s: not a JSON object, not a model rotor can read", path);
    else if (!*app || !(*app)->model_load) /* the name, or why there is none */
        rc = name ? rt_fail(err, RT_EXIT_INPUT, "%s: \"app\" is '%s', not a model rotor can read",
                            path, name)
                  : rt_fail(err, RT_EXIT_INPUT, "%s: \"app\" is %s, not a model rotor can read",
                            path, a ? "not a string" : "missing");
    json_decref(meta);
    return rc;
}

int rt_model_open(const char *dir, rt_model *model, rt_error *err)
{
    memset(model, 0, sizeof(*model));
    const rt_app_desc *app;
    if (model_app(dir, &app, err))
        return -1;
    if (app->model_load(dir, &model->impl, err))
        return -1;
    model->app = app;
    return 0;
}

const rt_opt_choice rt_export_formats[] = {
    {"npy", RT_EXPORT_NPY}, {"libmf", RT_EXPORT_LIBMF}, {"text", RT_EXPORT_TEXT}, {NULL, 0}};

int rt_model_export(const char *dir, const rt_export_opts *o, rt_error *err)
{
    const rt_app_desc *app;
    if (model_app(dir, &app, err))
        return -1;
    if (!app->model_export)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %s models cannot be exported", dir, app->name);
    return app->model_export(dir, o, err);
}

void rt_model_close(rt_model *model)
{
    if (model->app && model->impl)
        model->app->model_free(model->impl);
    memset(model, 0, sizeof(*model));
}

void *rt_app_opts_alloc(const rt_app_desc *app)
{
    void *opts = calloc(1, app->opts_size);
    if (opts && app->opts_init)
        app->opts_init(opts);
    return opts;
}

int rt_app_parse(const rt_app_desc *app, int argc, char **argv, void **opts, rt_error *err)
{
    *opts = rt_app_opts_alloc(app);
    if (!*opts)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    rt_opt_group g = {.title = app->name, .opts = app->options, .dest = *opts};
    int rc = rt_opts_parse(NULL, &g, 1, argc, argv, NULL, err);
    if (rc == 0 && app->opts_done)
        rc = app->opts_done(*opts, err);
    if (rc) {
        free(*opts);
        *opts = NULL;
    }
    return rc;
}

const char *rt_apps_sgd_kernels(void)
{
    return "portable, avx2-fma (same bits)";
}

const char *rt_apps_sgd_kernel_best(void)
{
    return rt_mf_kernel_name(rt_mf_kernel_best());
}

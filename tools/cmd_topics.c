/* cmd_topics.c - `rotor topics --model DIR [--top N]`: the top words of each
 * topic of a model saved by `rotor train --app lda --out DIR`, as the app
 * that wrote it lists them (its model_topics hook; the lines of topics.txt). */
#include "apps/apps.h"
#include "tools/commands.h"

#include <stdlib.h>
#include <string.h>

typedef struct topics_opts {
    const char *model;
    uint32_t top;
} topics_opts;

static const rt_command_doc topics_doc = {
    .name = "topics",
    .summary = "print the top words of a trained LDA model",
    .usage = "--model DIR [--top N]",
    .about = "Print the N most frequent words of every topic of an LDA model saved by "
             "`rotor train --app lda --out DIR`, one line per topic: topic K (share of the "
             "tokens): words...",
};

static const rt_opt topics_options[] = {
    {.name = "model",
     .short_name = 'm',
     .type = RT_OPT_PATH,
     .flags = RT_OPT_REQUIRED | RT_OPT_DIR,
     .offset = offsetof(topics_opts, model),
     .metavar = "DIR",
     .help = "model directory written by rotor train --app lda --out"},
    {.name = "top",
     .short_name = 'n',
     .type = RT_OPT_U32,
     .offset = offsetof(topics_opts, top),
     .metavar = "N",
     .def = "10",
     .min = 1,
     .max = 1000000,
     .help = "words per topic"},
    {0}};

int cmd_topics(int argc, char **argv)
{
    rt_error err = {0};
    topics_opts o = {0};
    rt_opt_group g = {.opts = topics_options, .dest = &o};
    int rc = rt_opts_parse(&topics_doc, &g, 1, argc, argv, NULL, &err);
    if (rc < 0)
        rt_die(&err);
    if (rc == 1)
        return RT_EXIT_OK;
    const char *model = o.model;
    uint32_t top = o.top;
    rt_model m;
    if (rt_model_open(model, &m, &err))
        rt_die(&err);
    if (!m.app->model_topics)
        rt_fail(&err, RT_EXIT_INPUT,
                "%s: the model is from --app %s; rotor topics lists topic models", model,
                m.app->name);
    rc = m.app->model_topics ? m.app->model_topics(m.impl, top, stdout, &err) : -1;
    rt_model_close(&m);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}

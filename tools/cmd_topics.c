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

static const rt_opt topics_options[] = {
    ROTOR_MODEL_OPT(topics_opts, model, "rotor train --app lda --out"),
    RT_U32_OPT("top", 'n', topics_opts, top, "N", "10", 1, 1000000, 0, "words per topic"),
    {0}};

int cmd_topics(int argc, char **argv)
{
    rt_error err = {0};
    topics_opts o = {0};
    if (rotor_parse_options(&rotor_doc_topics, topics_options, &o, argc, argv))
        return RT_EXIT_OK;
    rt_model m;
    if (rt_model_open(o.model, &m, &err))
        rt_die(&err);
    int rc = m.app->model_topics
                 ? m.app->model_topics(m.impl, o.top, stdout, &err)
                 : rt_fail(&err, RT_EXIT_INPUT,
                           "%s: the model is from --app %s; rotor topics lists topic models",
                           o.model, m.app->name);
    rt_model_close(&m);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}

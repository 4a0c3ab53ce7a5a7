/* cmd_topics.c - `rotor topics --model DIR [--top N]`: the top words of each
 * topic of a model saved by `rotor train --app lda --out DIR`, as the app
 * that wrote it lists them (its model_topics hook; the lines of topics.txt). */
#include "apps/apps.h"
#include "tools/commands.h"

#include <stdlib.h>
#include <string.h>

int cmd_topics(int argc, char **argv)
{
    rt_error err = {0};
    const char *model = NULL;
    int top = 10;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: rotor topics --model DIR [--top N]\n"
                   "Print the N (default 10) most frequent words of every topic of an LDA\n"
                   "model saved by rotor train --app lda --out DIR, one line per topic:\n"
                   "topic K (share of the tokens): words...\n");
            return RT_EXIT_OK;
        } else if (rt_opt_is(argv[i], "--model")) {
            if (!(v = rt_opt_value(argc, argv, &i, &err)))
                rt_die(&err);
            model = v;
        } else if (rt_opt_is(argv[i], "--top")) {
            if (!(v = rt_opt_value(argc, argv, &i, &err)))
                rt_die(&err);
            if (rt_parse_int(v, &top) || top < 1) {
                rt_fail(&err, RT_EXIT_INPUT, "--top must be a positive integer, got '%s'", v);
                rt_die(&err);
            }
        } else {
            rt_fail(&err, RT_EXIT_INPUT, "topics: unknown option %s", argv[i]);
            rt_die(&err);
        }
    }
    if (!model) {
        rt_fail(&err, RT_EXIT_INPUT, "topics: --model DIR is required");
        rt_die(&err);
    }
    rt_model m;
    if (rt_model_open(model, &m, &err))
        rt_die(&err);
    if (!m.app->model_topics)
        rt_fail(&err, RT_EXIT_INPUT,
                "%s: the model is from --app %s; rotor topics lists topic models", model,
                m.app->name);
    int rc = m.app->model_topics ? m.app->model_topics(m.impl, (uint32_t)top, stdout, &err) : -1;
    rt_model_close(&m);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}

/* rotor.c - the `rotor` command: dispatch to subcommands. */
#include "tools/commands.h"
#include "tools/tuning_env.h"
#include "ground/ground.h"

#include <stdio.h>
#include <string.h>

static const char *const gen_subs[] = {"mf", "lda", NULL};

const rotor_command rotor_commands[] = {
    {"gen", cmd_gen, "generate data with planted structure (gen mf | gen lda)", gen_subs},
    {"partition", cmd_partition, "cut data into blocks and precompute the rotation schedule", NULL},
    {"train", cmd_train, "train a model by following a plan (sgd-mf, cd-mf, lda)", NULL},
    {"launch", cmd_launch, "start P local processes of a command on loopback", NULL},
    {"eval", cmd_eval, "score a saved MF model on a ratings file", NULL},
    {"recommend", cmd_recommend, "the K best items for each user of a saved MF model", NULL},
    {"topics", cmd_topics, "print the top words of a trained LDA model", NULL},
    {"infer", cmd_infer, "topic mixtures of new documents under a trained LDA model", NULL},
    {"export", cmd_export, "merge a saved model's per-rank parts into single files", NULL},
    {"plot", cmd_plot, "convergence curves of training runs (--metrics files) as PNG or SVG", NULL},
    {"bench-link", cmd_bench_link, "latency and bandwidth of the transport (like perftest)", NULL},
    {"simulate", cmd_simulate, "predict epoch time, stall and traffic of a schedule on N nodes",
     NULL},
    {"help", cmd_help, "help, man pages (--man) and bash completion (--completion)", NULL},
    {NULL, NULL, NULL, NULL}};

void rotor_usage(FILE *fp)
{
    fprintf(fp, "usage: rotor COMMAND [OPTIONS]\n"
                "       rotor --version\n\n"
                "Scheduled model-parallel training of matrix factorisation and LDA.\n\n"
                "commands:\n");
    for (const rotor_command *c = rotor_commands; c->name; c++)
        fprintf(fp, "  %-11s %s\n", c->name, c->summary);
    fprintf(fp, "\n'rotor COMMAND --help' describes each command.\n");
}

int rotor_parse_options(const rt_command_doc *doc, const rt_opt *table, void *dest, int argc,
                        char **argv)
{
    rt_error err = {0};
    rt_opt_group g = {.opts = table, .dest = dest};
    int rc = rt_opts_parse(doc, &g, 1, argc, argv, NULL, &err);
    if (rc < 0)
        rt_die(&err);
    return rc;
}

int rotor_dispatch(const rotor_command *cmds, void (*usage)(FILE *fp), int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return RT_EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return RT_EXIT_OK;
    }
    for (const rotor_command *c = cmds; c->name; c++)
        if (!strcmp(argv[1], c->name))
            return c->run(argc - 1, argv + 1);
    return -1;
}

int main(int argc, char **argv)
{
    rt_env_apply_log_level();
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
        return cmd_version();
    int rc = rotor_dispatch(rotor_commands, rotor_usage, argc, argv);
    if (rc < 0) {
        fprintf(stderr, "rotor: unknown command '%s'\n", argv[1]);
        rotor_usage(stderr);
        rc = RT_EXIT_INPUT;
    }
    return rc;
}

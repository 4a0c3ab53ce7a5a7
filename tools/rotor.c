/* rotor.c - the `rotor` command: dispatch to subcommands. */
#include "tools/commands.h"
#include "tools/tuning_env.h"
#include "ground/ground.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"gen", cmd_gen, "generate data with planted structure (gen mf | gen lda)"},
    {"partition", cmd_partition, "cut data into blocks and precompute the rotation schedule"},
    {"train", cmd_train, "train a model by following a plan (sgd-mf, cd-mf, lda)"},
    {"launch", cmd_launch, "start P local processes of a command on loopback"},
    {"eval", cmd_eval, "score a saved MF model on a ratings file"},
    {"topics", cmd_topics, "print the top words of a trained LDA model"},
    {"plot", cmd_plot, "convergence curves of training runs (--metrics files) as PNG or SVG"},
    {"bench-link", cmd_bench_link, "latency and bandwidth of the transport (like perftest)"},
    {"simulate", cmd_simulate, "predict epoch time, stall and traffic of a schedule on N nodes"},
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: rotor COMMAND [OPTIONS]\n\n"
                "Scheduled model-parallel training of matrix factorisation and LDA.\n\n"
                "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(fp, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "\n'rotor COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
    rt_env_apply_log_level();
    if (argc < 2) {
        usage(stderr);
        return RT_EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return RT_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("rotor 0.1.0\n");
        return RT_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "rotor: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return RT_EXIT_INPUT;
}

/* rotor.c - the `rotor` command: dispatch to the subcommands of the table
 * in commands.c. */
#include "tools/commands.h"
#include "tools/tuning_env.h"
#include "ground/ground.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rotor_usage(FILE *fp)
{
    fprintf(fp, "usage: rotor COMMAND [OPTIONS]\n"
                "       rotor --version\n\n"
                "Scheduled model-parallel training of matrix factorisation and LDA.\n\n"
                "commands:\n");
    for (const rotor_command *c = rotor_commands; c->name; c++)
        fprintf(fp, "  %-11s %s\n", c->name, c->doc->summary);
    fprintf(fp, "\n'rotor COMMAND --help' describes each command.\n");
}

void rt_die(const rt_error *err)
{
    char line[4 * sizeof(err->msg) + 8];
    rt_one_line(line, sizeof(line), err->msg);
    fflush(stdout);
    fprintf(stderr, "rotor: error: %s\n", line);
    exit(err->code ? err->code : RT_EXIT_RUNTIME);
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

/* A standard stream the caller closed ('rotor ... >&-') would be the first
 * file rotor opens, and "-" or a message would then write into that file
 * (a model part, a plan).  Fill the gap with /dev/null opened the wrong way
 * round: reads of a closed stdin and writes to a closed stdout then fail
 * with a message, as they would have, and touch nothing. */
static void fill_closed_standard_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* no /dev/null (or got another fd, which cannot happen: the lowest
         * free fd is fd): the gap would stay open, so stop here */
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got != fd) {
            if (got >= 0)
                close(got);
            _exit(RT_EXIT_RUNTIME);
        }
    }
}

/* What a command printed (a score, topics, a summary, help) is its result:
 * if it could not be written (`rotor eval ... >/dev/full`, a full disk) the
 * run failed, though the command returned 0 before stdio flushed at exit. */
static int stdout_written(int rc)
{
    int flush_failed = fflush(stdout) != 0;
    int e = errno;
    if (rc != RT_EXIT_OK || (!flush_failed && !ferror(stdout)))
        return rc; /* a failed run has already said why */
    rt_error err;
    if (flush_failed)
        rt_fail_errno(&err, RT_EXIT_RUNTIME, e, "standard output: write failed");
    else
        rt_fail(&err, RT_EXIT_RUNTIME, "standard output: write failed");
    rt_die(&err);
}

int main(int argc, char **argv)
{
    fill_closed_standard_fds(); /* before anything opens a file */
    rt_env_apply_log_level();
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
        return stdout_written(cmd_version());
    int rc = rotor_dispatch(rotor_commands, rotor_usage, argc, argv);
    if (rc < 0) {
        /* one line, as for every other bad input */
        rt_error err;
        rt_fail(&err, RT_EXIT_INPUT, "unknown command '%s' (see 'rotor --help')", argv[1]);
        rt_die(&err); /* one line, even for a name holding a newline */
    }
    return stdout_written(rc);
}

/* cmd_gen.c - `rotor gen mf|lda`: dispatch to the generators in gen_*.c. */
#include "tools/commands.h"
#include "ground/ground.h"
#include "tools/gen.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const rotor_command generators[] = {{"mf", gen_mf_main, &rotor_doc_gen_mf, NULL},
                                           {"lda", gen_lda_main, &rotor_doc_gen_lda, NULL},
                                           {NULL, NULL, NULL, NULL}};

static void usage(FILE *fp)
{
    for (const rotor_command *g = generators; g->name; g++)
        fprintf(fp, "%s rotor gen %-3s [OPTIONS]   %s\n", g == generators ? "usage:" : "      ",
                g->name, g->doc->summary);
    fprintf(fp, "\n'rotor gen mf --help' and 'rotor gen lda --help' list the options.\n");
}

int gen_companions(const char *out)
{
    struct stat sb;
    return !rt_is_stdio(out) && (stat(out, &sb) != 0 || S_ISREG(sb.st_mode));
}

int cmd_gen(int argc, char **argv)
{
    int rc = rotor_dispatch(generators, usage, argc, argv);
    if (rc < 0) {
        fprintf(stderr, "rotor: error: gen: unknown generator '%s' (mf or lda)\n", argv[1]);
        rc = RT_EXIT_INPUT;
    }
    return rc;
}

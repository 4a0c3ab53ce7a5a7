/* cmd_gen.c - `rotor gen mf|lda`: dispatch to the generators in gen_*.c. */
#include "tools/commands.h"
#include "ground/ground.h"
#include "tools/gen.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: rotor gen mf  [OPTIONS]   planted low-rank ratings (triplets)\n"
                "       rotor gen lda [OPTIONS]   planted-topic documents\n\n"
                "'rotor gen mf --help' and 'rotor gen lda --help' list the options.\n");
}

int cmd_gen(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return RT_EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return RT_EXIT_OK;
    }
    if (!strcmp(argv[1], "mf"))
        return gen_mf_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "lda"))
        return gen_lda_main(argc - 1, argv + 1);
    fprintf(stderr, "rotor: error: gen: unknown generator '%s' (mf or lda)\n", argv[1]);
    return RT_EXIT_INPUT;
}

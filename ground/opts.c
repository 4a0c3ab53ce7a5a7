/* opts.c - the two helpers every command's option loop uses. */
#include "ground/ground.h"

#include <string.h>

int rt_opt_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

const char *rt_opt_value(int argc, char **argv, int *i, rt_error *err)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq && !strncmp(argv[*i], "--", 2))
        return eq + 1;
    if (*i + 1 >= argc) {
        rt_fail(err, RT_EXIT_INPUT, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

/* app_options.h - parsing a command line that carries a command's own
 * options and the options of the app chosen by --app (`rotor train`,
 * `rotor simulate`): the app's table lives with the app (apps/apps.h). */
#ifndef ROTOR_TOOLS_APP_OPTIONS_H
#define ROTOR_TOOLS_APP_OPTIONS_H

#include "apps/apps.h"

/* Parse argv with the command's groups `own` (one of them fills *app_index
 * from an --app option with rt_app_choices) followed by the apps' tables.
 * Two passes: the first learns --app and prints --help with every app's
 * options; the second fills a new options struct of that app (*app_opts,
 * free() it; also on failure) and refuses the other apps' options by name.
 * Returns 0, 1 (help printed) or -1 with err. */
int parse_with_app(const rt_command_doc *doc, const rt_opt_group *own, size_t n_own,
                   const int *app_index, int argc, char **argv, void **app_opts, rt_error *err);

/* The value of the app option `name` in parsed app options (for a command
 * that needs one, e.g. simulate reads lda's --topics), or NULL. */
const void *app_option_value(const rt_app_desc *app, const void *app_opts, const char *name);

#endif

/* cmd_export.c - `rotor export --model DIR --out OUT [--format npy|libmf|text]`:
 * merge the per-rank parts of a saved model into single files, as the app
 * that wrote the model lays them out (its model_export hook). */
#include "apps/apps.h"
#include "tools/commands.h"
#include "tools/guard.h"

#include <stdlib.h>
#include <string.h>

typedef struct export_cmd_opts {
    const char *model, *out;
    int format;
    uint64_t memory_mb;
    int quiet;
} export_cmd_opts;

static const rt_opt export_options[] = {
    ROTOR_MODEL_OPT(export_cmd_opts, model, "rotor train --out"),
    RT_PATH_OPT("out", 'o', export_cmd_opts, out, "OUT", NULL, RT_OPT_REQUIRED | RT_OPT_DIR,
                "directory to write (new, empty, or a model it replaces as a whole)"),
    RT_ENUM_OPT("format", 'f', export_cmd_opts, format, rt_export_formats, "npy", "what to write"),
    RT_U64_OPT("memory", 0, export_cmd_opts, memory_mb, "MB", "256", 1, 1048576, 0,
               "megabytes of buffers for merging (more: fewer passes over the parts)"),
    RT_FLAG_OPT("quiet", 'q', export_cmd_opts, quiet, "no progress on standard error"),
    {0}};

int cmd_export(int argc, char **argv)
{
    export_cmd_opts o = {0};
    rt_error err = {0};
    if (rotor_parse_options(&rotor_doc_export, export_options, &o, argc, argv))
        return RT_EXIT_OK;
    if (o.quiet) /* progress and notes off; warnings and errors stay */
        rt_log_level = RT_LOG_WARN;
    if (rt_same_file(o.out, o.model)) { /* the swap would replace the model being exported */
        rt_fail(&err, RT_EXIT_INPUT, "%s: --out is the --model directory itself; give a new one",
                o.out);
        rt_die(&err);
    }
    if (rt_check_input_outside(o.model, "model", o.out, &err) ||
        rt_check_out_not_inside_output(o.out, "out", &err))
        rt_die(&err);
    rt_export_opts eo = {
        .out = o.out, .format = o.format, .memory = o.memory_mb << 20, .quiet = o.quiet};
    rt_guard_output(o.out); /* an interrupted export leaves no OUT.tmp-* */
    if (rt_guard_start(&err) < 0 || rt_model_export(o.model, &eo, &err))
        rt_guard_die(&err);
    return RT_EXIT_OK;
}

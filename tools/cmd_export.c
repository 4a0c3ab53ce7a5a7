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

static const rt_command_doc export_doc = {
    .name = "export",
    .summary = "merge a saved model's per-rank parts into single files",
    .usage = "--model DIR --out OUT [--format npy|libmf|text] [--memory MB] [--quiet]",
    .about = "`rotor train --out DIR` saves a model as per-rank part files plus a manifest "
             "(model.json).  Export merges the parts, streaming within --memory, into OUT:\n\n"
             "npy: the single-file model: W.npy, H.npy, row_bias.npy, col_bias.npy (MF) or "
             "word_topic.npy, topic_word.npy, doc_topic.npy, topics.txt (LDA), in dense id order, "
             "with the id files and model.json; numpy.load opens the matrices and rotor eval and "
             "rotor topics read OUT like DIR.\n\n"
             "libmf: LIBMF's model text (model.txt; MF only).  Row i is dense id i (line i of "
             "rows.ids); a model with biases gets two more factor columns, (b_u, 1) and (1, b_i), "
             "and b = mu.\n\n"
             "text: one line per row, the original id then the values (W.txt, H.txt, ... or "
             "word_topic.txt, doc_topic.txt).",
};

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
    if (rotor_parse_options(&export_doc, export_options, &o, argc, argv))
        return RT_EXIT_OK;
    if (o.quiet) /* progress and notes off; warnings and errors stay */
        rt_log_level = RT_LOG_WARN;
    rt_export_opts eo = {
        .out = o.out, .format = o.format, .memory = o.memory_mb << 20, .quiet = o.quiet};
    rt_guard_output(o.out); /* an interrupted export leaves no OUT.tmp-* */
    if (rt_guard_start(&err) < 0 || rt_model_export(o.model, &eo, &err))
        rt_guard_die(&err);
    return RT_EXIT_OK;
}

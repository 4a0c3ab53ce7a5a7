/* cmd_export.c - `rotor export --model DIR --out OUT [--format npy|libmf|text]`:
 * merge the per-rank parts of a saved model into single files, as the app
 * that wrote the model lays them out (its model_export hook). */
#include "apps/apps.h"
#include "tools/commands.h"

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
    {.name = "model",
     .short_name = 'm',
     .type = RT_OPT_PATH,
     .flags = RT_OPT_REQUIRED | RT_OPT_DIR,
     .offset = offsetof(export_cmd_opts, model),
     .metavar = "DIR",
     .help = "model directory written by rotor train --out"},
    {.name = "out",
     .short_name = 'o',
     .type = RT_OPT_PATH,
     .flags = RT_OPT_REQUIRED | RT_OPT_DIR,
     .offset = offsetof(export_cmd_opts, out),
     .metavar = "OUT",
     .help = "directory to write (new, empty, or a model it replaces as a whole)"},
    {.name = "format",
     .short_name = 'f',
     .type = RT_OPT_ENUM,
     .offset = offsetof(export_cmd_opts, format),
     .def = "npy",
     .choices = rt_export_formats,
     .help = "what to write"},
    {.name = "memory",
     .type = RT_OPT_U64,
     .offset = offsetof(export_cmd_opts, memory_mb),
     .metavar = "MB",
     .def = "256",
     .min = 1,
     .max = 1048576,
     .help = "megabytes of buffers for merging (more: fewer passes over the parts)"},
    {.name = "quiet",
     .short_name = 'q',
     .type = RT_OPT_FLAG,
     .offset = offsetof(export_cmd_opts, quiet),
     .help = "no progress on standard error"},
    {0}};

int cmd_export(int argc, char **argv)
{
    export_cmd_opts o = {0};
    rt_error err = {0};
    rt_opt_group g = {.opts = export_options, .dest = &o};
    int rc = rt_opts_parse(&export_doc, &g, 1, argc, argv, NULL, &err);
    if (rc < 0)
        rt_die(&err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (o.quiet) /* progress and notes off; warnings and errors stay */
        rt_log_level = RT_LOG_WARN;
    rt_export_opts eo = {
        .out = o.out, .format = o.format, .memory = o.memory_mb << 20, .quiet = o.quiet};
    if (rt_model_export(o.model, &eo, &err))
        rt_die(&err);
    return RT_EXIT_OK;
}

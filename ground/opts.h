/*
 * opts.h - command-line options from one table per command (included by
 * ground.h).
 *
 * Each command, and each app for `rotor train`, describes its options once
 * in a table of rt_opt: long name, short form, type, range, default,
 * metavar and help line, and where the value goes (an offset into the
 * command's options struct).  The parser, `--help`, the man pages and the
 * shell completion are all generated from these tables, so they cannot
 * drift apart.
 *
 * Syntax: "--name value", "--name=value", "-k value", "-kvalue"; flags take
 * no value; a repeated option overrides the earlier one (last wins, as with
 * getopt); "--" ends the options.  A value is checked against its type and
 * range whole: "12x", an overflowing number or a value outside the range is
 * an error naming the option and the range, exit code 2.
 */
#ifndef ROTOR_GROUND_OPTS_H
#define ROTOR_GROUND_OPTS_H

#include <stddef.h>
#include <stdio.h>

struct rt_error;

typedef enum rt_opt_type {
    RT_OPT_FLAG,   /* no value: sets an int to 1 */
    RT_OPT_UNSET,  /* no value: sets an int to 0 (for --no-X options) */
    RT_OPT_INT,    /* int: decimal, optional sign */
    RT_OPT_U32,    /* uint32_t: decimal */
    RT_OPT_U64,    /* uint64_t: decimal with an optional k, M or G (x 10^3, 10^6, 10^9) */
    RT_OPT_DOUBLE, /* double: finite */
    RT_OPT_STRING, /* const char *: points into argv */
    RT_OPT_PATH,   /* const char *: a file (or with RT_OPT_DIR a directory) name */
    RT_OPT_ENUM,   /* int: the value of the rt_opt_choice named */
} rt_opt_type;

enum {
    RT_OPT_REQUIRED = 1 << 0, /* the command cannot run without it */
    RT_OPT_MIN_OPEN = 1 << 1, /* DOUBLE: the range excludes min ("> 0") */
    RT_OPT_MAX_OPEN = 1 << 2, /* DOUBLE: the range excludes max ("< 1") */
    RT_OPT_DIR = 1 << 3,      /* PATH: names a directory */
};

/* The longest path an RT_OPT_PATH option takes, in bytes: PATH_MAX (4096)
 * less a NUL, a '/' and the longest file name (255), so that every name
 * rotor makes under it (DIR/plan.json, OUT.truth.json, ...) fits the
 * 4096-byte buffers it is built in, never cut to another file's name. */
#define RT_OPT_PATH_MAX 3839

typedef struct rt_opt_choice {
    const char *name; /* NULL ends a list */
    int value;
} rt_opt_choice;

typedef struct rt_opt {
    const char *name;             /* long name without the dashes; NULL ends a table */
    char short_name;              /* 'o' for -o; 0 for none */
    rt_opt_type type;             /* what the value is */
    size_t offset;                /* where it goes: offsetof(options struct, field) */
    const char *metavar;          /* "K", "DIR"; NULL for flags (enums show their choices) */
    const char *def;              /* the default as typed on a command line; NULL: none,
                                     computed (then the help line says how), or set in
                                     the struct by the command before parsing (then
                                     --help shows the field's value when it is in range) */
    double min, max;              /* numbers: the accepted range, inclusive unless
                                     RT_OPT_MIN_OPEN / RT_OPT_MAX_OPEN; min == max == 0
                                     means the type's whole range */
    unsigned flags;               /* RT_OPT_REQUIRED, ... */
    const rt_opt_choice *choices; /* ENUM: the names accepted */
    const char *help;             /* one sentence; --help adds range and default */
} rt_opt;

/*
 * Table entries, one per option, so that a table reads like getopt's long
 * options: the long name, the short form (0 for none), where the value goes
 * (the options struct and its field, which may be nested: mf.rank), what
 * the type needs, and the help line.  DEF is the default as typed on a
 * command line (NULL: none, or computed); LO and HI are a number's range
 * (both 0: the type's whole range); FLAGS are RT_OPT_REQUIRED, ... (0: none).
 *
 *   RT_U32_OPT("threads", 't', train_opts, threads, "T", "1", 1, 4096, 0, "worker threads"),
 */
#define RT_OPT_ENTRY(type_, name_, short_, st_, field_, metavar_, def_, lo_, hi_, flags_,          \
                     choices_, help_)                                                              \
    {                                                                                              \
        .name = (name_), .short_name = (short_), .type = (type_), .offset = offsetof(st_, field_), \
        .metavar = (metavar_), .def = (def_), .min = (lo_), .max = (hi_), .flags = (flags_),       \
        .choices = (choices_), .help = (help_)                                                     \
    }

/* A flag sets its int field to 1; an unset option (--no-X, --unweighted)
 * clears an int field that starts at 1. */
#define RT_FLAG_OPT(name, short_name, st, field, help)                                             \
    RT_OPT_ENTRY(RT_OPT_FLAG, name, short_name, st, field, NULL, NULL, 0, 0, 0, NULL, help)
#define RT_UNSET_OPT(name, short_name, st, field, help)                                            \
    RT_OPT_ENTRY(RT_OPT_UNSET, name, short_name, st, field, NULL, "1", 0, 0, 0, NULL, help)

/* Numbers: int, uint32_t, uint64_t (k/M/G suffixes) and double. */
#define RT_INT_OPT(name, short_name, st, field, metavar, def, lo, hi, flags, help)                 \
    RT_OPT_ENTRY(RT_OPT_INT, name, short_name, st, field, metavar, def, lo, hi, flags, NULL, help)
#define RT_U32_OPT(name, short_name, st, field, metavar, def, lo, hi, flags, help)                 \
    RT_OPT_ENTRY(RT_OPT_U32, name, short_name, st, field, metavar, def, lo, hi, flags, NULL, help)
#define RT_U64_OPT(name, short_name, st, field, metavar, def, lo, hi, flags, help)                 \
    RT_OPT_ENTRY(RT_OPT_U64, name, short_name, st, field, metavar, def, lo, hi, flags, NULL, help)
#define RT_DOUBLE_OPT(name, short_name, st, field, metavar, def, lo, hi, flags, help)              \
    RT_OPT_ENTRY(RT_OPT_DOUBLE, name, short_name, st, field, metavar, def, lo, hi, flags, NULL,    \
                 help)

/* Text: a string, or a path (RT_OPT_DIR in flags: a directory). */
#define RT_STRING_OPT(name, short_name, st, field, metavar, def, flags, help)                      \
    RT_OPT_ENTRY(RT_OPT_STRING, name, short_name, st, field, metavar, def, 0, 0, flags, NULL, help)
#define RT_PATH_OPT(name, short_name, st, field, metavar, def, flags, help)                        \
    RT_OPT_ENTRY(RT_OPT_PATH, name, short_name, st, field, metavar, def, 0, 0, flags, NULL, help)

/* One of a list of names (CHOICES, an rt_opt_choice array). */
#define RT_ENUM_OPT(name, short_name, st, field, choices, def, help)                               \
    RT_OPT_ENTRY(RT_OPT_ENUM, name, short_name, st, field, NULL, def, 0, 0, 0, choices, help)

/* A table and the struct it fills. */
typedef struct rt_opt_group {
    const char *title; /* heading in --help; NULL = "options" */
    const rt_opt *opts;
    void *dest;         /* NULL: options are recognised and their values skipped
                           unchecked (to find one option before the rest is known,
                           e.g. --app) */
    const char *refuse; /* non-NULL: giving one of these options is an error
                           "--NAME is <refuse>" (an option of another app) */
} rt_opt_group;

/* What --help and the man page say around the option tables. */
typedef struct rt_command_doc {
    const char *name;    /* "train", "gen mf": the command is "rotor NAME" */
    const char *summary; /* one line, no period */
    const char *usage;   /* synopsis after "rotor NAME"; '\n' separates forms */
    const char *about;   /* description; '\n\n' separates paragraphs */
    const char *notes;   /* after the options, or NULL */
    /* Shell lines a user can paste, '\n' between lines, or NULL: printed as
     * they are (no wrapping; a long command continues with " \\").  They
     * run in one directory, command after command in `rotor --help`'s
     * order, each on the files the earlier ones wrote (tests/e2e/help_examples.sh). */
    const char *examples;
} rt_command_doc;

/* Parse argv[1..argc-1] into the groups' structs, after setting every option
 * that has a default to it (fields of options without one are left as the
 * caller initialised them).  Options are looked up group by group, first
 * match wins.  "-h" and "--help" print the help of doc and the groups to
 * stdout and return 1.  With first_arg NULL an argument that is not an
 * option is an error; otherwise parsing stops at the first one (or after
 * "--") and *first_arg is its index (argc when there is none).
 * Returns 0, 1 (help printed) or -1 with err (exit code 2): an unknown option
 * (with the closest known name), a missing or bad value, a missing required
 * option.  "--help=man" and "--help=bash" print rt_opts_man and
 * rt_opts_completion instead of the help text. */
int rt_opts_parse(const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups, int argc,
                  char **argv, int *first_arg, struct rt_error *err);

/* rt_opts_parse for a command that takes operands (files) as well as
 * options, in any order: every argument that is not an option, wherever it
 * stands, and every argument after "--", goes in order to operands (argc
 * entries are always enough), their count to *n_operands.  "-" alone is an
 * operand (standard input).  The same return values. */
int rt_opts_parse_operands(const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups,
                           int argc, char **argv, const char **operands, int *n_operands,
                           struct rt_error *err);

/* The --help text: usage, about, every group's options, notes. */
void rt_opts_help(FILE *fp, const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups);

/* The same as a man page (roff, section 1): NAME, SYNOPSIS, DESCRIPTION,
 * OPTIONS (a subsection per group), NOTES.  `--help=man` prints it. */
void rt_opts_man(FILE *fp, const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups);

/* The body of a bash completion function (cur and prev set): the choices,
 * files or directories after an option that takes one, else the option
 * names.  `--help=bash` prints it. */
void rt_opts_completion(FILE *fp, const rt_opt_group *groups, size_t n_groups);

/* One option's accepted range as text ("1..4096", ">= 1", "(0, 1]"), or ""
 * for options without one. */
void rt_opt_range_text(const rt_opt *o, char *buf, size_t cap);

#endif

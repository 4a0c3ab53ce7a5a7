/* opts.c - the option parser and the --help text, driven by rt_opt tables
 * (see opts.h). */
#include "ground/ground.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 80
#define HELP_COLUMN 24 /* where the help lines start */

/* ------------------------------------------------------------ lookup */

typedef struct found {
    const rt_opt_group *group;
    const rt_opt *opt;
} found;

static int find_long(const rt_opt_group *g, size_t n, const char *name, size_t len, found *f)
{
    for (size_t i = 0; i < n; i++)
        for (const rt_opt *o = g[i].opts; o->name; o++)
            if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
                f->group = &g[i];
                f->opt = o;
                return 1;
            }
    return 0;
}

static int find_short(const rt_opt_group *g, size_t n, char c, found *f)
{
    for (size_t i = 0; i < n; i++)
        for (const rt_opt *o = g[i].opts; o->name; o++)
            if (o->short_name == c) {
                f->group = &g[i];
                f->opt = o;
                return 1;
            }
    return 0;
}

static int takes_value(const rt_opt *o)
{
    return o->type != RT_OPT_FLAG && o->type != RT_OPT_UNSET;
}

/* Edit distance (insert, delete, substitute), capped at 9 for long names. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 9;
    int row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The known name closest to `name` when it is close enough to be a typo or
 * an abbreviation, else NULL. */
static const char *closest_name(const rt_opt_group *g, size_t n, const char *name)
{
    const char *best = NULL;
    int best_d = 3;
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        for (const rt_opt *o = g[i].opts; o->name; o++) {
            int d = edit_distance(name, o->name);
            if (len >= 3 && !strncmp(o->name, name, len))
                d = 1; /* a prefix: --thread for --threads */
            if (d < best_d) {
                best_d = d;
                best = o->name;
            }
        }
    if (!best && edit_distance(name, "help") < 3)
        best = "help";
    return best;
}

/* ------------------------------------------------------------ values */

static int type_bounds(rt_opt_type t, double *lo, double *hi)
{
    switch (t) {
    case RT_OPT_INT:
        *lo = INT_MIN, *hi = INT_MAX;
        return 1;
    case RT_OPT_U32:
        *lo = 0, *hi = UINT32_MAX;
        return 1;
    case RT_OPT_U64:
        *lo = 0, *hi = (double)UINT64_MAX;
        return 1;
    default:
        *lo = -HUGE_VAL, *hi = HUGE_VAL;
        return 0;
    }
}

void rt_opt_range_text(const rt_opt *o, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (o->type != RT_OPT_INT && o->type != RT_OPT_U32 && o->type != RT_OPT_U64 &&
        o->type != RT_OPT_DOUBLE)
        return;
    double tlo, thi;
    int integer = type_bounds(o->type, &tlo, &thi);
    double lo = o->min, hi = o->max;
    if (lo == 0 && hi == 0)
        lo = tlo, hi = thi;
    int has_lo = lo > tlo, has_hi = hi < thi;
    int open_lo = (o->flags & RT_OPT_MIN_OPEN) != 0, open_hi = (o->flags & RT_OPT_MAX_OPEN) != 0;
    if (integer && has_hi)
        snprintf(buf, cap, "%.17g..%.17g", lo, hi);
    else if (has_lo && has_hi)
        snprintf(buf, cap, "%c%.17g, %.17g%c", open_lo ? '(' : '[', lo, hi, open_hi ? ')' : ']');
    else if (has_lo)
        snprintf(buf, cap, "%s %.17g", open_lo ? ">" : ">=", lo);
    else if (has_hi)
        snprintf(buf, cap, "%s %.17g", open_hi ? "<" : "<=", hi);
}

static int in_range(const rt_opt *o, double v)
{
    double tlo, thi;
    type_bounds(o->type, &tlo, &thi);
    double lo = o->min, hi = o->max;
    if (lo == 0 && hi == 0)
        lo = tlo, hi = thi;
    if ((o->flags & RT_OPT_MIN_OPEN) ? !(v > lo) : !(v >= lo))
        return 0;
    if ((o->flags & RT_OPT_MAX_OPEN) ? !(v < hi) : !(v <= hi))
        return 0;
    return 1;
}

/* The whole range of an integer type, which --help does not print (a
 * --seed of "-1" said "is out of range " and stopped there). */
static void type_range_text(rt_opt_type t, char *buf, size_t cap)
{
    if (t == RT_OPT_INT)
        snprintf(buf, cap, "%d..%d", INT_MIN, INT_MAX);
    else if (t == RT_OPT_U32)
        snprintf(buf, cap, "0..%" PRIu32, UINT32_MAX);
    else if (t == RT_OPT_U64)
        snprintf(buf, cap, "0..%" PRIu64, UINT64_MAX);
}

static int out_of_range(const rt_opt *o, const char *v, rt_error *err)
{
    char range[96];
    rt_opt_range_text(o, range, sizeof(range));
    if (!range[0])
        type_range_text(o->type, range, sizeof(range));
    return rt_fail(err, RT_EXIT_INPUT, "--%s: %s is out of range %s", o->name, v, range);
}

/* A decimal integer: optional sign, digits, and for U64 an optional k, M or
 * G.  *over is set when the magnitude does not fit in 64 bits. */
static int parse_integer(const char *s, int suffix, int *neg, uint64_t *mag, int *over)
{
    *neg = *s == '-';
    *over = 0;
    if (*s == '-' || *s == '+')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            *over = 1;
        else
            v = v * 10 + d;
    }
    uint64_t mul = 1;
    if (suffix && (*s == 'k' || *s == 'K'))
        mul = 1000, s++;
    else if (suffix && *s == 'M')
        mul = 1000000, s++;
    else if (suffix && *s == 'G')
        mul = 1000000000, s++;
    if (*s)
        return -1;
    if (v > UINT64_MAX / mul)
        *over = 1;
    *mag = *over ? 0 : v * mul;
    return 0;
}

static int store_integer(const rt_opt *o, const char *v, void *field, rt_error *err)
{
    int neg, over;
    uint64_t mag;
    if (parse_integer(v, o->type == RT_OPT_U64, &neg, &mag, &over))
        return rt_fail(
            err, RT_EXIT_INPUT, "--%s: '%s' is not an integer%s", o->name, v,
            o->type == RT_OPT_U64 ? " (a k, M or G suffix multiplies by 10^3, 10^6, 10^9)" : "");
    /* Exact checks against the storage type first, then the table's range. */
    int fits;
    if (over)
        fits = 0;
    else if (o->type == RT_OPT_INT)
        fits = neg ? mag <= (uint64_t)INT_MAX + 1 : mag <= INT_MAX;
    else if (o->type == RT_OPT_U32)
        fits = (!neg || mag == 0) && mag <= UINT32_MAX;
    else
        fits = !neg || mag == 0;
    double dv = neg ? -(double)mag : (double)mag;
    if (!fits || !in_range(o, dv))
        return out_of_range(o, v, err);
    if (o->type == RT_OPT_INT) {
        int x = neg ? (int)(-(int64_t)mag) : (int)mag;
        memcpy(field, &x, sizeof(x));
    } else if (o->type == RT_OPT_U32) {
        uint32_t x = (uint32_t)mag;
        memcpy(field, &x, sizeof(x));
    } else {
        memcpy(field, &mag, sizeof(mag));
    }
    return 0;
}

static void choices_text(const rt_opt *o, const char *sep, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const rt_opt_choice *c = o->choices; c && c->name && used < cap; c++) {
        int alias = 0; /* a second name of an earlier choice's value: accepted, not listed */
        for (const rt_opt_choice *e = o->choices; e != c; e++)
            alias |= e->value == c->value;
        if (alias)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", c == o->choices ? "" : sep, c->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Parse v as option o's value and store it in the group's struct (nothing
 * is checked or stored for a group without one). */
static int store(const found *f, const char *v, rt_error *err)
{
    const rt_opt *o = f->opt;
    if (!f->group->dest)
        return 0;
    void *field = (char *)f->group->dest + o->offset;
    double d;
    int one = 1, zero = 0;
    switch (o->type) {
    case RT_OPT_FLAG:
        memcpy(field, &one, sizeof(one));
        return 0;
    case RT_OPT_UNSET:
        memcpy(field, &zero, sizeof(zero));
        return 0;
    case RT_OPT_INT:
    case RT_OPT_U32:
    case RT_OPT_U64:
        return store_integer(o, v, field, err);
    case RT_OPT_DOUBLE:
        if (rt_parse_double(v, &d))
            return rt_fail(err, RT_EXIT_INPUT, "--%s: '%s' is not a finite decimal number", o->name,
                           v);
        if (!in_range(o, d))
            return out_of_range(o, v, err);
        memcpy(field, &d, sizeof(d));
        return 0;
    case RT_OPT_STRING:
    case RT_OPT_PATH:
        if (!*v)
            return rt_fail(err, RT_EXIT_INPUT, "--%s: the value is empty", o->name);
        if (o->type == RT_OPT_PATH && strlen(v) > RT_OPT_PATH_MAX)
            return rt_fail(err, RT_EXIT_INPUT,
                           "--%s: the path is %zu bytes, longer than the %d rotor takes (the "
                           "names it makes under it must fit in PATH_MAX)",
                           o->name, strlen(v), RT_OPT_PATH_MAX);
        if (o->type == RT_OPT_PATH && (o->flags & RT_OPT_DIR) && rt_is_stdio(v))
            return rt_fail(err, RT_EXIT_INPUT,
                           "--%s: names a directory; '-' (standard input or output) cannot be one",
                           o->name);
        memcpy(field, &v, sizeof(v));
        return 0;
    case RT_OPT_ENUM:
        for (const rt_opt_choice *c = o->choices; c && c->name; c++)
            if (!strcmp(c->name, v)) {
                memcpy(field, &c->value, sizeof(c->value));
                return 0;
            }
        char names[256];
        choices_text(o, ", ", names, sizeof(names));
        return rt_fail(err, RT_EXIT_INPUT, "--%s: '%s' is not one of %s (see --help)", o->name, v,
                       names);
    }
    return rt_fail(err, RT_EXIT_RUNTIME, "--%s: unknown option type", o->name);
}

/* The bytes of an option's field in its struct. */
static size_t field_size(const rt_opt *o)
{
    switch (o->type) {
    case RT_OPT_U64:
        return sizeof(uint64_t);
    case RT_OPT_U32:
        return sizeof(uint32_t);
    case RT_OPT_DOUBLE:
        return sizeof(double);
    case RT_OPT_STRING:
    case RT_OPT_PATH:
        return sizeof(const char *);
    default:
        return sizeof(int);
    }
}

#define FIELD_MAX 8 /* the largest field_size */

static int set_defaults(const rt_opt_group *g, size_t n, rt_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (const rt_opt *o = g[i].opts; o->name; o++) {
            if (!o->def)
                continue;
            found f = {&g[i], o};
            if (!takes_value(o) && g[i].dest) { /* a flag's initial state: "0" or "1" */
                int on = !strcmp(o->def, "1");
                memcpy((char *)g[i].dest + o->offset, &on, sizeof(on));
                continue;
            }
            if (store(&f, o->def, err))
                return rt_error_prefix(err, "the default of --%s", o->name);
        }
    return 0;
}

/* ------------------------------------------------------------ parsing */

typedef struct parse_state {
    const rt_command_doc *doc;
    const rt_opt_group *g;
    size_t n;
    int argc;
    char **argv;
    int i;                               /* the argument being parsed */
    char *seen;                          /* per option of every group: given on the command line */
    unsigned char (*initial)[FIELD_MAX]; /* per option: its field before the arguments */
    const char *help_format;             /* "text", "man" or "bash" after --help */
    size_t n_opts;                       /* entries of seen */
} parse_state;

static size_t opt_index(const parse_state *s, const rt_opt *opt)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        for (const rt_opt *o = s->g[i].opts; o->name; o++, k++)
            if (o == opt)
                return k;
    return k;
}

static int unknown(const parse_state *s, const char *arg, rt_error *err)
{
    char name[64];
    size_t len = strcspn(arg + 2, "=");
    snprintf(name, sizeof(name), "%.*s", (int)(len < 60 ? len : 60), arg + 2);
    const char *near = arg[1] == '-' ? closest_name(s->g, s->n, name) : NULL;
    const char *cmd = s->doc ? s->doc->name : "";
    if (near)
        return rt_fail(err, RT_EXIT_INPUT,
                       "unknown option %.*s: did you mean --%s? (see 'rotor %s --help')",
                       (int)strcspn(arg, "="), arg, near, cmd);
    return rt_fail(err, RT_EXIT_INPUT, "unknown option %.*s (see 'rotor %s --help')",
                   (int)strcspn(arg, "="), arg, cmd);
}

/* One option argument at argv[s->i] (which starts with '-'): 0, 1 for
 * --help, -1 on error. */
static int parse_option(parse_state *s, rt_error *err)
{
    const char *arg = s->argv[s->i], *value = NULL;
    found f;
    int is_long = arg[1] == '-';
    if (is_long) {
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len == 4 && !strncmp(arg + 2, "help", 4)) {
            /* --help=man and --help=bash: the same tables as a man page or
             * as a bash completion fragment (rotor help --man/--completion) */
            if (!eq || !strcmp(eq + 1, "text") || !strcmp(eq + 1, "man") ||
                !strcmp(eq + 1, "bash")) {
                s->help_format = eq ? eq + 1 : "text";
                return 1;
            }
            return rt_fail(err, RT_EXIT_INPUT, "--help takes no value (or text, man, bash)");
        }
        if (!find_long(s->g, s->n, arg + 2, len, &f))
            return unknown(s, arg, err);
        if (f.group->refuse)
            return rt_fail(err, RT_EXIT_INPUT, "--%s is %s", f.opt->name, f.group->refuse);
        if (eq && !takes_value(f.opt))
            return rt_fail(err, RT_EXIT_INPUT, "--%s takes no value", f.opt->name);
        value = eq ? eq + 1 : NULL;
    } else {
        if (arg[1] == 'h' && !arg[2])
            return 1;
        if (!find_short(s->g, s->n, arg[1], &f))
            return unknown(s, arg, err);
        if (f.group->refuse)
            return rt_fail(err, RT_EXIT_INPUT, "-%c is %s", arg[1], f.group->refuse);
        if (arg[2] && !takes_value(f.opt))
            return rt_fail(err, RT_EXIT_INPUT, "-%c (--%s) takes no value", arg[1], f.opt->name);
        value = arg[2] ? arg + 2 : NULL;
    }
    if (takes_value(f.opt) && !value) {
        if (s->i + 1 >= s->argc)
            return rt_fail(err, RT_EXIT_INPUT, "--%s needs a value (%s)", f.opt->name,
                           f.opt->metavar ? f.opt->metavar : "see --help");
        value = s->argv[++s->i];
    }
    s->seen[opt_index(s, f.opt)] = 1;
    return store(&f, value, err);
}

/* Every field as it stands before the arguments: its default, from the
 * table or from the caller's initialisation. */
static void save_initial(parse_state *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        for (const rt_opt *o = s->g[i].opts; o->name; o++, k++)
            if (s->g[i].dest)
                memcpy(s->initial[k], (char *)s->g[i].dest + o->offset, field_size(o));
}

/* The fields of the options given back to their defaults. */
static void restore_initial(parse_state *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        for (const rt_opt *o = s->g[i].opts; o->name; o++, k++)
            if (s->g[i].dest && s->seen[k])
                memcpy((char *)s->g[i].dest + o->offset, s->initial[k], field_size(o));
}

static int check_required(const parse_state *s, rt_error *err)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        for (const rt_opt *o = s->g[i].opts; o->name; o++, k++)
            if ((o->flags & RT_OPT_REQUIRED) && s->g[i].dest && !s->seen[k])
                return rt_fail(err, RT_EXIT_INPUT, "--%s %s is required (see 'rotor %s --help')",
                               o->name, o->metavar ? o->metavar : "", s->doc ? s->doc->name : "");
    return 0;
}

/* Where the arguments that are not options go: parsing stops at the first
 * (first_arg), or they are collected wherever they stand (operands), or
 * there must be none. */
typedef struct operand_sink {
    int *first_arg;
    const char **operands;
    int *n_operands;
} operand_sink;

/* argv[s->i], not an option: 0 to go on, 1 to stop, -1 on error. */
static int take_operand(parse_state *s, const operand_sink *to, rt_error *err)
{
    if (to->first_arg) {
        *to->first_arg = s->i;
        return 1;
    }
    if (to->operands) {
        to->operands[(*to->n_operands)++] = s->argv[s->i];
        return 0;
    }
    return rt_fail(err, RT_EXIT_INPUT, "unexpected argument '%s' (see 'rotor %s --help')",
                   s->argv[s->i], s->doc ? s->doc->name : "");
}

static int parse_args(const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups,
                      int argc, char **argv, const operand_sink *to, rt_error *err)
{
    parse_state s = {.doc = doc, .g = groups, .n = n_groups, .argc = argc, .argv = argv};
    for (size_t i = 0; i < n_groups; i++)
        for (const rt_opt *o = groups[i].opts; o->name; o++)
            s.n_opts++;
    s.seen = calloc(s.n_opts + 1, 1);
    s.initial = calloc(s.n_opts + 1, sizeof(*s.initial));
    if (!s.seen || !s.initial) {
        free(s.seen);
        free(s.initial);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    int rc = set_defaults(groups, n_groups, err), only_operands = 0;
    save_initial(&s);
    if (to->first_arg)
        *to->first_arg = argc;
    for (s.i = 1; rc == 0 && s.i < argc; s.i++) {
        const char *arg = argv[s.i];
        if (!only_operands && !strcmp(arg, "--")) {
            if (to->first_arg) {
                *to->first_arg = s.i + 1;
                break;
            }
            only_operands = 1;
        } else if (only_operands || arg[0] != '-' || !arg[1]) {
            int stop = take_operand(&s, to, err);
            if (stop) {
                rc = stop < 0 ? -1 : 0;
                break;
            }
        } else {
            rc = parse_option(&s, err);
        }
    }
    if (rc == 1)
        restore_initial(&s); /* the help shows the defaults, not values given before --help */
    if (rc == 1 && s.help_format && !strcmp(s.help_format, "man"))
        rt_opts_man(stdout, doc, groups, n_groups);
    else if (rc == 1 && s.help_format && !strcmp(s.help_format, "bash"))
        rt_opts_completion(stdout, groups, n_groups);
    else if (rc == 1)
        rt_opts_help(stdout, doc, groups, n_groups);
    else if (rc == 0)
        rc = check_required(&s, err);
    free(s.seen);
    free(s.initial);
    return rc;
}

int rt_opts_parse(const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups, int argc,
                  char **argv, int *first_arg, rt_error *err)
{
    operand_sink to = {.first_arg = first_arg};
    return parse_args(doc, groups, n_groups, argc, argv, &to, err);
}

int rt_opts_parse_operands(const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups,
                           int argc, char **argv, const char **operands, int *n_operands,
                           rt_error *err)
{
    operand_sink to = {.operands = operands, .n_operands = n_operands};
    *n_operands = 0;
    return parse_args(doc, groups, n_groups, argc, argv, &to, err);
}

/* ------------------------------------------------------------ help */

/* Print text from column `col` (the cursor is there), wrapped at
 * HELP_WIDTH, continuation lines indented to `indent`. */
static void wrap(FILE *fp, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " \n");
        if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(fp, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', fp);
            col++;
        }
        fprintf(fp, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
        if (*p == '\n' && p[1] == '\n') { /* paragraph break */
            fprintf(fp, "\n\n%*s", indent, "");
            col = indent;
        }
        while (*p == ' ' || *p == '\n')
            p++;
    }
    fputc('\n', fp);
}

/* The metavar shown after the option name ("" for flags). */
static void metavar_text(const rt_opt *o, char *buf, size_t cap)
{
    if (!takes_value(o))
        buf[0] = '\0';
    else if (o->metavar)
        snprintf(buf, cap, "%s", o->metavar);
    else if (o->type == RT_OPT_ENUM)
        choices_text(o, "|", buf, cap);
    else
        snprintf(buf, cap, "VALUE");
}

/* The shortest "%g" text that reads back as d. */
static void double_text(double d, char *buf, size_t cap)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

/* The default of an option whose table gives none (def NULL) but whose
 * command set its field before parsing (one table shared by commands with
 * different defaults, such as --peer-timeout): the field's value as it
 * would be typed, when it is one that could be (a value outside the range,
 * or no string, is "not given", which the help line explains in words).
 * 1 when buf holds it. */
static int field_default(const rt_opt *o, const void *dest, char *buf, size_t cap)
{
    if (o->def || !takes_value(o) || !dest)
        return 0;
    const char *field = (const char *)dest + o->offset;
    int i;
    uint32_t u;
    uint64_t big;
    double d;
    const char *str;
    switch (o->type) {
    case RT_OPT_INT:
        memcpy(&i, field, sizeof(i));
        snprintf(buf, cap, "%d", i);
        return in_range(o, i);
    case RT_OPT_U32:
        memcpy(&u, field, sizeof(u));
        snprintf(buf, cap, "%" PRIu32, u);
        return in_range(o, u);
    case RT_OPT_U64:
        memcpy(&big, field, sizeof(big));
        snprintf(buf, cap, "%" PRIu64, big);
        return in_range(o, (double)big);
    case RT_OPT_DOUBLE:
        memcpy(&d, field, sizeof(d));
        double_text(d, buf, cap);
        return isfinite(d) && in_range(o, d);
    case RT_OPT_STRING:
    case RT_OPT_PATH:
        memcpy(&str, field, sizeof(str));
        if (str)
            snprintf(buf, cap, "%s", str);
        return str && *str;
    case RT_OPT_ENUM:
        memcpy(&i, field, sizeof(i));
        for (const rt_opt_choice *c = o->choices; c && c->name; c++)
            if (c->value == i) {
                snprintf(buf, cap, "%s", c->name);
                return 1;
            }
        return 0;
    default:
        return 0;
    }
}

/* The help line with its range, default and "required" appended.  dest
 * (or NULL) is the group's struct holding the defaults its command set. */
static void help_line(const rt_opt *o, const void *dest, char *buf, size_t cap)
{
    char range[96], extra[256] = "", def[128];
    rt_opt_range_text(o, range, sizeof(range));
    size_t used = 0;
    if (range[0])
        used += (size_t)snprintf(extra + used, sizeof(extra) - used, "%s", range);
    const char *shown = o->def;
    /* A help line that already says what happens without the option is
     * not given a second default. */
    if (!shown && !(o->help && strstr(o->help, "default")) &&
        field_default(o, dest, def, sizeof(def)))
        shown = def;
    if (shown && takes_value(o) && used < sizeof(extra))
        used += (size_t)snprintf(extra + used, sizeof(extra) - used, "%sdefault %s",
                                 used ? "; " : "", shown);
    if ((o->flags & RT_OPT_REQUIRED) && used < sizeof(extra))
        snprintf(extra + used, sizeof(extra) - used, "%srequired", used ? "; " : "");
    const char *help = o->help ? o->help : "";
    size_t len = strlen(help);
    const char *paren = strrchr(help, '(');
    if (extra[0] && len && help[len - 1] == ')' && paren)
        /* "... (default: X)" -> "... (default: X; range)" */
        snprintf(buf, cap, "%.*s; %s)", (int)(len - 1), help, extra);
    else if (extra[0])
        snprintf(buf, cap, "%s (%s)", help, extra);
    else
        snprintf(buf, cap, "%s", help);
}

static void help_option(FILE *fp, const rt_opt *o, const void *dest)
{
    char meta[256], line[1024], left[320];
    metavar_text(o, meta, sizeof(meta));
    if (o->short_name)
        snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->short_name, o->name, *meta ? " " : "",
                 meta);
    else
        snprintf(left, sizeof(left), "      --%s%s%s", o->name, *meta ? " " : "", meta);
    fputs(left, fp);
    int col = (int)strlen(left);
    if (col + 2 > HELP_COLUMN) {
        fprintf(fp, "\n%*s", HELP_COLUMN, "");
    } else {
        fprintf(fp, "%*s", HELP_COLUMN - col, "");
    }
    help_line(o, dest, line, sizeof(line));
    wrap(fp, line, HELP_COLUMN, HELP_COLUMN);
}

/* A paragraph of the help's prose (about, notes) after a blank line, when
 * there is text. */
static void help_prose(FILE *fp, const char *text)
{
    if (!text)
        return;
    fputc('\n', fp);
    wrap(fp, text, 0, 0);
}

/* The examples section, in the help and in man pages (below). */
static void put_examples(FILE *fp, const char *lines, int man);

void rt_opts_help(FILE *fp, const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups)
{
    if (doc) {
        /* One form per line; a line starting with a space continues the form above. */
        const char *u = doc->usage ? doc->usage : "[OPTIONS]";
        int indent = (int)strlen(doc->name) + 14; /* "usage: rotor NAME " */
        for (int first = 1; *u; first = 0) {
            size_t len = strcspn(u, "\n");
            if (*u == ' ')
                fprintf(fp, "%*s%.*s\n", indent, "", (int)(len - strspn(u, " ")),
                        u + strspn(u, " "));
            else
                fprintf(fp, "%s rotor %s %.*s\n", first ? "usage:" : "      ", doc->name, (int)len,
                        u);
            u += len + (u[len] == '\n');
        }
        help_prose(fp, doc->about);
    }
    for (size_t i = 0; i < n_groups; i++) {
        fprintf(fp, "\n%s:\n", groups[i].title ? groups[i].title : "options");
        for (const rt_opt *o = groups[i].opts; o->name; o++)
            help_option(fp, o, groups[i].dest);
        if (i == 0)
            fprintf(fp, "  -h, --help%*sprint this help and exit\n", HELP_COLUMN - 12, "");
    }
    if (!n_groups)
        fprintf(fp, "\noptions:\n  -h, --help%*sprint this help and exit\n", HELP_COLUMN - 12, "");
    help_prose(fp, doc ? doc->notes : NULL);
    put_examples(fp, doc ? doc->examples : NULL, 0);
}

/* ------------------------------------------------------------ man page */

/* Text for roff: backslashes and dashes escaped, a leading '.' or '\''
 * neutralised; "\n\n" starts a new paragraph, a single '\n' is a space. */
static void roff(FILE *fp, const char *s, int at_line_start)
{
    for (; *s; s++) {
        if (at_line_start && (*s == '.' || *s == '\''))
            fputs("\\&", fp);
        at_line_start = 0;
        if (*s == '\\')
            fputs("\\e", fp);
        else if (*s == '-')
            fputs("\\-", fp);
        else if (*s == '\n' && s[1] == '\n') {
            fputs("\n.PP\n", fp);
            s++;
            at_line_start = 1;
        } else if (*s == '\n')
            fputc(' ', fp);
        else
            fputc(*s, fp);
    }
}

static void man_option(FILE *fp, const rt_opt *o, const void *dest)
{
    char meta[256], line[1024];
    metavar_text(o, meta, sizeof(meta));
    fputs(".TP\n", fp);
    if (o->short_name)
        fprintf(fp, "\\fB\\-%c\\fR, ", o->short_name);
    fputs("\\fB", fp);
    roff(fp, "--", 0);
    roff(fp, o->name, 0);
    fputs("\\fR", fp);
    if (*meta) {
        fputs(" \\fI", fp);
        roff(fp, meta, 0);
        fputs("\\fR", fp);
    }
    fputc('\n', fp);
    help_line(o, dest, line, sizeof(line));
    roff(fp, line, 1);
    fputc('\n', fp);
}

/* A man page section of prose (DESCRIPTION, NOTES), when there is text. */
static void man_prose(FILE *fp, const char *heading, const char *text)
{
    if (!text)
        return;
    fprintf(fp, ".SH %s\n", heading);
    roff(fp, text, 1);
    fputc('\n', fp);
}

/* Command lines as written, without wrapping or filling (a pasted line must
 * stay whole); in a man page escaped for roff, in the help indented. */
static void put_examples(FILE *fp, const char *lines, int man)
{
    if (!lines)
        return;
    fputs(man ? ".SH EXAMPLES\n.nf\n" : "\nexamples:\n", fp);
    while (*lines) {
        size_t len = strcspn(lines, "\n");
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)len, lines);
        if (man)
            roff(fp, line, 1);
        else
            fprintf(fp, "  %s", line);
        fputc('\n', fp);
        lines += len + (lines[len] == '\n');
    }
    if (man)
        fputs(".fi\n", fp);
}

void rt_opts_man(FILE *fp, const rt_command_doc *doc, const rt_opt_group *groups, size_t n_groups)
{
    char title[128];
    const char *name = doc ? doc->name : "";
    size_t k = 0;
    for (const char *p = "ROTOR-"; *p && k + 1 < sizeof(title); p++)
        title[k++] = *p;
    for (const char *p = name; *p && k + 1 < sizeof(title); p++)
        title[k++] = *p == ' ' ? '-' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    title[k] = '\0';
    fprintf(fp, ".TH \"%s\" \"1\" \"\" \"rotor\" \"rotor manual\"\n.SH NAME\n", title);
    fputs("rotor\\-", fp);
    for (const char *p = name; *p; p++)
        fputs(*p == ' ' ? "\\-" : (char[2]){*p, 0}, fp);
    fputs(" \\- ", fp);
    roff(fp, doc && doc->summary ? doc->summary : "", 0);
    fputs("\n.SH SYNOPSIS\n.nf\n", fp);
    const char *u = doc && doc->usage ? doc->usage : "[OPTIONS]";
    while (*u) {
        size_t len = strcspn(u, "\n");
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)len, u);
        if (*u == ' ')
            fputs("    ", fp);
        else
            fprintf(fp, "\\fBrotor %s\\fR ", name);
        roff(fp, line + strspn(line, " "), 0);
        fputc('\n', fp);
        u += len + (u[len] == '\n');
    }
    fputs(".fi\n", fp);
    man_prose(fp, "DESCRIPTION", doc ? doc->about : NULL);
    fputs(".SH OPTIONS\n", fp);
    for (size_t i = 0; i < n_groups; i++) {
        if (i > 0) {
            fputs(".SS ", fp);
            roff(fp, groups[i].title ? groups[i].title : "options", 0);
            fputc('\n', fp);
        }
        for (const rt_opt *o = groups[i].opts; o->name; o++)
            man_option(fp, o, groups[i].dest);
        if (i == 0)
            fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nprint this help and exit\n", fp);
    }
    man_prose(fp, "NOTES", doc ? doc->notes : NULL);
    put_examples(fp, doc ? doc->examples : NULL, 1);
    fputs(".SH SEE ALSO\n\\fBrotor\\fR(1)\n", fp);
}

/* ------------------------------------------------------------ completion */

/* A bash fragment for a completion function: on the value of an option,
 * complete its choices, files or directories; otherwise the options. */
void rt_opts_completion(FILE *fp, const rt_opt_group *groups, size_t n_groups)
{
    fputs("    case \"$prev\" in\n", fp);
    for (size_t i = 0; i < n_groups; i++)
        for (const rt_opt *o = groups[i].opts; o->name; o++) {
            if (!takes_value(o))
                continue;
            fprintf(fp, "    --%s", o->name);
            if (o->short_name)
                fprintf(fp, " | -%c", o->short_name);
            if (o->type == RT_OPT_ENUM) {
                char names[512];
                choices_text(o, " ", names, sizeof(names));
                fprintf(fp, ") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", names);
            } else if (o->type == RT_OPT_PATH) {
                fprintf(fp, ") COMPREPLY=($(compgen -%c -- \"$cur\")); return ;;\n",
                        (o->flags & RT_OPT_DIR) ? 'd' : 'f');
            } else {
                fputs(") return ;;\n", fp);
            }
        }
    fputs("    esac\n    COMPREPLY=($(compgen -W \"--help", fp);
    for (size_t i = 0; i < n_groups; i++)
        for (const rt_opt *o = groups[i].opts; o->name; o++)
            fprintf(fp, " --%s", o->name);
    fputs("\" -- \"$cur\"))\n", fp);
}

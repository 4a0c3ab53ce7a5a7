/*
 * cmd_help.c - `rotor help`, `rotor --version` and what is generated from
 * the option tables for installing: a man page per command and the bash
 * completion script (see ground/opts.h; `rotor CMD --help=man|bash` prints
 * one command's part, these put them together).
 *
 *   rotor help [CMD [SUB]]            the help of rotor or of a command
 *   rotor help --man [CMD [SUB]]      a man page on stdout (rotor.1, rotor-CMD.1)
 *   rotor help --pages                the man page names, one per line (gen-mf ...)
 *   rotor help --completion           the bash completion script
 */
#include "apps/apps.h"
#include "tools/commands.h"

#include <string.h>

#ifndef ROTOR_VERSION
#define ROTOR_VERSION "0.0.0"
#endif

/* Run one command (with its subcommand, as for gen) with a single option. */
static int run_page(const rotor_command *c, const char *sub, const char *option)
{
    char *argv[4] = {(char *)c->name, NULL, NULL, NULL};
    int argc = 1;
    if (sub)
        argv[argc++] = (char *)sub;
    argv[argc++] = (char *)option;
    fflush(stdout);
    int rc = c->run(argc, argv);
    fflush(stdout);
    return rc;
}

/* Page i of the man pages: command *c and its subcommand *sub (or NULL).
 * 0 when there is no page i. */
static int page_at(size_t i, const rotor_command **c, const char **sub)
{
    for (const rotor_command *k = rotor_commands; k->name; k++) {
        if (!k->subs) {
            if (i-- == 0) {
                *c = k, *sub = NULL;
                return 1;
            }
            continue;
        }
        for (const char *const *s = k->subs; *s; s++)
            if (i-- == 0) {
                *c = k, *sub = *s;
                return 1;
            }
    }
    return 0;
}

/* The command and subcommand of a page name ("gen-mf", "bench-link"). */
static int find_page(const char *name, const rotor_command **c, const char **sub)
{
    for (size_t i = 0; page_at(i, c, sub); i++) {
        size_t len = strlen((*c)->name);
        if (!strncmp(name, (*c)->name, len) &&
            (*sub ? name[len] == '-' && !strcmp(name + len + 1, *sub) : !name[len]))
            return 1;
    }
    *c = NULL;
    *sub = NULL;
    return 0;
}

static const rotor_command *find_command(const char *name)
{
    for (const rotor_command *k = rotor_commands; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}

/* The roff of a plain string: dashes escaped. */
static void roff_plain(const char *s)
{
    for (; *s; s++)
        fputs(*s == '-' ? "\\-" : (char[2]){*s, 0}, stdout);
}

/* rotor(1): the commands and where their pages are. */
static void man_rotor(void)
{
    printf(".TH \"ROTOR\" \"1\" \"\" \"rotor %s\" \"rotor manual\"\n"
           ".SH NAME\nrotor \\- scheduled model\\-parallel training of matrix factorisation "
           "and LDA\n.SH SYNOPSIS\n\\fBrotor\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
           ".br\n\\fBrotor \\-\\-version\\fR\n.SH DESCRIPTION\n"
           "An offline partitioner cuts data into blocks and precomputes a rotation schedule; "
           "the runtime follows it with pinned worker threads while parameter blocks travel "
           "ring\\-wise by RDMA or TCP.  Every command has \\fB\\-\\-help\\fR.\n"
           ".SH COMMANDS\n",
           ROTOR_VERSION);
    for (const rotor_command *k = rotor_commands; k->name; k++) {
        printf(".TP\n\\fB");
        roff_plain(k->name);
        printf("\\fR\n");
        roff_plain(k->doc->summary);
        printf("\n");
    }
    printf(".SH SEE ALSO\n");
    const rotor_command *c;
    const char *sub;
    for (size_t i = 0; page_at(i, &c, &sub); i++) {
        printf("%s\\fBrotor\\-", i ? ",\n" : "");
        roff_plain(c->name);
        if (sub) {
            printf("\\-");
            roff_plain(sub);
        }
        printf("\\fR(1)");
    }
    printf("\n");
}

static void completion_name(const rotor_command *c, const char *sub)
{
    printf("_rotor_");
    for (const char *p = c->name; *p; p++)
        putchar(*p == '-' ? '_' : *p);
    if (sub)
        printf("_%s", sub);
}

/* The bash completion script: one function per command from its tables. */
static int completion(void)
{
    printf("# bash completion for rotor, generated from its option tables "
           "(rotor help --completion)\n");
    const rotor_command *c;
    const char *sub;
    for (size_t i = 0; page_at(i, &c, &sub); i++) {
        completion_name(c, sub);
        printf("()\n{\n    local cur=$1 prev=$2\n");
        if (run_page(c, sub, "--help=bash"))
            return RT_EXIT_RUNTIME;
        printf("}\n\n");
    }
    printf("_rotor()\n{\n    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local cmd=${COMP_WORDS[1]}\n"
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
           "        COMPREPLY=($(compgen -W \"--help --version");
    for (const rotor_command *k = rotor_commands; k->name; k++)
        printf(" %s", k->name);
    printf("\" -- \"$cur\"))\n        return\n    fi\n    case \"$cmd\" in\n");
    for (const rotor_command *k = rotor_commands; k->name; k++) {
        if (!k->subs) {
            printf("    %s) ", k->name);
            completion_name(k, NULL);
            printf(" \"$cur\" \"$prev\" ;;\n");
            continue;
        }
        printf("    %s)\n        if [ \"$COMP_CWORD\" -eq 2 ]; then\n"
               "            COMPREPLY=($(compgen -W \"",
               k->name);
        for (const char *const *s = k->subs; *s; s++)
            printf("%s%s", s == k->subs ? "" : " ", *s);
        printf("\" -- \"$cur\"))\n            return\n        fi\n        case "
               "\"${COMP_WORDS[2]}\" in\n");
        for (const char *const *s = k->subs; *s; s++) {
            printf("        %s) ", *s);
            completion_name(k, *s);
            printf(" \"$cur\" \"$prev\" ;;\n");
        }
        printf("        esac ;;\n");
    }
    printf("    esac\n}\ncomplete -o default -F _rotor rotor\n");
    return RT_EXIT_OK;
}

typedef struct help_opts {
    int man, pages, completion;
} help_opts;

static const rt_opt help_options[] = {
    RT_FLAG_OPT("man", 0, help_opts, man, "print the man page of rotor or of CMD"),
    RT_FLAG_OPT("pages", 0, help_opts, pages,
                "list the man pages, one name per line (rotor-NAME.1)"),
    RT_FLAG_OPT("completion", 0, help_opts, completion, "print the bash completion script"),
    {0}};

int cmd_help(int argc, char **argv)
{
    help_opts o = {0};
    rt_error err = {0};
    rt_opt_group g = {.opts = help_options, .dest = &o};
    int first, rc = rt_opts_parse(&rotor_doc_help, &g, 1, argc, argv, &first, &err);
    if (rc < 0)
        rt_die(&err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (o.completion)
        return completion();
    if (o.pages) {
        const rotor_command *c;
        const char *sub;
        for (size_t i = 0; page_at(i, &c, &sub); i++)
            printf("%s%s%s\n", c->name, sub ? "-" : "", sub ? sub : "");
        return RT_EXIT_OK;
    }
    if (first >= argc) {
        if (o.man)
            man_rotor();
        else
            rotor_usage(stdout);
        return RT_EXIT_OK;
    }
    const rotor_command *c = find_command(argv[first]);
    const char *sub = first + 1 < argc ? argv[first + 1] : NULL;
    if (!c && first + 1 == argc)
        find_page(argv[first], &c, &sub); /* a page name from --pages: gen-mf */
    if (!c || first + 2 < argc || (sub && !c->subs) || (c->subs && !sub && o.man)) {
        rt_fail(&err, RT_EXIT_INPUT, "help: no page for '%s%s%s' (see 'rotor help --pages')",
                argv[first], sub ? " " : "", sub ? sub : "");
        rt_die(&err);
    }
    return run_page(c, sub, o.man ? "--help=man" : "--help");
}

int cmd_version(void)
{
    char why[256] = "";
    int ib = rt_transport_ib_available(why, sizeof(why));
    printf("rotor %s\n", rotor_build_identity());
    printf("transports: tcp, ib (libibverbs %s, librdmacm %s); RDMA on this machine: %s\n",
           ROTOR_IBVERBS_VERSION, ROTOR_RDMACM_VERSION, ib ? "an active port" : why);
    printf("sgd-mf kernels: %s; this CPU: %s\n", rt_apps_sgd_kernels(), rt_apps_sgd_kernel_best());
    printf("bootstrap: hostfile, rotor launch%s\n",
           rt_pmix_compiled() ? ", pmix (mpirun, srun: no hostfile needed)"
                              : "; no pmix (built without libpmix-dev)");
    printf("apps:");
    for (size_t i = 0; rt_apps[i]; i++)
        printf(" %s", rt_apps[i]->name);
    printf("\n");
    return RT_EXIT_OK;
}

/*
 * cmd_launch.c - `rotor launch -n P [--base-port N] [--timeout S] -- CMD [ARGS...]`
 *
 * Starts P copies of CMD on this machine as ranks 0..P-1 of one group on
 * loopback: picks P free ports on 127.0.0.1 (or N..N+P-1), writes the
 * hostfile into an anonymous in-memory file (memfd: nothing on disk to leave
 * behind), makes a fresh job secret, and runs every child with ROTOR_RANK,
 * ROTOR_SIZE, ROTOR_LOCAL_RANK, ROTOR_LOCAL_SIZE, ROTOR_HOSTFILE and
 * ROTOR_TOKEN set (tools/launch_env.c reads them) and stdin from /dev/null.
 * The secret travels in the environment, which only the user can read, not
 * on a command line, which `ps` shows to everyone.  A ROTOR_TOKEN already
 * set is passed on instead.
 *
 * Lifetime: every child dies with the launcher (PR_SET_PDEATHSIG), also when
 * the launcher is killed.  A child that stays stopped (SIGSTOP, a debugger)
 * longer than STOPPED_S is killed: the other ranks name it as silent within
 * the transport's peer timeout, and a stopped process could never act on
 * SIGTERM.  --timeout S ends the whole job after S seconds.
 *
 * Output: each child's stdout and stderr lines are re-emitted on the same
 * stream prefixed with "[r] ", whole lines only (a partial last line is
 * completed at exit).
 *
 * Failure: when a child exits non-zero or by a signal, the launcher says so,
 * gives the others GRACE_S seconds to notice the lost peer and exit on their
 * own, then sends SIGTERM and, KILL_S seconds later, SIGKILL.  The exit
 * status is the first failure's (1 when it was a signal); 0 only when every
 * rank exited 0.  SIGINT, SIGTERM and SIGHUP are forwarded to the children
 * (which remove their partial outputs), and the launcher then ends by the
 * same signal.
 */
#define _GNU_SOURCE
#include "tools/commands.h"
#include "tools/launch_env.h"
#include "ground/ground.h"
#include "verbs/netaddr.h"
#include "verbs/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RANKS 1024
#define LINE_MAX_BYTES 65536
#define GRACE_S 5.0
#define KILL_S 3.0
#define STOPPED_S 12.0 /* a child stopped this long is ended (ranks notice in ~8-9 s) */

typedef struct out_stream {
    int fd;    /* read end of the child's pipe, -1 at EOF */
    int dest;  /* 1 or 2 */
    char *buf; /* partial line */
    size_t len;
} out_stream;

typedef struct child {
    pid_t pid;
    int running;
    int status;
    double stopped_at; /* when it was stopped, 0 = running */
    out_stream out[2];
} child;

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* nothing useful to do in a handler */
    }
    errno = saved;
}

typedef struct launch_opts {
    int np, base_port; /* base_port 0 = free ports */
    int timeout_s;     /* 0 = none */
} launch_opts;

static const rt_opt launch_options[] = {
    RT_INT_OPT("np", 'n', launch_opts, np, "P", NULL, 1, MAX_RANKS, RT_OPT_REQUIRED,
               "number of ranks"),
    RT_INT_OPT("base-port", 0, launch_opts, base_port, "N", NULL, 1, 65535, 0,
               "use ports N..N+P-1 instead of free ones"),
    RT_INT_OPT("timeout", 0, launch_opts, timeout_s, "S", NULL, 1, 100000000, 0,
               "end the job after S seconds (exit status 1)"),
    {0}};

/* Write all of buf to fd (our stdout/stderr). */
static void emit(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* Emit one line (without its newline) as "[r] line\n" in a single write. */
static void emit_line(int dest, int rank, const char *line, size_t len)
{
    static char out[LINE_MAX_BYTES + 32];
    int n = snprintf(out, sizeof(out), "[%d] ", rank);
    memcpy(out + n, line, len);
    out[(size_t)n + len] = '\n';
    emit(dest, out, (size_t)n + len + 1);
}

/* Read what is available from a child's pipe and emit complete lines.
 * At EOF, a partial last line is emitted with a newline added. */
static void pump(out_stream *s, int rank)
{
    char tmp[16384];
    ssize_t n = read(s->fd, tmp, sizeof(tmp));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (s->len)
            emit_line(s->dest, rank, s->buf, s->len);
        s->len = 0;
        close(s->fd);
        s->fd = -1;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (tmp[i] == '\n') {
            emit_line(s->dest, rank, s->buf, s->len);
            s->len = 0;
        } else {
            if (s->len == LINE_MAX_BYTES) { /* absurdly long line: split it */
                emit_line(s->dest, rank, s->buf, s->len);
                s->len = 0;
            }
            s->buf[s->len++] = tmp[i];
        }
    }
}

/* Write the hostfile into a memfd the children inherit; ports distinct
 * from each other.  Returns the fd, or -1 with err. */
static int write_hostfile(int np, int base_port, rt_error *err)
{
    int fd = memfd_create("rotor-hostfile", 0); /* no CLOEXEC: children read it */
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "memfd_create");
    int dup_fd = dup(fd);
    FILE *fp = dup_fd >= 0 ? fdopen(dup_fd, "w") : NULL;
    if (!fp) {
        if (dup_fd >= 0)
            close(dup_fd);
        close(fd);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "cannot write the hostfile");
    }
    int ports[MAX_RANKS];
    for (int r = 0; r < np; r++) {
        int port = base_port > 0 ? base_port + r : -1;
        for (int tries = 0; port < 0 && tries < 100; tries++) {
            if (rt_net_free_port("127.0.0.1", &port, NULL))
                port = -1;
            for (int q = 0; q < r && port > 0; q++)
                if (ports[q] == port)
                    port = -1;
        }
        if (port <= 0 || port > 65535) {
            fclose(fp);
            close(fd);
            return rt_fail(err, RT_EXIT_RUNTIME, "cannot find a free port on 127.0.0.1");
        }
        ports[r] = port;
        fprintf(fp, "127.0.0.1:%d\n", port);
    }
    if (fclose(fp) != 0) {
        close(fd);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "cannot write the hostfile");
    }
    return fd;
}

typedef struct job_env {
    const char *hostfile; /* path every child can open */
    const char *token;    /* the job secret */
    pid_t launcher;
} job_env;

/* In the child: standard input from /dev/null (a rank never reads the
 * launcher's terminal), standard output and error into the pipes the
 * launcher prefixes.  Without /dev/null (a bare chroot) the rank keeps the
 * launcher's input, which it does not read either. */
static int redirect_stdio(int out_w, int err_w)
{
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        int e = dup2(devnull, 0) < 0;
        close(devnull);
        if (e)
            return -1;
    }
    return dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0 ? -1 : 0;
}

/* In the child: what tools/launch_env.c reads.  Every rank is on this host,
 * so the local rank and size are the rank and size (engine/pin.c). */
static int set_job_env(int rank, int np, const job_env *job)
{
    char r[16], n[16];
    snprintf(r, sizeof(r), "%d", rank);
    snprintf(n, sizeof(n), "%d", np);
    return setenv("ROTOR_RANK", r, 1) || setenv("ROTOR_LOCAL_RANK", r, 1) ||
                   setenv("ROTOR_SIZE", n, 1) || setenv("ROTOR_LOCAL_SIZE", n, 1) ||
                   setenv("ROTOR_HOSTFILE", job->hostfile, 1) ||
                   setenv("ROTOR_TOKEN", job->token, 1)
               ? -1
               : 0;
}

/* In the child: wire up stdio and the environment, then exec.  Any failure
 * ends the child with 127, as a command that cannot run does. */
static void exec_child(int rank, int np, const job_env *job, int out_w, int err_w, char **cmd)
{
    /* Die with the launcher, however it ends (checked once more in case it
     * ended before the prctl took effect). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != job->launcher)
        _exit(127);
    setpgid(0, 0); /* our own group: terminal signals reach the launcher only */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    const char *failed = redirect_stdio(out_w, err_w) ? "cannot redirect the output of"
                         : set_job_env(rank, np, job) ? "cannot set the environment of"
                                                      : NULL;
    if (!failed) {
        execvp(cmd[0], cmd);
        failed = "cannot run";
    }
    fprintf(stderr, "rotor: error: launch: %s '%s': %s\n", failed, cmd[0], strerror(errno));
    _exit(127);
}

static void close_pipes(int p[2][2], int n)
{
    for (int i = 0; i < n; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
}

static int start_child(child *c, int rank, int np, const job_env *job, char **cmd, rt_error *err)
{
    /* The line buffers first: once the pipes are open the loop that serves
     * every rank may read them. */
    for (int i = 0; i < 2; i++) {
        c->out[i].buf = malloc(LINE_MAX_BYTES);
        if (!c->out[i].buf)
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    int p[2][2];
    for (int i = 0; i < 2; i++)
        if (pipe2(p[i], O_CLOEXEC)) {
            int e = errno;
            close_pipes(p, i);
            return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "pipe");
        }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close_pipes(p, 2);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "fork");
    }
    if (pid == 0)
        exec_child(rank, np, job, p[0][1], p[1][1], cmd);
    /* Also here, so a signal right after fork reaches its group; it fails
     * (EACCES) when the child has exec'd already, having done it itself. */
    setpgid(pid, pid);
    c->pid = pid;
    c->running = 1;
    for (int i = 0; i < 2; i++) {
        close(p[i][1]);
        c->out[i].fd = p[i][0];
        c->out[i].dest = i + 1;
        c->out[i].len = 0;
    }
    /* Read only when poll says so, and non-blocking, so that a spurious
     * wake-up never stalls the loop that serves every rank. */
    for (int i = 0; i < 2; i++)
        if (fcntl(c->out[i].fd, F_SETFL, O_NONBLOCK))
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "fcntl");
    return 0;
}

static void signal_child(child *c, int sig)
{
    kill(-c->pid, sig); /* the child's process group */
    kill(c->pid, sig);
}

/* Send sig to every running child; a stopped one is continued so that it
 * can act on it. */
static void signal_all(child *ch, int np, int sig)
{
    for (int r = 0; r < np; r++)
        if (ch[r].running) {
            signal_child(&ch[r], sig);
            if (ch[r].stopped_at > 0 && sig != SIGKILL)
                signal_child(&ch[r], SIGCONT);
        }
}

/* Kill every child that is stopped: it cannot notice that the job ended. */
static void kill_stopped(child *ch, int np)
{
    for (int r = 0; r < np; r++)
        if (ch[r].running && ch[r].stopped_at > 0) {
            fprintf(stderr, "rotor launch: killing rank %d, which is stopped\n", r);
            signal_child(&ch[r], SIGKILL);
        }
}

typedef struct launch_state {
    child *ch;
    int np;
    int running;
    int first_fail; /* rank of the first failure, -1 none */
    int exit_code;  /* of the first failure */
    double term_at; /* when to send SIGTERM (0 = not scheduled) */
    double kill_at; /* when to send SIGKILL */
    int termed;
    int interrupted; /* the SIGINT, SIGTERM or SIGHUP forwarded to the ranks, 0 none */
    double end_at;   /* --timeout: when to end the job (0 = never) */
    int timeout_s;
} launch_state;

/* Reap finished children; note the first failure. */
static void reap(launch_state *st)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
        for (int r = 0; r < st->np; r++) {
            child *c = &st->ch[r];
            if (c->pid != pid || !c->running)
                continue;
            if (WIFSTOPPED(status)) {
                c->stopped_at = rt_now();
                fprintf(stderr, "rotor launch: rank %d stopped by signal %d\n", r,
                        WSTOPSIG(status));
                continue;
            }
            if (WIFCONTINUED(status)) {
                c->stopped_at = 0;
                continue;
            }
            c->running = 0;
            c->status = status;
            st->running--;
            int bad = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            if (bad && st->first_fail < 0) {
                st->first_fail = r;
                if (WIFEXITED(status)) {
                    st->exit_code = WEXITSTATUS(status);
                    fprintf(stderr, "rotor launch: rank %d exited with status %d\n", r,
                            st->exit_code);
                } else {
                    st->exit_code = 1;
                    if (WTERMSIG(status) != st->interrupted) /* else the rank says so */
                        fprintf(stderr, "rotor launch: rank %d killed by signal %d\n", r,
                                WTERMSIG(status));
                }
                if (st->running > 0) {
                    st->term_at = rt_now() + GRACE_S;
                    st->kill_at = st->term_at + KILL_S;
                    kill_stopped(st->ch, st->np);
                }
            }
        }
    }
}

/* End children stopped for too long, and the whole job at --timeout. */
static void check_stopped_and_timeout(launch_state *st, double now)
{
    for (int r = 0; r < st->np; r++) {
        child *c = &st->ch[r];
        if (c->running && c->stopped_at > 0 && now - c->stopped_at >= STOPPED_S) {
            fprintf(stderr, "rotor launch: rank %d has been stopped for %.0f s: ending it\n", r,
                    now - c->stopped_at);
            signal_child(c, SIGKILL);
            c->stopped_at = 0;
        }
    }
    if (st->end_at > 0 && now >= st->end_at && st->running > 0) {
        fprintf(stderr, "rotor launch: the job ran past --timeout %d s: ending it\n",
                st->timeout_s);
        st->end_at = 0;
        if (st->first_fail < 0) {
            st->first_fail = st->np; /* no rank failed: the launcher did */
            st->exit_code = RT_EXIT_RUNTIME;
        }
        signal_all(st->ch, st->np, SIGTERM);
        st->termed = 1;
        st->kill_at = now + KILL_S;
    }
}

/* The descriptors to poll: the signal pipe first, then every child pipe
 * still open; owner[k] is 2 * rank + stream (-1: the signal pipe).  Returns
 * how many, *open_fds how many of them are child pipes. */
static int poll_set(const launch_state *st, struct pollfd *pfd, int *owner, int *open_fds)
{
    int n = 0;
    *open_fds = 0;
    pfd[n] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
    owner[n++] = -1;
    for (int r = 0; r < st->np; r++)
        for (int i = 0; i < 2; i++)
            if (st->ch[r].out[i].fd >= 0) {
                pfd[n] = (struct pollfd){.fd = st->ch[r].out[i].fd, .events = POLLIN};
                owner[n++] = 2 * r + i;
                (*open_fds)++;
            }
    return n;
}

/* How long poll may sleep: until the next SIGTERM or SIGKILL is due, and
 * at most 0.5 s (stopped ranks and --timeout are checked on every wake). */
static int poll_ms(const launch_state *st, double now)
{
    double next = now + 0.5;
    if (st->term_at > 0 && !st->termed)
        next = st->term_at < next ? st->term_at : next;
    else if (st->termed && st->kill_at > 0)
        next = st->kill_at < next ? st->kill_at : next;
    return next > now ? (int)((next - now) * 1000) + 1 : 0;
}

/* The signals on_signal wrote into the pipe: SIGINT, SIGTERM and SIGHUP
 * go to every rank, which then has GRACE_S before SIGKILL. */
static void forward_signals(launch_state *st)
{
    unsigned char sigs[64];
    ssize_t got = read(sig_pipe[0], sigs, sizeof(sigs));
    for (ssize_t j = 0; j < got; j++)
        if (sigs[j] == SIGINT || sigs[j] == SIGTERM || sigs[j] == SIGHUP) {
            signal_all(st->ch, st->np, sigs[j]);
            if (!st->interrupted)
                st->interrupted = sigs[j];
            st->termed = 1; /* escalate to SIGKILL if ignored */
            if (st->kill_at == 0)
                st->kill_at = rt_now() + GRACE_S;
        }
}

/* SIGTERM to the remaining ranks when it is due, SIGKILL when that is. */
static void send_due_signals(launch_state *st, double now)
{
    if (st->term_at > 0 && !st->termed && now >= st->term_at) {
        fprintf(stderr, "rotor launch: terminating the remaining ranks\n");
        signal_all(st->ch, st->np, SIGTERM);
        st->termed = 1;
    }
    if (st->termed && st->kill_at > 0 && now >= st->kill_at) {
        signal_all(st->ch, st->np, SIGKILL);
        st->kill_at = 0;
    }
}

/* At the end: the partial last lines still buffered, then the pipes closed. */
static void flush_outputs(launch_state *st)
{
    for (int r = 0; r < st->np; r++)
        for (int i = 0; i < 2; i++)
            if (st->ch[r].out[i].fd >= 0) {
                out_stream *s = &st->ch[r].out[i];
                if (s->len)
                    emit_line(s->dest, r, s->buf, s->len);
                close(s->fd);
                s->fd = -1;
            }
}

/* Without memory for the poll set: the ranks were sent SIGKILL; wait for
 * them, their output unread. */
static void reap_all(launch_state *st)
{
    for (;;) {
        reap(st);
        if (st->running == 0)
            return;
        usleep(10000);
    }
}

/* The event loop: output, signals, children, deadlines, until every rank
 * has ended and its pipes are drained (or 1 s after the last one ended: a
 * grandchild may hold a pipe open). */
static void serve(launch_state *st, struct pollfd *pfd, int *owner)
{
    double drain_until = 0;
    for (;;) {
        int open_fds, n = poll_set(st, pfd, owner, &open_fds);
        if (st->running == 0) {
            if (open_fds == 0)
                break;
            if (drain_until == 0)
                drain_until = rt_now() + 1.0;
            else if (rt_now() > drain_until)
                break;
        }
        int rc = poll(pfd, (nfds_t)n, poll_ms(st, rt_now()));
        if (rc < 0 && errno != EINTR)
            break;
        for (int k = 0; rc > 0 && k < n; k++) {
            if (!pfd[k].revents)
                continue;
            if (owner[k] < 0)
                forward_signals(st);
            else
                pump(&st->ch[owner[k] / 2].out[owner[k] % 2], owner[k] / 2);
        }
        reap(st);
        double now = rt_now();
        check_stopped_and_timeout(st, now);
        send_due_signals(st, now);
    }
}

static void supervise(launch_state *st)
{
    size_t n = (size_t)(2 * st->np + 1);
    struct pollfd *pfd = calloc(n, sizeof(*pfd));
    int *owner = calloc(n, sizeof(int));
    if (pfd && owner) {
        serve(st, pfd, owner);
    } else {
        fprintf(stderr, "rotor: error: launch: out of memory\n");
        signal_all(st->ch, st->np, SIGKILL);
        reap_all(st);
    }
    flush_outputs(st);
    free(pfd);
    free(owner);
}

/* SIGINT, SIGTERM, SIGHUP (a closed terminal: the ranks clean up too) and
 * SIGCHLD reach the event loop through sig_pipe; old[] keeps what was
 * installed.  (sigaction fails only for a signal number that is invalid.) */
static const int caught_signals[4] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};

static void catch_signals(struct sigaction old[4])
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int k = 0; k < 4; k++)
        sigaction(caught_signals[k], &sa, &old[k]);
    signal(SIGPIPE, SIG_IGN);
}

static void restore_signals(const struct sigaction old[4])
{
    for (int k = 0; k < 4; k++)
        sigaction(caught_signals[k], &old[k], NULL);
}

/* Start ranks 0..np-1.  When one cannot start, those already running are
 * ended at once (supervise sends SIGTERM, then SIGKILL). */
static void start_ranks(launch_state *st, const job_env *job, char **cmd)
{
    for (int r = 0; r < st->np; r++)
        st->ch[r].out[0].fd = st->ch[r].out[1].fd = -1;
    for (int r = 0; r < st->np; r++) {
        rt_error err = {0};
        int failed = start_child(&st->ch[r], r, st->np, job, cmd, &err);
        st->running += st->ch[r].running; /* a child may run although its set-up failed */
        if (failed) {
            fprintf(stderr, "rotor: error: launch: rank %d: %s\n", r, err.msg);
            st->first_fail = r;
            st->exit_code = RT_EXIT_RUNTIME;
            st->term_at = rt_now();
            st->kill_at = st->term_at + KILL_S;
            return;
        }
    }
}

/* The ranks of one job: started and served until they end.  Returns the
 * exit status (the first failure's); *interrupted is the signal forwarded
 * to them, 0 none. */
static int run_job(const launch_opts *o, const job_env *job, char **cmd, int *interrupted)
{
    *interrupted = 0;
    child *ch = calloc((size_t)o->np, sizeof(*ch));
    if (!ch) {
        fprintf(stderr, "rotor: error: launch: out of memory\n");
        return RT_EXIT_RUNTIME;
    }
    launch_state st = {.ch = ch, .np = o->np, .first_fail = -1, .timeout_s = o->timeout_s};
    if (o->timeout_s > 0)
        st.end_at = rt_now() + o->timeout_s;
    start_ranks(&st, job, cmd);
    supervise(&st);
    for (int r = 0; r < o->np; r++) {
        free(ch[r].out[0].buf);
        free(ch[r].out[1].buf);
    }
    free(ch);
    *interrupted = st.interrupted;
    return st.first_fail < 0 ? RT_EXIT_OK : st.exit_code ? st.exit_code : RT_EXIT_RUNTIME;
}

int cmd_launch(int argc, char **argv)
{
    launch_opts o = {0};
    rt_error err = {0};
    rt_opt_group g = {.opts = launch_options, .dest = &o};
    int i, rc = rt_opts_parse(&rotor_doc_launch, &g, 1, argc, argv, &i, &err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (rc == 0 && i >= argc)
        rc = rt_fail(&err, RT_EXIT_INPUT, "no command given (see 'rotor launch --help')");
    if (rc < 0) {
        fprintf(stderr, "rotor: error: launch: %s\n", err.msg);
        return err.code;
    }
    int np = o.np, base_port = o.base_port;
    if (base_port > 0 && base_port + np - 1 > 65535) {
        fprintf(stderr, "rotor: error: launch: ports %d..%d are out of range\n", base_port,
                base_port + np - 1);
        return RT_EXIT_INPUT;
    }
    char **cmd = argv + i;

    /* A ROTOR_TOKEN already set is passed on whole (it was cut at 79 bytes,
     * so the ranks disagreed with a process given the same variable). */
    char token[RT_TOKEN_MAX + 1], hostfile[64];
    const char *given;
    if (rt_launch_env_token(&given, &err)) {
        fprintf(stderr, "rotor: error: launch: %s\n", err.msg);
        return err.code;
    }
    if (given)
        memcpy(token, given, strlen(given) + 1);
    else if (rt_transport_new_secret(token, sizeof(token), &err)) {
        fprintf(stderr, "rotor: error: launch: %s\n", err.msg);
        return err.code;
    }
    int hostfile_fd = write_hostfile(np, base_port, &err);
    if (hostfile_fd < 0) {
        fprintf(stderr, "rotor: error: launch: %s\n", err.msg);
        rt_transport_wipe_secret(token, sizeof(token));
        return err.code;
    }
    snprintf(hostfile, sizeof(hostfile), "/proc/self/fd/%d", hostfile_fd);
    job_env job = {.hostfile = hostfile, .token = token, .launcher = getpid()};

    /* Signals arrive through a pipe so the event loop handles them. */
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
        fprintf(stderr, "rotor: error: launch: pipe: %s\n", strerror(errno));
        close(hostfile_fd);
        rt_transport_wipe_secret(token, sizeof(token));
        return RT_EXIT_RUNTIME;
    }
    struct sigaction old[4];
    catch_signals(old);
    int interrupted;
    rc = run_job(&o, &job, cmd, &interrupted);
    restore_signals(old);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    close(hostfile_fd);
    rt_transport_wipe_secret(token, sizeof(token));
    if (interrupted) {
        /* end the way the signal would have, as the ranks did (exit 143
         * for SIGTERM in a shell, not 1 as for a failed rank) */
        signal(interrupted, SIG_DFL);
        raise(interrupted);
    }
    return rc;
}

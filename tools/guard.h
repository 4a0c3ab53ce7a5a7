/*
 * guard.h - what a command leaves behind when it is interrupted, fails, or
 * has a file changed underneath it.
 *
 * Outputs: a command that writes files names its outputs with
 * rt_guard_output() and calls rt_guard_start().  SIGINT, SIGTERM and SIGHUP
 * are then handed to a watcher thread, which
 * removes this process's temporaries next to and inside the outputs
 * (NAME.tmp.PID files of rt_outfile, NAME.tmp-PID-* directories of
 * rt_plan_write) and every output this run created or replaced, then lets
 * the signal end the process.  rt_guard_die() does the same removal for a
 * run that fails, then exits like rt_die().  A run killed outright
 * (SIGKILL, a crash) cannot clean up: rt_guard_start() removes the
 * temporaries of its outputs that earlier runs left and no live process
 * holds (rt_remove_stale_temporaries).
 *
 * Mapped files: rt_guard_mapped_plan() remembers the identity and size of
 * a plan's layout.bin and shards, which rotor train maps; when one of them
 * is truncated under the running job the next access raises SIGBUS, and
 * the handler names the file that changed and exits with status 2 instead
 * of dying by the signal.
 */
#ifndef ROTOR_TOOLS_GUARD_H
#define ROTOR_TOOLS_GUARD_H

#include "ground/ground.h"
#include "partition/partition.h"

/* An output file or directory of this command (NULL is ignored). */
void rt_guard_output(const char *path);
/* An output directory the run adds to and never removes (a checkpoint root,
 * which an interrupted run leaves for --resume): only temporaries are
 * removed, in it and one level under it (ckpt-N). */
void rt_guard_kept_output(const char *root);
int rt_guard_start(rt_error *err);
/* Remove this run's partial outputs, print the error and exit with its code. */
void rt_guard_die(const rt_error *err) __attribute__((noreturn));
/* 1 once SIGINT, SIGTERM or SIGHUP has arrived (its outputs are being
 * removed): the command must not report success, to the user or to others. */
int rt_guard_interrupted(void);
void rt_guard_mapped_plan(const rt_plan *plan);

#endif

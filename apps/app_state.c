/* app_state.c - the training-state file of one rank (format: app_common.h).
 * Apps put their cores' state into it section by section; a resumed run
 * reads the sections back in the same order. */
#include "apps/app_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAGIC "ROTORST1"
#define TAG_BYTES 16

typedef struct section_hdr {
    char tag[TAG_BYTES];
    uint64_t len;
    uint64_t check;
} section_hdr;

static int state_path(char *out, size_t cap, const char *dir, uint32_t rank, rt_error *err)
{
    char name[64];
    snprintf(name, sizeof(name), "state-%05u.bin", rank);
    return rt_path_join(out, cap, dir, name, err);
}

int rt_state_put(rt_state_writer *w, const char *tag, const void *data, size_t len, rt_error *err)
{
    section_hdr h;
    memset(&h, 0, sizeof(h));
    if (strlen(tag) >= sizeof(h.tag))
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: section tag '%s' is too long", w->of.path, tag);
    snprintf(h.tag, sizeof(h.tag), "%s", tag);
    h.len = len;
    h.check = rt_checksum(data, len);
    if (rt_write_all(w->of.fp, &h, sizeof(h), w->of.path, err) ||
        (len && rt_write_all(w->of.fp, data, len, w->of.path, err)))
        return -1;
    return 0;
}

int rt_state_create(rt_state_writer *w, const char *dir, const rt_state_head *head, rt_error *err)
{
    char path[4096];
    if (state_path(path, sizeof(path), dir, head->rank, err) || rt_outfile_open(&w->of, path, err))
        return -1;
    if (rt_write_all(w->of.fp, STATE_MAGIC, 8, path, err) ||
        rt_state_put(w, "head", head, sizeof(*head), err)) {
        rt_outfile_abort(&w->of);
        return -1;
    }
    return 0;
}

int rt_state_commit(rt_state_writer *w, rt_error *err)
{
    if (rt_state_put(w, "end", NULL, 0, err)) {
        rt_outfile_abort(&w->of);
        return -1;
    }
    return rt_outfile_commit(&w->of, err);
}

void rt_state_abort(rt_state_writer *w)
{
    rt_outfile_abort(&w->of);
}

void rt_state_discard(const char *dir, uint32_t rank)
{
    char path[4096];
    if (state_path(path, sizeof(path), dir, rank, NULL) == 0)
        unlink(path);
}

/* ---- reading ---- */

static int corrupt(rt_state_reader *r, const char *what, rt_error *err)
{
    return rt_fail(err, RT_EXIT_INPUT, "%s: %s (at byte %zu)", r->path, what, r->pos);
}

/* The section at r->pos, its checksum checked; advances past it. */
static int next_section(rt_state_reader *r, section_hdr *h, const unsigned char **data,
                        rt_error *err)
{
    if (r->len - r->pos < sizeof(*h))
        return corrupt(r, "truncated state file", err);
    memcpy(h, r->buf + r->pos, sizeof(*h));
    /* The writer zeroes the tag's bytes after its name: a flipped byte there
     * is damage too, though no reader looks at it. */
    const char *nul = memchr(h->tag, '\0', sizeof(h->tag));
    if (nul == NULL || !rt_all_zero(nul, (size_t)(h->tag + sizeof(h->tag) - nul)))
        return corrupt(r, "bad section tag", err);
    if (h->len > r->len - r->pos - sizeof(*h))
        return corrupt(r, "truncated section", err);
    *data = r->buf + r->pos + sizeof(*h);
    if (rt_checksum(*data, h->len) != h->check)
        return corrupt(r, "checksum mismatch", err);
    r->pos += sizeof(*h) + h->len;
    return 0;
}

/* Every section's checksum, and the end marker last. */
static int check_all(rt_state_reader *r, rt_error *err)
{
    size_t start = r->pos;
    section_hdr h;
    const unsigned char *data = NULL;
    do {
        if (next_section(r, &h, &data, err))
            return -1;
    } while (strcmp(h.tag, "end") != 0);
    if (r->pos != r->len)
        return corrupt(r, "bytes after the end marker", err);
    r->pos = start;
    return 0;
}

static int read_whole(rt_state_reader *r, rt_error *err)
{
    FILE *fp = rt_fopen_read(r->path, RT_READ_OWN, err);
    if (!fp)
        return -1;
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", r->path);
    }
    r->len = (size_t)sb.st_size;
    r->buf = malloc(r->len + 1);
    if (!r->buf) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory (%zu bytes)", r->path, r->len);
    }
    size_t got = fread(r->buf, 1, r->len, fp);
    int bad = ferror(fp), e = errno; /* a directory: EISDIR */
    fclose(fp);
    if (bad)
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: read failed", r->path);
    if (got != r->len)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: read failed: %zu of %zu bytes (cut short while being read?)", r->path,
                       got, r->len);
    return 0;
}

int rt_state_open(rt_state_reader *r, const char *dir, const rt_state_head *want,
                  uint64_t *next_rotation, rt_error *err)
{
    memset(r, 0, sizeof(*r));
    rt_state_head h;
    if (state_path(r->path, sizeof(r->path), dir, want->rank, err) || read_whole(r, err))
        return -1;
    if (r->len < 8 || memcmp(r->buf, STATE_MAGIC, 8) != 0)
        return corrupt(r, "not a rotor training-state file", err);
    r->pos = 8;
    if (check_all(r, err) || rt_state_get(r, "head", &h, sizeof(h), err))
        return -1;
    if (strncmp(h.app, want->app, sizeof(h.app)) != 0 || h.plan_id != want->plan_id)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: state of --app %.16s on plan %016llx, not of "
                       "--app %s on this plan (%016llx)",
                       r->path, h.app, (unsigned long long)h.plan_id, want->app,
                       (unsigned long long)want->plan_id);
    if (h.rank != want->rank || h.size != want->size || h.first_worker != want->first_worker ||
        h.n_workers != want->n_workers)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: written by rank %u of %u with workers %u..%u; this run has rank %u "
                       "of %u with workers %u..%u (resume with the same split)",
                       r->path, h.rank, h.size, h.first_worker, h.first_worker + h.n_workers - 1,
                       want->rank, want->size, want->first_worker,
                       want->first_worker + want->n_workers - 1);
    *next_rotation = h.next_rotation;
    return 0;
}

int rt_state_get(rt_state_reader *r, const char *tag, void *data, size_t len, rt_error *err)
{
    section_hdr h;
    const unsigned char *p = NULL;
    if (next_section(r, &h, &p, err))
        return -1;
    if (strcmp(h.tag, tag) != 0 || h.len != len)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: expected section '%s' of %zu bytes, found '%s' of %llu (written "
                       "with other options?)",
                       r->path, tag, len, h.tag, (unsigned long long)h.len);
    if (len)
        memcpy(data, p, len);
    return 0;
}

int rt_state_get_optional(rt_state_reader *r, const char *tag, const void **data, size_t *len,
                          rt_error *err)
{
    size_t at = r->pos;
    section_hdr h;
    const unsigned char *p = NULL;
    if (next_section(r, &h, &p, err))
        return -1;
    if (strcmp(h.tag, tag) != 0) {
        r->pos = at;
        return 0;
    }
    *data = p;
    *len = (size_t)h.len;
    return 1;
}

void rt_state_close(rt_state_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

/* ---- what every app's glue writes the same way ---- */

void rt_state_head_of(rt_state_head *h, const char *app, const rt_plan *plan, rt_engine *eng,
                      uint64_t next_rotation)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->app, sizeof(h->app), "%s", app);
    h->plan_id = plan->plan_id;
    h->next_rotation = next_rotation;
    h->rank = (uint32_t)rt_engine_rank(eng);
    h->size = (uint32_t)rt_engine_size(eng);
    h->first_worker = rt_engine_first_worker(eng);
    h->n_workers = (uint32_t)rt_engine_threads(eng);
}

int rt_state_xfer(rt_state_io *io, const char *tag, void *data, size_t len, rt_error *err)
{
    return io->w ? rt_state_put(io->w, tag, data, len, err)
                 : rt_state_get(io->r, tag, data, len, err);
}

int rt_state_xfer_home_blocks(rt_state_io *io, rt_engine *eng, rt_error *err)
{
    uint32_t first, count;
    rt_engine_home_blocks(eng, &first, &count);
    for (uint32_t b = first; b < first + count; b++) {
        size_t len = 0;
        void *payload = rt_engine_home_payload(eng, b, &len);
        uint64_t hdr[2] = {b, len};
        if (!payload)
            return rt_fail(err, RT_EXIT_RUNTIME, "state: block %u is not home", b);
        if (rt_state_xfer(io, "block", hdr, sizeof(hdr), err))
            return -1;
        /* Loading: the saved length, within the slot. */
        if (hdr[0] != b || (io->r && hdr[1] > rt_engine_slot_bytes(eng)))
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s: block %llu of %llu bytes where block %u was expected",
                           io->r ? io->r->path : "state", (unsigned long long)hdr[0],
                           (unsigned long long)hdr[1], b);
        if (rt_state_xfer(io, "payload", payload, (size_t)hdr[1], err))
            return -1;
    }
    return 0;
}

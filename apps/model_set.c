/* model_set.c - per-rank model parts written, committed as a set, and
 * found again (see model_set.h for the protocol). */
#define _GNU_SOURCE
#include "apps/model_set.h"
#include "apps/app_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ paths */

static int rank_tmp_dir(const char *out, int pid, int rank, char *buf, size_t cap, rt_error *err)
{
    char tag[16];
    snprintf(tag, sizeof(tag), "r%d", rank);
    return rt_tmp_dir_name(out, pid, tag, buf, cap, err);
}

/* A file name from the manifest or the wire: a plain name in the model
 * directory, NAME.part-RRRRR.npy. */
static int plain_part_name(const char *name)
{
    size_t n = strnlen(name, 48);
    return n > 0 && n < 48 && name[0] != '.' && !strchr(name, '/') && n > 4 &&
           !strcmp(name + n - 4, ".npy") && strstr(name, ".part-");
}

/* ------------------------------------------------------------ --out */

int rt_model_out_check(const char *out, rt_error *err)
{
    return rt_check_whole_out_dir(out, "model.json", "a rotor model", err);
}

/* ------------------------------------------------------------ writing */

int rt_model_save_begin(rt_model_saver *s, rt_engine *eng, const char *out, rt_error *err)
{
    memset(s, 0, sizeof(*s));
    s->tmp_hold = -1;
    s->eng = eng;
    s->out = out;
    s->mine.pid = (int32_t)getpid();
    if (rank_tmp_dir(out, s->mine.pid, rt_engine_rank(eng), s->tmp, sizeof(s->tmp), err))
        return -1;
    rt_remove_tree(s->tmp); /* a stale one of a process with our pid */
    if (rt_mkdir_p(s->tmp, err))
        return -1;
    s->tmp_hold = rt_hold_dir(s->tmp);
    return 0;
}

const char *rt_model_save_dir(const rt_model_saver *s)
{
    return s->tmp;
}

int rt_model_part_begin(rt_model_saver *s, const char *name, const char *descr, uint64_t rows,
                        uint64_t cols, rt_error *err)
{
    if (s->mine.n_files == RT_MODEL_MAX_PART_FILES || strlen(name) >= sizeof(s->mine.files[0].name))
        return rt_fail(err, RT_EXIT_RUNTIME, "model part %s: too many part files", name);
    rt_part_file *pf = &s->mine.files[s->mine.n_files];
    memset(pf, 0, sizeof(*pf));
    snprintf(pf->name, sizeof(pf->name), "%s", name);
    snprintf(pf->descr, sizeof(pf->descr), "%s", descr);
    snprintf(pf->file, sizeof(pf->file), "%s.part-%05d.npy", name, rt_engine_rank(s->eng));
    pf->rows = rows;
    pf->cols = cols;
    char path[4200];
    uint64_t cells;
    if (rt_mul_overflows(rows, cols, &cells) || rt_mul_overflows(cells, 4, &s->left))
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "model part %s: %" PRIu64 " x %" PRIu64 " is too large", name, rows, cols);
    if (rt_path_join(path, sizeof(path), s->tmp, pf->file, err) ||
        rt_outfile_open(&s->of, path, err))
        return -1;
    s->open = 1;
    return rt_npy_write_header(s->of.fp, descr, rows, cols, path, err);
}

int rt_model_part_write(rt_model_saver *s, const void *cells, size_t bytes, rt_error *err)
{
    if (!s->open || bytes > s->left)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: more cells than its shape", s->of.path);
    s->left -= bytes;
    return rt_write_all(s->of.fp, cells, bytes, s->of.path, err);
}

int rt_model_part_end(rt_model_saver *s, rt_error *err)
{
    rt_part_file *pf = &s->mine.files[s->mine.n_files];
    if (!s->open || s->left)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: fewer cells than its shape", s->of.path);
    s->open = 0;
    if (rt_outfile_commit(&s->of, err) || rt_file_checksum(s->of.path, &pf->bytes, &pf->check, err))
        return -1;
    s->mine.n_files++;
    return 0;
}

/* Rank 0: bring part r's files into our directory when we can see them. */
static int adopt_part(rt_model_saver *s, int r, rt_model_part *p, rt_error *err)
{
    char dir[4096], from[4200], to[4200];
    struct stat sb;
    if (rank_tmp_dir(s->out, p->pid, r, dir, sizeof(dir), err))
        return -1;
    if (stat(dir, &sb) != 0) {
        p->node_local = 1; /* the rank's own filesystem */
        return 0;
    }
    for (uint32_t i = 0; i < p->n_files; i++) {
        const rt_part_file *pf = &p->files[i];
        if (rt_path_join(from, sizeof(from), dir, pf->file, err) ||
            rt_path_join(to, sizeof(to), s->tmp, pf->file, err))
            return -1;
        if (stat(from, &sb) != 0 || (uint64_t)sb.st_size != pf->bytes)
            return rt_fail(err, RT_EXIT_RUNTIME, "%s: missing or not the size rank %d wrote", from,
                           r);
        if (rename(from, to) != 0)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot move to %s", from, to);
    }
    return 0;
}

/* What rank r sent: the record, a sane count and plain file names. */
static int check_part(const rt_model_part *p, size_t len, int r, rt_error *err)
{
    if (len != sizeof(*p) || p->n_files > RT_MODEL_MAX_PART_FILES)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "model save: rank %d sent a bad part record (%zu bytes)", r, len);
    for (uint32_t i = 0; i < p->n_files; i++) {
        const rt_part_file *pf = &p->files[i];
        char want[48];
        snprintf(want, sizeof(want), "%.15s.part-%05d.npy", pf->name, r);
        if (!memchr(pf->name, 0, sizeof(pf->name)) || !memchr(pf->file, 0, sizeof(pf->file)) ||
            strcmp(pf->file, want) || !plain_part_name(pf->file))
            return rt_fail(err, RT_EXIT_RUNTIME, "model save: rank %d sent a bad part name", r);
    }
    return 0;
}

static json_t *part_json(const rt_model_part *p, int rank)
{
    json_t *files = json_array();
    for (uint32_t i = 0; i < p->n_files; i++) {
        const rt_part_file *pf = &p->files[i];
        char hex[17];
        snprintf(hex, sizeof(hex), "%016" PRIx64, pf->check);
        json_array_append_new(
            files, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s}", "name", pf->name, "file",
                             pf->file, "dtype", pf->descr, "rows", (json_int_t)pf->rows, "cols",
                             (json_int_t)pf->cols, "bytes", (json_int_t)pf->bytes, "xxh3", hex));
    }
    return json_pack("{s:i, s:b, s:o}", "rank", rank, "node_local", (int)p->node_local, "files",
                     files);
}

/* A whole-model side file (ids, vocabulary, document names, topics): a
 * plain regular file in the model directory that is neither a part nor
 * model.json. */
static int side_file_name(const char *dir, const char *name)
{
    char path[4200];
    struct stat sb;
    if (name[0] == '.' || !strcmp(name, "model.json") || plain_part_name(name) ||
        snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return 0;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Rank 0: size and XXH3 of every side file into meta's "side_files", so
 * that a changed id or word is found at open like a changed part. */
static int record_side_files(const char *dir, json_t *meta, rt_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot read", dir);
    json_t *files = json_object();
    int rc = files ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        char path[4200], hex[17];
        uint64_t bytes = 0, check = 0;
        if (!side_file_name(dir, de->d_name))
            continue;
        rc = rt_path_join(path, sizeof(path), dir, de->d_name, err) ||
                     rt_file_checksum(path, &bytes, &check, err)
                 ? -1
                 : 0;
        snprintf(hex, sizeof(hex), "%016" PRIx64, check);
        if (rc == 0 &&
            json_object_set_new(files, de->d_name,
                                json_pack("{s:I, s:s}", "bytes", (json_int_t)bytes, "xxh3", hex)))
            rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    closedir(d);
    if (rc == 0)
        json_object_set_new(meta, "side_files", files);
    else
        json_decref(files);
    return rc;
}

static int write_manifest(const char *dir, json_t *meta, rt_error *err)
{
    char path[4200];
    if (rt_path_join(path, sizeof(path), dir, "model.json", err))
        return -1;
    return rt_app_write_json(path, meta, err);
}

/* Rank 0, everything gathered: adopt the parts, write the manifest, swap
 * the set into place.  verdict[r]: 1 = rank r's files are committed here,
 * 2 = rank r commits its own (node-local) directory. */
static int commit_at_root(rt_model_saver *s, rt_model_part *parts, const size_t *lens, json_t *meta,
                          int32_t *verdict, uint64_t save_id, rt_error *err)
{
    char id[32];
    int P = rt_engine_size(s->eng);
    for (int r = 0; r < P; r++) {
        if (check_part(&parts[r], lens[r], r, err))
            return -1;
        if (!parts[r].ok)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "model not saved: rank %d could not write its part (see its message); "
                           "%s is unchanged",
                           r, s->out);
    }
    json_t *list = json_array();
    json_object_set_new(meta, "format_version", json_integer(RT_MODEL_FORMAT_VERSION));
    json_object_set_new(meta, "ranks", json_integer(P));
    json_object_set_new(meta, "parts", list);
    snprintf(id, sizeof(id), "%016" PRIx64, save_id);
    json_object_set_new(meta, "save_id", json_string(id));
    for (int r = 0; r < P; r++) {
        if (r > 0 && adopt_part(s, r, &parts[r], err))
            return -1;
        verdict[r] = parts[r].node_local ? 2 : 1;
        json_array_append_new(list, part_json(&parts[r], r));
    }
    /* The manifest's rt_outfile_commit fsyncs s->tmp after its rename, so
     * the adopted parts' names, renamed in before it, are durable too. */
    if (record_side_files(s->tmp, meta, err) || write_manifest(s->tmp, meta, err))
        return -1;
    return rt_dir_replace(s->tmp, s->out, err);
}

/* Does OUT already hold the manifest of this very save?  Then this rank's
 * directory only looked node-local to rank 0 (a shared filesystem slow to
 * show it), and its parts belong next to that manifest: swapping would
 * replace the model rank 0 just committed. */
static int out_has_save(const char *out, uint64_t save_id)
{
    char path[4200], want[32];
    snprintf(path, sizeof(path), "%s/model.json", out);
    snprintf(want, sizeof(want), "%016" PRIx64, save_id);
    json_t *meta = rt_json_load(path, NULL);
    const char *id = json_string_value(json_object_get(meta, "save_id"));
    int same = id && !strcmp(id, want);
    json_decref(meta);
    return same;
}

/* Move this rank's part files into OUT (which holds this save's manifest). */
static int join_out(rt_model_saver *s, rt_error *err)
{
    char from[4200], to[4200];
    for (uint32_t i = 0; i < s->mine.n_files; i++) {
        if (rt_path_join(from, sizeof(from), s->tmp, s->mine.files[i].file, err) ||
            rt_path_join(to, sizeof(to), s->out, s->mine.files[i].file, err))
            return -1;
        if (rename(from, to) != 0)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot move to %s", from, to);
    }
    rt_remove_tree(s->tmp);
    return rt_sync_dir(s->out, err);
}

/* After the verdict: this rank's own directory. */
static int finish_rank(rt_model_saver *s, int32_t v, uint64_t save_id, rt_error *err)
{
    if (rt_engine_rank(s->eng) == 0 && v)
        return 0; /* swapped into place */
    if (v == 2)
        return out_has_save(s->out, save_id) ? join_out(s, err)
                                             : rt_dir_replace(s->tmp, s->out, err);
    rt_remove_tree(s->tmp); /* failed, or emptied by rank 0 */
    return 0;
}

int rt_model_save_commit(rt_model_saver *s, int rc, json_t *meta, rt_error *err)
{
    rt_engine *eng = s->eng;
    int P = rt_engine_size(eng), rank = rt_engine_rank(eng);
    rt_error scratch = {0}, *cerr = rc ? &scratch : err; /* keep the first error */
    if (rc)
        rt_error_prefix(err, "model not saved (%s is unchanged)", s->out);
    if (s->open) {
        rt_outfile_abort(&s->of);
        s->open = 0;
    }
    s->mine.ok = rc == 0; /* each part's rt_outfile_commit synced it and its name */
    void *all = NULL;
    size_t *lens = calloc((size_t)P, sizeof(size_t));
    /* verdict[0..P-1], then the save's id in two more ints */
    int32_t *verdict = calloc((size_t)P + 2, sizeof(int32_t));
    uint64_t save_id = 0;
    int crc = -1;
    if (!lens || !verdict) {
        rt_fail(cerr, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    if (rt_engine_gatherv(eng, &s->mine, sizeof(s->mine), &all, lens, cerr))
        goto out;
    if (rank == 0) {
        if (P == 1)
            lens[0] = sizeof(s->mine);
        save_id = rt_hash64((uint64_t)getpid() ^ (uint64_t)(rt_now() * 1e9)) | 1;
        memcpy(verdict + P, &save_id, sizeof(save_id));
        if (commit_at_root(s, P == 1 ? &s->mine : all, lens, meta, verdict, save_id, cerr))
            memset(verdict, 0, (size_t)P * sizeof(int32_t));
    }
    if (rt_engine_bcast(eng, verdict, ((size_t)P + 2) * sizeof(int32_t), cerr))
        goto out;
    memcpy(&save_id, verdict + P, sizeof(save_id));
    crc = finish_rank(s, verdict[rank], save_id, cerr);
    if (crc == 0 && !verdict[rank]) {
        if (rank != 0)
            rt_fail(cerr, RT_EXIT_RUNTIME,
                    "model not saved (see rank 0's message); %s is unchanged", s->out);
        crc = -1;
    }
    /* Nobody reports success before every rank has committed. */
    if (rt_engine_barrier(eng, crc ? NULL : cerr))
        crc = -1;
out:
    if (crc)
        rt_remove_tree(s->tmp);
    json_decref(meta);
    free(all);
    free(lens);
    free(verdict);
    rt_release_dir(s->tmp_hold);
    s->tmp_hold = -1;
    return rc || crc ? -1 : 0;
}

/* ------------------------------------------------------------ reading */

int rt_json_u64(json_t *obj, const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
                const char *path, rt_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < lo ||
        (uint64_t)json_integer_value(v) > hi)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"%s\" must be an integer in %" PRIu64 "..%" PRIu64,
                       path, key, lo, hi);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int json_str(json_t *obj, const char *key, char *out, size_t cap, const char *path,
                    rt_error *err)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (!s || strlen(s) >= cap)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"%s\" must be a string of at most %zu bytes", path,
                       key, cap - 1);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

static int read_part_file(json_t *f, rt_part_file *pf, const char *path, rt_error *err)
{
    char hex[17];
    char *end;
    if (!json_is_object(f))
        return rt_fail(err, RT_EXIT_INPUT, "%s: a part file entry is not an object", path);
    if (json_str(f, "name", pf->name, sizeof(pf->name), path, err) ||
        json_str(f, "file", pf->file, sizeof(pf->file), path, err) ||
        json_str(f, "dtype", pf->descr, sizeof(pf->descr), path, err) ||
        json_str(f, "xxh3", hex, sizeof(hex), path, err) ||
        rt_json_u64(f, "rows", 0, UINT32_MAX, &pf->rows, path, err) ||
        rt_json_u64(f, "cols", 1, UINT32_MAX, &pf->cols, path, err) ||
        rt_json_u64(f, "bytes", 0, INT64_MAX, &pf->bytes, path, err))
        return -1;
    errno = 0;
    pf->check = strtoull(hex, &end, 16);
    if (!plain_part_name(pf->file) || (strcmp(pf->descr, "<f4") && strcmp(pf->descr, "<i4")) ||
        strlen(hex) != 16 || *end || errno)
        return rt_fail(err, RT_EXIT_INPUT, "%s: bad part file entry '%s'", path, pf->file);
    return 0;
}

static int read_parts(rt_model_parts *mp, const char *path, rt_error *err)
{
    json_t *list = json_object_get(mp->meta, "parts");
    uint64_t ranks = 0;
    if (rt_json_u64(mp->meta, "ranks", 1, 1u << 20, &ranks, path, err))
        return -1;
    if (!json_is_array(list) || json_array_size(list) != ranks)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"parts\" must list the %" PRIu64 " ranks' parts",
                       path, ranks);
    mp->parts = calloc(ranks, sizeof(rt_model_part));
    if (!mp->parts)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    mp->n = (uint32_t)ranks;
    for (uint32_t r = 0; r < mp->n; r++) {
        json_t *p = json_array_get(list, r), *files = json_object_get(p, "files");
        uint64_t rank = 0;
        if (!json_is_object(p) || rt_json_u64(p, "rank", r, r, &rank, path, err) ||
            !json_is_array(files) || json_array_size(files) > RT_MODEL_MAX_PART_FILES)
            return err->code ? -1
                             : rt_fail(err, RT_EXIT_INPUT, "%s: part %u is malformed", path, r);
        mp->parts[r].n_files = (uint32_t)json_array_size(files);
        for (uint32_t i = 0; i < mp->parts[r].n_files; i++)
            if (read_part_file(json_array_get(files, i), &mp->parts[r].files[i], path, err))
                return -1;
    }
    return 0;
}

/* Every part file present, of its size and checksum. */
static int verify_parts(const rt_model_parts *mp, rt_error *err)
{
    char path[4200];
    for (uint32_t r = 0; r < mp->n; r++)
        for (uint32_t i = 0; i < mp->parts[r].n_files; i++) {
            const rt_part_file *pf = &mp->parts[r].files[i];
            uint64_t bytes, check;
            struct stat sb;
            if (rt_path_join(path, sizeof(path), mp->dir, pf->file, err))
                return -1;
            if (stat(path, &sb) != 0)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: incomplete model: %s (written by rank %u) is missing", mp->dir,
                               pf->file, r);
            if ((uint64_t)sb.st_size != pf->bytes)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: incomplete model: %s has %lld bytes, model.json says %" PRIu64,
                               mp->dir, pf->file, (long long)sb.st_size, pf->bytes);
            if (rt_file_checksum(path, &bytes, &check, err))
                return -1;
            if (bytes != pf->bytes || check != pf->check)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: incomplete model: %s does not match its checksum in model.json",
                               mp->dir, pf->file);
        }
    return 0;
}

/* Every side file model.json records, of its size and checksum (a model
 * saved before they were recorded has no "side_files": nothing to check). */
static int verify_side_files(const rt_model_parts *mp, const char *path, rt_error *err)
{
    json_t *files = json_object_get(mp->meta, "side_files"), *f;
    const char *name;
    if (!files)
        return 0;
    if (!json_is_object(files))
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"side_files\" is not an object", path);
    json_object_foreach(files, name, f)
    {
        char file[4200], hex[17], *end;
        uint64_t want_bytes = 0, bytes = 0, check = 0;
        if (!json_is_object(f) || json_str(f, "xxh3", hex, sizeof(hex), path, err) ||
            rt_json_u64(f, "bytes", 0, INT64_MAX, &want_bytes, path, err))
            return err->code ? -1 : rt_fail(err, RT_EXIT_INPUT, "%s: bad side file entry", path);
        errno = 0;
        uint64_t want = strtoull(hex, &end, 16);
        if (!name[0] || name[0] == '.' || strchr(name, '/') || strlen(hex) != 16 || *end || errno)
            return rt_fail(err, RT_EXIT_INPUT, "%s: bad side file entry '%s'", path, name);
        if (rt_path_join(file, sizeof(file), mp->dir, name, err))
            return -1;
        if (access(file, F_OK) != 0)
            return rt_fail(err, RT_EXIT_INPUT, "%s: incomplete model: %s is missing", mp->dir,
                           name);
        if (rt_file_checksum(file, &bytes, &check, err))
            return -1;
        if (bytes != want_bytes || check != want)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s: damaged model: %s does not match its size and checksum in "
                           "model.json",
                           mp->dir, name);
    }
    return 0;
}

int rt_model_parts_open(const char *dir, rt_model_parts *mp, rt_error *err)
{
    char path[4096];
    memset(mp, 0, sizeof(*mp));
    snprintf(mp->dir, sizeof(mp->dir), "%s", dir);
    if (!(mp->meta = rt_app_model_json(dir, path, err)))
        return -1;
    json_t *v = json_object_get(mp->meta, "format_version");
    if (!v)
        return 0; /* a single-file model */
    if (!json_is_integer(v) || json_integer_value(v) != RT_MODEL_FORMAT_VERSION)
        rt_fail(err, RT_EXIT_INPUT, "%s: \"format_version\" is not %d, the one this rotor reads",
                path, RT_MODEL_FORMAT_VERSION);
    else if (read_parts(mp, path, err) == 0 && verify_parts(mp, err) == 0 &&
             verify_side_files(mp, path, err) == 0)
        return 0;
    rt_model_parts_close(mp); /* nothing held after a failure */
    return -1;
}

void rt_model_parts_close(rt_model_parts *mp)
{
    json_decref(mp->meta);
    free(mp->parts);
    memset(mp, 0, sizeof(*mp));
}

json_t *rt_model_single_meta(const rt_model_parts *mp)
{
    static const char *const manifest_keys[] = {"format_version", "ranks", "parts", "save_id",
                                                "side_files"};
    json_t *meta = json_deep_copy(mp->meta);
    for (size_t i = 0; meta && i < sizeof(manifest_keys) / sizeof(manifest_keys[0]); i++)
        json_object_del(meta, manifest_keys[i]);
    return meta;
}

const rt_part_file *rt_model_part_find(const rt_model_parts *mp, uint32_t i, const char *name)
{
    for (uint32_t f = 0; f < mp->parts[i].n_files; f++)
        if (!strcmp(mp->parts[i].files[f].name, name))
            return &mp->parts[i].files[f];
    return NULL;
}

int rt_model_part_open(const rt_model_parts *mp, const rt_part_file *pf, FILE **fp, rt_error *err)
{
    char path[4200];
    uint64_t rows, cols;
    if (rt_path_join(path, sizeof(path), mp->dir, pf->file, err) ||
        rt_npy_open(path, pf->descr, fp, &rows, &cols, err))
        return -1;
    if (rows != pf->rows || cols != pf->cols) {
        fclose(*fp);
        *fp = NULL;
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: is %" PRIu64 " x %" PRIu64 ", model.json says %" PRIu64 " x %" PRIu64,
                       path, rows, cols, pf->rows, pf->cols);
    }
    return 0;
}

int rt_model_part_read(FILE *fp, const rt_part_file *pf, void *buf, uint64_t rows, rt_error *err)
{
    size_t bytes = (size_t)(rows * pf->cols * 4);
    if (fread(buf, 1, bytes, fp) != bytes)
        return rt_fail(err, RT_EXIT_INPUT, "%s: changed while it was read", pf->file);
    return 0;
}

/* ------------------------------------------------------------ scanning */

int rt_model_check_finite(const float *a, uint64_t rows, uint64_t cols, uint64_t pad, uint64_t row0,
                          const char *what, rt_error *err)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            float v = a[r * pad + c];
            if (!isfinite(v))
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: row %" PRIu64 ", column %" PRIu64 " is %s (rotor train saves "
                               "only finite numbers: a damaged or hand-made model)",
                               what, row0 + r, c, isnan(v) ? "NaN" : "infinite");
        }
    return 0;
}

/* The first of rows x cols int32 counts that is negative, refused as
 * rt_model_check_finite refuses a float: rotor saves counts (LDA's) of 0
 * or more, and export would write a negative one on, or a negative
 * probability computed from it. */
static int check_counts(const int32_t *a, uint64_t rows, uint64_t cols, uint64_t row0,
                        const char *what, rt_error *err)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            if (a[r * cols + c] < 0)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: row %" PRIu64 ", column %" PRIu64 " is a negative count (%d; "
                               "rotor train saves none: a damaged or hand-made model)",
                               what, row0 + r, c, a[r * cols + c]);
    return 0;
}

/* A block of part file pf's rows from row `at`: finite floats, or counts. */
static int check_part_rows(const rt_model_parts *mp, const rt_part_file *pf, const void *rows,
                           uint64_t at, uint64_t m, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", mp->dir, pf->file);
    if (!strcmp(pf->descr, "<f4"))
        return rt_model_check_finite(rows, m, pf->cols, pf->cols, at, path, err);
    return check_counts(rows, m, pf->cols, at, path, err);
}

int rt_model_scan(const rt_model_parts *mp, const char *name, const char *ids_name, uint64_t n,
                  uint64_t cols, uint64_t memory, rt_rows_visit visit, void *ctx, rt_error *err)
{
    uint64_t row_bytes = cols * 4, block = memory / 2 / (row_bytes + 4), seen_n = 0;
    if (block < 1)
        block = 1;
    if (block > 65536)
        block = 65536;
    uint8_t *seen = calloc(n / 8 + 1, 1);
    int32_t *ids = malloc(block * 4);
    char *rows = malloc(block * row_bytes);
    FILE *fi = NULL, *fr = NULL;
    int rc = -1;
    if (!seen || !ids || !rows) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory (reading %s)", name);
        goto out;
    }
    for (uint32_t p = 0; p < mp->n; p++) {
        const rt_part_file *pi = rt_model_part_find(mp, p, ids_name),
                           *pr = rt_model_part_find(mp, p, name);
        if (!pi || !pr || pi->rows != pr->rows || pi->cols != 1 || pr->cols != cols) {
            rt_fail(err, RT_EXIT_INPUT, "%s: part %u: %s and %s missing or of the wrong shape",
                    mp->dir, p, name, ids_name);
            goto out;
        }
        if (rt_model_part_open(mp, pi, &fi, err) || rt_model_part_open(mp, pr, &fr, err))
            goto out;
        for (uint64_t at = 0; at < pr->rows;) {
            uint64_t m = pr->rows - at < block ? pr->rows - at : block;
            if (rt_model_part_read(fi, pi, ids, m, err) ||
                rt_model_part_read(fr, pr, rows, m, err) ||
                check_part_rows(mp, pr, rows, at, m, err))
                goto out;
            for (uint64_t i = 0; i < m; i++) {
                uint64_t id = (uint64_t)(uint32_t)ids[i];
                if (ids[i] < 0 || id >= n || (seen[id / 8] >> (id % 8) & 1)) {
                    rt_fail(err, RT_EXIT_INPUT,
                            "%s: %s: id %d is out of range 0..%" PRIu64 " or appears twice",
                            mp->dir, pi->file, ids[i], n - 1);
                    goto out;
                }
                seen[id / 8] |= (uint8_t)(1u << (id % 8));
            }
            seen_n += m;
            if (visit(ctx, ids, rows, m, err))
                goto out;
            at += m;
        }
        fclose(fi);
        fclose(fr);
        fi = fr = NULL;
    }
    if (seen_n != n) {
        rt_fail(err, RT_EXIT_INPUT,
                "%s: incomplete model: the parts hold %" PRIu64 " of the %" PRIu64 " rows of %s",
                mp->dir, seen_n, n, name);
        goto out;
    }
    rc = 0;
out:
    if (fi)
        fclose(fi);
    if (fr)
        fclose(fr);
    free(seen);
    free(ids);
    free(rows);
    return rc;
}

typedef struct dense_chunk {
    uint64_t lo, hi, row_bytes;
    char *buf;
    rt_rows_visit inner;
} dense_chunk;

static int fill_chunk(void *ctx, const int32_t *ids, const void *rows, uint64_t m, rt_error *err)
{
    dense_chunk *c = ctx;
    (void)err;
    for (uint64_t i = 0; i < m; i++) {
        uint64_t id = (uint64_t)ids[i];
        if (id >= c->lo && id < c->hi)
            memcpy(c->buf + (id - c->lo) * c->row_bytes, (const char *)rows + i * c->row_bytes,
                   c->row_bytes);
    }
    return 0;
}

int rt_model_dense_rows(const rt_model_parts *mp, const char *name, const char *ids_name,
                        uint64_t n, uint64_t cols, uint64_t memory, rt_dense_emit emit, void *ctx,
                        rt_progress *progress, rt_error *err)
{
    dense_chunk c = {.row_bytes = cols * 4};
    uint64_t chunk = memory / 2 / c.row_bytes;
    if (chunk < 1)
        chunk = 1;
    if (chunk > n)
        chunk = n ? n : 1;
    c.buf = malloc(chunk * c.row_bytes);
    if (!c.buf)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%s)", name);
    int rc = 0;
    for (c.lo = 0; rc == 0 && c.lo < n; c.lo = c.hi) {
        c.hi = n - c.lo < chunk ? n : c.lo + chunk;
        rc = rt_model_scan(mp, name, ids_name, n, cols, memory / 2, fill_chunk, &c, err);
        if (rc == 0)
            rc = emit(ctx, c.buf, c.lo, c.hi - c.lo, err);
        if (progress)
            rt_progress_set(progress, progress->done + (c.hi - c.lo) * c.row_bytes);
    }
    free(c.buf);
    return rc;
}

/* ------------------------------------------------------------ one writer */

int rt_model_dir_begin(const char *out, char *tmp, size_t cap, rt_error *err)
{
    if (rt_model_out_check(out, err) || rank_tmp_dir(out, (int)getpid(), 0, tmp, cap, err))
        return -1;
    rt_remove_tree(tmp);
    if (rt_mkdir_p(tmp, err))
        return -1;
    rt_hold_dir(tmp); /* a one-shot command: released when the process ends */
    return 0;
}

int rt_model_dir_commit(const char *tmp, const char *out, rt_error *err)
{
    if (rt_dir_replace(tmp, out, err)) {
        rt_remove_tree(tmp);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ merging */

int rt_model_copy_file(const char *from_dir, const char *to_dir, const char *name, uint64_t lines,
                       rt_error *err)
{
    char from[4200], to[4200];
    if (rt_path_join(from, sizeof(from), from_dir, name, err) ||
        rt_path_join(to, sizeof(to), to_dir, name, err))
        return -1;
    FILE *in = rt_fopen_read(from, RT_READ_OWN, err);
    if (!in)
        return -1;
    rt_outfile of;
    if (rt_outfile_open(&of, to, err)) {
        fclose(in);
        return -1;
    }
    char last = '\n';
    uint64_t seen = 0;
    int rc = rt_outfile_copy_from(&of, in, from, &seen, &last, err);
    fclose(in);
    if (rc == 0 && lines != RT_ANY_LINES && (seen != lines || last != '\n'))
        rc = rt_fail(err, RT_EXIT_INPUT,
                     "%s: %" PRIu64 " lines%s, the model has %" PRIu64 " (damaged, or from "
                     "another model)",
                     from, seen, last != '\n' ? " and a cut last line" : "", lines);
    if (rc) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

typedef struct merge {
    const rt_model_parts *mp;
    FILE *fp;
    const char *path;
    uint64_t cols;
    int ints;          /* <i4 cells */
    rt_linereader ids; /* text: the original ids, in step with the rows */
    int text;
} merge;

static int emit_merged(void *ctx, const void *rows, uint64_t lo, uint64_t n, rt_error *err)
{
    merge *g = ctx;
    (void)lo;
    if (!g->text)
        return rt_write_all(g->fp, rows, n * g->cols * 4, g->path, err);
    for (uint64_t i = 0; i < n; i++) {
        char *id;
        size_t len;
        int r = rt_linereader_next(&g->ids, &id, &len, err);
        if (r <= 0)
            return r < 0 ? -1 : rt_fail(err, RT_EXIT_INPUT, "%s: fewer ids than rows", g->mp->dir);
        fwrite(id, 1, len, g->fp);
        for (uint64_t c = 0; c < g->cols; c++)
            if (g->ints)
                fprintf(g->fp, " %d", ((const int32_t *)rows)[i * g->cols + c]);
            else
                fprintf(g->fp, " %.9g", ((const float *)rows)[i * g->cols + c]);
        fputc('\n', g->fp);
    }
    return rt_write_check(g->fp, g->path, err);
}

int rt_model_merge(const rt_model_parts *mp, const char *name, const char *ids, uint64_t n,
                   uint64_t cols, const char *path, const char *ids_file, uint64_t memory,
                   rt_progress *progress, rt_error *err)
{
    const rt_part_file *pf = mp->n ? rt_model_part_find(mp, 0, name) : NULL;
    if (!pf)
        return rt_fail(err, RT_EXIT_INPUT, "%s: the model has no %s parts", mp->dir, name);
    merge g = {.mp = mp,
               .path = path,
               .cols = cols,
               .ints = !strcmp(pf->descr, "<i4"),
               .text = ids_file != NULL};
    char from[4200];
    rt_outfile of;
    int rc = 0, ids_open = 0;
    if (rt_outfile_open(&of, path, err))
        return -1;
    g.fp = of.fp;
    if (!g.text)
        rc = rt_npy_write_header(of.fp, pf->descr, n, cols, path, err);
    else if (rt_path_join(from, sizeof(from), mp->dir, ids_file, err) ||
             rt_linereader_open_own(&g.ids, from, err))
        rc = -1;
    else
        ids_open = 1;
    if (rc == 0)
        rc = rt_model_dense_rows(mp, name, ids, n, cols, memory, emit_merged, &g, progress, err);
    if (ids_open) /* a failed write too (it leaked the reader's buffer) */
        rt_linereader_close(&g.ids);
    if (rc) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

/* secfile.c - write and verify sectioned files (layout.bin, shard-NNNNN.bin). */
#include "partition/secfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Checksum of the header (with header_check = 0) followed by the table. */
static uint64_t header_checksum(const rt_file_header *hdr, const rt_section_entry *sec)
{
    rt_file_header h = *hdr;
    h.header_check = 0;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, &h, sizeof(h));
    XXH3_64bits_update(&st, sec, sizeof(*sec) * h.n_sections);
    return XXH3_64bits_digest(&st);
}

int rt_hashed_create(rt_hashed_file *f, const char *path, rt_error *err)
{
    f->path = path;
    f->bytes = 0;
    XXH3_64bits_reset(&f->st);
    f->fp = fopen(path, "wb");
    if (!f->fp)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", path);
    setvbuf(f->fp, NULL, _IOFBF, 1 << 20);
    return 0;
}

int rt_hashed_put(rt_hashed_file *f, const void *p, size_t len, rt_error *err)
{
    XXH3_64bits_update(&f->st, p, len);
    f->bytes += len;
    return rt_write_all(f->fp, p, len, f->path, err);
}

int rt_hashed_close(rt_hashed_file *f, int rc, uint64_t *bytes, uint64_t *check, rt_error *err)
{
    /* Synced before the plan is swapped in: a disk that fails to take the
     * bytes says so at fsync (EIO), and the swap must not publish them. */
    if (rc == 0 && (fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0))
        rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", f->path);
    if (fclose(f->fp) != 0 && rc == 0)
        rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", f->path);
    f->fp = NULL;
    if (rc == 0) {
        *bytes = f->bytes;
        *check = XXH3_64bits_digest(&f->st);
    }
    return rc;
}

int rt_secfile_write(const char *path, const rt_file_header *hdr, const rt_secdata *secs,
                     uint32_t n, uint64_t *file_check, uint64_t *file_bytes, rt_error *err)
{
    static const char zeros[RT_ALIGN];
    rt_file_header h = *hdr;
    rt_section_entry table[RT_MAX_SECTIONS];
    if (n > RT_MAX_SECTIONS)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: too many sections", path);
    memset(table, 0, sizeof(table));
    uint64_t at = rt_round_up(sizeof(h) + sizeof(table[0]) * n, RT_ALIGN);
    for (uint32_t i = 0; i < n; i++) {
        table[i].id = secs[i].id;
        table[i].offset = at;
        table[i].bytes = secs[i].bytes;
        table[i].checksum = rt_checksum(secs[i].data, secs[i].bytes);
        at = rt_round_up(at + secs[i].bytes, RT_ALIGN);
    }
    h.n_sections = n;
    h.reserved = 0;
    h.header_check = header_checksum(&h, table);

    rt_hashed_file f;
    if (rt_hashed_create(&f, path, err))
        return -1;
    int rc = rt_hashed_put(&f, &h, sizeof(h), err);
    if (rc == 0)
        rc = rt_hashed_put(&f, table, sizeof(table[0]) * n, err);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = rt_hashed_put(&f, zeros, table[i].offset - f.bytes, err);
        if (rc == 0)
            rc = rt_hashed_put(&f, secs[i].data, secs[i].bytes, err);
    }
    return rt_hashed_close(&f, rc, file_bytes, file_check, err);
}

/* The first len bytes of fd in an anonymous mapping (unmapped like a file
 * mapping).  Fewer bytes than fstat gave: the file was cut meanwhile. */
static void *read_copy(int fd, size_t len, const char *path, rt_error *err)
{
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: out of memory (%zu bytes)", path, len);
        return NULL;
    }
    for (size_t at = 0; at < len;) {
        ssize_t n = pread(fd, (char *)map + at, len - at, (off_t)at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: read failed", path);
            else
                rt_fail(err, RT_EXIT_INPUT,
                        "%s: truncated while being read (%zu of %zu bytes; rewritten by "
                        "another process?)",
                        path, at, len);
            munmap(map, len);
            return NULL;
        }
        at += (size_t)n;
    }
    return map;
}

/* The whole file (len bytes) in memory: mapped, or read. */
static void *load(int fd, size_t len, int mapped, const char *path, rt_error *err)
{
    if (!mapped)
        return read_copy(fd, len, path, err);
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED)
        return map;
    rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot mmap", path);
    return NULL;
}

int rt_secfile_open(const char *path, uint32_t kind, int mapped, rt_secfile *f, rt_error *err)
{
    memset(f, 0, sizeof(*f));
    int fd = rt_open_read(path, RT_READ_OWN, err);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", path);
    }
    if (S_ISDIR(sb.st_mode)) { /* (open takes one; mmap said "No such device") */
        close(fd);
        return rt_fail_errno(err, RT_EXIT_INPUT, EISDIR, "%s: read failed", path);
    }
    size_t len = (size_t)sb.st_size;
    if (len < sizeof(rt_file_header)) {
        close(fd);
        return rt_fail(err, RT_EXIT_INPUT, "%s: truncated (%zu bytes, shorter than a header)", path,
                       len);
    }
    void *map = load(fd, len, mapped, path, err);
    close(fd);
    if (!map)
        return -1;
    f->map = map;
    f->len = len;
    f->hdr = map;
    f->sec = (const rt_section_entry *)((const char *)map + sizeof(rt_file_header));
    const rt_file_header *h = f->hdr;
    const char *why = NULL;
    if (memcmp(h->magic, RT_FILE_MAGIC, 8) != 0)
        why = "not a rotor plan file (bad magic)";
    else if (h->version != RT_PLAN_FORMAT_VERSION)
        why = "unsupported format version";
    else if (h->kind != kind)
        why = kind == RT_FILE_LAYOUT ? "not a layout file" : "not a shard file";
    else if (h->n_sections > RT_MAX_SECTIONS)
        why = "corrupted header (section count)";
    else if (sizeof(*h) + sizeof(rt_section_entry) * h->n_sections > len)
        why = "truncated (section table)";
    else if (header_checksum(h, f->sec) != h->header_check)
        why = "header checksum mismatch (corrupted)";
    /* Sections follow each other in table order, each at the next aligned
     * offset; the padding between them is zero and the file ends with the
     * last section, so every byte of the file is checked. */
    uint64_t at = sizeof(*h) + sizeof(rt_section_entry) * (why ? 0 : h->n_sections);
    for (uint32_t i = 0; !why && i < h->n_sections; i++) {
        const rt_section_entry *s = &f->sec[i];
        if (s->offset != rt_round_up(at, RT_ALIGN))
            why = "corrupted section table (bad offset)";
        else if (s->offset > len || s->bytes > len - s->offset)
            why = "truncated (a section extends past the end of the file)";
        else if (!rt_all_zero((const char *)map + at, s->offset - at))
            why = "corrupted padding before the section";
        else if (rt_checksum((const char *)map + s->offset, s->bytes) != s->checksum)
            why = "section checksum mismatch (corrupted)";
        at = s->offset + s->bytes;
        if (why) {
            rt_fail(err, RT_EXIT_INPUT, "%s: section %u: %s", path, s->id, why);
            rt_secfile_close(f);
            return -1;
        }
    }
    if (!why && at != len)
        why = at < len ? "unexpected bytes after the last section" : "truncated";
    if (why) {
        rt_fail(err, RT_EXIT_INPUT, "%s: %s", path, why);
        rt_secfile_close(f);
        return -1;
    }
    return 0;
}

void rt_secfile_close(rt_secfile *f)
{
    if (f->map)
        munmap(f->map, f->len);
    memset(f, 0, sizeof(*f));
}

const void *rt_secfile_find(const rt_secfile *f, uint32_t id, uint64_t *bytes)
{
    for (uint32_t i = 0; i < f->hdr->n_sections; i++)
        if (f->sec[i].id == id) {
            *bytes = f->sec[i].bytes;
            return (const char *)f->map + f->sec[i].offset;
        }
    *bytes = 0;
    return NULL;
}

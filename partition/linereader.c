/* linereader.c - big buffered reads, one NUL-terminated line at a time. */
#include "partition/partition.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LR_CHUNK (16u << 20)          /* bytes per read() */
#define LR_PEEK (64u << 10)           /* bytes a format guess may look at */
#define LR_LINE_MAX ((size_t)1 << 30) /* longest line accepted (1 GiB) */

static int open_kind(rt_linereader *lr, const char *path, rt_read_kind kind, rt_error *err)
{
    memset(lr, 0, sizeof(*lr));
    lr->path = rt_is_stdio(path) ? "standard input" : path; /* for messages */
    lr->fd = rt_is_stdio(path) ? rt_stdin_dup(err) : rt_open_read(path, kind, err);
    if (lr->fd < 0)
        return -1;
    /* A small file gets a buffer its size (eval's id files, tests), not 16 MB. */
    struct stat sb;
    lr->cap = LR_CHUNK;
    if (fstat(lr->fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size < LR_CHUNK)
        lr->cap = (size_t)sb.st_size < 4096 ? 4096 : (size_t)sb.st_size + 1;
    lr->buf = malloc(lr->cap + 1); /* +1: room for a NUL after an unterminated last line */
    if (!lr->buf) {
        close(lr->fd);
        lr->fd = -1;
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (line buffer)");
    }
    rt_progress_start_reading(&lr->progress, lr->fd, lr->path);
    return 0;
}

int rt_linereader_open(rt_linereader *lr, const char *path, rt_error *err)
{
    return open_kind(lr, path, RT_READ_DATA, err);
}

int rt_linereader_open_own(rt_linereader *lr, const char *path, rt_error *err)
{
    return open_kind(lr, path, RT_READ_OWN, err);
}

void rt_linereader_close(rt_linereader *lr)
{
    rt_progress_end(&lr->progress);
    if (lr->fd >= 0)
        close(lr->fd);
    free(lr->buf);
    lr->buf = NULL;
    lr->fd = -1;
}

/* Before the buffer grows for a line that fills it: refuse binary data and
 * absurd lengths now, not after an endless device (/dev/zero) or a binary
 * file without newlines has been read into memory.  Each byte is scanned
 * about twice in all, since the buffer doubles. */
static int check_growing_line(rt_linereader *lr, rt_error *err)
{
    const char *s = lr->buf + lr->start;
    size_t n = lr->end - lr->start;
    size_t bad = rt_text_find_binary(s, n);
    if (bad < n) {
        uint64_t line = lr->line_no + 1;
        for (size_t i = 0; i < bad; i++)
            line += s[i] == '\n';
        return rt_fail_binary_head(err, lr->path, lr->head, lr->head_len, line,
                                   (unsigned char)s[bad]);
    }
    if (lr->cap >= LR_LINE_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: a line longer than %zu MiB", lr->path,
                       (unsigned long long)lr->line_no + 1, LR_LINE_MAX >> 20);
    return 0;
}

/* Move unread bytes to the front, grow when a line fills the buffer, read more. */
static int refill(rt_linereader *lr, rt_error *err)
{
    size_t left = lr->end - lr->start;
    if (lr->start > 0) {
        memmove(lr->buf, lr->buf + lr->start, left);
        lr->start = 0;
        lr->end = left;
    }
    if (lr->end == lr->cap) {
        if (check_growing_line(lr, err) < 0)
            return -1;
        char *b = realloc(lr->buf, lr->cap * 2 + 1);
        if (!b)
            return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory (a line longer than %zu bytes)",
                           lr->path, lr->cap);
        lr->buf = b;
        lr->cap *= 2;
    }
    ssize_t n;
    do
        n = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: read failed", lr->path);
    if (n == 0)
        lr->eof = 1;
    size_t keep = sizeof(lr->head) - lr->head_len;
    keep = keep < (size_t)n ? keep : (size_t)n;
    memcpy(lr->head + lr->head_len, lr->buf + lr->end, keep);
    lr->head_len += keep;
    /* old Mac line ends become '\n'; a '\r' left unsettled at the end of the
     * last read meets its follower (or the end of the input) now */
    size_t from = lr->end > lr->start && lr->buf[lr->end - 1] == '\r' ? lr->end - 1 : lr->end;
    rt_text_unify_line_ends(lr->buf + from, lr->end + (size_t)n - from, !lr->eof);
    lr->end += (size_t)n;
    lr->bytes_read += (uint64_t)n;
    rt_progress_set(&lr->progress, lr->bytes_read);
    return 0;
}

/* Skip a UTF-8 byte order mark once its 3 bytes (or the end) are buffered. */
static void skip_bom(rt_linereader *lr)
{
    if (lr->bom_checked || (lr->end - lr->start < 3 && !lr->eof))
        return;
    lr->bom_checked = 1;
    lr->start += rt_utf8_bom_len(lr->buf + lr->start, lr->end - lr->start);
}

int rt_linereader_peek(rt_linereader *lr, const char **text, size_t *len, rt_error *err)
{
    /* a pipe hands out a few KiB per read(): read until enough is buffered */
    while (!lr->eof && lr->end - lr->start < LR_PEEK)
        if (refill(lr, err) < 0)
            return -1;
    skip_bom(lr);
    *text = lr->buf + lr->start;
    *len = lr->end - lr->start;
    return 0;
}

/* A compressed file's first line can hold no binary byte (its bytes hold a
 * line end early, as zstd's header may): one whose magic number says so is
 * named by the binary bytes buffered behind that line, not parsed as text. */
static int refuse_packed(rt_linereader *lr, rt_error *err)
{
    if (!rt_compressed_by(lr->head, lr->head_len))
        return 0;
    size_t n = lr->end - lr->start;
    n = n < LR_PEEK ? n : LR_PEEK;
    size_t bad = rt_text_find_binary(lr->buf + lr->start, n);
    if (bad == n)
        return 0;
    return rt_fail_binary_head(err, lr->path, lr->head, lr->head_len, 1,
                               (unsigned char)lr->buf[lr->start + bad]);
}

int rt_linereader_next(rt_linereader *lr, char **line, size_t *len, rt_error *err)
{
    for (;;) {
        if (!lr->bom_checked && !lr->eof && lr->end - lr->start < 3) {
            if (refill(lr, err) < 0)
                return -1;
            continue;
        }
        skip_bom(lr);
        char *s = lr->buf + lr->start;
        char *nl = memchr(s, '\n', lr->end - lr->start);
        size_t n;
        if (nl) {
            n = (size_t)(nl - s);
            lr->start += n + 1;
        } else if (lr->eof) {
            if (lr->start == lr->end)
                return 0;
            n = lr->end - lr->start; /* last line without '\n' */
            lr->start = lr->end;
        } else {
            if (refill(lr, err) < 0)
                return -1;
            continue;
        }
        if (n && s[n - 1] == '\r')
            n--;
        s[n] = '\0';
        *line = s;
        *len = n;
        lr->line_no++;
        size_t bad = rt_text_find_binary(s, n);
        if (bad < n)
            return rt_fail_binary_head(err, lr->path, lr->head, lr->head_len, lr->line_no,
                                       (unsigned char)s[bad]);
        if (lr->line_no == 1 && refuse_packed(lr, err))
            return -1;
        return 1;
    }
}

/*
 * read_ratings.c - MF ratings readers: whitespace triplets (u.data), CSV
 * with a header (ratings.csv), MovieLens "::" (ratings.dat), MatrixMarket
 * coordinate, LIBMF, the Netflix Prize's "ITEM:" blocks.  Hand-rolled field splitting and number
 * parsing: these files run to tens of millions of lines.
 */
#include "partition/partition.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FIELDS 5 /* we need at most 4; the 5th only shows "too many" */

typedef struct field {
    char *s;
    size_t len;
} field;

/* The first name of each format is its canonical one. */
const rt_opt_choice rt_rating_formats[] = {{"auto", RT_FMT_AUTO},
                                           {"triplets", RT_FMT_TRIPLETS},
                                           {"csv", RT_FMT_CSV},
                                           {"movielens-dat", RT_FMT_DAT},
                                           {"mm", RT_FMT_MM},
                                           {"libmf", RT_FMT_LIBMF},
                                           {"netflix", RT_FMT_NETFLIX},
                                           {"dat", RT_FMT_DAT},
                                           {"movielens", RT_FMT_DAT},
                                           {"matrixmarket", RT_FMT_MM},
                                           {NULL, 0}};

const char *rt_rating_format_name(rt_rating_format f)
{
    for (const rt_opt_choice *c = rt_rating_formats; c->name; c++)
        if (c->value == (int)f)
            return c->name;
    return "?";
}

int rt_rating_format_parse(const char *s, rt_rating_format *f)
{
    for (const rt_opt_choice *c = rt_rating_formats; c->name; c++)
        if (!strcmp(s, c->name)) {
            *f = (rt_rating_format)c->value;
            return 0;
        }
    return -1;
}

static inline int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Split on runs of spaces/tabs.  Fields are NUL-terminated in place. */
static int split_ws(char *s, field *f)
{
    int n = 0;
    for (;;) {
        while (is_space(*s))
            s++;
        if (!*s)
            return n;
        char *start = s;
        while (*s && !is_space(*s))
            s++;
        if (n < MAX_FIELDS)
            f[n] = (field){start, (size_t)(s - start)};
        n++;
        if (!*s)
            return n;
        *s++ = '\0';
    }
}

/* Split on a one-character (',' or ';') or two-character ("::") separator;
 * fields are trimmed of surrounding spaces and of one pair of double quotes
 * (spreadsheets and pandas quote string ids; separators inside quotes are
 * not supported: ids and ratings do not hold them). */
static int split_sep(char *s, const char *sep, field *f)
{
    size_t sl = strlen(sep);
    int n = 0;
    for (;;) {
        char *end = sl == 1 ? strchr(s, sep[0]) : strstr(s, sep);
        char *stop = end ? end : s + strlen(s);
        char *a = s, *z = stop;
        while (a < z && is_space(*a))
            a++;
        while (z > a && is_space(z[-1]))
            z--;
        if (z - a >= 2 && *a == '"' && z[-1] == '"') /* a quoted field: "A1B2" */
            a++, z--;
        *z = '\0';
        if (n < MAX_FIELDS)
            f[n] = (field){a, (size_t)(z - a)};
        n++;
        if (!end)
            return n;
        s = end + sl;
    }
}

/* The first of the n fields split_sep made (1-based) with a double quote
 * at one end only, 0: none.  A quoted field holding the separator ("a,b")
 * was cut in two there, and its halves read as an id and the next field
 * with exit 0. */
static int half_quoted(const field *f, int n)
{
    for (int i = 0; i < n && i < MAX_FIELDS; i++) {
        size_t l = f[i].len;
        if (l && (f[i].s[0] == '"') != (l >= 2 && f[i].s[l - 1] == '"'))
            return i + 1;
    }
    return 0;
}

/* A decimal number: fast exact path for plain "ddd.ddd", strtod otherwise.
 * (mantissa < 2^53 and at most 22 fraction digits make the division exact
 * up to one correct rounding.)  Returns -1 when not a number. */
static int parse_number(const char *s, size_t len, double *out)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = s, *end = s + len;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (; p < end; p++) {
        if (*p >= '0' && *p <= '9') {
            m = m * 10 + (uint64_t)(*p - '0');
            digits++;
            if (frac >= 0)
                frac++;
        } else if (*p == '.' && frac < 0) {
            frac = 0;
        } else {
            break;
        }
    }
    if (p == end && digits > 0 && digits <= 15 && frac <= 22) {
        double v = (double)m / p10[frac > 0 ? frac : 0];
        *out = neg ? -v : v;
        return 0;
    }
    if (len == 0)
        return -1;
    char *e;
    errno = 0;
    double v = strtod(s, &e); /* s is NUL-terminated at `end` */
    if (e != end || e == s)
        return -1;
    /* strtod also reads hex ("0x10"); NaN and infinity pass on to their own message */
    if (isfinite(v) && !rt_is_decimal(s, len))
        return -1;
    *out = v;
    return 0;
}

/* A non-negative integer id; canon / clen: the id without leading zeros. */
static int parse_uint_id(const field *f, uint64_t *v, const char **canon, size_t *clen)
{
    if (f->len == 0 || f->len > 19)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < f->len; i++) {
        if (f->s[i] < '0' || f->s[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(f->s[i] - '0');
    }
    size_t z = 0;
    while (z + 1 < f->len && f->s[z] == '0')
        z++;
    *v = x;
    *canon = f->s + z;
    *clen = f->len - z;
    return 0;
}

/* ---- one reading pass ---- */

typedef struct reader {
    const char *path;
    rt_rating_format fmt;
    rt_linereader lr;
    rt_idmap *rows, *cols;
    int add_ids;
    rt_triplets *out;
    rt_ratings_stats *st;
    const char *sep; /* CSV: "," or ";" (decided on the first data line) */
    int pair_fields; /* 2 when the first data line had no rating field, else 0 */
    /* Netflix: the item of the current block ("123" of "123:"; empty before the first) */
    char nf_item[32];
    size_t nf_item_len;
    /* MatrixMarket */
    int mm_pattern, mm_have_size;
    uint64_t mm_rows, mm_cols, mm_nnz, mm_size_line, mm_entries;
} reader;

static int line_error(reader *r, rt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int line_error(reader *r, rt_error *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return rt_fail(err, RT_EXIT_INPUT, "%s:%" PRIu64 ": %s", r->path, r->lr.line_no, what);
}

/* Show at most 40 characters of a bad field. */
static const char *clip(const field *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.*s%s", (int)(f->len > 40 ? 40 : f->len), f->s, f->len > 40 ? "..." : "");
    return buf;
}

/* "%%MatrixMarket matrix coordinate <field> <symmetry>" */
static int mm_banner(reader *r, char *line, rt_error *err)
{
    field f[MAX_FIELDS];
    int n = split_ws(line, f);
    if (n != 5 || strcasecmp(f[1].s, "matrix") || strcasecmp(f[2].s, "coordinate"))
        return line_error(r, err, "expected '%%%%MatrixMarket matrix coordinate real general'");
    if (strcasecmp(f[4].s, "general"))
        return line_error(r, err, "MatrixMarket symmetry '%s' is not supported (only general)",
                          f[4].s);
    if (!strcasecmp(f[3].s, "pattern"))
        r->mm_pattern = 1;
    else if (strcasecmp(f[3].s, "real") && strcasecmp(f[3].s, "integer"))
        return line_error(r, err, "MatrixMarket field '%s' is not supported", f[3].s);
    return 0;
}

static int mm_size(reader *r, field *f, int n, rt_error *err)
{
    const char *c;
    size_t cl;
    if (n != 3 || parse_uint_id(&f[0], &r->mm_rows, &c, &cl) < 0 ||
        parse_uint_id(&f[1], &r->mm_cols, &c, &cl) < 0 ||
        parse_uint_id(&f[2], &r->mm_nnz, &c, &cl) < 0)
        return line_error(r, err, "expected the MatrixMarket size line 'rows cols entries'");
    r->mm_have_size = 1;
    r->mm_size_line = r->lr.line_no;
    return 0;
}

/* Look up or add the ids of one rating; *keep = 0 when a test id is unknown. */
static int map_ids(reader *r, const char *u, size_t ul, const char *i, size_t il, uint32_t *row,
                   uint32_t *col, int *keep, rt_error *err)
{
    if (r->add_ids) {
        *keep = 1;
        if (rt_idmap_intern(r->rows, u, ul, row, err) < 0 ||
            rt_idmap_intern(r->cols, i, il, col, err) < 0)
            return rt_error_prefix(err, "%s:%" PRIu64, r->path, r->lr.line_no);
        return 0;
    }
    int64_t a = rt_idmap_find(r->rows, u, ul), b = rt_idmap_find(r->cols, i, il);
    *keep = a >= 0 && b >= 0;
    *row = (uint32_t)a;
    *col = (uint32_t)b;
    return 0;
}

/* Semicolon-separated files come from locales whose decimal mark is a
 * comma ("3,5"). */
static void decimal_comma(field *f)
{
    char *c = memchr(f->s, ',', f->len);
    if (c)
        *c = '.';
}

static int has_digit(const field *f)
{
    for (size_t i = 0; i < f->len; i++)
        if (f->s[i] >= '0' && f->s[i] <= '9')
            return 1;
    return 0;
}

int rt_netflix_block_head(const char *s, size_t len)
{
    if (len < 2 || s[len - 1] != ':')
        return 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* "nan", "inf", "Infinity" (as strtod reads them), not "1e999". */
static int spells_nan_or_inf(const field *f)
{
    for (size_t i = 0; i < f->len; i++)
        if (f->s[i] && strchr("nNiI", f->s[i]))
            return 1;
    return 0;
}

static int rating_line(reader *r, field *f, int n, rt_error *err)
{
    char buf[64];
    int want_max = r->fmt == RT_FMT_MM ? (r->mm_pattern ? 2 : 3) : r->fmt == RT_FMT_LIBMF ? 3 : 4;
    int want_min = r->fmt == RT_FMT_MM && r->mm_pattern ? 2 : 3;
    if (r->pair_fields)
        want_min = want_max = 2;
    if (n < want_min || n > want_max) {
        if (r->pair_fields)
            return line_error(r, err,
                              "expected 2 fields (user item, as on the first line), found %d", n);
        if (n == 1 && rt_netflix_block_head(f[0].s, f[0].len))
            return line_error(r, err,
                              "'%.*s' heads a block of the Netflix Prize's format (ITEM: then "
                              "user,rating,date lines), in a %s file: --format netflix reads it",
                              (int)f[0].len, f[0].s, rt_rating_format_name(r->fmt));
        if (want_min == want_max)
            return line_error(r, err, "expected %d fields, found %d", want_min, n);
        return line_error(r, err, "expected 3 or 4 fields (user item rating [timestamp]), found %d",
                          n);
    }
    const char *u = f[0].s, *i = f[1].s;
    size_t ul = f[0].len, il = f[1].len;
    if (r->fmt == RT_FMT_MM || r->fmt == RT_FMT_LIBMF) {
        uint64_t a, b;
        if (parse_uint_id(&f[0], &a, &u, &ul) < 0)
            return line_error(r, err, "row id '%s' is not a non-negative integer",
                              clip(&f[0], buf, sizeof(buf)));
        if (parse_uint_id(&f[1], &b, &i, &il) < 0)
            return line_error(r, err, "column id '%s' is not a non-negative integer",
                              clip(&f[1], buf, sizeof(buf)));
        if (r->fmt == RT_FMT_MM) {
            if (a < 1 || a > r->mm_rows)
                return line_error(r, err, "row id %" PRIu64 " outside the header's 1..%" PRIu64, a,
                                  r->mm_rows);
            if (b < 1 || b > r->mm_cols)
                return line_error(r, err, "column id %" PRIu64 " outside the header's 1..%" PRIu64,
                                  b, r->mm_cols);
            if (++r->mm_entries > r->mm_nnz)
                return line_error(r, err, "more entries than the %" PRIu64 " the header declares",
                                  r->mm_nnz);
        }
    }
    double v = 1.0; /* MatrixMarket pattern and user-item pairs: every pair counts 1 */
    if (n >= 3) {
        if (r->sep && r->sep[0] == ';')
            decimal_comma(&f[2]);
        if (parse_number(f[2].s, f[2].len, &v) < 0)
            return line_error(r, err, "rating '%s' is not a number", clip(&f[2], buf, sizeof(buf)));
        if (!isfinite(v) && spells_nan_or_inf(&f[2])) /* else a decimal beyond double's range */
            return line_error(r, err, "rating '%s' is NaN or infinite",
                              clip(&f[2], buf, sizeof(buf)));
        if (!isfinite((float)v)) /* ratings are stored as float */
            return line_error(r, err, "rating '%s' is beyond the float range (|r| < %.2g)",
                              clip(&f[2], buf, sizeof(buf)), (double)FLT_MAX);
    }
    uint32_t row, col;
    int keep;
    if (map_ids(r, u, ul, i, il, &row, &col, &keep, err) < 0)
        return -1;
    if (!keep) {
        r->st->dropped++;
        return 0;
    }
    if (r->out->budget && r->out->n >= r->out->budget)
        return line_error(r, err,
                          "rating %" PRIu64 " is more than the %" PRIu64
                          " that --max-memory leaves room for; nothing written",
                          r->out->n + 1, r->out->budget);
    r->st->ratings++;
    return rt_triplets_push(r->out, row, col, (float)v, err);
}

/* Is the first data line a header ("userId,movieId,rating,timestamp",
 * "user_id<TAB>item_id<TAB>rating", "user,item")?  Its rating field is not a
 * number and its user field is not an integer id; with two fields (user
 * item, no rating), neither field holds a digit. */
static int header_line(reader *r, field *f, int n)
{
    double v;
    uint64_t id;
    const char *c;
    size_t cl;
    if (n >= 3) {
        if (r->sep && r->sep[0] == ';')
            decimal_comma(&f[2]);
        return parse_number(f[2].s, f[2].len, &v) < 0 && parse_uint_id(&f[0], &id, &c, &cl) < 0;
    }
    return n == 2 && !has_digit(&f[0]) && !has_digit(&f[1]);
}

static int has_header(rt_rating_format f)
{
    return f == RT_FMT_TRIPLETS || f == RT_FMT_CSV || f == RT_FMT_DAT;
}

/* A header line, if it is one: skipped, and named on stderr. */
static int skip_header(reader *r, field *f, int n)
{
    char a[64], b[64];
    if (!header_line(r, f, n))
        return 0;
    r->st->header = 1;
    rt_info("%s:%" PRIu64 ": skipped the header line ('%s', '%s', ...)", r->path, r->lr.line_no,
            clip(&f[0], a, sizeof(a)), clip(&f[1], b, sizeof(b)));
    return 1;
}

/* A Netflix Prize line: "ITEM:" starts an item's block, "user,rating[,date]"
 * rates it (the date is not read, as a 4th field elsewhere). */
static int netflix_line(reader *r, char *s, rt_error *err)
{
    field f[MAX_FIELDS + 1];
    size_t len = strlen(s);
    while (len > 0 && is_space(s[len - 1]))
        len--;
    if (rt_netflix_block_head(s, len)) {
        if (len - 1 >= sizeof(r->nf_item))
            return line_error(r, err, "item id '%.*s' is longer than %zu digits", (int)len - 1, s,
                              sizeof(r->nf_item) - 1);
        memcpy(r->nf_item, s, len - 1);
        r->nf_item[len - 1] = '\0';
        r->nf_item_len = len - 1;
        return 0;
    }
    if (!r->nf_item_len)
        return line_error(r, err,
                          "a rating before the first 'ITEM:' line (the Netflix Prize's format "
                          "starts each item's block with its id and a colon, as '1:')");
    int n = split_sep(s, ",", f + 1);
    if (n < 2 || n > 3)
        return line_error(r, err,
                          "expected 'user,rating[,date]' in item %s's block, found %d field%s%s",
                          r->nf_item, n, n == 1 ? "" : "s",
                          n == 1 ? " (the probe and qualifying files have no ratings)" : "");
    f[0] = f[1];
    f[1] = (field){r->nf_item, r->nf_item_len};
    return rating_line(r, f, n + 1, err);
}

static int one_line(reader *r, char *line, int *first_data, rt_error *err)
{
    field f[MAX_FIELDS];
    char *s = line;
    while (is_space(*s))
        s++;
    if (r->fmt == RT_FMT_MM && r->lr.line_no == 1) {
        if (strncmp(line, "%%MatrixMarket", 14) != 0)
            return line_error(r, err, "missing the '%%%%MatrixMarket' banner");
        return mm_banner(r, line, err);
    }
    if (!*s)
        return 0; /* blank */
    if (r->fmt == RT_FMT_MM) {
        if (*s == '%')
            return 0;
        int n = split_ws(s, f);
        return r->mm_have_size ? rating_line(r, f, n, err) : mm_size(r, f, n, err);
    }
    if (rt_text_comment_line(s))
        return 0;
    if (r->fmt == RT_FMT_NETFLIX)
        return netflix_line(r, s, err);
    /* JSON is recognised before the split cuts the line */
    if (*first_data == 1 && has_header(r->fmt) && rt_text_json_line(s, strlen(s)))
        return line_error(r, err,
                          "JSON, not ratings text: write one 'user item rating' per line "
                          "first (e.g. jq -r '[.user_id, .item_id, .rating] | @tsv' FILE)");
    if (r->fmt == RT_FMT_CSV && !r->sep)
        r->sep = strchr(s, ';') ? ";" : ",";
    int n = r->fmt == RT_FMT_CSV   ? split_sep(s, r->sep, f)
            : r->fmt == RT_FMT_DAT ? split_sep(s, "::", f)
                                   : split_ws(s, f);
    int q = r->fmt == RT_FMT_CSV || r->fmt == RT_FMT_DAT ? half_quoted(f, n) : 0;
    if (q) {
        char buf[80];
        return line_error(r, err,
                          "field %d ('%s') has a double quote at one end only: a quoted field "
                          "holding the separator '%s' is not supported (ids and ratings hold "
                          "none)",
                          q, clip(&f[q - 1], buf, sizeof(buf)),
                          r->fmt == RT_FMT_CSV ? r->sep : "::");
    }
    if (*first_data && has_header(r->fmt)) {
        /* 1: the first data line, which may be a header; 2: the first after a header */
        int may_be_header = *first_data == 1;
        *first_data = 0;
        if (may_be_header && skip_header(r, f, n)) {
            *first_data = 2;
            return 0;
        }
        if (n == 2) { /* user-item pairs without ratings, all lines alike */
            r->pair_fields = 2;
            r->st->pairs = 1;
        }
    }
    return rating_line(r, f, n, err);
}

/* Size the output once from the file size and the first lines' length, so a
 * big file is not copied again and again by growing arrays.  Under a budget
 * (--max-memory) the reservation stops at it, and an estimate above it is
 * only a note: the first lines' length can be far from the rest's (a file
 * sorted by user, ids growing in digits), so the refusal waits for the count
 * actually read to pass the budget (rating_line). */
static int reserve_estimate(reader *r, rt_error *err)
{
    struct stat sb;
    uint64_t used = r->lr.bytes_read - (r->lr.end - r->lr.start);
    if (fstat(r->lr.fd, &sb) != 0 || !S_ISREG(sb.st_mode) || used == 0)
        return 0;
    double per_line = (double)used / (double)r->lr.line_no;
    uint64_t more = (uint64_t)((double)sb.st_size / per_line * 1.02) + 1024;
    uint64_t left = (uint64_t)sb.st_size > used ? (uint64_t)sb.st_size - used : 0;
    uint64_t expect = r->out->n + (uint64_t)((double)left / per_line);
    uint64_t want = r->out->n + more;
    if (r->out->budget && expect > r->out->budget)
        rt_info("%s:%" PRIu64 ": about %" PRIu64 " ratings expected (from the file's size and "
                "its first %" PRIu64 " lines), more than the %" PRIu64
                " that --max-memory leaves room for: the read stops if it reaches them",
                r->path, r->lr.line_no, expect, r->lr.line_no, r->out->budget);
    if (r->out->budget && want > r->out->budget)
        want = r->out->budget;
    return rt_triplets_reserve(r->out, want, err);
}

static int read_all(reader *r, rt_error *err)
{
    char *line;
    size_t len;
    int rc, first_data = 1;
    while ((rc = rt_linereader_next(&r->lr, &line, &len, err)) == 1) {
        if (one_line(r, line, &first_data, err) < 0)
            return -1;
        if (r->lr.line_no == 20000 && reserve_estimate(r, err) < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    r->st->lines = r->lr.line_no;
    if (r->fmt == RT_FMT_MM) {
        if (!r->mm_have_size)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%" PRIu64 ": no MatrixMarket size line", r->path,
                           r->lr.line_no);
        if (r->mm_entries != r->mm_nnz)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%" PRIu64 ": the header declares %" PRIu64
                           " entries but the file has %" PRIu64,
                           r->path, r->mm_size_line, r->mm_nnz, r->mm_entries);
    }
    if (r->add_ids && r->st->ratings == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%" PRIu64 ": empty input: no ratings", r->path,
                       r->lr.line_no ? r->lr.line_no : 1);
    return 0;
}

int rt_read_ratings(const char *path, rt_rating_format fmt, rt_idmap *rows, rt_idmap *cols,
                    int add_ids, rt_triplets *out, rt_ratings_stats *st, rt_error *err)
{
    memset(st, 0, sizeof(*st));
    reader r;
    memset(&r, 0, sizeof(r));
    if (rt_linereader_open(&r.lr, path, err) < 0)
        return -1;
    if (fmt == RT_FMT_AUTO) {
        const char *why;
        if (rt_rating_format_sniff_reader(&r.lr, &fmt, &why, err) < 0) {
            rt_linereader_close(&r.lr);
            return -1;
        }
        rt_info("%s: format %s (%s)", r.lr.path, rt_rating_format_name(fmt), why);
    }
    st->format = fmt;
    r.path = r.lr.path; /* "standard input" for "-" */
    r.fmt = fmt;
    r.rows = rows;
    r.cols = cols;
    r.add_ids = add_ids;
    r.out = out;
    r.st = st;
    double t0 = rt_now();
    int rc = read_all(&r, err);
    double dt = rt_now() - t0;
    rt_linereader_close(&r.lr);
    if (rc == 0 && st->lines >= 1000000)
        rt_info("%s: %" PRIu64 " ratings in %.2f s (%.1fM lines/s)", path, st->ratings, dt,
                dt > 0 ? (double)st->lines / dt / 1e6 : 0.0);
    return rc;
}

/* idmap.c - interning original id strings into dense ids (first appearance).
 *
 * Two open-addressing tables share one dense id space: canonical decimal ids
 * (the usual case: MovieLens, LIBMF, MatrixMarket) are keyed by their value,
 * anything else by the string, with 32 hash bits kept in the slot so that a
 * probe rarely needs a string compare.  Small values (MovieLens-style ids)
 * skip hashing altogether: a direct array indexed by value.
 *
 * The direct array covers values [0, n_direct) and every value below
 * n_direct lives there, every larger one in the integer table.  It grows
 * only as far as the ids seen so far justify (DIRECT_SLACK slots per id), so
 * a 100-byte file naming id 4000000 costs a hash slot, not a 16 MB table;
 * when it grows, the integer-table values it now covers move into it. */
#include "partition/partition.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void rt_idmap_init(rt_idmap *m)
{
    memset(m, 0, sizeof(*m));
}

void rt_idmap_free(rt_idmap *m)
{
    free(m->chars);
    free(m->off);
    free(m->slots);
    free(m->ikeys);
    free(m->ivals);
    free(m->direct);
    memset(m, 0, sizeof(*m));
}

/* "0" or [1-9][0-9]{0,17}: string equality is then value equality. */
static inline int canon_uint(const char *s, size_t len, uint64_t *v)
{
    if (len == 0 || len > 18 || (s[0] == '0' && len > 1))
        return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9)
            return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

#define DIRECT_MAX (1u << 22)
#define DIRECT_MIN 4096u /* slots any table may have */
#define DIRECT_SLACK 8u  /* slots per distinct id beyond DIRECT_MIN */

/* May value v (not yet covered) get a direct slot, given m->n ids so far? */
static inline int direct_worth(const rt_idmap *m, uint64_t v)
{
    return v < DIRECT_MAX && v < DIRECT_MIN + DIRECT_SLACK * m->n;
}

static inline uint64_t hash_str(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

static inline int same(const rt_idmap *m, uint32_t id, const char *s, size_t len)
{
    const char *t = m->chars + m->off[id];
    /* Stored strings are NUL-terminated: equal iff the first len bytes match
     * and the stored string ends there. */
    return memcmp(t, s, len) == 0 && t[len] == '\0';
}

/* Slot of integer key v (value + 1) or of the empty slot where it belongs. */
static inline uint64_t int_slot(const rt_idmap *m, uint64_t key)
{
    uint64_t mask = m->n_islots - 1;
    uint64_t i = rt_hash64(key) & mask;
    while (m->ikeys[i] && m->ikeys[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* Slot holding string s, or the empty slot where it belongs. */
static inline uint64_t str_slot(const rt_idmap *m, const char *s, size_t len, uint64_t h)
{
    uint64_t mask = m->n_slots - 1, tag = h & 0xffffffff00000000ULL;
    uint64_t i = h & mask;
    for (;; i = (i + 1) & mask) {
        uint64_t v = m->slots[i];
        if (!v || ((v & 0xffffffff00000000ULL) == tag && same(m, (uint32_t)v - 1, s, len)))
            return i;
    }
}

int64_t rt_idmap_find(const rt_idmap *m, const char *s, size_t len)
{
    uint64_t v;
    if (canon_uint(s, len, &v) && v < m->n_direct)
        return m->direct[v] ? (int64_t)m->direct[v] - 1 : -1;
    if (canon_uint(s, len, &v)) {
        if (!m->n_islots)
            return -1;
        uint64_t i = int_slot(m, v + 1);
        return m->ikeys[i] ? (int64_t)m->ivals[i] : -1;
    }
    if (!m->n_slots)
        return -1;
    uint64_t x = m->slots[str_slot(m, s, len, hash_str(s, len))];
    return x ? (int64_t)((uint32_t)x - 1) : -1;
}

/* Rebuild the integer table with n slots, leaving out the values below
 * `below` (they moved to the direct array).  Nothing changes on failure. */
static int rebuild_int(rt_idmap *m, uint64_t n, uint64_t below, rt_error *err)
{
    uint64_t *keys = calloc(n, sizeof(uint64_t));
    uint32_t *vals = malloc(sizeof(uint32_t) * n);
    if (!keys || !vals) {
        free(keys), free(vals);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (id table)");
    }
    rt_idmap old = *m;
    m->ikeys = keys;
    m->ivals = vals;
    m->n_islots = n;
    m->n_int = 0;
    for (uint64_t i = 0; i < old.n_islots; i++)
        if (old.ikeys[i] && old.ikeys[i] - 1 >= below) {
            uint64_t j = int_slot(m, old.ikeys[i]);
            keys[j] = old.ikeys[i];
            vals[j] = old.ivals[i];
            m->n_int++;
        }
    free(old.ikeys), free(old.ivals);
    return 0;
}

static int grow_int(rt_idmap *m, rt_error *err)
{
    return rebuild_int(m, m->n_islots ? m->n_islots * 2 : 1024, 0, err);
}

/* Make direct[v] addressable (direct_worth(m, v)), moving the integer-table
 * values the grown array covers into it.  Nothing changes on failure. */
static int grow_direct(rt_idmap *m, uint64_t v, rt_error *err)
{
    uint64_t n = m->n_direct ? m->n_direct : DIRECT_MIN;
    while (n <= v)
        n *= 2;
    /* calloc, not realloc + memset: a big table comes zeroed from mmap, so
     * pages no id ever lands on are never touched. */
    uint32_t *d = calloc(n, sizeof(uint32_t));
    if (!d)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (id table)");
    if (m->n_direct)
        memcpy(d, m->direct, sizeof(uint32_t) * m->n_direct);
    uint64_t moved = 0;
    for (uint64_t i = 0; i < m->n_islots; i++)
        if (m->ikeys[i] && m->ikeys[i] - 1 < n) {
            d[m->ikeys[i] - 1] = m->ivals[i] + 1;
            moved++;
        }
    if (moved && rebuild_int(m, m->n_islots, n, err) < 0) {
        free(d);
        return -1;
    }
    free(m->direct);
    m->direct = d;
    m->n_direct = n;
    return 0;
}

static int grow_str(rt_idmap *m, rt_error *err)
{
    uint64_t n = m->n_slots ? m->n_slots * 2 : 1024;
    uint64_t *slots = calloc(n, sizeof(uint64_t));
    if (!slots)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (id table)");
    for (uint64_t i = 0; i < m->n_slots; i++) {
        uint64_t v = m->slots[i];
        if (!v)
            continue;
        const char *t = m->chars + m->off[(uint32_t)v - 1];
        uint64_t j = hash_str(t, strlen(t)) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = v;
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n;
    return 0;
}

/* Append string s as the next dense id. */
static int append(rt_idmap *m, const char *s, size_t len, rt_error *err)
{
    if (m->n >= UINT32_MAX - 1)
        return rt_fail(err, RT_EXIT_INPUT, "more than 2^32-2 distinct ids");
    if (rt_grow_array((void **)&m->off, &m->cap, m->n + 1, sizeof(uint64_t), err) < 0 ||
        rt_grow_array((void **)&m->chars, &m->chars_cap, m->chars_len + len + 1, 1, err) < 0)
        return -1;
    memcpy(m->chars + m->chars_len, s, len);
    m->chars[m->chars_len + len] = '\0';
    m->off[m->n] = m->chars_len;
    m->chars_len += len + 1;
    m->n++;
    return 0;
}

int rt_idmap_intern(rt_idmap *m, const char *s, size_t len, uint32_t *id, rt_error *err)
{
    uint64_t v;
    int is_int = canon_uint(s, len, &v);
    if (is_int && v >= m->n_direct && direct_worth(m, v) && grow_direct(m, v, err) < 0)
        return -1;
    if (is_int && v < m->n_direct) {
        if (m->direct[v]) {
            *id = m->direct[v] - 1;
            return 0;
        }
        if (append(m, s, len, err) < 0)
            return -1;
        *id = (uint32_t)(m->n - 1);
        m->direct[v] = *id + 1;
        return 0;
    }
    if (is_int) {
        if ((m->n_int + 1) * 2 > m->n_islots && grow_int(m, err) < 0)
            return -1;
        uint64_t i = int_slot(m, v + 1);
        if (m->ikeys[i]) {
            *id = m->ivals[i];
            return 0;
        }
        if (append(m, s, len, err) < 0)
            return -1;
        m->ikeys[i] = v + 1;
        m->ivals[i] = *id = (uint32_t)(m->n - 1);
        m->n_int++;
        return 0;
    }
    if ((m->n_str + 1) * 2 > m->n_slots && grow_str(m, err) < 0)
        return -1;
    uint64_t h = hash_str(s, len);
    uint64_t i = str_slot(m, s, len, h);
    if (m->slots[i]) {
        *id = (uint32_t)m->slots[i] - 1;
        return 0;
    }
    if (append(m, s, len, err) < 0)
        return -1;
    *id = (uint32_t)(m->n - 1);
    m->slots[i] = (h & 0xffffffff00000000ULL) | ((uint64_t)*id + 1);
    m->n_str++;
    return 0;
}

/* idmap.c - interning original id strings into dense ids (first appearance). */
#include "partition.h"

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
    memset(m, 0, sizeof(*m));
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

int64_t rt_idmap_find(const rt_idmap *m, const char *s, size_t len)
{
    if (!m->n_slots)
        return -1;
    uint64_t mask = m->n_slots - 1;
    for (uint64_t i = hash_str(s, len) & mask;; i = (i + 1) & mask) {
        uint32_t v = m->slots[i];
        if (!v)
            return -1;
        if (same(m, v - 1, s, len))
            return v - 1;
    }
}

/* Double the hash table (kept at most half full). */
static int rehash(rt_idmap *m, rt_error *err)
{
    uint64_t n_slots = m->n_slots ? m->n_slots * 2 : 1024;
    uint32_t *slots = calloc(n_slots, sizeof(uint32_t));
    if (!slots)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (id table)");
    uint64_t mask = n_slots - 1;
    for (uint64_t id = 0; id < m->n; id++) {
        const char *t = m->chars + m->off[id];
        uint64_t i = hash_str(t, strlen(t)) & mask;
        while (slots[i])
            i = (i + 1) & mask;
        slots[i] = (uint32_t)id + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n_slots;
    return 0;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t unit, rt_error *err)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * unit);
    if (!q)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (id table)");
    *p = q;
    *cap = c;
    return 0;
}

int rt_idmap_intern(rt_idmap *m, const char *s, size_t len, uint32_t *id, rt_error *err)
{
    if (m->n_slots) {
        uint64_t mask = m->n_slots - 1;
        uint64_t i = hash_str(s, len) & mask;
        for (; m->slots[i]; i = (i + 1) & mask)
            if (same(m, m->slots[i] - 1, s, len)) {
                *id = m->slots[i] - 1;
                return 0;
            }
    }
    if (m->n >= UINT32_MAX - 1)
        return rt_fail(err, RT_EXIT_INPUT, "more than 2^32-2 distinct ids");
    if ((m->n + 1) * 2 > m->n_slots && rehash(m, err) < 0)
        return -1;
    if (grow((void **)&m->off, &m->cap, m->n + 1, sizeof(uint64_t), err) < 0 ||
        grow((void **)&m->chars, &m->chars_cap, m->chars_len + len + 1, 1, err) < 0)
        return -1;
    memcpy(m->chars + m->chars_len, s, len);
    m->chars[m->chars_len + len] = '\0';
    m->off[m->n] = m->chars_len;
    m->chars_len += len + 1;
    uint64_t mask = m->n_slots - 1;
    uint64_t i = hash_str(s, len) & mask;
    while (m->slots[i])
        i = (i + 1) & mask;
    m->slots[i] = (uint32_t)m->n + 1;
    *id = (uint32_t)m->n++;
    return 0;
}

/* lda_ftree.c - the F+ tree (Yu et al., "A scalable asynchronous
 * distributed algorithm for topic modeling", WWW 2015): n nonnegative
 * weights as the leaves of a tree whose inner nodes hold their subtree's
 * sum, so that one weight changes in O(log n) and a draw proportional to
 * the weights descends in O(log n).
 *
 * Each node has LDA_FTREE_FAN children: level 0 is the leaves, node i of
 * level j + 1 sums nodes FAN i .. FAN i + FAN - 1 of level j (those that
 * exist), and the last level is the root alone.  A wide node makes the
 * change short (K = 1000: 4 sums above the leaf, where a binary tree has
 * 10), and changes are many (every count change, and a word's topics at
 * its load and store) where draws are few.  A change adds its difference
 * to every sum above the leaf (the adds do not wait on one another); the
 * rounding that leaves behind is cleared by lda_ftree_build, which sums
 * every node afresh from the leaves. */
#include "apps/lda.h"

#include <string.h>

int lda_ftree_init(lda_ftree *t, uint32_t n)
{
    memset(t, 0, sizeof(*t));
    size_t total = 0;
    uint32_t len = n;
    do { /* every level down to the root (at least one above the leaves) */
        t->len[t->levels++] = len;
        total += len;
        len = (len + LDA_FTREE_FAN - 1) / LDA_FTREE_FAN;
    } while (t->len[t->levels - 1] > 1 || t->levels < 2);
    t->n = n;
    t->node = rt_alloc(total * sizeof(double));
    if (!t->node)
        return -1;
    memset(t->node, 0, total * sizeof(double));
    double *at = t->node;
    for (uint32_t j = 0; j < t->levels; j++) {
        t->level[j] = at;
        at += t->len[j];
    }
    return 0;
}

void lda_ftree_free(lda_ftree *t)
{
    rt_free(t->node);
    memset(t, 0, sizeof(*t));
}

void lda_ftree_build(lda_ftree *t)
{
    for (uint32_t j = 1; j < t->levels; j++)
        for (uint32_t i = 0; i < t->len[j]; i++) {
            const uint32_t end =
                (i + 1) * LDA_FTREE_FAN < t->len[j - 1] ? (i + 1) * LDA_FTREE_FAN : t->len[j - 1];
            double sum = 0;
            for (uint32_t c = i * LDA_FTREE_FAN; c < end; c++)
                sum += t->level[j - 1][c];
            t->level[j][i] = sum;
        }
}

uint32_t lda_ftree_find(const lda_ftree *t, double u)
{
    uint32_t i = 0;
    for (uint32_t j = t->levels - 1; j > 0; j--) {
        const double *child = t->level[j - 1];
        const uint32_t end =
            (i + 1) * LDA_FTREE_FAN < t->len[j - 1] ? (i + 1) * LDA_FTREE_FAN : t->len[j - 1];
        uint32_t c = i * LDA_FTREE_FAN, last = c;
        for (; c < end; c++) {
            if (!(child[c] > 0))
                continue;
            last = c;
            if (u < child[c])
                break;
            u -= child[c];
        }
        /* (rounding can leave u at or past the sum: then the last child
         * with weight, and u at its sum, so the levels below take their
         * last too) */
        if (c == end)
            u = child[c = last];
        i = c;
    }
    return i;
}

/* As lda_ftree_find, with leaf k read as v and every sum above it as
 * lda_ftree_set(t, k, v) would leave it (the same adds), the tree itself
 * untouched: the draw of a token whose change is undone at once when it
 * keeps its topic (half the tokens), and undone without rounding. */
uint32_t lda_ftree_find_with(const lda_ftree *t, double u, uint32_t k, double v)
{
    const double d = v - t->level[0][k];
    uint32_t i = 0;
    for (uint32_t j = t->levels - 1; j > 0; j--) {
        const double *child = t->level[j - 1];
        const uint32_t end =
            (i + 1) * LDA_FTREE_FAN < t->len[j - 1] ? (i + 1) * LDA_FTREE_FAN : t->len[j - 1];
        const uint32_t on = k >> (LDA_FTREE_SHIFT * (j - 1)); /* k's node at this level */
        uint32_t c = i * LDA_FTREE_FAN, last = c;
        double lastx = 0;
        for (; c < end; c++) {
            const double x = c != on ? child[c] : j > 1 ? child[c] + d : v;
            if (!(x > 0))
                continue;
            last = c;
            lastx = x;
            if (u < x)
                break;
            u -= x;
        }
        if (c == end) { /* (rounding: as lda_ftree_find) */
            c = last;
            u = lastx;
        }
        i = c;
    }
    return i;
}

/* lda_ftree.c - the F+ tree (Yu et al., "A scalable asynchronous
 * distributed algorithm for topic modeling", WWW 2015): n nonnegative
 * weights as the leaves of a complete binary tree whose inner nodes hold
 * their subtree's sum, so that one weight changes in O(log n) and a draw
 * proportional to the weights descends in O(log n).
 *
 * The array is a heap: node i has children 2i and 2i + 1, the root is 1,
 * leaf k is node size + k (size: n rounded up to a power of two).  The
 * leaves past n weigh +0 forever, so no sum that covers only them ever
 * differs from +0.  A change adds its difference to every ancestor (the
 * adds do not wait on one another, where recomputing left + right on the
 * way up would chain them); the rounding that leaves behind is cleared by
 * lda_ftree_build, which sums every node afresh from the leaves. */
#include "apps/lda.h"

#include <string.h>

int lda_ftree_init(lda_ftree *t, uint32_t n)
{
    uint32_t size = 1;
    while (size < n)
        size *= 2;
    t->n = n;
    t->size = size;
    t->node = rt_alloc(2 * (size_t)size * sizeof(double));
    if (!t->node)
        return -1;
    memset(t->node, 0, 2 * (size_t)size * sizeof(double));
    return 0;
}

void lda_ftree_free(lda_ftree *t)
{
    rt_free(t->node);
    memset(t, 0, sizeof(*t));
}

void lda_ftree_build(lda_ftree *t)
{
    for (uint32_t i = t->size - 1; i >= 1; i--)
        t->node[i] = t->node[2 * i] + t->node[2 * i + 1];
}

uint32_t lda_ftree_find(const lda_ftree *t, double u)
{
    const double *node = t->node;
    uint32_t i = 1;
    while (i < t->size) {
        const double left = node[2 * i];
        /* right only into a subtree with weight (rounding can leave u at
         * or past the total: then the last leaf with weight) */
        if (u < left || !(node[2 * i + 1] > 0)) {
            i = 2 * i;
        } else {
            u -= left;
            i = 2 * i + 1;
        }
    }
    return i - t->size;
}

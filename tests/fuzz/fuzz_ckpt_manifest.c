/* fuzz_ckpt_manifest.c - a checkpoint's manifest.json as --resume reads it
 * (rt_checkpoint_latest: the newest complete ckpt-N, its app and job).  The
 * first byte picks whether the run's job string is compared too. */
#include "apps/apps.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 1)
        return 0;
    char root[600], dir[700];
    snprintf(root, sizeof(root), "%.500s/ck", fuzz_dir());
    mkdir(root, 0777);
    snprintf(dir, sizeof(dir), "%s/ckpt-000000000004", root);
    mkdir(dir, 0777);
    char name[64];
    snprintf(name, sizeof(name), "ck/ckpt-000000000004/manifest.json");
    fuzz_write(name, data + 1, size - 1);
    const char *job =
        data[0] & 1 ? "plan=6a8c4b909118abf6\napp=sgd-mf\n--rank=2\n--epochs=4\n" : NULL;
    char found[4096];
    uint64_t next;
    rt_error err = {0};
    rt_checkpoint_latest(root, "sgd-mf", job, found, sizeof(found), &next, &err);
    return 0;
}

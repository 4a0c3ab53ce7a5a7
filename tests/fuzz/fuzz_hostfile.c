/* fuzz_hostfile.c - hostfiles (rt_hostfile_read).  The first byte picks the
 * group size (1..8) and whether a base port is given. */
#include "engine/engine.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 1)
        return 0;
    int group = 1 + (data[0] & 7);
    int base_port = data[0] & 8 ? 65530 : 18515;
    const char *path = fuzz_write("hostfile", data + 1, size - 1);
    rt_peer *peers;
    rt_error err = {0};
    if (rt_hostfile_read(path, group, base_port, &peers, &err) == 0) {
        for (int i = 0; i < group; i++)
            if (peers[i].port < 1 || peers[i].port > 65535)
                __builtin_trap();
        free(peers);
    }
    return 0;
}

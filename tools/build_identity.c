/* build_identity.c - which build of rotor this is: the version and a hash
 * of the sources and configuration it was built from (made at build time by
 * tools/build_identity.cmake).  `rotor --version` prints it, and every rank
 * of a job sends it at start-up: ranks of different builds refuse to run. */
#include "tools/commands.h"

#include "build_identity.h" /* generated: ROTOR_BUILD_HASH */

const char *rotor_build_identity(void)
{
    return ROTOR_VERSION " build " ROTOR_BUILD_HASH;
}

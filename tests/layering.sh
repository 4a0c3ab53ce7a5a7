#!/usr/bin/env bash
# The layering rules of README.md's Layout section, checked on the source
# tree (tests/ and bench/ excluded):
#   - environment variables are read only in tools/ (libraries get config structs);
#   - partition/ and verbs/ include nothing of the executor (engine/engine.h);
#   - tools/ include no app's internal header, only apps/apps.h.
set -euo pipefail
SRC="${ROTOR_SRC:?ROTOR_SRC must point at the source tree}"
cd "$SRC"
bad=0
complain() { echo "FAIL: $*" >&2; bad=1; }

while IFS= read -r f; do
    complain "$f reads the environment (only tools/ may: pass the value in a config struct)"
done < <(grep -rlE '\b(secure_)?getenv\s*\(' --include='*.c' --include='*.h' ground partition verbs engine apps $(ls -d sim 2>/dev/null) || true)

while IFS= read -r hit; do
    complain "$hit: partition/ and verbs/ must not include the executor"
done < <(grep -rnE '#\s*include\s*"engine/' --include='*.c' --include='*.h' partition verbs || true)

while IFS= read -r hit; do
    complain "$hit: tools/ may include only apps/apps.h from apps/"
done < <(grep -rnE '#\s*include\s*"apps/' --include='*.c' --include='*.h' tools | grep -v '"apps/apps.h"' || true)

# The checks have teeth: they find a planted offender.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
mkdir -p "$probe/verbs"
printf '#include "engine/engine.h"\n#include "apps/lda.h"\nint f(void) { return getenv("X") != 0; }\n' >"$probe/verbs/x.c"
grep -rqE '\b(secure_)?getenv\s*\(' "$probe/verbs" || complain "the getenv check misses a planted call"
grep -rqE '#\s*include\s*"engine/' "$probe/verbs" || complain "the include check misses a planted include"
grep -rnE '#\s*include\s*"apps/' "$probe/verbs" | grep -qv '"apps/apps.h"' ||
    complain "the apps include check misses a planted include"

[ "$bad" = 0 ] || exit 1
echo PASS

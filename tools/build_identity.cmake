# build_identity.cmake - run at build time (cmake -P) to make
# build_identity.h: ROTOR_BUILD_HASH, the first 16 hex digits of a SHA-256
# (CMake's own) over every source file's path and content and the build
# configuration (version, compiler, flags, library versions) that
# tools/CMakeLists.txt wrote into INPUTS.  Every rank of a job compares the
# identity made from it (verbs/fingerprint.c): ranks of different builds
# refuse to start.
#
# -DINPUTS=file: "version=...", "config=..." lines, then "file=RELATIVE/PATH"
# -DSOURCE_DIR=dir the paths are relative to; -DOUT=the header to write.
file(STRINGS "${INPUTS}" lines)
set(text "")
foreach(line IN LISTS lines)
  if(line MATCHES "^file=(.*)$")
    file(SHA256 "${SOURCE_DIR}/${CMAKE_MATCH_1}" sum)
    string(APPEND text "${CMAKE_MATCH_1} ${sum}\n")
  else()
    string(APPEND text "${line}\n")
  endif()
endforeach()
string(SHA256 sum "${text}")
string(SUBSTRING "${sum}" 0 16 short)
file(WRITE "${OUT}" "#define ROTOR_BUILD_HASH \"${short}\"\n")

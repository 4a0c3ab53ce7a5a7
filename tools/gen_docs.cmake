# gen_docs.cmake - the man pages and the bash completion script, generated
# by the freshly built rotor from its option tables (cmake -P, run after
# each build of rotor; see tools/CMakeLists.txt).  ROTOR = the binary,
# OUT = the directory to fill: OUT/man1/rotor*.1 and OUT/rotor.bash.
file(REMOVE_RECURSE ${OUT}/man1)
file(MAKE_DIRECTORY ${OUT}/man1)
function(rotor_run output)
  execute_process(COMMAND ${ROTOR} ${ARGN} OUTPUT_FILE ${output} RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rotor ${ARGN} failed (${rc}): ${err}")
  endif()
endfunction()
rotor_run(${OUT}/pages.txt help --pages)
file(STRINGS ${OUT}/pages.txt pages)
rotor_run(${OUT}/man1/rotor.1 help --man)
foreach(page ${pages})
  rotor_run(${OUT}/man1/rotor-${page}.1 help --man ${page})
endforeach()
rotor_run(${OUT}/rotor.bash help --completion)

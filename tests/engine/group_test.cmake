# group_test: rank/size sources (tools/launch_env.c) and hostfile parsing
# (engine/group.c).  It compiles both itself, so it builds while the rest of
# rotor_engine is in flux.
add_executable(group_test group_test.c ${CMAKE_SOURCE_DIR}/engine/group.c
                          ${CMAKE_SOURCE_DIR}/engine/pmix.c ${CMAKE_SOURCE_DIR}/tools/launch_env.c)
target_link_libraries(group_test PRIVATE rotor_verbs rotor_ground PkgConfig::CMOCKA)
if(PMIX_FOUND)
  target_link_libraries(group_test PRIVATE PkgConfig::PMIX)
  target_compile_definitions(group_test PRIVATE ROTOR_HAVE_PMIX=1)
endif()
add_test(NAME group_test COMMAND group_test)
set_tests_properties(group_test PROPERTIES LABELS unit TIMEOUT 120)

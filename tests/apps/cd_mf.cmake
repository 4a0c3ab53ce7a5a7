# cd-mf (CCD++) tests.  Paths are relative to tests/apps/.
rotor_unit_test(cd_mf_test cd_mf_test.c cd_mf_ref.c)

# The serial reference as a program, for the end-to-end comparison.
add_executable(cd_mf_ref cd_mf_ref_main.c cd_mf_ref.c)
target_link_libraries(cd_mf_ref PRIVATE rotor_apps rotor_engine rotor_partition rotor_verbs rotor_base m)

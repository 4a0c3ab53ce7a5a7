# cd-mf (CCD++) tests.  Paths are relative to tests/apps/.
rotor_unit_test(cd_mf_test cd_mf_test.c cd_mf_ref.c mf_toy.c)

# The serial reference as a program, for the end-to-end comparison.
add_executable(cd_mf_ref cd_mf_ref_main.c cd_mf_ref.c)
target_link_libraries(cd_mf_ref PRIVATE rotor_apps rotor_engine rotor_partition rotor_verbs rotor_ground m)

# End-to-end (tests/e2e/cd_mf_*.sh; cd_mf_lib.sh holds their helpers).
rotor_script_test(e2e_cd_mf_bad_input e2e/cd_mf_bad_input.sh e2e 120)
rotor_script_test(e2e_cd_mf_reference e2e/cd_mf_reference.sh e2e 300)
rotor_script_test(e2e_cd_mf_determinism e2e/cd_mf_determinism.sh e2e 300)
rotor_script_test(e2e_cd_mf_ml100k e2e/cd_mf_ml100k.sh "e2e;slow;data" 600)
rotor_script_test(e2e_cd_mf_implicit e2e/cd_mf_implicit.sh e2e 300)
rotor_script_test(e2e_cd_mf_validation e2e/cd_mf_validation.sh e2e 300)

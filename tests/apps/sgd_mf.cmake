# sgd-mf tests.  Paths are relative to tests/apps/.
rotor_unit_test(sgd_kernels_test ${CMAKE_CURRENT_LIST_DIR}/sgd_kernels_test.c)
rotor_unit_test(sgd_mf_test sgd_mf_test.c mf_toy.c cd_mf_ref.c)

rotor_unit_test(sgd_kernels_test ${CMAKE_CURRENT_LIST_DIR}/sgd_kernels_test.c)

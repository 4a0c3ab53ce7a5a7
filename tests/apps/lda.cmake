# LDA tests.  Paths are relative to tests/apps/.
rotor_unit_test(lda_corpus_test lda_corpus_test.c)

# The serial reference sampler and the topic-matching tool (tests/e2e/lda_*.sh).
add_executable(lda_ref lda_ref.c)
target_link_libraries(lda_ref PRIVATE rotor_partition rotor_ground m)

# End-to-end (tests/e2e/lda_*.sh; lda_lib.sh holds their helpers).
rotor_script_test(e2e_lda_bad_input e2e/lda_bad_input.sh e2e 120)
rotor_script_test(e2e_lda_reference e2e/lda_reference.sh e2e 600)
# Stationary levels on a corpus where a biased chain shows (about 12 s of CPU).
rotor_script_test(e2e_lda_stationary e2e/lda_stationary.sh e2e 600)
# e2e_lda_generated is the heaviest e2e test: 4 samplers x 4 runs of 100
# sweeps (2 of them 2 processes x 2 threads) plus 26 short ones.  Alone it
# takes 150 s on a loaded 2-core machine, 202 s inside the fast suite at load
# 11; it timed out at 300 s at load 14.  Its assertions need the 100 sweeps
# (topic recovery) and compare whole runs, so the limit is what gives.
rotor_script_test(e2e_lda_generated e2e/lda_generated.sh e2e 600)
rotor_script_test(e2e_lda_word_count_16bit e2e/lda_word_count_16bit.sh e2e 120)
rotor_script_test(e2e_lda_sampler_auto e2e/lda_sampler_auto.sh e2e 120)
rotor_script_test(e2e_lda_kos e2e/lda_kos.sh "e2e;slow;data" 600)
rotor_unit_test(lda_kernels_test lda_kernels_test.c)
rotor_script_test(e2e_infer e2e/infer.sh e2e 300)
rotor_script_test(e2e_infer_kos e2e/infer_kos.sh "e2e;slow;data" 900)

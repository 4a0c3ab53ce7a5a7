# Ranking (top-K lists, metrics, rotor recommend) tests.  Paths are relative to tests/apps/.
rotor_unit_test(ranking_test ranking_test.c)
rotor_script_test(e2e_ranking e2e/ranking.sh e2e 120)
rotor_script_test(e2e_train_eval_top_k e2e/train_eval_top_k.sh e2e 300)
rotor_script_test(e2e_recommend_reference e2e/recommend_reference.sh e2e 120)

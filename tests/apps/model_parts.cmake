# A saved model's parts as export and the loaders read them.  Paths are relative to tests/apps/.
rotor_unit_test(model_parts_test model_parts_test.c)

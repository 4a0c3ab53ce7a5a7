# group_test: rank/size sources and hostfile parsing (engine/group.c).
rotor_unit_test(group_test group_test.c)

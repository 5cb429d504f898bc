# kdlc over every fuzzer regression input and generated hostile input: exit 0 or 1, never a crash.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME fuzz-regressions
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/check_inputs.py --kdlc $<TARGET_FILE:kdlc>
                 --dir ${CMAKE_CURRENT_LIST_DIR}/regressions --timeout 30)
set_tests_properties(fuzz-regressions PROPERTIES LABELS "cpu;fuzz-regressions" TIMEOUT 900)

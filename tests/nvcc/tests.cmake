# Tests that compile generated code with nvcc (label nvcc; they print SKIP when nvcc is absent).
# Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  # Item 8 of issue 6: kernels and params named like the types and namespaces the emitted code uses
  # (half, int64_t, size_t, cudaStream_t, kdl, std, ...) compile (host and device, sm_80).
  add_test(NAME "codegen: kernels with clashing names compile"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2
                   --gencode=-gencode=arch=compute_80,code=sm_80 --specs ${CMAKE_CURRENT_LIST_DIR}/clashing_names.kdl)
  set_tests_properties("codegen: kernels with clashing names compile" PROPERTIES LABELS "nvcc" TIMEOUT 600
                       SKIP_REGULAR_EXPRESSION "^SKIP:")
  # A generated can_implement on the CPU: argument errors (items 12, 13) before device queries.
  add_test(NAME "codegen: generated can_implement checks arguments without a GPU"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_can_implement.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include)
  set_tests_properties("codegen: generated can_implement checks arguments without a GPU" PROPERTIES LABELS "nvcc"
                       TIMEOUT 300 SKIP_REGULAR_EXPRESSION "^SKIP:")
endif()

# Tests of lowering, emission and the build integration (included from the top-level CMakeLists).
find_package(Python3 COMPONENTS Interpreter)

# Golden files of `kdlc emit` for the sample specs (scripts/update-goldens.sh emit regenerates them).
add_test(NAME "codegen: emit goldens"
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/update-goldens.sh --check --kdlc $<TARGET_FILE:kdlc> emit)
set_tests_properties("codegen: emit goldens" PROPERTIES LABELS "cpu;golden")

# Every emitted kernel of the samples and the spec examples compiles with nvcc for its arch (several per
# nvcc run: compile_emitted.py's batches); gemm_sweep.kdl is left to its own test (tests/nvcc/tests.cmake).
if(Python3_FOUND)
  add_test(NAME "codegen: nvcc compiles emitted kernels"
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/nvcc/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include
                   --exclude gemm_sweep.kdl --specs ${PROJECT_SOURCE_DIR}/samples/kernels ${KDL_SHARED_DIR}/spec/examples)
  set_tests_properties("codegen: nvcc compiles emitted kernels" PROPERTIES LABELS "nvcc" TIMEOUT 1800
                       SKIP_REGULAR_EXPRESSION "^SKIP:" FIXTURES_REQUIRED kdl_shared)
endif()

# include/kdl/runtime.h: the default driver entry-point provider compiles (host compiler + CUDA
# headers + cudart, no libcuda) and replacing it works without a GPU.
find_package(CUDAToolkit QUIET)
find_package(Catch2 REQUIRED)
if(CUDAToolkit_FOUND)
  add_executable(kdl_runtime_tests ${PROJECT_SOURCE_DIR}/tests/runtime/test_runtime.cpp)
  target_include_directories(kdl_runtime_tests PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(kdl_runtime_tests PRIVATE CUDA::cudart Catch2::Catch2)
  add_test(NAME "codegen: runtime driver provider" COMMAND kdl_runtime_tests)
  set_tests_properties("codegen: runtime driver provider" PROPERTIES LABELS "cpu;unit")
endif()

# The consumer sample configures and builds against this build tree through find_package(kdl) and
# kdl_add_kernels (compile and link only; running it needs a GPU).
find_program(KDL_TEST_NVCC nvcc HINTS /usr/local/cuda/bin)
if(KDL_TEST_NVCC)
  add_test(NAME "samples: consumer project builds with kdl_add_kernels"
           COMMAND ${CMAKE_COMMAND} -E env CUDACXX=${KDL_TEST_NVCC}
                   ${PROJECT_SOURCE_DIR}/scripts/build-consumer.sh ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/consumer-sample)
  set_tests_properties("samples: consumer project builds with kdl_add_kernels" PROPERTIES LABELS "nvcc" TIMEOUT 900)
endif()

# The promise of `kdlc check`, on many random kernels (GEMMs and convolutions): whatever passes check
# emits, and a sample of it builds with `kdlc build` (nvcc and ptxas's gate: no spills).
if(Python3_FOUND)
  add_test(NAME "codegen: check implies emit and compile (random kernels)"
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/nvcc/check_implies_compile.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include --count 300 --compile 4 --gate)
  set_tests_properties("codegen: check implies emit and compile (random kernels)" PROPERTIES LABELS "nvcc" TIMEOUT 900
                       SKIP_RETURN_CODE 77)
endif()

# The sm80 multistage kernels at the edges of lowering's register rules build through ptxas's gate (no spills):
# each spilled on the 4 warps lowering gave it before its rule moved it to 8.
if(KDL_TEST_NVCC)
  add_test(NAME "codegen: sm80 register-edge kernels build without spills (nvcc, ptxas gate)"
           COMMAND ${CMAKE_COMMAND} -E env KDL_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/include KDL_NVCC=${KDL_TEST_NVCC}
                   $<TARGET_FILE:kdlc> build ${PROJECT_SOURCE_DIR}/tests/nvcc/sm80_register_edges.kdl
                   -o ${CMAKE_BINARY_DIR}/sm80-register-edges -j 2)
  set_tests_properties("codegen: sm80 register-edge kernels build without spills (nvcc, ptxas gate)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 900)
endif()

# The 8-warp form of the multistage kernels on 4 warps of 128 accumulators (`kdlc build`'s last try where ptxas
# spills them, codegen/lower_tiling.cpp: moreWarpsForm): the plan and NAME.cu agree on which kernels have one, the
# macro turns each one's launch from 128 threads into 256 and leaves the others alone, and every form passes
# ptxas's gate at its first try for its own targets.
if(Python3_FOUND)
  add_test(NAME "codegen: the multistage kernels' 8-warp forms compile clean (nvcc, ptxas gate)"
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/nvcc/more_warps_form.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include
                   --spec ${PROJECT_SOURCE_DIR}/tests/nvcc/more_warps_form.kdl --expect 6 -j 2)
  set_tests_properties("codegen: the multistage kernels' 8-warp forms compile clean (nvcc, ptxas gate)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 900 SKIP_RETURN_CODE 77)
endif()

# The GPU suite's random kernels (tests/gpu/random_specs.py): the spec it writes for the GPU machine passes
# `kdlc check` as a whole, with kernels of both paths and both ops in it.
if(Python3_FOUND)
  add_test(NAME "gpu suite: random_specs.py writes a spec of random kernels check accepts"
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/gpu/random_specs.py
                   --kdlc $<TARGET_FILE:kdlc> --count 30 --seed 7 --out ${CMAKE_BINARY_DIR}/random-specs/random.kdl)
  set_tests_properties("gpu suite: random_specs.py writes a spec of random kernels check accepts" PROPERTIES
                       LABELS "cpu;python" PASS_REGULAR_EXPRESSION "wrote .*: 30 kernels \\([1-9][0-9]* sm90a, [1-9][0-9]* convolutions")
endif()

# kdl_add_kernels in real CMake projects (imports, names, OUTPUT_DIR, compiler launchers) and the
# guards of the tests above.
add_subdirectory(tests/cmake)

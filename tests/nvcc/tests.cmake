# Tests that compile generated code with nvcc (label nvcc; they print SKIP when nvcc is absent).
# Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  # compile_emitted.py's batches (several kernels per nvcc run) on made-up kernels: no kernel compiles
  # thanks to a header only a neighbour includes; one gencode and distinct names per batch. No nvcc needed.
  add_test(NAME "codegen: compile_emitted batches keep each kernel's headers its own (no nvcc)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/batches_test.py)
  set_tests_properties("codegen: compile_emitted batches keep each kernel's headers its own (no nvcc)" PROPERTIES
                       LABELS "cpu")
  # Item 8 of issue 6: kernels and params named like the types and namespaces the emitted code uses
  # (half, int64_t, size_t, cudaStream_t, kdl, std, ...) compile (host and device, sm_80).
  add_test(NAME "codegen: kernels with clashing names compile"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2
                   --gencode=-gencode=arch=compute_80,code=sm_80 --specs ${CMAKE_CURRENT_LIST_DIR}/clashing_names.kdl)
  set_tests_properties("codegen: kernels with clashing names compile" PROPERTIES LABELS "nvcc" TIMEOUT 600
                       SKIP_REGULAR_EXPRESSION "^SKIP:")
  # Two libraries from different specs that share a kernel name export no unique symbol of that kernel in common
  # (the emitted kernel lives in an anonymous namespace; otherwise one library's one-time state and argument
  # table served both in one process): kdlc build of two small sm86 GEMMs, nm -D.
  add_test(NAME "codegen: two libraries with a kernel of the same name share no symbol of it (nvcc, nm)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/same_name_libraries.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include)
  set_tests_properties("codegen: two libraries with a kernel of the same name share no symbol of it (nvcc, nm)"
                       PROPERTIES LABELS "nvcc" TIMEOUT 600 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # Column-major C, D and extra outputs on the sm80 path (a column-major D computed as D^T = B^T A^T):
  # compiled for sm_90, which builds both kdl::GemmSm80 and the TMA variant of kdl::GemmSm80Tma.
  add_test(NAME "codegen: column-major kernels of the sm80 path compile (nvcc sm_90)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2 --require-all --expect 4
                   --gencode=-gencode=arch=compute_90,code=sm_90 --specs ${CMAKE_CURRENT_LIST_DIR}/colmajor_sm80.kdl)
  set_tests_properties("codegen: column-major kernels of the sm80 path compile (nvcc sm_90)" PROPERTIES LABELS "nvcc"
                       TIMEOUT 600 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # Convolutions (kdl::Conv2dSm80): every kernel of the conv test specs and the shared example emits and
  # compiles for its own targets (sm_80 + sm_90 + compute_90; sm_86; sm_90a for the sm90a specs), and its
  # launch's shared memory is the manifest's (lowering's, from kdl/gemm_sm80_smem.h).
  add_test(NAME "codegen: conv kernels compile (nvcc, their own targets)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2 --require-all --expect 15
                   --assert-smem
                   --specs ${PROJECT_SOURCE_DIR}/tests/golden/conv/fprop.kdl ${PROJECT_SOURCE_DIR}/tests/golden/conv/dgrad.kdl
                           ${PROJECT_SOURCE_DIR}/tests/golden/conv/wgrad.kdl ${PROJECT_SOURCE_DIR}/tests/golden/conv/sm90a.kdl
                           ${KDL_SHARED_DIR}/spec/examples/conv_fprop.kdl)
  set_tests_properties("codegen: conv kernels compile (nvcc, their own targets)" PROPERTIES LABELS "nvcc" TIMEOUT 900
                       SKIP_REGULAR_EXPRESSION "^SKIP:" FIXTURES_REQUIRED kdl_shared)
  # The conv's optional `residual` operand (fprop and wgrad), with the front end that accepts it.
  add_test(NAME "codegen: conv kernels with a residual compile (nvcc sm_80)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2 --require-all --expect 2
                   --assert-smem --gencode=-gencode=arch=compute_80,code=sm_80 --specs ${PROJECT_SOURCE_DIR}/tests/golden/conv/residual.kdl)
  set_tests_properties("codegen: conv kernels with a residual compile (nvcc sm_80)" PROPERTIES LABELS "nvcc"
                       TIMEOUT 600 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # A generated can_implement on the CPU: argument errors (items 12, 13) before device queries.
  add_test(NAME "codegen: generated can_implement checks arguments without a GPU"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_can_implement.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include)
  set_tests_properties("codegen: generated can_implement checks arguments without a GPU" PROPERTIES LABELS "nvcc"
                       TIMEOUT 300 SKIP_REGULAR_EXPRESSION "^SKIP:")
endif()

# ---- the sm90a path (nvcc only, no GPU: compiled for sm_90a, never run here) ----
if(Python3_FOUND)
  # One kernel per line of the sm90a table that is on (`kdlc support --specs`,
  # codegen/support_sm90.cpp): a line the template cannot instantiate fails here.
  add_test(NAME "codegen: every generated line of the sm90a table compiles (nvcc sm_90a)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 4 --require-all
                   --support-specs --specs)
  set_tests_properties("codegen: every generated line of the sm90a table compiles (nvcc sm_90a)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 900 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # The matrix of sm90a test specs (tests/golden/sm90a/*.kdl: epilogues, C, batches, outputs, clusters):
  # every kernel emits and compiles for sm_90a.
  add_test(NAME "codegen: sm90a test specs compile (nvcc sm_90a)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 4 --require-all
                   --specs ${PROJECT_SOURCE_DIR}/tests/golden/sm90a)
  set_tests_properties("codegen: sm90a test specs compile (nvcc sm_90a)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 900 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # Issue 7's goal: all 12 kernels of spec/examples/gemm_sweep.kdl (bf16 and e4m3; cooperative and
  # pingpong; clusters 1x1 and 2x1) emit and compile for sm_90a.
  add_test(NAME "codegen: gemm_sweep.kdl's 12 sm90a kernels compile (nvcc sm_90a)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_emitted.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 4 --require-all --expect 12
                   --specs ${KDL_SHARED_DIR}/spec/examples/gemm_sweep.kdl)
  set_tests_properties("codegen: gemm_sweep.kdl's 12 sm90a kernels compile (nvcc sm_90a)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 900 SKIP_REGULAR_EXPRESSION "^SKIP:" FIXTURES_REQUIRED kdl_shared)
endif()

# The sm90a epilogue's vector width (codegen/lower_sm90.cpp) against ptxas: heavy epilogues on the
# largest tiles, with clusters, split-K and fp8 promotion: each kernel's device code with kdlc build's
# flags, judged like kdlc build's ptxas gate; a kernel ptxas flags goes through `kdlc build` itself (its
# lighter retries), which must accept it. The plain epilogue keeps 8 columns.
if(Python3_FOUND)
  add_test(NAME "codegen: sm90a epilogue vector width keeps heavy epilogues from spilling (nvcc sm_90a, ptxas gate)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/epilogue_registers.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2
                   --spec ${CMAKE_CURRENT_LIST_DIR}/sm90a_epilogue_registers.kdl)
  set_tests_properties("codegen: sm90a epilogue vector width keeps heavy epilogues from spilling (nvcc sm_90a, ptxas gate)"
                       PROPERTIES LABELS "nvcc" TIMEOUT 600 SKIP_RETURN_CODE 77)
  # Which configurations take GemmSm90's held-stage epilogue, four TMA issuers, sliced tiles (static_asserts).
  add_test(NAME "codegen: sm90a template paths by configuration (nvcc sm_90a, static_asserts)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compile_cu.py --include ${PROJECT_SOURCE_DIR}/include
                   ${CMAKE_CURRENT_LIST_DIR}/sm90_config_properties.cu -gencode=arch=compute_90a,code=sm_90a)
  set_tests_properties("codegen: sm90a template paths by configuration (nvcc sm_90a, static_asserts)" PROPERTIES
                       LABELS "nvcc" TIMEOUT 300 SKIP_REGULAR_EXPRESSION "^SKIP:")
  # The sm90a consumers' k-loop in uniform registers (no R2UR before every wgmma), and every kernel's
  # griddepcontrol.wait present and launch_dependents absent (docs/perf-notes.md v56): the SASS of emitted
  # kernels, read with nvdisasm (the nvidia-cuda-nvdisasm wheel scripts/setup.sh puts in .venv; SKIP without it).
  add_test(NAME "codegen: sm90a k-loops keep descriptors in uniform registers, kernels wait for the previous grid and never trigger the next (nvcc sm_90a, nvdisasm)"
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/kloop_uniform.py
                   --kdlc $<TARGET_FILE:kdlc> --include ${PROJECT_SOURCE_DIR}/include -j 2
                   --venv ${PROJECT_SOURCE_DIR}/.venv --spec ${CMAKE_CURRENT_LIST_DIR}/sm90a_kloop.kdl
                   --known-r2ur kl_conv_pp_128x64)
  set_tests_properties("codegen: sm90a k-loops keep descriptors in uniform registers, kernels wait for the previous grid and never trigger the next (nvcc sm_90a, nvdisasm)"
                       PROPERTIES LABELS "nvcc" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()

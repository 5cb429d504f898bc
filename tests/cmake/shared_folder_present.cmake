# ctest "shared folder present": the shared folder beside the checkout holds spec/examples, which the
# list goldens, several unit tests and the nvcc compile checks read (CI always has it). Without it
# this test fails and says why; the tests that need the folder require it (FIXTURES_REQUIRED
# kdl_shared), so ctest reports them as not run because of it instead of them passing on less.
#   cmake -DKDL_SHARED_DIR=<dir> -P shared_folder_present.cmake
file(GLOB examples "${KDL_SHARED_DIR}/spec/examples/*.kdl")
if(NOT examples)
  message(FATAL_ERROR
    "the shared folder is missing: no spec/examples/*.kdl in ${KDL_SHARED_DIR}.\n"
    "The tests that need it (unit tests, `list: examples/*`, `codegen: nvcc compiles emitted kernels`) "
    "are not run. Put the shared folder beside the checkout (../shared) or configure with "
    "-DKDL_SHARED_DIR=<dir>.")
endif()
list(LENGTH examples count)
message(STATUS "shared folder: ${KDL_SHARED_DIR} (${count} spec examples)")

# The depfile reader of KdlKernels.cmake on kdlc's format: line continuations, escaped spaces and
# '#', doubled '$', and the empty per-input rules some depfiles add; every input once, in order.
#   cmake -DKDL_KERNELS_MODULE=<cmake/KdlKernels.cmake> -DWORK_DIR=<dir> -P depfile_inputs_test.cmake
include("${KDL_KERNELS_MODULE}")
set(depfile "${WORK_DIR}/depfile_inputs_test.d")
file(WRITE "${depfile}"
     "/b/o\\ ut/manifest.json: \\\n"
     "  /s/my\\ spec.kdl \\\n"
     "  /s/lib/a$$b.kdl \\\n"
     "  /s/c\\#d.kdl \\\n"
     "  /s/my\\ spec.kdl\n"
     "/s/my\\ spec.kdl:\n"
     "\n"
     "/s/lib/a$$b.kdl:\n")
_kdl_depfile_inputs("${depfile}" inputs)
set(expected "/s/my spec.kdl" "/s/lib/a$b.kdl" "/s/c#d.kdl")
if(NOT inputs STREQUAL expected)
  message(FATAL_ERROR "depfile inputs:\n  got      [${inputs}]\n  expected [${expected}]")
endif()
message(STATUS "depfile inputs: ${inputs}")

# kdl_add_kernels(TARGET <target> SPECS <a.kdl>... [OUTPUT_DIR <dir>])
#
# Generates CUDA kernels from KDL specs with kdlc and compiles them into <target>:
#   * at configure time `kdlc emit` runs once per spec to learn its kernels (manifest.json);
#   * at build time it runs again whenever the spec, a file it imports (kdlc's --depfile), a KDL
#     header or kdlc itself changes; the emitted .cu files are compiled with each kernel's own
#     -gencode flags (never the target's CUDA_ARCHITECTURES: sm80-path kernels need sm_80 and newer);
#   * <target> gets the emitted headers' directory and the KDL include directory, and links
#     CUDA::cudart (never libcuda).
# Include the emitted API as #include "<kernel>.h"; call kdl_kernels::<kernel>::run(args).
# Needs the CUDA language enabled in the calling project (project(... LANGUAGES CXX CUDA)).
include_guard(GLOBAL)

function(kdl_add_kernels)
  cmake_parse_arguments(KDL "" "TARGET;OUTPUT_DIR" "SPECS" ${ARGN})
  if(NOT KDL_TARGET OR NOT KDL_SPECS)
    message(FATAL_ERROR "kdl_add_kernels: usage: kdl_add_kernels(TARGET <target> SPECS <file.kdl>... [OUTPUT_DIR <dir>])")
  endif()
  if(NOT TARGET ${KDL_TARGET})
    message(FATAL_ERROR "kdl_add_kernels: `${KDL_TARGET}` is not a target; create it (add_executable/add_library) first")
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "kdl_add_kernels: the CUDA language is not enabled; use project(<name> LANGUAGES CXX CUDA) "
                        "or enable_language(CUDA) before calling it")
  endif()
  if(NOT KDL_KDLC_EXECUTABLE OR NOT KDL_INCLUDE_DIR)
    message(FATAL_ERROR "kdl_add_kernels: KDL_KDLC_EXECUTABLE / KDL_INCLUDE_DIR are not set; use find_package(kdl)")
  endif()
  find_package(CUDAToolkit REQUIRED)
  if(NOT KDL_OUTPUT_DIR)
    set(KDL_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/kdl_kernels/${KDL_TARGET}")
  endif()
  file(GLOB _kdl_headers CONFIGURE_DEPENDS "${KDL_INCLUDE_DIR}/kdl/*")

  foreach(_spec IN LISTS KDL_SPECS)
    get_filename_component(_abs "${_spec}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(_stem "${_spec}" NAME_WE)
    set(_out "${KDL_OUTPUT_DIR}/${_stem}")
    set(_dep "${KDL_OUTPUT_DIR}/${_stem}.d")
    set(_emit "${KDL_KDLC_EXECUTABLE}" emit "${_abs}" -o "${_out}" --depfile "${_dep}" --touch-manifest)

    # Configure time: learn the kernels and their flags.
    execute_process(COMMAND ${_emit} RESULT_VARIABLE _rc OUTPUT_VARIABLE _log ERROR_VARIABLE _log)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "kdl_add_kernels: `kdlc emit ${_spec}` failed:\n${_log}")
    endif()
    file(READ "${_out}/manifest.json" _manifest)
    # Reconfigure when the spec or an import changes (the set of kernels may change).
    file(STRINGS "${_dep}" _deplines)
    set(_inputs "${_abs}")
    foreach(_l IN LISTS _deplines)
      string(STRIP "${_l}" _l)
      string(REGEX REPLACE "[ ]*\\\\$" "" _l "${_l}")
      if(_l AND NOT _l MATCHES ":$")
        list(APPEND _inputs "${_l}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES _inputs)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_inputs})

    string(JSON _n LENGTH "${_manifest}" kernels)
    set(_sources "")
    set(_byproducts "")
    set(_lib "${KDL_TARGET}_kdl_${_stem}")
    if(_n GREATER 0)
      math(EXPR _last "${_n} - 1")
      foreach(_i RANGE ${_last})
        string(JSON _src GET "${_manifest}" kernels ${_i} files source)
        string(JSON _hdr GET "${_manifest}" kernels ${_i} files header)
        string(JSON _ng LENGTH "${_manifest}" kernels ${_i} gencode)
        set(_flags "")
        math(EXPR _glast "${_ng} - 1")
        foreach(_g RANGE ${_glast})
          string(JSON _flag GET "${_manifest}" kernels ${_i} gencode ${_g})
          list(APPEND _flags "${_flag}")
        endforeach()
        set_source_files_properties("${_out}/${_src}" PROPERTIES COMPILE_OPTIONS "${_flags}" GENERATED TRUE)
        list(APPEND _sources "${_out}/${_src}")
        list(APPEND _byproducts "${_out}/${_src}" "${_out}/${_hdr}")
      endforeach()
    endif()

    # Build time: regenerate when an input changes.
    add_custom_command(
      OUTPUT "${_out}/manifest.json"
      BYPRODUCTS ${_byproducts}
      COMMAND ${_emit}
      DEPENDS "${_abs}" "${KDL_KDLC_EXECUTABLE}" ${_kdl_headers}
      DEPFILE "${_dep}"
      COMMENT "kdlc emit ${_spec}"
      VERBATIM)
    add_custom_target(${_lib}_emit DEPENDS "${_out}/manifest.json")

    add_library(${_lib} OBJECT ${_sources})
    add_dependencies(${_lib} ${_lib}_emit)
    set_target_properties(${_lib} PROPERTIES CUDA_ARCHITECTURES OFF POSITION_INDEPENDENT_CODE ON
                                             CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    target_include_directories(${_lib} PUBLIC "${_out}" "${KDL_INCLUDE_DIR}")
    target_link_libraries(${_lib} PUBLIC CUDA::cudart)
    target_sources(${KDL_TARGET} PRIVATE $<TARGET_OBJECTS:${_lib}>)
    target_include_directories(${KDL_TARGET} PUBLIC "${_out}" "${KDL_INCLUDE_DIR}")
    target_link_libraries(${KDL_TARGET} PUBLIC CUDA::cudart)
    add_dependencies(${KDL_TARGET} ${_lib})
  endforeach()
endfunction()

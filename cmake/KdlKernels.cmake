# kdl_add_kernels(TARGET <target> SPECS <a.kdl>... [OUTPUT_DIR <dir>] [ALLOW_PTXAS_WARNINGS])
#
# Generates CUDA kernels from KDL specs with kdlc and compiles them into <target>:
#   * at configure time `kdlc emit` runs once per spec to learn its kernels (manifest.json), and the
#     spec, every file it imports (directly or through other imports, read from kdlc's --depfile) and
#     kdlc itself become configure dependencies: editing any of them re-runs CMake, so a kernel added
#     to an imported file is compiled and linked, and an import that is removed (even deleted) is
#     forgotten;
#   * at build time it runs again whenever the spec, a file it imports, a KDL header or kdlc itself
#     changes; the emitted .cu files are compiled with each kernel's own -gencode flags (never the
#     target's CUDA_ARCHITECTURES: sm80-path kernels need sm_80 and newer; sm90a kernels get
#     -gencode=arch=compute_90a,code=sm_90a);
#   * every such compile runs through `kdlc ptxas-gate` with --ptxas-options=-v, as in `kdlc build`: a
#     kernel that spills, whose setmaxnreg ptxas ignored or whose wgmma it serialized fails the
#     build with the kernel's name and ptxas's words (ALLOW_PTXAS_WARNINGS: a warning instead), and
#     ptxas's report is written next to each object (<object>.ptxas.txt);
#   * <target> gets the emitted headers' directories and the KDL include directory, and links
#     CUDA::cudart (never libcuda).
# Where the files go: OUTPUT_DIR (default ${CMAKE_CURRENT_BINARY_DIR}/kdl_kernels/<target>; a relative
# OUTPUT_DIR is relative to CMAKE_CURRENT_BINARY_DIR, never to the directory cmake runs in). Each spec
# gets its own folder and object library, named by its path relative to CMAKE_CURRENT_SOURCE_DIR
# without the extension, with every character other than letters, digits, `_` and `-` replaced by `_`:
# `kernels.kdl` -> <OUTPUT_DIR>/kernels and target <target>_kdl_kernels, `a/k.kdl` -> a_k,
# `my spec.kdl` -> my_spec. So specs of the same stem in different folders both work; two specs that
# would share a folder (`a/k.kdl` and `a_k.kdl`), a spec given twice, and a kernel name that two specs
# of one target produce are configure errors that name both specs.
# Compiler launchers: the kernels' object libraries use CMAKE_CUDA_COMPILER_LAUNCHER (sccache, distcc)
# like any CUDA target, or <target>'s own CUDA_COMPILER_LAUNCHER when it has one (run by the gate:
# kdlc ptxas-gate -- <launcher> nvcc ...).
# Include the emitted API as #include "<kernel>.h"; call kdl_kernels::<kernel>::run(args).
# Needs the CUDA language enabled in the calling project (project(... LANGUAGES CXX CUDA)).
include_guard(GLOBAL)

# The inputs listed by the Make-style depfile <depfile> that kdlc writes:
#   OUT: \<newline>  IN1 \<newline>  IN2
# with ' ' and '#' escaped by a backslash and '$' doubled. file(STRINGS) would keep each line's
# trailing backslash, which escapes CMake's list separator and glues every line into one bogus path.
function(_kdl_depfile_inputs depfile out_var)
  file(READ "${depfile}" text)
  string(ASCII 1 escaped_space)  # stands for "\ " while the text is split at the other spaces
  string(REPLACE "\\\n" " " text "${text}")
  string(REPLACE "\\ " "${escaped_space}" text "${text}")
  string(REPLACE "\\#" "#" text "${text}")
  string(REPLACE "$$" "$" text "${text}")
  if(text MATCHES ";")
    message(FATAL_ERROR "kdl_add_kernels: a path in ${depfile} contains `;`, which CMake cannot hold in a list; rename it")
  endif()
  string(REGEX MATCHALL "[^ \t\r\n]+" tokens "${text}")
  set(inputs "")
  set(after_target FALSE)
  foreach(token IN LISTS tokens)
    if(token MATCHES ":$")  # a rule's target (also the empty rules some depfiles add per input)
      set(after_target TRUE)
    elseif(after_target)
      string(REPLACE "${escaped_space}" " " token "${token}")
      list(APPEND inputs "${token}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES inputs)
  if(NOT inputs)
    message(FATAL_ERROR "kdl_add_kernels: ${depfile} (kdlc's depfile) lists no inputs:\n${text}")
  endif()
  set(${out_var} "${inputs}" PARENT_SCOPE)
endfunction()

# The name of a spec's folder and object library (see the header): its path relative to the calling
# directory (leading `../` dropped), without the extension, made a valid target name.
function(_kdl_spec_key spec_abs out_var)
  file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${spec_abs}")
  string(REGEX REPLACE "^(\\.\\./)+" "" rel "${rel}")
  string(REGEX REPLACE "\\.[^./]*$" "" rel "${rel}")
  string(REGEX REPLACE "[^A-Za-z0-9_-]" "_" rel "${rel}")
  set(${out_var} "${rel}" PARENT_SCOPE)
endfunction()

# Fails unless <dir> is still free for <spec>: two specs (or one spec twice) must never generate into
# one folder, where the second emit would overwrite the first.
function(_kdl_claim_output_dir dir spec)
  get_property(owner GLOBAL PROPERTY "kdl_add_kernels:dir:${dir}")
  if(owner STREQUAL spec)
    message(FATAL_ERROR "kdl_add_kernels: `${spec}` is given twice for ${dir}; give it once")
  elseif(owner)
    message(FATAL_ERROR "kdl_add_kernels: `${owner}` and `${spec}` would both generate into ${dir} "
                        "(folder names come from the spec paths, see cmake/KdlKernels.cmake); rename one of them")
  endif()
  set_property(GLOBAL PROPERTY "kdl_add_kernels:dir:${dir}" "${spec}")
endfunction()

# Fails when <target> already has a kernel named <kernel> from another spec: both would define
# kdl_kernels::<kernel> and the same C symbols, and "<kernel>.h" would be ambiguous.
function(_kdl_claim_kernel target kernel spec)
  get_property(owner GLOBAL PROPERTY "kdl_add_kernels:kernel:${target}:${kernel}")
  if(owner)
    message(FATAL_ERROR "kdl_add_kernels: kernel `${kernel}` of target ${target} comes from both `${owner}` "
                        "and `${spec}`; kernel names must be unique within a target")
  endif()
  set_property(GLOBAL PROPERTY "kdl_add_kernels:kernel:${target}:${kernel}" "${spec}")
endfunction()

function(kdl_add_kernels)
  cmake_parse_arguments(KDL "ALLOW_PTXAS_WARNINGS" "TARGET;OUTPUT_DIR" "SPECS" ${ARGN})
  if(NOT KDL_TARGET OR NOT KDL_SPECS OR KDL_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kdl_add_kernels: usage: kdl_add_kernels(TARGET <target> SPECS <file.kdl>... [OUTPUT_DIR <dir>] "
                        "[ALLOW_PTXAS_WARNINGS])")
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
    set(KDL_OUTPUT_DIR "kdl_kernels/${KDL_TARGET}")
  endif()
  # The build runs commands in CMAKE_CURRENT_BINARY_DIR, configure in whatever directory cmake was
  # started from: resolve once, here, so that both see the same folder.
  get_filename_component(KDL_OUTPUT_DIR "${KDL_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  file(GLOB _kdl_headers CONFIGURE_DEPENDS "${KDL_INCLUDE_DIR}/kdl/*")
  get_target_property(_launcher ${KDL_TARGET} CUDA_COMPILER_LAUNCHER)
  if(NOT _launcher)
    set(_launcher "${CMAKE_CUDA_COMPILER_LAUNCHER}")
  endif()
  # Every kernel compile goes through the ptxas gate, which then runs the user's launcher, if any.
  set(_gate "${KDL_KDLC_EXECUTABLE}" ptxas-gate)
  if(KDL_ALLOW_PTXAS_WARNINGS)
    list(APPEND _gate --allow-ptxas-warnings)
  endif()
  list(APPEND _gate -- ${_launcher})

  foreach(_spec IN LISTS KDL_SPECS)
    get_filename_component(_abs "${_spec}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    _kdl_spec_key("${_abs}" _key)
    set(_out "${KDL_OUTPUT_DIR}/${_key}")
    set(_dep "${KDL_OUTPUT_DIR}/${_key}.d")
    set(_lib "${KDL_TARGET}_kdl_${_key}")
    _kdl_claim_output_dir("${_out}" "${_spec}")
    if(TARGET ${_lib})
      message(FATAL_ERROR "kdl_add_kernels: `${_spec}` needs the target name ${_lib}, which is taken; "
                          "rename the spec or the target")
    endif()
    set(_emit "${KDL_KDLC_EXECUTABLE}" emit "${_abs}" -o "${_out}" --depfile "${_dep}" --touch-manifest)

    # Configure time: learn the kernels and their flags.
    execute_process(COMMAND ${_emit} RESULT_VARIABLE _rc OUTPUT_VARIABLE _log ERROR_VARIABLE _log)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "kdl_add_kernels: `kdlc emit ${_spec}` failed:\n${_log}")
    endif()
    file(READ "${_out}/manifest.json" _manifest)
    # The spec and its imports (transitively): a change to any of them re-runs CMake (the set of
    # kernels may change), so these stay the build-time dependencies too. They are given as DEPENDS,
    # not as DEPFILE: the Makefile generators merge a new depfile into the old dependencies, so an
    # import removed from the graph would stay a missing prerequisite and rerun kdlc on every build.
    # A deleted import is no error: the build system re-runs CMake before it looks at the rules.
    _kdl_depfile_inputs("${_dep}" _inputs)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_inputs} "${KDL_KDLC_EXECUTABLE}")

    string(JSON _n LENGTH "${_manifest}" kernels)
    set(_sources "")
    set(_byproducts "")
    if(_n GREATER 0)
      math(EXPR _last "${_n} - 1")
      foreach(_i RANGE ${_last})
        string(JSON _name GET "${_manifest}" kernels ${_i} name)
        _kdl_claim_kernel(${KDL_TARGET} "${_name}" "${_spec}")
        string(JSON _src GET "${_manifest}" kernels ${_i} files source)
        string(JSON _hdr GET "${_manifest}" kernels ${_i} files header)
        string(JSON _ng LENGTH "${_manifest}" kernels ${_i} gencode)
        set(_flags "")
        math(EXPR _glast "${_ng} - 1")
        foreach(_g RANGE ${_glast})
          string(JSON _flag GET "${_manifest}" kernels ${_i} gencode ${_g})
          list(APPEND _flags "${_flag}")
        endforeach()
        list(APPEND _flags "--ptxas-options=-v")  # the report the gate reads
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
      DEPENDS ${_inputs} "${KDL_KDLC_EXECUTABLE}" ${_kdl_headers}
      COMMENT "kdlc emit ${_spec}"
      VERBATIM)
    add_custom_target(${_lib}_emit DEPENDS "${_out}/manifest.json")

    add_library(${_lib} OBJECT ${_sources})
    add_dependencies(${_lib} ${_lib}_emit)
    set_target_properties(${_lib} PROPERTIES CUDA_ARCHITECTURES OFF POSITION_INDEPENDENT_CODE ON
                                             CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    set_target_properties(${_lib} PROPERTIES CUDA_COMPILER_LAUNCHER "${_gate}")
    target_include_directories(${_lib} PUBLIC "${_out}" "${KDL_INCLUDE_DIR}")
    target_link_libraries(${_lib} PUBLIC CUDA::cudart)
    target_sources(${KDL_TARGET} PRIVATE $<TARGET_OBJECTS:${_lib}>)
    target_include_directories(${KDL_TARGET} PUBLIC "${_out}" "${KDL_INCLUDE_DIR}")
    target_link_libraries(${KDL_TARGET} PUBLIC CUDA::cudart)
    add_dependencies(${KDL_TARGET} ${_lib})
  endforeach()
endfunction()

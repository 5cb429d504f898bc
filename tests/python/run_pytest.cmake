# cmake -DKDL_SOURCE_DIR=<repo> -DKDLC=<kdlc> -P run_pytest.cmake: pytest of python/tests with
# <repo>/.venv/bin/python, KDLC naming the kdlc under test. Prints "SKIP: ..." when there is no .venv.
set(python "${KDL_SOURCE_DIR}/.venv/bin/python")
if(NOT EXISTS "${python}")
  message(NOTICE "SKIP: no ${python}; scripts/setup.sh creates .venv with pytest (KDL_SETUP_NO_TORCH=1 without torch)")
  return()
endif()
execute_process(COMMAND "${python}" -c "import pytest" RESULT_VARIABLE has_pytest OUTPUT_QUIET ERROR_QUIET)
if(NOT has_pytest EQUAL 0)
  message(FATAL_ERROR "${python} has no pytest: run scripts/setup.sh")
endif()
# -p no:cacheprovider: no .pytest_cache in the checkout.
execute_process(COMMAND ${CMAKE_COMMAND} -E env "KDLC=${KDLC}" PYTHONDONTWRITEBYTECODE=1
                        "${python}" -m pytest python/tests -q -rs -p no:cacheprovider
                WORKING_DIRECTORY "${KDL_SOURCE_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pytest python/tests failed (exit ${rc})")
endif()

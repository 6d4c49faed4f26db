# Every C++ file of the project is formatted as .clang-format says (STYLE.md "Comments and
# commits"). Run by CTest as:
#   cmake -DSOURCE_DIR=... -DCLANG_FORMAT=... -P format_check.cmake
# Fails listing each file clang-format would change; `clang-format -i FILE` fixes one.
set(folders engine profiling visualizers gui tests examples cmake)
set(files)
foreach(folder ${folders})
  file(GLOB_RECURSE found "${SOURCE_DIR}/${folder}/*.cpp" "${SOURCE_DIR}/${folder}/*.h"
       "${SOURCE_DIR}/${folder}/*.cu" "${SOURCE_DIR}/${folder}/*.cuh")
  list(APPEND files ${found})
endforeach()
# Fuzz corpora and generated files are not source.
list(FILTER files EXCLUDE REGEX "/tests/fuzz/corpus")
list(FILTER files EXCLUDE REGEX "/tests/data/")
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "format check: no C++ files found under ${SOURCE_DIR}")
endif()
set(bad)
# In batches, so the command line stays short.
set(batch)
set(n 0)
foreach(f ${files} "<end>")
  if(NOT f STREQUAL "<end>")
    list(APPEND batch "${f}")
    math(EXPR n "${n} + 1")
  endif()
  if(n EQUAL 100 OR (f STREQUAL "<end>" AND n GREATER 0))
    execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror --style=file ${batch}
                    WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      string(REGEX MATCHALL "[^\n]*: error: code should be clang-formatted" lines "${err}")
      foreach(line ${lines})
        string(REGEX REPLACE ":[0-9]+:[0-9]+: error: code should be clang-formatted" "" file "${line}")
        list(APPEND bad "${file}")
      endforeach()
      if(NOT lines)
        message(FATAL_ERROR "clang-format failed (${rc}): ${err}")
      endif()
    endif()
    set(batch)
    set(n 0)
  endif()
endforeach()
list(REMOVE_DUPLICATES bad)
list(LENGTH bad nbad)
if(nbad GREATER 0)
  string(REPLACE ";" "\n  " listing "${bad}")
  message(FATAL_ERROR "format check: ${nbad} of ${count} files are not clang-formatted "
                      "(clang-format -i FILE):\n  ${listing}")
endif()
message(STATUS "format check: ${count} files formatted")

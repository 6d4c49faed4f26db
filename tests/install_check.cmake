# `cmake --install` puts the executable, the .desktop entry, the application icon and the palette
# where a desktop finds them. Run by CTest as: cmake -DBUILD_DIR=... -DPREFIX=... -P install_check.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${err}")
endif()
foreach(f bin/tensorscope share/applications/tensorscope.desktop
          share/icons/hicolor/scalable/apps/tensorscope.svg share/tensorscope/palette.json)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "cmake --install did not install ${f} (installed: ${out})")
  endif()
endforeach()
file(READ "${PREFIX}/share/applications/tensorscope.desktop" desktop)
foreach(key "Type=Application" "Exec=tensorscope" "Icon=tensorscope")
  string(FIND "${desktop}" "${key}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "tensorscope.desktop lacks ${key}")
  endif()
endforeach()
# With the layers built shared (Note [Shared layers]), they are installed beside bin/ and the
# installed program finds them there, not in the build folder.
if(EXISTS "${BUILD_DIR}/engine/libtscope_engine.so")
  if(NOT EXISTS "${PREFIX}/lib/libtscope_engine.so")
    message(FATAL_ERROR "cmake --install did not install lib/libtscope_engine.so (installed: ${out})")
  endif()
  execute_process(COMMAND "${PREFIX}/bin/tensorscope" --version RESULT_VARIABLE rc
                  OUTPUT_VARIABLE version ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the installed tensorscope does not start (${rc}): ${err}")
  endif()
endif()
message(STATUS "install layout complete under ${PREFIX}")

# QsSchema.cmake: qs_add_schema(<target>) gives a program the schema of its
# persistent types (see schema-gen/README.md).
#
#   add_executable(app main.cpp graph.cpp)
#   target_link_libraries(app PRIVATE qs)    # before or after, both work
#   qs_add_schema(app)
#
# What it does, at the end of the calling directory (cmake_language(DEFER)),
# when the target's sources, properties and links are final:
#  * moves the target's sources into an OBJECT library <target>_qs_objects
#    that is compiled exactly like the target would be (its include dirs,
#    definitions, options and features, through $<TARGET_PROPERTY:...>, which
#    includes the usage requirements of everything it links), plus -g and
#    full debug information for polymorphic classes;
#  * runs qs_schema_gen.py over those objects into <target>_qs_schema.cpp;
#  * compiles that file into the target and links the objects into it.
# Any change to an object or to the generator re-runs the generator; the
# generated file is only rewritten (and recompiled) when a type's schema
# changed.
#
# Objects a target takes from an OBJECT library ($<TARGET_OBJECTS:lib> among
# its sources) are linked, not moved, and read by the generator only when
# the library was marked with qs_schema_objects:
#
#   add_library(model OBJECT generate.cpp ops.cpp)   # compiled once ...
#   qs_schema_objects(model)
#   add_executable(app main.cpp $<TARGET_OBJECTS:model>)
#   add_executable(app_tests test.cpp $<TARGET_OBJECTS:model>)  # ... for both
#   qs_add_schema(app)
#   qs_add_schema(app_tests)
#
# qs_schema_objects gives the library the debug information qs_add_schema
# gives a target's own objects (below); each program's schema then holds the
# types of its own objects and of those libraries'.
#
# Supported targets: executables, shared libraries and modules (a static
# library's registration object would be dropped by the linker). Call it in
# the directory that created the target, once per target. Link-time
# optimisation (INTERPROCEDURAL_OPTIMIZATION) is refused: objects must carry
# DWARF.
#
# Works from any directory, including a project that added qs with
# add_subdirectory: the generator's and the headers' paths are global
# properties (QS_SCHEMA_GEN_SCRIPT, QS_SCHEMA_INCLUDE_DIR), the Python a cache
# variable (QS_SCHEMA_PYTHON), none of them a variable of qs's directories.
include_guard(GLOBAL)

# Where the generator and qs's headers are: beside this file in qs's source
# tree, or, in an installed qs, where its qsConfig.cmake says
# (QS_SCHEMA_GEN_DIR, QS_SCHEMA_HEADERS).
if(DEFINED QS_SCHEMA_GEN_DIR)
  set(_qs_schema_dir "${QS_SCHEMA_GEN_DIR}")
  set(_qs_schema_headers "${QS_SCHEMA_HEADERS}")
else()
  get_filename_component(_qs_schema_dir "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  get_filename_component(_qs_schema_include_dir "${_qs_schema_dir}/../libqs/include" ABSOLUTE)
  get_filename_component(_qs_schema_common_dir "${_qs_schema_dir}/../common" ABSOLUTE)
  set(_qs_schema_headers "${_qs_schema_include_dir};${_qs_schema_common_dir}")
endif()
set_property(GLOBAL PROPERTY QS_SCHEMA_GEN_SCRIPT "${_qs_schema_dir}/qs_schema_gen.py")
# The command runs the package next to it: a change to any module of it
# re-runs the generator as a change to the command does.
file(GLOB _qs_schema_gen_modules CONFIGURE_DEPENDS "${_qs_schema_dir}/qs_schema/*.py")
set_property(GLOBAL PROPERTY QS_SCHEMA_GEN_MODULES "${_qs_schema_gen_modules}")
# qs's public headers, and the shared libraries' root that some of them
# forward to (qs/error.hpp).
set_property(GLOBAL PROPERTY QS_SCHEMA_INCLUDE_DIR "${_qs_schema_headers}")

# The Python that runs the generator must have pyelftools. /usr/bin/python3
# first (Debian's python3-pyelftools installs there), then the PATH's.
function(_qs_schema_python_ok python result)
  execute_process(COMMAND "${python}" -c "import elftools.elf.elffile, elftools.dwarf"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(${result} TRUE PARENT_SCOPE)
  else()
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()

if(QS_SCHEMA_PYTHON)
  _qs_schema_python_ok("${QS_SCHEMA_PYTHON}" _qs_ok)
  if(NOT _qs_ok)
    message(FATAL_ERROR "QS_SCHEMA_PYTHON=${QS_SCHEMA_PYTHON} cannot import pyelftools. "
                        "Install the Debian package python3-pyelftools "
                        "(apt-get install python3-pyelftools) or point QS_SCHEMA_PYTHON at "
                        "a Python that has it.")
  endif()
else()
  set(_qs_candidates /usr/bin/python3)
  find_program(_QS_PATH_PYTHON3 NAMES python3 NO_CACHE)
  if(_QS_PATH_PYTHON3)
    list(APPEND _qs_candidates "${_QS_PATH_PYTHON3}")
  endif()
  foreach(_qs_py IN LISTS _qs_candidates)
    if(EXISTS "${_qs_py}")
      _qs_schema_python_ok("${_qs_py}" _qs_ok)
      if(_qs_ok)
        set(QS_SCHEMA_PYTHON "${_qs_py}" CACHE FILEPATH
            "Python interpreter with pyelftools that runs qs schema-gen")
        break()
      endif()
    endif()
  endforeach()
  if(NOT QS_SCHEMA_PYTHON)
    message(FATAL_ERROR "qs schema-gen needs a Python 3 with pyelftools; none of "
                        "[${_qs_candidates}] has it. Install the Debian package "
                        "python3-pyelftools (apt-get install python3-pyelftools), or set "
                        "QS_SCHEMA_PYTHON to an interpreter that has it.")
  endif()
  message(STATUS "qs schema-gen: Python with pyelftools: ${QS_SCHEMA_PYTHON}")
endif()

function(qs_add_schema target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "qs_add_schema(${target}): no such target")
  endif()
  get_target_property(_type "${target}" TYPE)
  if(NOT _type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "qs_add_schema(${target}): ${target} is a ${_type}; call it on the "
                        "executable or shared library whose sources allocate persistent objects")
  endif()
  get_target_property(_imported "${target}" IMPORTED)
  get_target_property(_dir "${target}" SOURCE_DIR)
  if(_imported OR NOT _dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    message(FATAL_ERROR "qs_add_schema(${target}): call it in the directory that created "
                        "${target} (${_dir})")
  endif()
  get_target_property(_done "${target}" QS_SCHEMA)
  if(_done)
    message(FATAL_ERROR "qs_add_schema(${target}) called twice")
  endif()
  set_property(TARGET "${target}" PROPERTY QS_SCHEMA ON)
  # DEFER evaluates its arguments when the call runs: bake the name in now.
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _qs_add_schema_now [[${target}]])")
endfunction()

# -g first, so that a target's own -gdwarf-N (or -g3) still decides. A class
# with virtual functions has its debug information only where its vtable is
# emitted, unless asked: a program that reads such objects but never
# constructs one would have them neither checked against the database nor
# converted by schema evolution. Debug information only; the code is the
# same. A global property, as the paths above.
set_property(GLOBAL PROPERTY QS_SCHEMA_DEBUG_OPTIONS -g
  "$<$<COMPILE_LANG_AND_ID:CXX,GNU>:-femit-class-debug-always>"
  "$<$<COMPILE_LANG_AND_ID:CXX,Clang>:-fstandalone-debug>")

function(qs_schema_objects lib)
  if(NOT TARGET "${lib}")
    message(FATAL_ERROR "qs_schema_objects(${lib}): no such target")
  endif()
  get_target_property(_type "${lib}" TYPE)
  if(NOT _type STREQUAL "OBJECT_LIBRARY")
    message(FATAL_ERROR "qs_schema_objects(${lib}): ${lib} is a ${_type}, not an OBJECT library")
  endif()
  get_property(debug GLOBAL PROPERTY QS_SCHEMA_DEBUG_OPTIONS)
  get_target_property(_options "${lib}" COMPILE_OPTIONS)
  if(NOT _options)
    set(_options "")
  endif()
  set_property(TARGET "${lib}" PROPERTY COMPILE_OPTIONS ${debug} ${_options})
  set_property(TARGET "${lib}" PROPERTY QS_SCHEMA_OBJECTS ON)
endfunction()

# Runs at the end of the directory that called qs_add_schema.
function(_qs_add_schema_now target)
  get_property(script GLOBAL PROPERTY QS_SCHEMA_GEN_SCRIPT)
  get_property(modules GLOBAL PROPERTY QS_SCHEMA_GEN_MODULES)
  get_property(include_dir GLOBAL PROPERTY QS_SCHEMA_INCLUDE_DIR)
  get_property(debug GLOBAL PROPERTY QS_SCHEMA_DEBUG_OPTIONS)
  if(NOT EXISTS "${script}")
    message(FATAL_ERROR "qs_add_schema(${target}): the schema generator ${script} is missing")
  endif()
  set(objs "${target}_qs_objects")
  set(gen "${CMAKE_CURRENT_BINARY_DIR}/${target}_qs_schema.cpp")
  get_target_property(_type "${target}" TYPE)

  get_target_property(_ipo "${target}" INTERPROCEDURAL_OPTIMIZATION)
  if(_ipo)
    message(FATAL_ERROR "qs_add_schema(${target}): INTERPROCEDURAL_OPTIMIZATION (LTO) is on; "
                        "schema-gen reads DWARF from ordinary object files, turn it off")
  endif()

  # Sources to move: everything but objects and $<TARGET_OBJECTS:...>.
  get_target_property(_sources "${target}" SOURCES)
  set(_move "")
  set(_keep "")
  foreach(_s IN LISTS _sources)
    if(_s MATCHES "^\\$<TARGET_OBJECTS:" OR _s MATCHES "\\.(o|obj)$")
      list(APPEND _keep "${_s}")
    else()
      list(APPEND _move "${_s}")
    endif()
  endforeach()
  if(NOT _move)
    message(FATAL_ERROR "qs_add_schema(${target}): ${target} has no sources")
  endif()

  add_library("${objs}" OBJECT ${_move})
  # Compiled exactly as the target would compile them, with the debug
  # information the generator reads (QS_SCHEMA_DEBUG_OPTIONS).
  target_compile_options("${objs}" PRIVATE ${debug}
    "$<TARGET_PROPERTY:${target},COMPILE_OPTIONS>")
  target_include_directories("${objs}" PRIVATE "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  target_compile_definitions("${objs}" PRIVATE "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  target_compile_features("${objs}" PRIVATE "$<TARGET_PROPERTY:${target},COMPILE_FEATURES>")
  foreach(_p CXX_STANDARD CXX_STANDARD_REQUIRED CXX_EXTENSIONS C_STANDARD C_STANDARD_REQUIRED
             C_EXTENSIONS CXX_VISIBILITY_PRESET C_VISIBILITY_PRESET VISIBILITY_INLINES_HIDDEN
             COMPILE_FLAGS POSITION_INDEPENDENT_CODE PRECOMPILE_HEADERS
             CXX_COMPILER_LAUNCHER C_COMPILER_LAUNCHER)
    get_target_property(_v "${target}" ${_p})
    if(NOT _v STREQUAL "_v-NOTFOUND")
      set_property(TARGET "${objs}" PROPERTY ${_p} "${_v}")
    endif()
  endforeach()
  if(_type MATCHES "LIBRARY")
    set_property(TARGET "${objs}" PROPERTY POSITION_INDEPENDENT_CODE ON)
  endif()

  # The generator reads the moved objects and those of the libraries marked
  # with qs_schema_objects that the target takes.
  set(_read "$<TARGET_OBJECTS:${objs}>")
  set(_read_targets "${objs}")
  foreach(_s IN LISTS _keep)
    # (${CMAKE_MATCH_1} is expanded before the if runs: two ifs.)
    if(_s MATCHES "^\\$<TARGET_OBJECTS:([^>]+)>$")
      set(_lib "${CMAKE_MATCH_1}")
      if(TARGET "${_lib}")
        get_target_property(_marked "${_lib}" QS_SCHEMA_OBJECTS)
        if(_marked)
          list(APPEND _read "${_s}")
          list(APPEND _read_targets "${_lib}")
        endif()
      endif()
    endif()
  endforeach()

  add_custom_command(
    OUTPUT "${gen}"
    COMMAND "${QS_SCHEMA_PYTHON}" "${script}" -o "${gen}" ${_read}
    DEPENDS ${_read} ${_read_targets} "${script}" ${modules}
    COMMENT "qs schema-gen: persistent types of ${target}"
    COMMAND_EXPAND_LISTS VERBATIM)
  # The generated file needs only <qs/schema.hpp>.
  set_source_files_properties("${gen}" PROPERTIES
    GENERATED ON INCLUDE_DIRECTORIES "${include_dir}")

  set_property(TARGET "${target}" PROPERTY SOURCES ${_keep})
  target_sources("${target}" PRIVATE "${gen}" "$<TARGET_OBJECTS:${objs}>")
endfunction()

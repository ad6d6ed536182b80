# QsTargets.cmake: the targets of qs's directories that compile code.
#
#   qs_compiled_targets(<var> <dir>)   every executable and library defined
#                                      in <dir> and its subdirectories, the
#                                      directory's own first, into <var>
#
# Used by QsWarnings.cmake and QsSanitize.cmake to give all of qs's targets
# their flags after everything is defined. A parent project's directories
# are never visited.
include_guard(GLOBAL)

function(qs_compiled_targets var dir)
  set(found)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type "${t}" TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      list(APPEND found "${t}")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    qs_compiled_targets(below "${d}")
    list(APPEND found ${below})
  endforeach()
  set(${var} ${found} PARENT_SCOPE)
endfunction()

# Fails when a part includes a part above it (docs/design.md, "Layers"). Run as a script:
#   cmake -DSOURCE_DIR=<tree> [-DSTAMP=<file>] -P cmake/check_layers.cmake
# Each part's include/, include_internal/ (test hooks) and src/ are checked; tests may use any layer (they run on the fixtures).
# The table below is the one place that says which layer a part is on.
set(_layers runtime:0 metrics:1 harness:2 fixtures:3 plugin:3 pyhost:3 app:4)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers: pass -DSOURCE_DIR=<source tree>")
endif()
set(_level_of_part "")
foreach(_entry ${_layers})
  string(REPLACE ":" ";" _pair "${_entry}")
  list(GET _pair 0 _part)
  list(GET _pair 1 _level)
  set(_level_${_part} ${_level})
  list(APPEND _parts ${_part})
endforeach()

set(_violations "")
foreach(_part ${_parts})
  file(GLOB_RECURSE _files "${SOURCE_DIR}/${_part}/include/*" "${SOURCE_DIR}/${_part}/include_internal/*"
       "${SOURCE_DIR}/${_part}/src/*")
  foreach(_file ${_files})
    if(NOT _file MATCHES "\\.(h|hpp|cpp|cc)$")
      continue()
    endif()
    file(STRINGS "${_file}" _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]distmetrics/[a-z_]+/")
    foreach(_line ${_includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]distmetrics/([a-z_]+)/.*" "\\1" _target "${_line}")
      if(NOT DEFINED _level_${_target} OR _target STREQUAL _part)
        continue()
      endif()
      if(NOT _level_${_target} LESS _level_${_part})
        file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${_file}")
        string(STRIP "${_line}" _line)
        list(APPEND _violations "  ${_rel}: ${_line} (${_part} is layer ${_level_${_part}}, ${_target} is layer ${_level_${_target}})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_violations)
  list(JOIN _violations "\n" _text)
  message(FATAL_ERROR "check_layers: includes that run up or across a layer "
                      "(runtime < metrics < harness < fixtures|plugin|pyhost < app):\n${_text}\n"
                      "Move the shared code down a layer, or the including code up (docs/design.md).")
endif()
if(STAMP)
  file(WRITE "${STAMP}" "layers ok\n")
endif()

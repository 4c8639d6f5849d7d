# distmetrics_add_plugin(<target> <sources>... [LINK <libraries>...])
# Builds a distmetrics plugin: a shared library (MODULE) compiled with LibTorch's flags against
# the plugin headers, with only its entry point exported. Load it with
#   distmetrics conform --plugin $<TARGET_FILE:<target>>
# Installed with distmetrics (find_package(distmetrics) includes it) and used by its own tests.
function(distmetrics_add_plugin target)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  if(NOT ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "distmetrics_add_plugin(${target}): no source files")
  endif()
  add_library(${target} MODULE ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${target} PRIVATE distmetrics::plugin ${ARG_LINK})
  # LibTorch's C++ ABI flag (_GLIBCXX_USE_CXX11_ABI): a plugin must match distmetrics and LibTorch.
  if(TORCH_CXX_FLAGS)
    separate_arguments(_distmetrics_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    target_compile_options(${target} PRIVATE ${_distmetrics_torch_flags})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    CXX_VISIBILITY_PRESET hidden      # only distmetrics_plugin_entry is exported
    VISIBILITY_INLINES_HIDDEN ON)
endfunction()

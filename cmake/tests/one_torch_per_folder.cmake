# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P one_torch_per_folder.cmake
# A build folder configured for one LibTorch (here: its cache says DISTMETRICS_TORCH=system) and
# configured again for another (DISTMETRICS_TORCH=pip) stops before anything is looked for, with
# what to do. Prints the configure's output (the test matches it).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(WRITE "${WORK_DIR}/CMakeCache.txt"
     "DISTMETRICS_TORCH_OF_THIS_FOLDER:INTERNAL=system\n"
     "DISTMETRICS_TORCH_VERSION_OF_THIS_FOLDER:INTERNAL=LibTorch 1.13.0 from /usr/share/cmake/Torch\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G "${GENERATOR}" -DDISTMETRICS_TORCH=pip
                        -DDISTMETRICS_PYTHON=/nonexistent/python
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit ${rc}\n${out}\n${err}")

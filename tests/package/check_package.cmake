# Installs roam from BUILD_DIR into a scratch prefix and checks its CMake package with the
# consumer project in SOURCE_DIR (cmake -P, see CMakeLists.txt):
#   1. roam::roam alone, configured with CUDAToolkit and OpenCL made unfindable (a machine
#      without GPU toolkits, whatever roam was built with): builds `consumer` and runs it on
#      3 virtual nodes; roam::hetero must not be defined; and `consumer_am`, linking only the
#      active-message layer roam::am;
#   2. COMPONENTS hetero: builds `consumer_hetero` and runs it on the host backend;
#   3. COMPONENTS hetero_mobile: builds `consumer_hetero_mobile` and runs it on 2 virtual nodes;
#   4. an unknown component: configuring fails, and the message names the component;
#   5. only when roam was built with OpenCL or CUDA (HAVE_OPENCL, HAVE_CUDA): COMPONENTS hetero
#      with those toolkits unfindable fails, and the message names what is missing.
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed")
endif()

set(no_gpu_toolkits -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
                    -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON)

# configure(NAME EXPECT components [cmake args...]): configures the consumer in WORK_DIR/NAME
# asking for `components` (a ;-list, "" for none); EXPECT is "ok" or "fail". The combined
# output is left in `configure_output`, every run of blanks and newlines made one space (CMake
# wraps the messages of errors).
function(configure name expect components)
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/${name}" -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    "-DCONSUMER_COMPONENTS=${components}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")
  set(configure_output "${flat}" PARENT_SCOPE)
  if(expect STREQUAL "ok" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: configuring the consumer (components '${components}') "
                        "failed:\n${out}")
  elseif(expect STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: configuring the consumer (components '${components}') "
                        "succeeded but should have failed:\n${out}")
  endif()
  message(STATUS "${name}: configure ${expect} as expected (components '${components}')")
endfunction()

# build_and_run(NAME TARGET EXPECTED_REGEX [command arguments...])
function(build_and_run name target expected)
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/${name}" --target ${target}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: building ${target} failed:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ROAM_HETERO_BACKENDS=host
    "${WORK_DIR}/${name}/${target}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${expected}")
    message(FATAL_ERROR "${name}: ${target} failed (${rc}): ${out}")
  endif()
  message(STATUS "${name}: ${out}")
endfunction()

# 1. roam::roam on a machine without GPU toolkits.
configure(core ok "" ${no_gpu_toolkits})
build_and_run(core consumer "consumer sum 6 on 3 nodes" --roam-nodes 3 --roam-transport inproc)
# 1b. One layer alone: roam::am (the layers below it, none above).
build_and_run(core consumer_am "consumer_am sum of squares 14 on 3 nodes" --roam-nodes 3
  --roam-transport inproc)

# 2. The hetero component.
configure(hetero ok "hetero")
build_and_run(hetero consumer_hetero "consumer_hetero sum 5000.0")

# 3. The hetero_mobile component (brings hetero).
configure(hetero_mobile ok "hetero_mobile")
build_and_run(hetero_mobile consumer_hetero_mobile "consumer_hetero_mobile sum 150.0 on node 1"
  --roam-nodes 2 --roam-transport inproc)

# 4. An unknown component.
configure(unknown fail "hetero;no_such_part")
if(NOT configure_output MATCHES "roam has no component 'no_such_part'")
  message(FATAL_ERROR "unknown: the message does not name the component:\n${configure_output}")
endif()

# 5. hetero where its toolkits cannot be found.
if(HAVE_OPENCL OR HAVE_CUDA)
  configure(hetero_without_toolkits fail "hetero" ${no_gpu_toolkits})
  set(missing "")
  if(HAVE_OPENCL)
    list(APPEND missing "OpenCL \\(roam was built with its OpenCL backend")
  endif()
  if(HAVE_CUDA)
    list(APPEND missing "CUDAToolkit \\(roam was built with its CUDA backend")
  endif()
  foreach(text IN LISTS missing)
    if(NOT configure_output MATCHES "component hetero .*needs.*${text}")
      message(FATAL_ERROR "hetero_without_toolkits: the message does not say what is missing "
                          "(${text}):\n${configure_output}")
    endif()
  endforeach()
endif()

# Which backends of the heterogeneous framework this build has: OpenCL when its headers and
# loader are found (PoCL runs it on CPUs), CUDA when nvcc is found. ON makes a missing one an
# error; OFF leaves it out.
foreach(backend OPENCL CUDA)
  if(NOT ROAM_${backend} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "ROAM_${backend} must be AUTO, ON or OFF, not '${ROAM_${backend}}'")
  endif()
endforeach()

set(ROAM_HAVE_OPENCL OFF)
if(NOT ROAM_OPENCL STREQUAL "OFF")
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    set(ROAM_HAVE_OPENCL ON)
  elseif(ROAM_OPENCL STREQUAL "ON")
    message(FATAL_ERROR "ROAM_OPENCL=ON but no OpenCL found (Debian: ocl-icd-opencl-dev opencl-headers)")
  endif()
endif()

set(ROAM_HAVE_CUDA OFF)
if(NOT ROAM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # PTX for compute 7.5 is JIT-compiled by the driver for any newer GPU.
      set(CMAKE_CUDA_ARCHITECTURES 75)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no C++20 flag for nvcc; kernels need 17
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(ROAM_HAVE_CUDA ON)
  elseif(ROAM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ROAM_CUDA=ON but nvcc was not found")
  endif()
endif()

# CUDA tests run only where a GPU answers (nvidia-smi), or when asked for explicitly.
set(ROAM_GPU_TESTS AUTO CACHE STRING "Register the CUDA tests: AUTO (when a GPU is seen), ON, OFF")
set(ROAM_RUN_GPU_TESTS OFF)
if(ROAM_HAVE_CUDA)
  if(ROAM_GPU_TESTS STREQUAL "ON")
    set(ROAM_RUN_GPU_TESTS ON)
  elseif(ROAM_GPU_TESTS STREQUAL "AUTO")
    execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE gpu_status OUTPUT_QUIET ERROR_QUIET)
    if(gpu_status EQUAL 0)
      set(ROAM_RUN_GPU_TESTS ON)
    endif()
  endif()
endif()
message(STATUS "roam: hetero backends: host, OpenCL ${ROAM_HAVE_OPENCL}, CUDA ${ROAM_HAVE_CUDA}"
               " (GPU tests ${ROAM_RUN_GPU_TESTS})")

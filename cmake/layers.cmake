# roam's layers and the layers each may use: the one declaration of the dependency graph.
# src/CMakeLists.txt builds one library per layer linking exactly these, and
# tools/check_layers.py (run at every build, target roam_layer_check) fails the build when a
# file of a layer includes a header of a layer it may not use, or another layer's private
# header (src/<layer>/). Each layer's list names its direct dependencies; the layers below
# those are allowed through them. "roam" is the umbrella: roam/roam.hpp and the interface
# library roam (every layer of roam proper).
set(ROAM_LAYERS base trace transport core task coll am gas mobile lb checkpoint hetero hetero_mobile)
set(ROAM_LAYER_DEPENDS_base "")
set(ROAM_LAYER_DEPENDS_trace base)
set(ROAM_LAYER_DEPENDS_transport base)
set(ROAM_LAYER_DEPENDS_core transport trace)
set(ROAM_LAYER_DEPENDS_task core)
set(ROAM_LAYER_DEPENDS_coll base)
set(ROAM_LAYER_DEPENDS_am task coll)
set(ROAM_LAYER_DEPENDS_gas am)
set(ROAM_LAYER_DEPENDS_mobile am)
set(ROAM_LAYER_DEPENDS_lb mobile)
set(ROAM_LAYER_DEPENDS_checkpoint mobile)
set(ROAM_LAYER_DEPENDS_hetero base)
set(ROAM_LAYER_DEPENDS_hetero_mobile roam hetero)
set(ROAM_LAYER_DEPENDS_roam lb checkpoint coll gas)

# The graph as arguments of tools/check_layers.py: --layer NAME=DEP1,DEP2 ...
set(ROAM_LAYER_GRAPH_ARGS "")
foreach(layer IN LISTS ROAM_LAYERS ITEMS roam)
  list(JOIN ROAM_LAYER_DEPENDS_${layer} "," deps)
  list(APPEND ROAM_LAYER_GRAPH_ARGS --layer "${layer}=${deps}")
endforeach()

# roam_layer(NAME SOURCES...): the library roam_NAME (alias roam::NAME), linking the
# libraries of the layers NAME depends on.
function(roam_layer name)
  add_library(roam_${name} ${ARGN})
  add_library(roam::${name} ALIAS roam_${name})
  set_target_properties(roam_${name} PROPERTIES EXPORT_NAME ${name} POSITION_INDEPENDENT_CODE ON)
  target_include_directories(roam_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(roam_${name} PUBLIC cxx_std_20)
  foreach(dep IN LISTS ROAM_LAYER_DEPENDS_${name})
    if(dep STREQUAL "roam")
      target_link_libraries(roam_${name} PUBLIC roam)  # the umbrella (an interface library)
    else()
      target_link_libraries(roam_${name} PUBLIC roam_${dep})
    endif()
  endforeach()
  target_link_libraries(roam_${name} PRIVATE $<BUILD_INTERFACE:roam_build_flags>)
endfunction()

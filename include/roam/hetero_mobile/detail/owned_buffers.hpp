#pragma once
// A roam::buffer<T> owns its elements (a message block): hetero_object::write_range may take one
// over instead of copying it, so a halo goes to the device from the block it arrived in.
#include <roam/am/buffer.hpp>
#include <roam/hetero/hetero_object.hpp>

template <class T>
inline constexpr bool roam::owns_contiguous_elements<roam::buffer<T>> = true;

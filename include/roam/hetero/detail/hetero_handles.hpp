#pragma once
// What the hetero templates need from the compiled engine: opaque states and a few calls.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "roam/hetero/data_access.hpp"
#include "roam/hetero/device.hpp"

namespace roam {

namespace detail {

struct hetero_object_state;
struct hetero_task_state;

std::shared_ptr<hetero_object_state> make_hetero_object(std::size_t bytes);
void* host_data(const hetero_object_state& object) noexcept;
std::size_t object_bytes(const hetero_object_state& object) noexcept;

}  // namespace detail
}  // namespace roam

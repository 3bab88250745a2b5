#pragma once
// What the hetero templates need from the compiled engine: opaque states and a few calls.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "roam/hetero/device.hpp"

namespace roam {

/// How a task or a host request uses an object. `write` promises to overwrite all of it (its
/// current contents are not transferred); `read_write` keeps and updates them.
enum class data_access : std::uint8_t { read, write, read_write };

/// A copy's MSI state (thesis §5.1.2).
enum class coherence : std::uint8_t { invalid, shared, modified };

[[nodiscard]] const char* to_string(coherence c) noexcept;

namespace detail {

struct hetero_object_state;
struct hetero_task_state;

std::shared_ptr<hetero_object_state> make_hetero_object(std::size_t bytes);
void* host_data(const hetero_object_state& object) noexcept;
std::size_t object_bytes(const hetero_object_state& object) noexcept;

}  // namespace detail
}  // namespace roam

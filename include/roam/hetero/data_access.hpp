#pragma once
// How a hetero task or host request uses an object, and the coherence state of a copy.
#include <cstdint>

namespace roam {

/// How a task or a host request uses an object. `write` promises to overwrite all of it (its
/// current contents are not transferred); `read_write` keeps and updates them.
enum class data_access : std::uint8_t { read, write, read_write };

/// A copy's MSI state (thesis §5.1.2).
enum class coherence : std::uint8_t { invalid, shared, modified };

[[nodiscard]] const char* to_string(coherence c) noexcept;

}  // namespace roam

// Fuzz target: the object header at the front of every message to a mobile object
// (decode_object_header). The first two bytes give the job's node count and home span; the
// rest is the payload. What decodes must name fields the gates can use as they are.
#include <roam/base/error.hpp>
#include <roam/mobile/detail/object_runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const roam::node_id nodes = 1u + data[0] % 64;
  const roam::node_id home_span = nodes + data[1] % 8;
  const auto payload = std::as_bytes(std::span(data + 2, size - 2));
  try {
    const auto oh = roam::detail::decode_object_header(payload, nodes, home_span);
    if (oh.target.index == 0 || oh.target.home >= home_span || oh.origin >= nodes ||
        oh.previous_hop > nodes || oh.access > 1 || oh.operation > roam::detail::operation_gather)
      std::abort();
  } catch (const roam::deserialization_error&) {
  }
  return 0;
}

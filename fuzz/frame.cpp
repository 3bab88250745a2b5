// Fuzz target: a frame as the MPI transport receives it from another rank (header and
// payload in one MPI message): decode_frame() and then header_problem() against a job of 8
// nodes, 2 per process, received by the process hosting nodes 2 and 3.
#include <roam/base/error.hpp>
#include <roam/transport/detail/backends.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace roam::detail;
  message_ptr m;
  try {
    m = decode_frame(reinterpret_cast<const std::byte*>(data), size);
  } catch (const roam::deserialization_error&) {
    return 0;  // rejected with a message: what a corrupt frame must get
  }
  if (m->wire_size() != size) std::abort();  // accepted bytes must be the whole frame
  const char* problem = header_problem(m->header, {8, 2, 2});
  if (problem == nullptr && (m->header.dest < 2 || m->header.dest > 3 || m->header.source >= 8))
    std::abort();  // accepted a header for a node this process does not host
  return 0;
}

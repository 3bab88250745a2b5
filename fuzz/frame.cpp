// Fuzz target: bytes taken for a whole message (what the in-process transport's injected
// bytes and a short MPI frame go through): decode_frame() and then header_problem() against
// a job of 8 nodes, 2 per process, received by the process hosting nodes 2 and 3. (The MPI
// transport's split of a frame into a header and a payload that follows is not a pure
// function yet: ADR 49.)
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
  if (problem == nullptr && (m->header.flags & flag_broadcast) &&
      (m->header.source / 2 == 1 || m->header.dest != 2))
    std::abort();  // accepted a broadcast copy to relay that cannot come this way
  return 0;
}

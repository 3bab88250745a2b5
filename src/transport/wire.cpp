#include <roam/transport/detail/backends.hpp>

#include <roam/base/detail/fatal.hpp>

#include <cstdlib>
#include <cstring>

namespace roam::detail {

message_ptr message_from_wire(const std::byte* data, std::size_t size, node_id claimed_source) {
  if (size < sizeof(message_header))
    fatal("received a truncated message from node " + std::to_string(claimed_source) + ": " +
          std::to_string(size) + " bytes, shorter than the " +
          std::to_string(sizeof(message_header)) + "-byte header");
  message_header h;
  std::memcpy(&h, data, sizeof h);
  if (h.payload_size != size - sizeof h)
    fatal("received a truncated or corrupt message from node " + std::to_string(claimed_source) +
          ": its header announces " + std::to_string(h.payload_size) + " payload bytes but " +
          std::to_string(size - sizeof h) + " arrived");
  message_ptr m = message::allocate(h.payload_size);
  std::memcpy(m->wire_data(), data, size);
  return m;
}

bool launched_with_several_mpi_processes() noexcept {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var))
      if (std::atoi(v) > 1) return true;
  return false;
}

}  // namespace roam::detail

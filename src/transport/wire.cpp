#include <roam/transport/detail/backends.hpp>

#include <roam/base/detail/fatal.hpp>
#include <roam/base/error.hpp>

#include <cstdlib>
#include <cstring>

namespace roam::detail {

message_ptr decode_frame(const std::byte* data, std::size_t size) {
  if (size < sizeof(message_header))
    throw deserialization_error(std::to_string(size) + " bytes, shorter than the " +
                                std::to_string(sizeof(message_header)) + "-byte header");
  message_header h;
  std::memcpy(&h, data, sizeof h);
  if (h.payload_size != size - sizeof h)
    throw deserialization_error("its header announces " + std::to_string(h.payload_size) +
                                " payload bytes but " + std::to_string(size - sizeof h) +
                                " arrived");
  message_ptr m = message::allocate(h.payload_size);
  std::memcpy(m->wire_data(), data, size);
  return m;
}

message_ptr message_from_wire(const std::byte* data, std::size_t size, node_id claimed_source) {
  try {
    return decode_frame(data, size);
  } catch (const deserialization_error& e) {
    fatal("received a truncated or corrupt message from node " + std::to_string(claimed_source) +
          ": " + e.message());
  }
}

const char* header_problem(const message_header& h, const frame_layout& job) noexcept {
  if (h.magic != message_magic) return "bad magic number (not a roam message, or corrupt)";
  if (h.checksum != header_checksum(h)) return "header checksum mismatch (corrupt header)";
  if (h.flags & ~all_flags) return "unknown header flags";
  if (h.source >= job.nodes) return "source node out of range";
  if (h.dest < job.first_local || h.dest - job.first_local >= job.local_count)
    return "destination node is not hosted by this process";
  if ((h.flags & flag_broadcast) &&
      (h.source / job.local_count == job.first_local / job.local_count ||
       h.dest != job.first_local))
    return "a broadcast to relay that is not from another process to this process's first node";
  return nullptr;
}

fingerprint_difference first_difference(std::string_view ours, std::string_view theirs) {
  // Both sides walk their lines together, so that the walk ends at the shorter text's end
  // whatever the lines hold.
  fingerprint_difference d;
  auto next_line = [](std::string_view& text) -> std::optional<std::string> {
    if (text.empty()) return std::nullopt;
    const auto end = text.find('\n');
    std::string line(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return line;
  };
  const bool ours_breaks = !ours.empty() && ours.back() == '\n';
  const bool theirs_breaks = !theirs.empty() && theirs.back() == '\n';
  for (;; ++d.line) {
    d.ours = next_line(ours);
    d.theirs = next_line(theirs);
    if (d.ours != d.theirs) return d;
    if (!d.ours) {  // equal to the end of both: they differ in a final line break only
      d.final_break_only = ours_breaks != theirs_breaks;
      return d;
    }
  }
}

std::string fingerprint_difference::describe(const std::optional<std::string>& line,
                                             std::size_t index, bool final_break_only,
                                             bool breaks) {
  if (final_break_only) return breaks ? "a final line break" : "no final line break";
  if (line) return "'" + *line + "'";
  return "no line " + std::to_string(index + 1);
}

bool launched_with_several_mpi_processes() noexcept {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var))
      if (std::atoi(v) > 1) return true;
  return false;
}

}  // namespace roam::detail

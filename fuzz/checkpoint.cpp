// Fuzz target: the checkpoint files a restart reads (checkpoint_format.hpp). The first byte
// picks the decoder: 0 a whole manifest file, 1 a whole node file, 2 a manifest's body, 3 a
// node file's body (the CRCs would stop most mutations before the bodies' decoders). Every
// input must decode or be refused with roam::checkpoint_error; what decodes must stay
// inside the input.
#include <roam/base/error.hpp>
#include <roam/checkpoint/detail/checkpoint_format.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

namespace {

namespace format = roam::detail::checkpoint_format;

void inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  if (part.empty()) return;
  if (part.data() < whole.data() || part.data() + part.size() > whole.data() + whole.size())
    std::abort();
}

void check_node_file(std::span<const std::byte> body) {
  const format::node_file f = format::decode_node_file(body);
  for (const auto& s : f.states) {
    inside(std::as_bytes(std::span(s.name.data(), s.name.size())), body);
    inside(std::as_bytes(std::span(s.type.data(), s.type.size())), body);
    inside(s.bytes, body);
    if (s.name.empty()) std::abort();
  }
  for (const auto& o : f.objects) {
    inside(o.bytes, body);
    if (o.id.index == 0) std::abort();
  }
}

void check_manifest(std::span<const std::byte> body) {
  const format::manifest m = format::decode_manifest(body);
  if (m.nodes.empty() || m.home_span < m.nodes.size() || m.next_index.size() != m.home_span)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto input = std::as_bytes(std::span(data + 1, size - 1));
  try {
    switch (data[0] % 4) {
      case 0:
        check_manifest(format::open_container(input, format::file_kind::manifest));
        break;
      case 1:
        check_node_file(format::open_container(input, format::file_kind::node));
        break;
      case 2:
        check_manifest(input);
        break;
      default:
        check_node_file(input);
        break;
    }
  } catch (const roam::checkpoint_error&) {
  }
  return 0;
}

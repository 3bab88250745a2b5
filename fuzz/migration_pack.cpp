// Fuzz target: the install message of a migrating object (decode_migration_pack). The first
// three bytes give the job's node count, its home span and the number of handlers; the rest
// is the payload. The object is a std::vector<std::uint32_t> of type #9. Every input must be
// decoded whole or refused with roam::deserialization_error, and what decodes must hold
// what the installation relies on.
#include <roam/am/serialization.hpp>
#include <roam/base/error.hpp>
#include <roam/mobile/detail/migration_pack.hpp>

#include <cereal/types/vector.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace {

namespace detail = roam::detail;
using value = std::vector<std::uint32_t>;
constexpr std::uint32_t type = 9;

std::unique_ptr<detail::object_box> unpack(roam::detail::message_reader& r) {
  auto box = std::make_unique<detail::object_box_of<value>>();
  detail::read_value(r, *static_cast<value*>(box->get()));
  return box;
}

void check_message(const detail::message_ptr& m, const detail::migration_pack& p,
                   const detail::migration_pack_bounds& b) {
  const auto oh = detail::decode_object_header(
      std::span<const std::byte>(m->payload(), m->header.payload_size), b.nodes, b.home_span);
  if (oh.target.home != p.header.id.home || oh.target.index != p.header.id.index ||
      m->header.handler >= b.handlers || m->header.checksum != detail::header_checksum(m->header))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  detail::migration_pack_bounds b;
  b.nodes = 1u + data[0] % 64;
  b.home_span = b.nodes + data[1] % 8;
  b.handlers = 1u + data[2];
  detail::message_reader r(reinterpret_cast<const std::byte*>(data + 3), size - 3);
  try {
    const detail::migration_pack p = detail::decode_migration_pack(r, type, b, &unpack);
    if (p.header.id.type != type || p.header.id.index == 0 || p.header.id.home >= b.home_span ||
        !p.object || p.expected.size() != p.header.expected_count ||
        p.ready.size() != p.header.ready_count || p.early.size() != p.header.early_count ||
        r.remaining() != 0)
      std::abort();
    for (std::size_t i = 0; i < p.expected.size(); ++i)
      if (p.expected[i].origin >= b.nodes ||
          (i > 0 && p.expected[i].origin <= p.expected[i - 1].origin))
        std::abort();
    for (const auto& m : p.ready) check_message(m, p, b);
    for (const auto& m : p.early) check_message(m, p, b);
  } catch (const roam::deserialization_error&) {
  }
  return 0;
}

// Fuzz target: an aggregated bundle's payload (channels' messages, core/detail/aggregation.hpp):
// its groups (next_bundle_group), the records of routed groups (next_routed_record) and of
// length-prefixed ones (for_each_sized_record). Every input must be walked or refused with
// roam::deserialization_error, and every piece found must lie inside the input.
#include <roam/am/channel.hpp>
#include <roam/base/error.hpp>
#include <roam/core/detail/aggregation.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

namespace {

namespace detail = roam::detail;

void inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  if (part.empty()) return;
  if (part.data() < whole.data() || part.data() + part.size() > whole.data() + whole.size())
    std::abort();
}

void walk_group(const detail::bundle_group& group, std::span<const std::byte> whole) {
  const detail::group_header& g = group.header;
  if (g.target == detail::per_record_target) {
    std::span<const std::byte> rest = group.records;
    for (std::uint32_t i = 0; i < g.count; ++i) {
      const std::size_t before = rest.size();
      const auto r = detail::next_routed_record(rest, g.record);
      if (!r) {
        if (rest.size() != before) std::abort();  // a refusal moves nothing
        return;
      }
      inside(r->bytes, whole);
      if (rest.size() >= before) std::abort();  // every record moves on
    }
  } else if (g.record == detail::length_prefixed_records) {
    detail::for_each_sized_record(group.records.data(), group.records.size(), g.count,
                                  [&](const std::byte* record, std::size_t length) {
                                    inside(std::span(record, length), whole);
                                  });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto whole = std::as_bytes(std::span(data, size));
  std::span<const std::byte> rest = whole;
  try {
    while (!rest.empty()) {
      const std::size_t before = rest.size();
      const detail::bundle_group group = detail::next_bundle_group(rest);
      inside(group.records, whole);
      if (rest.size() >= before) std::abort();
      walk_group(group, whole);
    }
  } catch (const roam::deserialization_error&) {
  }
  return 0;
}

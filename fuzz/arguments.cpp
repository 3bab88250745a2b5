// Fuzz target: a handler's arguments as they arrive in a message's payload, decoded the
// way a handler decodes them (one value after the other, then every byte consumed): a
// mix of the kinds of argument roam reads (bitwise values, strings, containers, nested
// containers, optionals and variants through cereal, a zero-copy bulk buffer).
#include "argument_types.hpp"

#include <roam/am/buffer.hpp>
#include <roam/am/serialization.hpp>
#include <roam/base/error.hpp>

#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

using roam_fuzz::record;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace roam::detail;
  message_reader r(reinterpret_cast<const std::byte*>(data), size);
  try {
    std::uint64_t a = 0;
    std::string b;
    std::vector<record> c;
    std::map<std::string, std::vector<int>> d;
    std::optional<std::variant<int, std::string>> e;
    roam::buffer<float> f;
    read_value(r, a);
    read_value(r, b);
    read_value(r, c);
    read_value(r, d);
    read_value(r, e);
    read_value(r, f);
    r.expect_end();
  } catch (const roam::deserialization_error&) {
    // rejected with a message: what a corrupt payload must get
  }
  return 0;
}

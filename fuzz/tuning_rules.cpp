// Fuzz target: the collectives' rules file (roam::coll::tuning_rules::parse). Every input
// must be read or refused with roam::config_error; rules that are read must give every
// call a choice its collective has, with a radix of 0 (the default) or at least 2.
#include <roam/base/error.hpp>
#include <roam/coll/tuning_rules.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using roam::coll::algorithm;
using roam::coll::collective;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rules = roam::coll::tuning_rules::parse(text, "fuzz");
    for (const collective c : {collective::bcast, collective::reduce, collective::gather,
                               collective::allgather, collective::allreduce})
      for (const std::uint64_t v :
           {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096}, ~std::uint64_t{0}}) {
        const auto choice = rules.select(c, v, v, v);
        if (!roam::coll::serves(choice.alg, c) || choice.k == 1 ||
            (choice.alg == algorithm::linear && choice.k != 0))
          std::abort();
      }
  } catch (const roam::config_error&) {
  }
  return 0;
}

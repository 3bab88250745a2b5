// The MSI transitions of one hetero object; see object_coherence.hpp.
#include "object_coherence.hpp"

#include <roam/base/error.hpp>

#include <algorithm>
#include <string>

namespace roam::detail {

object_coherence::object_coherence(std::size_t spaces) : states_(spaces, coherence::invalid) {
  if (spaces == 0 || spaces > 64)
    throw device_error("an object needs 1 to 64 memory spaces, not " + std::to_string(spaces));
  states_[0] = coherence::modified;
}

std::size_t object_coherence::newest_device_space() const {
  std::size_t source = 0;
  for (std::size_t s = 1; s < states_.size(); ++s) {
    if (states_[s] == coherence::modified) return s;
    if (source == 0 && states_[s] == coherence::shared) source = s;
  }
  if (source == 0) throw device_error("a hetero object has no valid device copy (internal error)");
  return source;
}

void object_coherence::copied(std::size_t source, std::size_t space) {
  if (!valid(source))
    throw device_error("a hetero object's copy was filled from an invalid one (internal error)");
  states_.at(source) = coherence::shared;
  states_.at(space) = coherence::shared;
}

void object_coherence::written(std::size_t space) {
  std::fill(states_.begin(), states_.end(), coherence::invalid);
  states_.at(space) = coherence::modified;
}

void object_coherence::evicted(std::size_t space) {
  if (space == 0) throw device_error("the host copy cannot be evicted (internal error)");
  if (states_.at(space) == coherence::shared &&
      std::count_if(states_.begin(), states_.end(),
                    [](coherence c) { return c != coherence::invalid; }) == 1)
    throw device_error("a hetero object's only valid copy was evicted unwritten (internal error)");
  if (states_.at(space) == coherence::modified) states_[0] = coherence::modified;
  states_[space] = coherence::invalid;
}

bool object_coherence::failed(std::uint64_t failed_spaces) {
  auto in_mask = [&](std::size_t s) { return (failed_spaces & (std::uint64_t{1} << s)) != 0; };
  bool alternative = false;  // a valid copy outside the mask
  for (std::size_t s = 0; s < states_.size(); ++s)
    alternative = alternative || (!in_mask(s) && valid(s));
  if (!alternative) return false;
  bool invalidated = false;
  for (std::size_t s = 0; s < states_.size(); ++s) {
    if (!in_mask(s) || !valid(s)) continue;
    states_[s] = coherence::invalid;
    invalidated = true;
  }
  if (!invalidated) return false;
  if (std::count_if(states_.begin(), states_.end(),
                    [](coherence c) { return c != coherence::invalid; }) == 1) {
    for (auto& c : states_)
      if (c != coherence::invalid) c = coherence::modified;  // the only one
  }
  return true;
}

}  // namespace roam::detail

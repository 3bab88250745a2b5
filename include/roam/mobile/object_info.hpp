// roam — the public vocabulary of mobile objects: how a handler uses its object, an
// object's identity, and what a node knows of an object's load.
#pragma once

#include <cereal/cereal.hpp>

#include <cstdint>

namespace roam {

/// How a handler uses its object. Exclusive handlers of one object never overlap; shared
/// ones may run at the same time as each other (never with an exclusive one). Non-const
/// member handlers are exclusive, const ones shared.
enum class access : std::uint8_t { exclusive = 0, shared = 1 };

/// Identity of a mobile object: the node that created it, its index there (never reused;
/// 0 means null), and the type it was created with (the registry id of the type's
/// install handler, the same on every rank). Kept by a restart from a checkpoint, even on
/// fewer nodes than the home's number (ADR 50).
struct object_id {
  std::uint32_t home = 0;   ///< the node that created it
  std::uint32_t type = 0;   ///< the registry id of its type (the same on every rank)
  std::uint64_t index = 0;  ///< its number on its home node, from 1 (0: the null object)
  /// The same object.
  friend bool operator==(const object_id& a, const object_id& b) noexcept {
    return a.home == b.home && a.index == b.index && a.type == b.type;
  }
  /// Inside containers (top-level values go by memcpy anyway).
  template <class Ar>
  void serialize(Ar& ar) {
    ar(cereal::binary_data(this, sizeof *this));
  }
};
static_assert(sizeof(object_id) == 16);  // it travels in every object message's header

/// What a node knows of the load of one of its resident objects (a snapshot): what the
/// load-balancing policies read (roam::lb::object_info).
struct object_load {
  object_id id;                     ///< the object
  double pending_cost = 0;          ///< costs of its messages that arrived and did not finish
  std::uint32_t pending_count = 0;  ///< those messages (running ones included)
  std::uint32_t running = 0;        ///< of which running now
  double mean_run_us = 0;           ///< moving average of its handlers' run times (if measured)
  double hint = -1;                 ///< the object's own `double load() const`, or negative

  /// Messages that have not started: what moving the object would move.
  std::uint32_t waiting() const noexcept {
    return pending_count > running ? pending_count - running : 0;
  }
  /// The load the built-in policies use: the object's own estimate if it has one, else the
  /// pending cost.
  double load() const noexcept { return hint >= 0 ? hint : pending_cost; }
};

}  // namespace roam

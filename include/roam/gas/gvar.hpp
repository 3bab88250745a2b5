// roam — a variable on every node, read and written from any node (PPL's gvar).
//
//   roam::gas::gvar<long> best(roam::collective, 0L);    // in roam::run, on every node
//   best.local() = 5;                                     // this node's instance
//   long there = best.get(3).get();                       // node 3's instance
#pragma once

#include <roam/am/node_local.hpp>
#include <roam/gas/allocate.hpp>
#include <roam/gas/one_sided.hpp>

#include <type_traits>

namespace roam::gas {

/// One T per node in the nodes' symmetric heaps: node k's instance is at on(k), the same
/// allocation on every node, so no node needs a table of the others' addresses.
///
/// Lifetime: built collectively (every node's application thread, in the same order, inside
/// roam::run; the constructor returns once every node has built its instance, initialized
/// to `initial`), destroyed by every node before the run ends; operations on an instance
/// already destroyed are roam::memory_error. Threading: local() is a plain reference (the
/// program orders its own accesses); get() and put() as one_sided.hpp.
template <class T>
class gvar {
  static_assert(std::is_trivially_copyable_v<T>, "roam::gas::gvar holds trivially copyable values");

 public:
  /// Other nodes cache what they get of it under `policy` (roam/gas/cache.hpp).
  explicit gvar(collective_t, const T& initial = T{}, cache_policy policy = cache_policy::none)
      : mine_(reinterpret_pointer_cast<T>(detail::allocate_symmetric(
            sizeof(T), reinterpret_cast<const std::byte*>(&initial), sizeof(T),
            static_cast<std::uint8_t>(policy), "roam::gas::gvar"))),
        local_(gas::local(mine_)) {}
  gvar(const gvar&) = delete;
  gvar& operator=(const gvar&) = delete;
  ~gvar() { detail::deallocate_symmetric(reinterpret_pointer_cast<void>(mine_)); }

  /// Node `node`'s instance.
  [[nodiscard]] global_ptr<T> on(node_id node) const noexcept {
    using access = detail::ptr_access;
    return access::make<T>(node, access::slot(mine_), access::generation(mine_),
                           access::offset(mine_), access::policy(mine_));
  }
  /// This node's instance (the node that built this gvar).
  ///@{
  T& local() noexcept { return *local_; }
  const T& local() const noexcept { return *local_; }
  ///@}

  /// Node `node`'s instance, read.
  [[nodiscard]] future<T> get(node_id node) const { return gas::get(on(node)); }
  /// Node `node`'s instance, written.
  [[nodiscard]] future<void> put(node_id node, const T& value) const {
    return gas::put(on(node), value);
  }

 private:
  global_ptr<T> mine_;
  T* local_;
};

}  // namespace roam::gas

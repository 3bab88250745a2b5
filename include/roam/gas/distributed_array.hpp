// roam — an array spread over the nodes (PPL's gvec; a co-array with a global index).
//
//   roam::gas::distributed_array<double> x(roam::collective, 1'000'000);   // block by default
//   for (double& v : x.local()) v = 1.0;                                   // this node's part
//   double v = x.get(123'456).get();                                       // any element
#pragma once

#include <roam/am/node_local.hpp>
#include <roam/core/runtime.hpp>
#include <roam/gas/allocate.hpp>
#include <roam/gas/one_sided.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace roam::gas {

/// How a distributed_array's elements are spread over nodes 0 .. P-1.
enum class distribution : std::uint8_t {
  /// Node k holds the k-th run of ceil(N / P) consecutive elements.
  block,
  /// Element i is on node i mod P, at position i / P there.
  cyclic,
};

/// Where an element lives.
struct element_place {
  node_id node = 0;          ///< the node that holds it
  std::uint64_t offset = 0;  ///< its position among the node's elements
};

/// N elements of T spread over every node. Each node's part is one symmetric allocation of
/// ceil(N / P) elements (the same on every node), so any node maps an index to its node and
/// address by arithmetic alone.
///
/// Lifetime: as gvar (built and destroyed collectively, inside roam::run; every element
/// starts as `initial`). Threading: local() is this node's part as plain memory; get() and
/// put() as one_sided.hpp, and ranges are split into one operation per node they touch.
template <class T>
class distributed_array {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::gas::distributed_array holds trivially copyable values");

 public:
  /// Other nodes cache what they get of it under `policy` (roam/gas/cache.hpp).
  distributed_array(collective_t, std::uint64_t size,
                    gas::distribution layout = gas::distribution::block, const T& initial = T{},
                    cache_policy policy = cache_policy::none)
      : size_(size),
        nodes_(roam::num_nodes()),
        per_node_((size + nodes_ - 1) / nodes_),
        layout_(layout),
        mine_(reinterpret_pointer_cast<T>(detail::allocate_symmetric(
            per_node_ * sizeof(T), reinterpret_cast<const std::byte*>(&initial), sizeof(T),
            static_cast<std::uint8_t>(policy), "roam::gas::distributed_array"))),
        local_(gas::local(mine_, per_node_)) {}
  distributed_array(const distributed_array&) = delete;
  distributed_array& operator=(const distributed_array&) = delete;
  ~distributed_array() { detail::deallocate_symmetric(reinterpret_pointer_cast<void>(mine_)); }

  /// Elements in the array.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// How they are spread over the nodes.
  [[nodiscard]] gas::distribution layout() const noexcept { return layout_; }

  /// The node and position of element `index` (< size()).
  [[nodiscard]] element_place place(std::uint64_t index) const noexcept {
    if (layout_ == gas::distribution::block)
      return {static_cast<node_id>(index / per_node_), index % per_node_};
    return {static_cast<node_id>(index % nodes_), index / nodes_};
  }
  /// The global index of the element at `offset` of node `node`'s part.
  [[nodiscard]] std::uint64_t global_index(node_id node, std::uint64_t offset) const noexcept {
    return layout_ == gas::distribution::block ? node * per_node_ + offset : offset * nodes_ + node;
  }
  /// How many elements node `node` holds.
  [[nodiscard]] std::uint64_t local_size(node_id node) const noexcept {
    if (layout_ == gas::distribution::block) {
      const std::uint64_t first = std::uint64_t{node} * per_node_;
      return first >= size_ ? 0 : std::min(per_node_, size_ - first);
    }
    return size_ / nodes_ + (node < size_ % nodes_ ? 1 : 0);
  }
  /// A pointer to element `index`.
  [[nodiscard]] global_ptr<T> pointer(std::uint64_t index) const noexcept {
    const element_place at = place(index);
    return base_on(at.node) + static_cast<std::ptrdiff_t>(at.offset);
  }
  /// This node's elements, by increasing global index.
  std::span<T> local() noexcept { return {local_, local_size(roam::this_node())}; }

  /// Element `index` (roam::usage_error beyond the array).
  [[nodiscard]] future<T> get(std::uint64_t index) const {
    return gas::get(pointer(checked(index, 1)));
  }
  /// Writes element `index` (roam::usage_error beyond the array).
  [[nodiscard]] future<void> put(std::uint64_t index, const T& value) const {
    return gas::put(pointer(checked(index, 1)), value);
  }
  /// Elements [first, first + count) into `dest` (valid until the future is ready).
  [[nodiscard]] future<void> get(std::uint64_t first, std::uint64_t count, T* dest) const {
    checked(first, count);
    std::vector<future<void>> parts;
    for_each_part(first, count,
                  [&](node_id node, std::uint64_t offset, std::uint64_t n, std::uint64_t at,
                      std::uint64_t step) {
                    if (step == 1) {
                      parts.push_back(gas::get(base_on(node) + static_cast<std::ptrdiff_t>(offset),
                                               dest + at, n));
                      return;
                    }
                    auto packed = std::make_shared<std::vector<T>>(n);
                    parts.push_back(gas::get(base_on(node) + static_cast<std::ptrdiff_t>(offset),
                                             packed->data(), n)
                                        .then([packed, dest, at, step] {
                                          for (std::size_t i = 0; i < packed->size(); ++i)
                                            dest[at + i * step] = (*packed)[i];
                                        }));
                  });
    return when_all(std::move(parts));
  }
  /// Writes `src[0 .. count)` to elements [first, first + count).
  [[nodiscard]] future<void> put(std::uint64_t first, std::uint64_t count, const T* src) const {
    checked(first, count);
    std::vector<future<void>> parts;
    for_each_part(first, count,
                  [&](node_id node, std::uint64_t offset, std::uint64_t n, std::uint64_t at,
                      std::uint64_t step) {
                    std::vector<T> packed(n);
                    for (std::uint64_t i = 0; i < n; ++i) packed[i] = src[at + i * step];
                    parts.push_back(gas::put(base_on(node) + static_cast<std::ptrdiff_t>(offset),
                                             packed.data(), n));
                  });
    return when_all(std::move(parts));
  }

 private:
  global_ptr<T> base_on(node_id node) const noexcept {
    using access = detail::ptr_access;
    return access::make<T>(node, access::slot(mine_), access::generation(mine_),
                           access::offset(mine_), access::policy(mine_));
  }
  std::uint64_t checked(std::uint64_t first, std::uint64_t count) const {
    if (first > size_ || count > size_ - first)
      throw usage_error("roam::gas::distributed_array: elements [" + std::to_string(first) + ", " +
                        std::to_string(first + count) + ") leave the array of " +
                        std::to_string(size_));
    return first;
  }
  /// Calls part(node, offset there, elements, position of the first in the range, step of
  /// the range's positions) for each node holding elements of [first, first + count): its
  /// elements are consecutive there.
  template <class Part>
  void for_each_part(std::uint64_t first, std::uint64_t count, Part&& part) const {
    if (count == 0) return;
    if (layout_ == gas::distribution::block) {
      for (std::uint64_t i = first; i < first + count;) {
        const element_place at = place(i);
        const std::uint64_t n = std::min(per_node_ - at.offset, first + count - i);
        part(at.node, at.offset, n, i - first, 1);
        i += n;
      }
      return;
    }
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(nodes_, count); ++k) {
      const std::uint64_t i = first + k;  // the range's first element on node i % P
      const std::uint64_t n = (count - k + nodes_ - 1) / nodes_;
      part(static_cast<node_id>(i % nodes_), i / nodes_, n, k, nodes_);
    }
  }
  std::uint64_t size_;
  std::uint64_t nodes_;
  std::uint64_t per_node_;
  gas::distribution layout_;
  global_ptr<T> mine_;
  T* local_;
};

}  // namespace roam::gas

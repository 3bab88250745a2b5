// roam — WARD regions: cached copies of shared mutable global memory that need no coherence
// traffic while they are open (Wilkins' WARD property, WARDen's W state in software).
//
//   roam::gas::ward_region<char> flags(roam::collective, sieve, n);   // every node opens it
//   for (...) flags.write(multiple, 0);          // writes go to this node's copy
//   flags.close();                               // collective: every node's writes merged
//
// The contract (WARD: write-after-write apathy, read-after-write dependence freedom): while
// the region is open, no node reads a byte another node writes in it, and bytes several nodes
// write may end with any one of their values. Under it, the region needs no messages between
// open and close: each node reads and writes its own copy of the range (fetched when the
// region opens), which records the bytes it writes. close() merges them into the memory:
//   - a byte written by one node takes that node's value;
//   - a byte written by several takes the value of the highest-numbered node among them (the
//     rule is deterministic: the same program gives the same memory, whatever the timing);
//   - a byte nobody wrote keeps the memory's value (also if a put changed it meanwhile).
// A node reads its own writes. With checking on (--roam-gas-ward-check, or the constructor's
// argument) close() also compares what every node read with what the others wrote, and a
// read of a byte another node wrote in the region (a read-after-write across nodes: the
// contract broken) makes close() throw roam::usage_error on every node, naming the byte and
// the nodes; the memory is merged all the same.
#pragma once

#include <roam/am/node_local.hpp>
#include <roam/gas/detail/operations.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace roam::gas {

/// Whether a WARD region checks its contract at close() (costly: read masks travel too).
enum class ward_check : std::uint8_t {
  from_settings,  ///< --roam-gas-ward-check (default off)
  off,
  on,
};

namespace detail {
/// One node's copy of an open region, in bytes (src/gas/ward_region.cpp).
class ward_copy {
 public:
  ward_copy(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes, ward_check check,
            const char* caller);
  ~ward_copy();
  ward_copy(const ward_copy&) = delete;
  ward_copy& operator=(const ward_copy&) = delete;
  void read(std::uint64_t at, std::uint64_t bytes, std::byte* into);
  void write(std::uint64_t at, std::uint64_t bytes, const std::byte* from);
  void close();
  [[nodiscard]] bool open() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};
}  // namespace detail

/// `count` elements of T at `base` (one allocation, any node's), open as a WARD region on
/// every node (see the file comment for what it promises).
///
/// Lifetime and threading: built collectively (every node's application thread, inside
/// roam::run, in the same order, with the same range); the constructor returns when this
/// node's copy is fetched. read() and write() may be called from any thread of the node:
/// threads of one node writing the same element must order themselves. close() is collective
/// too, and returns once every node's writes are in the memory. A region destroyed while
/// open (without an exception in flight) stops the job: its writes would be lost.
template <class T>
class ward_region {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::gas::ward_region holds trivially copyable values");

 public:
  /// Collective: opens the region over `count` elements at `base` on every node (this node's
  /// copy fetched when it returns). Throws roam::usage_error when the nodes open different
  /// regions and roam::memory_error when a node cannot fetch its copy, on every node.
  ward_region(collective_t, const global_ptr<T>& base, std::size_t count,
              ward_check check = ward_check::from_settings)
      : count_(count),
        copy_(detail::ref_of(base), detail::ptr_access::offset(base),
              std::uint64_t{count} * sizeof(T), check, "roam::gas::ward_region") {}

  /// Elements in the region.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// Element `i` of this node's copy (roam::usage_error beyond the region or once closed).
  [[nodiscard]] T read(std::size_t i) {
    T value;
    copy_.read(std::uint64_t{i} * sizeof(T), sizeof(T), reinterpret_cast<std::byte*>(&value));
    return value;
  }
  /// Elements [first, first + n) of this node's copy into `dest`.
  void read(std::size_t first, std::size_t n, T* dest) {
    copy_.read(std::uint64_t{first} * sizeof(T), std::uint64_t{n} * sizeof(T),
               reinterpret_cast<std::byte*>(dest));
  }
  /// Writes element `i` of this node's copy.
  void write(std::size_t i, const T& value) {
    copy_.write(std::uint64_t{i} * sizeof(T), sizeof(T),
                reinterpret_cast<const std::byte*>(&value));
  }
  /// Writes `src[0 .. n)` to elements [first, first + n) of this node's copy.
  void write(std::size_t first, std::size_t n, const T* src) {
    copy_.write(std::uint64_t{first} * sizeof(T), std::uint64_t{n} * sizeof(T),
                reinterpret_cast<const std::byte*>(src));
  }
  /// Collective: merges every node's writes into the memory (the file comment's rule).
  void close() { copy_.close(); }
  /// Whether close() has not been called yet.
  [[nodiscard]] bool is_open() const noexcept { return copy_.open(); }

 private:
  std::size_t count_;
  detail::ward_copy copy_;
};

}  // namespace roam::gas

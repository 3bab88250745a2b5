// roam — a typed pointer to memory on any node (PPL's global pointer, UPC++'s global_ptr).
#pragma once

#include <roam/am/detail/sends_bitwise.hpp>
#include <roam/transport/node_id.hpp>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace roam {

namespace gas::detail {
struct ptr_access;
}

/// A pointer to an element of type T in an allocation of the global heap of some node
/// (roam::gas::allocate). It names the node, the allocation (a slot of the node's table and
/// the slot's generation when it was allocated) and the byte offset of the element in the
/// node's heap, in 16 trivially copyable bytes: messages carry it as it is, and a pointer
/// received from another node names the same memory.
///
/// Arithmetic moves within the allocation, as with a built-in pointer; it is not checked
/// here. Every operation that reaches the memory checks the pointer at the owner: a null
/// pointer, a freed allocation (also one whose slot was reused since) and a range beyond the
/// allocation are a roam::memory_error, never a silent access.
///
/// Threading: a value type; no operation on it touches the memory.
template <class T>
class global_ptr {
  static_assert(!std::is_reference_v<T>, "roam::global_ptr: T must not be a reference");

 public:
  using element_type = T;  ///< The type pointed to.

  /// The null pointer (also from nullptr).
  ///@{
  constexpr global_ptr() noexcept = default;
  constexpr global_ptr(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  ///@}
  /// A pointer to const from a pointer to non-const.
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) constexpr global_ptr(
      const global_ptr<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : word_(other.word_), node_(other.node_), slot_(other.slot_) {}

  /// The node whose memory this points to (meaningless for the null pointer).
  [[nodiscard]] constexpr node_id where() const noexcept { return node_; }
  /// Whether this is the null pointer (and false as a bool).
  ///@{
  [[nodiscard]] constexpr bool is_null() const noexcept { return (slot_ & ~policy_bits) == 0; }
  constexpr explicit operator bool() const noexcept { return !is_null(); }
  ///@}

  /// Pointer arithmetic in elements, within the allocation (not checked here: an access
  /// beyond the allocation is roam::memory_error at the owner).
  ///@{
  constexpr global_ptr& operator+=(std::ptrdiff_t n) noexcept {
    set_offset(offset() + static_cast<std::uint64_t>(n) * element_bytes());
    return *this;
  }
  constexpr global_ptr& operator-=(std::ptrdiff_t n) noexcept { return *this += -n; }
  constexpr global_ptr& operator++() noexcept { return *this += 1; }
  constexpr global_ptr& operator--() noexcept { return *this -= 1; }
  constexpr global_ptr operator++(int) noexcept {
    global_ptr before = *this;
    ++*this;
    return before;
  }
  constexpr global_ptr operator--(int) noexcept {
    global_ptr before = *this;
    --*this;
    return before;
  }
  friend constexpr global_ptr operator+(global_ptr p, std::ptrdiff_t n) noexcept { return p += n; }
  friend constexpr global_ptr operator+(std::ptrdiff_t n, global_ptr p) noexcept { return p += n; }
  friend constexpr global_ptr operator-(global_ptr p, std::ptrdiff_t n) noexcept { return p -= n; }
  ///@}
  /// Elements between two pointers into the same allocation.
  friend constexpr std::ptrdiff_t operator-(const global_ptr& a, const global_ptr& b) noexcept {
    return static_cast<std::ptrdiff_t>(a.offset() - b.offset()) /
           static_cast<std::ptrdiff_t>(element_bytes());
  }

  /// Pointers are equal when they name the same element of the same allocation.
  friend constexpr bool operator==(const global_ptr&, const global_ptr&) noexcept = default;
  /// An order (by node, allocation, then offset), so that pointers can key maps.
  friend constexpr std::strong_ordering operator<=>(const global_ptr& a,
                                                    const global_ptr& b) noexcept {
    if (auto c = a.node_ <=> b.node_; std::is_neq(c)) return c;
    if (auto c = a.slot_ <=> b.slot_; std::is_neq(c)) return c;
    return a.word_ <=> b.word_;
  }

  /// cereal's convention, for a pointer inside a serialized value (a std::vector of them, a
  /// member of a structure): it travels as its fields. Alone (a handler's argument, a
  /// collective's value) it is copied bitwise: see roam::detail::sends_bitwise below.
  template <class Archive>
  void serialize(Archive& archive) {
    archive(word_, node_, slot_);
  }

 private:
  template <class U>
  friend class global_ptr;
  friend struct gas::detail::ptr_access;
  friend struct std::hash<global_ptr>;

  static constexpr std::uint64_t offset_mask = (std::uint64_t{1} << 48) - 1;
  /// Bits of slot_ that hold the allocation's cache policy (roam::gas::cache_policy).
  static constexpr std::uint32_t policy_shift = 29;
  static constexpr std::uint32_t policy_bits = 3u << policy_shift;
  static constexpr std::uint64_t element_bytes() noexcept {
    if constexpr (std::is_void_v<T>)
      return 1;
    else
      return sizeof(T);
  }
  constexpr std::uint64_t offset() const noexcept { return word_ & offset_mask; }
  constexpr void set_offset(std::uint64_t o) noexcept {
    word_ = (word_ & ~offset_mask) | (o & offset_mask);
  }

  std::uint64_t word_ = 0;  // byte offset in the node's heap (bits 0-47), generation (48-63)
  node_id node_ = 0;
  std::uint32_t slot_ = 0;  // 0: null; the cache policy in policy_bits
};

/// The same address seen as another type (for byte-wise access, or the element type the
/// allocation was made with).
template <class U, class T>
constexpr global_ptr<U> reinterpret_pointer_cast(const global_ptr<T>& p) noexcept;

namespace gas::detail {

/// What only the global-memory layer reads and writes of a pointer.
struct ptr_access {
  template <class T>
  static constexpr global_ptr<T> make(node_id node, std::uint32_t slot, std::uint16_t generation,
                                      std::uint64_t offset, std::uint8_t policy = 0) noexcept {
    global_ptr<T> p;
    p.node_ = node;
    p.slot_ = (slot & ~global_ptr<T>::policy_bits) |
              (std::uint32_t{policy} << global_ptr<T>::policy_shift & global_ptr<T>::policy_bits);
    p.word_ = (std::uint64_t{generation} << 48) | (offset & global_ptr<T>::offset_mask);
    return p;
  }
  /// The allocation's slot in its node's table (without the policy bits).
  template <class T>
  static constexpr std::uint32_t slot(const global_ptr<T>& p) noexcept {
    return p.slot_ & ~global_ptr<T>::policy_bits;
  }
  /// The allocation's cache policy (a roam::gas::cache_policy).
  template <class T>
  static constexpr std::uint8_t policy(const global_ptr<T>& p) noexcept {
    return static_cast<std::uint8_t>((p.slot_ & global_ptr<T>::policy_bits) >>
                                     global_ptr<T>::policy_shift);
  }
  template <class T>
  static constexpr std::uint16_t generation(const global_ptr<T>& p) noexcept {
    return static_cast<std::uint16_t>(p.word_ >> 48);
  }
  template <class T>
  static constexpr std::uint64_t offset(const global_ptr<T>& p) noexcept {
    return p.offset();
  }
};

}  // namespace gas::detail

template <class U, class T>
constexpr global_ptr<U> reinterpret_pointer_cast(const global_ptr<T>& p) noexcept {
  using access = gas::detail::ptr_access;
  return access::make<U>(p.where(), access::slot(p), access::generation(p), access::offset(p),
                         access::policy(p));
}

/// A pointer alone is sent as its 16 bytes, its serialize() notwithstanding.
template <class T>
struct detail::sends_bitwise<global_ptr<T>> : std::true_type {};

}  // namespace roam

/// Hashes a global pointer, for unordered containers.
template <class T>
struct std::hash<roam::global_ptr<T>> {
  /// The hash of `p`.
  std::size_t operator()(const roam::global_ptr<T>& p) const noexcept {
    const std::uint64_t mixed =
        p.word_ ^ (std::uint64_t{p.node_} << 32 | p.slot_) * 0x9e3779b97f4a7c15ull;
    return std::hash<std::uint64_t>{}(mixed);
  }
};

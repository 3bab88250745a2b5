// roam — contiguous bulk data that travels without copies.
//
// roam::buffer<T> is an array of trivially copyable T whose storage is a message block.
// As a handler argument:
// - Sending: a buffer passed as an rvalue (std::move(b)) becomes the message itself when
//   the arguments before it take at most 48 bytes: no copy is made, and the buffer is
//   left empty. Otherwise (passed as an lvalue, or after larger arguments) its elements
//   are copied into the message like a vector's.
// - Receiving: a handler parameter of type roam::buffer<T> takes over the arrived message
//   block: the elements are not copied, whatever their number. The handler owns the buffer
//   and may keep it, modify it or send it on.
// - As the result of a call handler, a returned buffer becomes the reply the same way.
// Large buffers come from a size-classed cache, so allocating one per message is cheap.
// Elements are not initialized by the size constructor, as with new T[n] for trivial T.
#pragma once

#include <roam/am/serialization.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <type_traits>

namespace roam {

/// An array of trivially copyable `T` whose storage is a message block, so that it travels as
/// a handler argument or result without copying its elements (see the top of this file).
template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>,
                "roam::buffer holds trivially copyable values (no pointers)");
  static_assert(alignof(T) <= 16, "roam::buffer elements must need at most 16-byte alignment");

 public:
  using value_type = T;  ///< The element type.
  /// Offset of the elements in the message payload: the room before it holds the
  /// buffer's 16-byte tag and up to 48 bytes of preceding arguments.
  static constexpr std::size_t data_offset = 64;

  buffer() = default;
  /// `count` uninitialized elements.
  explicit buffer(std::size_t count) { allocate(count); }
  /// A copy of `values`.
  buffer(std::initializer_list<T> values)
      : buffer(std::span<const T>(values.begin(), values.size())) {}
  /// A copy of `values`.
  explicit buffer(std::span<const T> values) {
    allocate(values.size());
    if (!values.empty()) std::memcpy(data_, values.data(), values.size_bytes());
  }
  /// Moving takes the block over and leaves `other` empty; copying copies the elements into a
  /// new block.
  ///@{
  buffer(buffer&& other) noexcept { swap(other); }
  buffer& operator=(buffer&& other) noexcept {
    buffer(std::move(other)).swap(*this);
    return *this;
  }
  buffer(const buffer& other) : buffer(other.span()) {}
  buffer& operator=(const buffer& other) {
    if (this != &other) buffer(other).swap(*this);
    return *this;
  }
  ///@}

  /// Container-like access to the elements, which are contiguous.
  ///@{
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  std::span<T> span() noexcept { return {data_, size_}; }
  std::span<const T> span() const noexcept { return {data_, size_}; }
  ///@}
  /// True when both buffers hold the same number of elements with the same bytes.
  bool operator==(const buffer& other) const {
    return size_ == other.size_ &&
           (size_ == 0 || std::memcmp(data_, other.data_, size_ * sizeof(T)) == 0);
  }

  /// Exchanges the contents (blocks included) of two buffers, without copying elements.
  void swap(buffer& other) noexcept {
    std::swap(block_, other.block_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(offset_, other.offset_);
  }

  /// cereal form, used when a buffer sits inside another serialized value (a copy).
  ///@{
  template <class Ar>
  void save(Ar& ar) const {
    ar(cereal::make_size_tag(static_cast<cereal::size_type>(size_)));
    ar(cereal::binary_data(data_, size_ * sizeof(T)));
  }
  template <class Ar>
  void load(Ar& ar) {
    cereal::size_type n = 0;
    ar(cereal::make_size_tag(n));
    buffer fresh(static_cast<std::size_t>(n));
    ar(cereal::binary_data(fresh.data_, fresh.size_ * sizeof(T)));
    swap(fresh);
  }
  ///@}

 private:
  friend struct detail::top_level_codec<buffer<T>>;
  void allocate(std::size_t count) {
    block_ = detail::message::allocate(data_offset + count * sizeof(T));
    data_ = reinterpret_cast<T*>(block_->payload() + data_offset);
    size_ = count;
    offset_ = data_offset;
  }

  detail::message_ptr block_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t offset_ = data_offset;  // of data_ in block_'s payload
};

namespace detail {

/// Wire form of a top-level buffer argument: [u64 count][u64 offset] ... elements at
/// `offset` (16-byte aligned) ... then the following arguments.
template <class T>
struct top_level_codec<buffer<T>> {
  struct tag {
    std::uint64_t count, offset;
  };

  static void write(message_writer& w, const buffer<T>& b) {
    // At least data_offset, so that a receiver who sends the buffer on can do so in place.
    const std::size_t offset =
        std::max(buffer<T>::data_offset, (w.position() + sizeof(tag) + 15) & ~std::size_t{15});
    const tag t{b.size(), offset};
    w.write(&t, sizeof t);
    w.pad_to(offset);
    w.write(b.data(), b.size() * sizeof(T));
  }

  static void write_moved(message_writer& w, buffer<T>&& b) {
    if (!b.block_ || w.position() + sizeof(tag) > b.offset_) {
      write(w, b);
      return;
    }
    // The buffer's block becomes the message: earlier arguments move in front of the data.
    const tag t{b.size(), b.offset_};
    w.write(&t, sizeof t);
    w.pad_to(b.offset_);
    const std::size_t end = b.offset_ + b.size() * sizeof(T);
    w.adopt(std::move(b.block_), end);
    b.data_ = nullptr;
    b.size_ = 0;
  }

  static void read(message_reader& r, buffer<T>& out) {
    tag t{};
    r.read(&t, sizeof t);
    const std::size_t available = r.remaining() + r.position();
    if (t.offset % 16 != 0 || t.offset < r.position() || t.offset > available ||
        t.count > (available - t.offset) / sizeof(T))
      throw deserialization_error("bulk buffer of " + std::to_string(t.count) +
                                  " elements at offset " + std::to_string(t.offset) +
                                  " does not fit in the " + std::to_string(available) +
                                  "-byte payload");
    const std::byte* elements = r.data() + t.offset;
    if (message_ptr* owner = r.owner()) {
      // Take the arrived block over: the elements stay where MPI put them.
      out.block_ = std::move(*owner);
      out.data_ = reinterpret_cast<T*>(const_cast<std::byte*>(elements));
      out.size_ = t.count;
      out.offset_ = t.offset;
    } else {
      buffer<T> copy(t.count);
      if (t.count) std::memcpy(copy.data(), elements, t.count * sizeof(T));
      out.swap(copy);
    }
    r.skip_to(t.offset + t.count * sizeof(T));
  }
};

}  // namespace detail
}  // namespace roam

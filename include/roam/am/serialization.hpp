// roam — how values become message bytes and back.
//
// - Trivially copyable types without a serialize function travel by memcpy.
// - Everything else goes through cereal: std containers, strings, tuples, optionals,
//   variants, maps, and user types with `template <class Ar> void serialize(Ar&)` (or
//   save/load). The archive writes straight into the message block, with no stream.
// - Raw pointers are rejected at compile time: their values mean nothing on another node.
// - Reading checks every size against the bytes that remain and throws
//   roam::deserialization_error on truncated or malformed input.
#pragma once

#include <roam/am/detail/sends_bitwise.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/transport/message.hpp>

#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/chrono.hpp>
#include <cereal/types/complex.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/list.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/memory.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/unordered_set.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace roam::detail {

/// Appends bytes to a message's payload, growing the block when needed.
class message_writer {
 public:
  explicit message_writer(message_ptr& m) noexcept : m_(m) {}
  void write(const void* data, std::size_t size) {
    if (size == 0) return;
    if (used_ + size > m_->capacity()) message::reserve(m_, used_ + size, used_);
    std::memcpy(m_->payload() + used_, data, size);
    used_ += size;
  }
  /// Records the payload size in the header; call once after the last write.
  void finish() noexcept { m_->header.payload_size = used_; }
  /// Bytes written so far.
  std::size_t position() const noexcept { return used_; }
  /// Pads with zero bytes up to `offset`.
  void pad_to(std::size_t offset) {
    static constexpr std::byte zeros[64] = {};
    while (used_ < offset) write(zeros, std::min(sizeof zeros, offset - used_));
  }
  /// Continues in `block` instead: the header and the bytes written so far are copied to
  /// its start, then writing resumes at `resume_at` (bulk data already sits in between).
  void adopt(message_ptr block, std::size_t resume_at) noexcept {
    block->header = m_->header;
    std::memcpy(block->payload(), m_->payload(), used_);
    m_ = std::move(block);
    used_ = resume_at;
  }

 private:
  message_ptr& m_;
  std::size_t used_ = 0;
};

/// Reads a payload front to back, never past its end.
class message_reader {
 public:
  message_reader(const std::byte* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /// Reads the payload of `*owner`, which bulk arguments may take over (zero-copy).
  explicit message_reader(message_ptr& owner) noexcept
      : data_(owner->payload()), size_(owner->header.payload_size), owner_(&owner) {}
  void read(void* out, std::size_t size) {
    if (size > size_ - used_)
      throw deserialization_error("payload truncated: needed " + std::to_string(size) +
                                  " more bytes at offset " + std::to_string(used_) + " of " +
                                  std::to_string(size_));
    if (size) std::memcpy(out, data_ + used_, size);
    used_ += size;
  }
  std::size_t remaining() const noexcept { return size_ - used_; }
  std::size_t position() const noexcept { return used_; }
  const std::byte* data() const noexcept { return data_; }
  /// Moves to `offset` (forward only, within the payload).
  void skip_to(std::size_t offset) {
    if (offset < used_ || offset > size_)
      throw deserialization_error("bulk data offset " + std::to_string(offset) + " outside [" +
                                  std::to_string(used_) + ", " + std::to_string(size_) + "]");
    used_ = offset;
  }
  /// The message block, if it is still there to be taken over (nullptr otherwise).
  message_ptr* owner() noexcept { return owner_ && *owner_ ? owner_ : nullptr; }
  /// Throws unless every byte was consumed: leftovers mean sender and receiver disagree.
  void expect_end() const {
    if (used_ != size_)
      throw deserialization_error(std::to_string(size_ - used_) +
                                  " unread bytes after the last argument (argument types differ "
                                  "between sender and receiver?)");
  }

 private:
  const std::byte* data_;
  std::size_t size_;
  std::size_t used_ = 0;
  message_ptr* owner_ = nullptr;
};

/// Values with their own top-level wire form (zero-copy bulk buffers) specialize this.
template <class T>
struct top_level_codec;

template <class T, class = void>
struct has_top_level_codec : std::false_type {};
template <class T>
struct has_top_level_codec<T, std::void_t<decltype(sizeof(top_level_codec<T>))>> : std::true_type {
};

class output_archive
    : public cereal::OutputArchive<output_archive, cereal::AllowEmptyClassElision> {
 public:
  explicit output_archive(message_writer& w)
      : cereal::OutputArchive<output_archive, cereal::AllowEmptyClassElision>(this), w_(w) {}
  void save_bytes(const void* data, std::size_t size) { w_.write(data, size); }

 private:
  message_writer& w_;
};

class input_archive : public cereal::InputArchive<input_archive, cereal::AllowEmptyClassElision> {
 public:
  explicit input_archive(message_reader& r)
      : cereal::InputArchive<input_archive, cereal::AllowEmptyClassElision>(this), r_(r) {}
  void load_bytes(void* data, std::size_t size) { r_.read(data, size); }
  std::size_t remaining() const noexcept { return r_.remaining(); }

 private:
  message_reader& r_;
};

// cereal's archive protocol: arithmetic values, binary blocks, size tags, name-value pairs.
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(output_archive& ar,
                                                                    const T& t) {
  ar.save_bytes(&t, sizeof t);
}
/// A bool from the wire: any byte but 0 or 1 is a corrupt payload (reading it as a bool
/// would be undefined behaviour).
static_assert(sizeof(bool) == 1, "roam sends a bool as one byte");
inline bool checked_bool(std::uint8_t byte) {
  if (byte > 1)
    throw deserialization_error("a bool argument holds byte " + std::to_string(byte) +
                                " (corrupt payload)");
  return byte != 0;
}
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(input_archive& ar, T& t) {
  if constexpr (std::is_same_v<T, bool>) {
    std::uint8_t byte = 0;
    ar.load_bytes(&byte, 1);
    t = checked_bool(byte);
  } else {
    ar.load_bytes(&t, sizeof t);
  }
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(output_archive& ar, const cereal::BinaryData<T>& b) {
  ar.save_bytes(b.data, static_cast<std::size_t>(b.size));
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(input_archive& ar, cereal::BinaryData<T>& b) {
  ar.load_bytes(b.data, static_cast<std::size_t>(b.size));
  // cereal reads arrays of arithmetic values as one block (std::array<bool, N>): bools in
  // it are checked like single ones.
  if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, bool>) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(b.data);
    for (std::size_t i = 0; i < static_cast<std::size_t>(b.size); ++i) (void)checked_bool(bytes[i]);
  }
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(output_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(input_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(output_archive& ar, const cereal::SizeTag<T>& t) {
  std::uint64_t n = static_cast<std::uint64_t>(t.size);
  ar.save_bytes(&n, sizeof n);
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(input_archive& ar, cereal::SizeTag<T>& t) {
  std::uint64_t n = 0;
  ar.load_bytes(&n, sizeof n);
  // Every element takes at least one byte for the types roam sends; a larger count is a
  // corrupt size that would otherwise allocate absurd amounts of memory.
  if (n > ar.remaining())
    throw deserialization_error("container size " + std::to_string(n) + " exceeds the " +
                                std::to_string(ar.remaining()) + " bytes left in the payload");
  t.size = static_cast<std::remove_reference_t<T>>(n);
}

/// True when T goes by memcpy rather than through cereal.
template <class T>
inline constexpr bool is_bitwise_serializable =
    std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !std::is_member_pointer_v<T> &&
    (std::is_arithmetic_v<T> || std::is_enum_v<T> || sends_bitwise<T>::value ||
     !cereal::traits::is_output_serializable<T, output_archive>::value);

template <class T>
inline constexpr bool is_serializable =
    !std::is_pointer_v<T> && (is_bitwise_serializable<T> ||
                              (cereal::traits::is_output_serializable<T, output_archive>::value &&
                               cereal::traits::is_input_serializable<T, input_archive>::value));

/// Whether T and everything a standard container or wrapper in it holds can be sent.
/// cereal's traits accept std::vector<X> whatever X is and fail deep inside its own code,
/// with a message that names neither the argument nor the handler; this looks inside.
template <class T, class = void>
struct deeply_serializable : std::bool_constant<is_serializable<T>> {};
template <class T>
inline constexpr bool deeply_serializable_v = deeply_serializable<std::remove_cv_t<T>>::value;
// Containers (vector, deque, list, sets, arrays...): their elements; maps: keys and values.
template <class T>
struct deeply_serializable<
    T, std::void_t<typename T::value_type, decltype(std::declval<const T&>().begin()),
                   std::enable_if_t<!is_bitwise_serializable<T> &&
                                    !std::is_same_v<T, std::basic_string<typename T::value_type>>>>>
    : std::bool_constant<is_serializable<T> && deeply_serializable_v<typename T::value_type>> {};
template <class A, class B>
struct deeply_serializable<std::pair<A, B>>
    : std::bool_constant<deeply_serializable_v<A> && deeply_serializable_v<B>> {};
template <class... E>
struct deeply_serializable<std::tuple<E...>>
    : std::bool_constant<(deeply_serializable_v<E> && ...)> {};
template <class... E>
struct deeply_serializable<std::variant<E...>>
    : std::bool_constant<(deeply_serializable_v<E> && ...)> {};
template <class E>
struct deeply_serializable<std::optional<E>> : std::bool_constant<deeply_serializable_v<E>> {};
template <class E>
struct deeply_serializable<std::unique_ptr<E>> : std::bool_constant<deeply_serializable_v<E>> {};
template <class E>
struct deeply_serializable<std::shared_ptr<E>> : std::bool_constant<deeply_serializable_v<E>> {};

template <class T>
void write_value(message_writer& w, const T& value) {
  if constexpr (has_top_level_codec<T>::value) {
    top_level_codec<T>::write(w, value);
    return;
  } else {
    static_assert(!std::is_pointer_v<T>,
                  "roam: raw pointers cannot be sent; their values mean nothing on another node");
    static_assert(
        is_serializable<T>,
        "roam: this type can be neither copied bitwise (it is not trivially copyable) nor "
        "serialized by cereal; give it `template <class Ar> void serialize(Ar& ar)` or "
        "include the cereal header for the std type it uses");
    if constexpr (is_bitwise_serializable<T>) {
      w.write(&value, sizeof(T));
    } else {
      output_archive ar(w);
      ar(value);
    }
  }
}

/// Writes an argument the caller gives up: bulk buffers passed as rvalues may hand their
/// block over instead of being copied.
template <class T>
void write_value_moved(message_writer& w, T&& value) {
  using V = std::decay_t<T>;
  if constexpr (has_top_level_codec<V>::value && !std::is_lvalue_reference_v<T>)
    top_level_codec<V>::write_moved(w, std::forward<T>(value));
  else
    write_value(w, value);
}

template <class T>
void read_value(message_reader& r, T& value) {
  if constexpr (has_top_level_codec<T>::value) {
    top_level_codec<T>::read(r, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    std::uint8_t byte = 0;
    r.read(&byte, 1);
    value = checked_bool(byte);
  } else if constexpr (is_bitwise_serializable<T>) {
    r.read(&value, sizeof(T));
  } else {
    input_archive ar(r);
    try {
      ar(value);
    } catch (const deserialization_error&) {
      throw;
    } catch (const std::exception& e) {
      throw deserialization_error(std::string("cereal could not read the value: ") + e.what());
    }
  }
}

}  // namespace roam::detail

CEREAL_SETUP_ARCHIVE_TRAITS(roam::detail::input_archive, roam::detail::output_archive)

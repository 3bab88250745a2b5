// roam — channels: fine-grained messages, aggregated and combined.
//
//   auto add = roam::channel([](std::uint64_t slot) { table[slot] += 1; });
//   for (...) add(owner_of(i), slot_of(i));     // buffered per destination
//   roam::wait_quiescence();                     // (or barrier, a wait, roam::flush())
//
// A channel binds a handler at compile time and sends to any node, fire and forget, like
// roam::send. Its messages do not travel alone: each thread of a node collects them in one
// buffer per destination (`--roam-aggregate-bytes`, 8 KiB by default), and consecutive
// messages of one handler store the handler once and then only their arguments. The
// receiver runs such a group in a tight loop on one worker. Guide: docs/guide/aggregation.md.
//
// When buffers leave: when full; when the sending thread finds no work or waits (a future,
// a barrier, wait_quiescence, a handler that suspends); on roam::flush(); and, for ordered
// channels, before a direct message (roam::send, roam::call, a mobile_ptr send) from the
// same thread to the same node. So wait_quiescence() and barriers never leave messages in
// a buffer, and nothing is lost when a thread stops sending.
//
// Ordering:
// - ordered (default): messages a thread sends to one node through ordered channels and
//   direct sends start running in the order they were sent (the guarantee of roam::send,
//   kept across all of them).
// - roam::unordered: no order at all, relative to each other or to the thread's other
//   messages. Direct sends do not flush them, so they keep batching.
//
// Threading: callable from any thread of a node, including handlers. Threads the
// application started itself (when the process hosts one node) send each message at once.
// A channel object is a small value: copy it, capture it, share it between threads.
#pragma once

#include <roam/am/detail/handler_traits.hpp>
#include <roam/core/detail/aggregation.hpp>

#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace roam {

/// Order kept by a channel's messages (see the top of this file).
enum class channel_order { ordered, unordered };
inline constexpr channel_order ordered = channel_order::ordered;
inline constexpr channel_order unordered = channel_order::unordered;

/// Ships every message the calling thread has aggregated, on every channel and to every
/// node. Messages still run asynchronously; flush() only stops them from waiting in a
/// buffer. Rarely needed: waiting and idling flush already.
inline void flush() noexcept { detail::flush_thread_lanes(); }

namespace detail {

template <class P>
inline constexpr bool is_fixed_size_parameter =
    is_bitwise_serializable<std::decay_t<P>> && !has_top_level_codec<std::decay_t<P>>::value;

/// Calls `fn(record, length)` for each of the `count` length-prefixed records that must
/// fill `bytes` bytes at `data`; throws deserialization_error when they do not.
template <class F>
void for_each_sized_record(const std::byte* data, std::size_t bytes, std::uint32_t count, F&& fn) {
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t length = 0;
    if (bytes - at < sizeof length ||
        (std::memcpy(&length, data + at, sizeof length), length > bytes - at - sizeof length))
      throw deserialization_error("record " + std::to_string(i) + " of " + std::to_string(count) +
                                  " is truncated");
    at += sizeof length;
    fn(data + at, std::size_t{length});
    at += length;
  }
  if (at != bytes)
    throw deserialization_error(std::to_string(bytes - at) + " bytes after the last of " +
                                std::to_string(count) + " records");
}

/// The registered handler of a channel of callable type H: runs groups of records.
template <class H>
struct channel_handler {
  using traits = handler_traits<H>;
  using params = typename traits::params;
  using stored = decltype([]<class... P>(std::tuple<P...>*) {
    return std::tuple<std::decay_t<P>...>{};
  }(static_cast<params*>(nullptr)));
  static constexpr std::size_t arity = std::tuple_size_v<params>;

  // Records of bitwise-copyable arguments have one size, known here: they are stored back
  // to back without lengths, and decoded with fixed offsets.
  static constexpr bool fixed = []<class... P>(std::tuple<P...>*) {
    return (is_fixed_size_parameter<P> && ...);
  }(static_cast<params*>(nullptr));
  static constexpr std::size_t record_size = []<class... P>(std::tuple<P...>*) {
    return (std::size_t{0} + ... + sizeof(std::decay_t<P>));
  }(static_cast<params*>(nullptr));

  static H resolve(std::uint64_t function) {
    if constexpr (traits::is_function_pointer) {
      return function_from_token<H>(function);
    } else {
      return H{};
    }
  }

  template <std::size_t... I>
  static void call(H& fn, stored& args, std::index_sequence<I...>) {
    fn(pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
  }

  static void run_batch(node_runtime&, const std::byte* data, std::size_t bytes,
                        std::uint32_t count, std::uint64_t function) {
    H fn = resolve(function);
    constexpr auto seq = std::make_index_sequence<arity>{};
    if constexpr (fixed) {
      if (bytes != static_cast<std::size_t>(count) * record_size)
        throw deserialization_error(std::to_string(count) + " records of " +
                                    std::to_string(record_size) + " bytes cannot fill " +
                                    std::to_string(bytes) + " bytes");
      for (std::uint32_t i = 0; i < count; ++i, data += record_size) {
        stored args;
        std::size_t offset = 0;
        std::apply(
            [&](auto&... a) {
              ((std::memcpy(&a, data + offset, sizeof a), offset += sizeof a), ...);
            },
            args);
        call(fn, args, seq);
      }
    } else {
      for_each_sized_record(data, bytes, count, [&](const std::byte* record, std::size_t length) {
        message_reader r(record, length);
        stored args = read_arguments<params>(r);
        r.expect_end();
        call(fn, args, seq);
      });
    }
  }

  static constexpr std::string_view name = type_name<channel_handler<H>>();
  static inline handler_entry entry{name, nullptr, ~0u, nullptr, &run_batch};
  static inline const bool registered = handler_registry::add(&entry);
};

}  // namespace detail

/// A channel to handler `H` (see channel()). Sends `fn(args...)` to any node.
template <class H>
class channel_of {
  using handler = detail::channel_handler<H>;

 public:
  channel_of(H fn, channel_order order) : fn_(fn), order_(static_cast<detail::lane_order>(order)) {
    detail::check_handler_type<H>();
    static_assert(detail::handler_traits<H>::is_function_pointer || std::is_empty_v<H>,
                  "roam::channel: the handler must be a function or a lambda without captures "
                  "(it is bound at compile time; pass values as arguments)");
    (void)handler::registered;
  }

  /// Queues `fn(args...)` for node `dest` in the calling thread's buffer for it. Arguments
  /// are converted to the handler's parameter types and copied at once, so the caller may
  /// reuse them when the call returns. Throws roam::usage_error when the calling thread
  /// belongs to no node or `dest` is not a node of the job.
  template <class... Args>
  void operator()(node_id dest, Args&&... args) const {
    using params = typename handler::params;
    static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                  "roam: wrong number of arguments for this channel's handler");
    const std::uint32_t id = handler::entry.id;
    std::uint64_t function = 0;
    if constexpr (detail::handler_traits<H>::is_function_pointer)
      function = detail::encode_function_cached(reinterpret_cast<const void*>(fn_));
    if constexpr (handler::fixed) {
      // Written in place: converted to the parameter types, then copied bitwise.
      alignas(16) std::byte record[handler::record_size == 0 ? 1 : handler::record_size];
      std::size_t offset = 0;
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (
            [&]<class P>(auto&& a) {
              static_assert(
                  std::is_constructible_v<P, decltype(a)>,
                  "roam: an argument cannot be converted to the handler's parameter type");
              const P value(std::forward<decltype(a)>(a));
              std::memcpy(record + offset, &value, sizeof value);
              offset += sizeof value;
            }.template
            operator()<std::decay_t<std::tuple_element_t<I, params>>>(std::forward<Args>(args)),
            ...);
      }
      (std::index_sequence_for<Args...>{});
      detail::append_fixed_record<handler::record_size>(dest, order_, id, function, record);
    } else {
      detail::message_ptr scratch = detail::message::allocate(0);
      detail::message_writer w(scratch);
      detail::write_arguments<params>(w, std::index_sequence_for<Args...>{},
                                      std::forward<Args>(args)...);
      w.finish();
      detail::append_record(dest, order_, id, function, scratch->payload(),
                            scratch->header.payload_size, true);
    }
  }

  channel_order order() const noexcept { return static_cast<channel_order>(order_); }

 private:
  [[no_unique_address]] H fn_;
  detail::lane_order order_;
};

/// A channel to `fn`: a function, or a lambda without captures. Its messages are
/// aggregated and combined (see the top of this file); `order` says which order they keep.
template <class F>
auto channel(F&& fn, channel_order order = channel_order::ordered) {
  return channel_of<std::decay_t<F>>(std::forward<F>(fn), order);
}

}  // namespace roam

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
//
// Flow control: an application thread may wait in a call, as in roam::send (send.hpp): at
// a variable-size record, or a fixed-size one that fills its buffer.
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

/// The node a channel message came from. A channel handler whose first parameter has this
/// type receives it there; it is not an argument the sender passes, and it takes no room in
/// the record (the bundle carrying the record names its source):
///
///   auto ask = roam::channel([](roam::source_node from, std::uint32_t slot) {
///     reply(from, table[slot]);                 // answer whoever asked
///   });
///   ask(owner, slot);                           // the sender passes the slot only
struct source_node {
  node_id id = 0;  ///< The sending node.
  /// Lets a source_node be used wherever a node_id is expected.
  constexpr operator node_id() const noexcept { return id; }  // NOLINT(google-explicit-constructor)
};

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

/// No look-ahead (see roam::look_ahead).
struct no_look_ahead {};
/// How many records ahead of the handler a look-ahead function sees them: enough for the
/// misses of about as many records to overlap, few enough that prefetched lines are still
/// in cache when the handler comes. (16 left index-gather's table misses exposed at 2
/// ranks: 36 M reads/s per rank against 38-40 M with 32; docs/performance.md.)
inline constexpr std::uint32_t look_ahead_distance = 32;

/// How far ahead of the record being run its group's records are prefetched. A bundle has
/// often waited in a queue long enough to leave the cache (a handler touching a large table
/// evicts it), and the hardware prefetcher, busy with the handler's own misses, does not
/// keep ahead of the sequential records: index-gather's records stalled its loops at 2
/// ranks (docs/performance.md).
inline constexpr std::size_t record_prefetch_bytes = 512;

/// The parameters of a channel handler that travel in its records: all of them, less a
/// leading roam::source_node (filled in on arrival).
template <class Params>
struct channel_record_params {
  static constexpr bool takes_source = false;
  using type = Params;
};
template <class First, class... Rest>
requires std::is_same_v<std::decay_t<First>, source_node>
struct channel_record_params<std::tuple<First, Rest...>> {
  static constexpr bool takes_source = true;
  using type = std::tuple<Rest...>;
};

/// A channel handler bound, on the receiving node, to state the sender names by a token (a
/// node_local's instance): the sender puts `fn.token()` in the bundle, and the receiver makes
/// the handler with `H::bind(token)` once per group of records, so the state is looked up
/// once per group instead of once per record.
template <class H>
concept bound_channel_handler = requires(std::uint64_t token, const H& h) {
  { H::bind(token) } -> std::same_as<H>;
  { h.token() } -> std::convertible_to<std::uint64_t>;
};

/// The registered handler of a channel of callable type H: runs groups of records. With a
/// look-ahead function `Ahead`, each record is also shown to it `look_ahead_distance`
/// records before H runs it.
template <class H, class Ahead = no_look_ahead>
struct channel_handler {
  using traits = handler_traits<H>;
  using record_params = channel_record_params<typename traits::params>;
  static constexpr bool takes_source = record_params::takes_source;
  /// What the sender passes and the record holds.
  using params = typename record_params::type;
  using stored = decltype([]<class... P>(std::tuple<P...>*) {
    return std::tuple<std::decay_t<P>...>{};
  }(static_cast<params*>(nullptr)));
  static constexpr std::size_t arity = std::tuple_size_v<params>;
  static_assert(
      []<class... P>(std::tuple<P...>*) {
        return (!std::is_same_v<std::decay_t<P>, source_node> && ...);
      }(static_cast<params*>(nullptr)),
      "roam::channel: a roam::source_node parameter must come first");

  // Records of bitwise-copyable arguments have one size, known here: they are stored back
  // to back without lengths, and decoded with fixed offsets.
  static constexpr bool fixed = []<class... P>(std::tuple<P...>*) {
    return (is_fixed_size_parameter<P> && ...);
  }(static_cast<params*>(nullptr));
  static constexpr std::size_t record_size = []<class... P>(std::tuple<P...>*) {
    return (std::size_t{0} + ... + sizeof(std::decay_t<P>));
  }(static_cast<params*>(nullptr));

  static H resolve(std::uint64_t function) {
    if constexpr (bound_channel_handler<H>) {
      return H::bind(function);
    } else if constexpr (traits::is_function_pointer) {
      return function_from_token<H>(function);
    } else {
      return H{};
    }
  }

  /// Runs `fn` (the handler or the look-ahead) on one record's arguments, the source first
  /// when the handler takes it.
  template <class F, std::size_t... I>
  static void call(F& fn, [[maybe_unused]] source_node from, stored& args,
                   std::index_sequence<I...>) {
    if constexpr (takes_source)
      fn(from, pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
    else
      fn(pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
  }

  /// One argument of a fixed-size record. A bool is checked: a byte other than 0 or 1 read
  /// as a bool is undefined behaviour (a corrupt record throws instead).
  template <class A>
  static void read_fixed(A& a, const std::byte* at) {
    if constexpr (std::is_same_v<A, bool>) {
      std::uint8_t byte = 0;
      std::memcpy(&byte, at, 1);
      a = checked_bool(byte);
    } else {
      std::memcpy(&a, at, sizeof a);
    }
  }

  static void run_batch(node_runtime&, node_id source, const std::byte* data, std::size_t bytes,
                        std::uint32_t count, std::uint64_t function) {
    H fn = resolve(function);
    const source_node from{source};
    constexpr auto seq = std::make_index_sequence<arity>{};
    if constexpr (fixed) {
      if (bytes != static_cast<std::size_t>(count) * record_size)
        throw deserialization_error(std::to_string(count) + " records of " +
                                    std::to_string(record_size) + " bytes cannot fill " +
                                    std::to_string(bytes) + " bytes");
      auto decode = [](const std::byte* record) {
        stored args;
        std::size_t offset = 0;
        std::apply([&](auto&... a) { ((read_fixed(a, record + offset), offset += sizeof a), ...); },
                   args);
        return args;
      };
      if constexpr (std::is_same_v<Ahead, no_look_ahead>) {
        for (std::uint32_t i = 0; i < count; ++i, data += record_size) {
          __builtin_prefetch(data + record_prefetch_bytes);
          stored args = decode(data);
          call(fn, from, args, seq);
        }
      } else {
        // A software pipeline: the look-ahead (typically prefetches) runs for record
        // i + distance while H runs record i, so the memory accesses of several records
        // are in flight at once instead of one after another. The records themselves are
        // fetched further ahead still: the look-ahead cannot start its access before its
        // record is in cache.
        constexpr std::uint32_t distance = look_ahead_distance;
        constexpr std::size_t record_ahead =
            std::max(record_prefetch_bytes, std::size_t{2} * distance * record_size);
        Ahead ahead = [&] {
          if constexpr (bound_channel_handler<Ahead>)
            return Ahead::bind(function);
          else
            return Ahead{};
        }();
        for (std::uint32_t i = 0; i < std::min(count, distance); ++i) {
          stored args = decode(data + std::size_t{i} * record_size);
          call(ahead, from, args, seq);
        }
        for (std::uint32_t i = 0; i < count; ++i, data += record_size) {
          if (i + distance < count) {
            __builtin_prefetch(data + record_ahead);
            stored ahead_args = decode(data + std::size_t{distance} * record_size);
            call(ahead, from, ahead_args, seq);
          }
          stored args = decode(data);
          call(fn, from, args, seq);
        }
      }
    } else {
      for_each_sized_record(data, bytes, count, [&](const std::byte* record, std::size_t length) {
        message_reader r(record, length);
        stored args = read_arguments<params>(r);
        r.expect_end();
        call(fn, from, args, seq);
      });
    }
  }

  static constexpr std::string_view name = type_name<channel_handler<H, Ahead>>();
  static inline handler_entry entry{name,    nullptr,    ~0u,
                                    nullptr, &run_batch, traits::is_function_pointer};
  static inline const bool registered = handler_registry::add(&entry);
};

}  // namespace detail

/// A function that sees each message of a channel a few records before its handler runs
/// it, on the receiving node (see channel(fn, look_ahead(hint))).
template <class F>
struct look_ahead_hint {};

/// Wraps `hint`, a lambda without captures taking the channel handler's parameters, for
/// channel(fn, look_ahead(hint)). It should be cheap and change nothing: its purpose is to
/// start the memory accesses its record's handler will make (`__builtin_prefetch`).
template <class F>
constexpr look_ahead_hint<std::decay_t<F>> look_ahead(F&&) noexcept {
  static_assert(
      std::is_empty_v<std::decay_t<F>> && std::is_default_constructible_v<std::decay_t<F>>,
      "roam::look_ahead: the hint must be a lambda without captures (it runs on the "
      "receiving node, bound at compile time)");
  return {};
}

/// A channel to handler `H` (see channel()). Sends `fn(args...)` to any node.
template <class H, class Ahead = detail::no_look_ahead>
class channel_of {
  using handler = detail::channel_handler<H, Ahead>;
  static_assert(std::is_same_v<Ahead, detail::no_look_ahead> || handler::fixed,
                "roam::look_ahead needs a handler whose parameters are all bitwise-copyable "
                "(fixed-size records)");

 public:
  /// A channel to `fn` (a function or a lambda without captures) whose messages keep `order`.
  channel_of(H fn, channel_order order) : fn_(fn), order_(static_cast<detail::lane_order>(order)) {
    if constexpr (detail::bound_channel_handler<H>)
      detail::check_handler_parameters<H>();  // bound to state, not sent: the type is fine
    else
      detail::check_handler_type<H>();
    static_assert(detail::handler_traits<H>::is_function_pointer || std::is_empty_v<H> ||
                      detail::bound_channel_handler<H>,
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
    if constexpr (detail::bound_channel_handler<H>)
      function = fn_.token();
    else if constexpr (detail::handler_traits<H>::is_function_pointer)
      function = detail::encode_function_cached(reinterpret_cast<const void*>(fn_));
    if constexpr (handler::fixed) {
      // Converted to the parameter types first (a conversion may throw), then copied
      // bitwise straight into the lane; staged on the stack only for the slow path.
      const typename handler::stored values = [&]<std::size_t... I>(std::index_sequence<I...>) {
        using stored = typename handler::stored;
        static_assert((std::is_constructible_v<std::tuple_element_t<I, stored>, Args&&> && ...),
                      "roam: an argument cannot be converted to the handler's parameter type");
        return stored(static_cast<std::tuple_element_t<I, stored>>(std::forward<Args>(args))...);
      }
      (std::index_sequence_for<Args...>{});
      auto write = [&values](std::byte* to) {
        std::apply(
            [to](const auto&... v) {
              std::size_t offset = 0;
              ((std::memcpy(to + offset, &v, sizeof v), offset += sizeof v), ...);
            },
            values);
      };
      if (std::byte* at =
              detail::reserve_fixed_record<handler::record_size>(dest, order_, id, function)) {
        write(at);
      } else {
        alignas(16) std::byte record[handler::record_size == 0 ? 1 : handler::record_size];
        write(record);
        detail::append_record(dest, order_, id, function, record, handler::record_size, false);
      }
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

  /// The order this channel's messages keep.
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

/// A channel whose receiver also runs `hint(args...)` for each message up to
/// `detail::look_ahead_distance` (32) records before running `fn(args...)` for it, within
/// a group (the first 32 of a group are all hinted at its start). For handlers bound by memory
/// latency (a random table entry per message): the hint prefetches what the handler will touch, so
/// the misses of many messages overlap.
///
///   auto add = roam::channel([](std::uint32_t slot) { ++table[slot]; },
///                            roam::look_ahead([](std::uint32_t slot) {
///                              __builtin_prefetch(&table[slot], 1);
///                            }));
///
/// The hint takes the handler's parameters (by value or const reference; a leading
/// roam::source_node too, when the handler has one); they must all be bitwise-copyable. It may see
/// records that arrive in the same group only; it must not change state the handler reads.
template <class F, class Hint>
auto channel(F&& fn, look_ahead_hint<Hint>, channel_order order = channel_order::ordered) {
  return channel_of<std::decay_t<F>, Hint>(std::forward<F>(fn), order);
}

}  // namespace roam

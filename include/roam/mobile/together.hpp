// roam — handlers that need several mobile objects at once (PREMA's ilb_multicast).
//
//   roam::call_together(exchange, std::tuple{a, b}, 0.5)   // exchange(A&, B&, double)
//
// runs `exchange(*a, *b, 0.5)` once both objects are on one node and held exclusively by
// it: the objects are brought to the node where the first one was last seen by the
// caller, each is held as soon as it is there, the handler runs, and all are released.
//
// Guarantees:
// - The handler has exclusive access to every object of the group while it runs; no
//   object of the group can move meanwhile.
// - Groups are acquired in one global order (by object identity), so two groups sharing
//   objects never deadlock each other.
// - Ordering: each object takes the group's request in its turn among the messages the
//   running node sent it; the group as a whole is not ordered with the caller's other
//   messages.
// - A destroyed object fails the group: call_together's future holds roam::object_error
//   (send_together stops the job); the objects already held are released untouched.
#pragma once

#include <roam/mobile/lifecycle.hpp>

#include <array>
#include <tuple>

namespace roam {
namespace detail {

/// Where the caller's node last saw an object (its home if it knows nothing).
node_id last_known_location(const object_id& id);

template <class H, class Objects, class Params>
struct together_handler;

/// The node-level handler that gathers the objects and runs the user's function. A
/// serializable function object, so it travels like any handler.
template <class H, class... T, class... A>
struct together_handler<H, std::tuple<T...>, std::tuple<A...>> {
  static constexpr bool is_pointer = handler_traits<H>::is_function_pointer;
  using stored_function = std::conditional_t<is_pointer, std::uint64_t, H>;
  using result = std::decay_t<typename handler_traits<H>::result>;

  stored_function function{};
  std::array<object_id, sizeof...(T)> objects{};

  template <class Ar>
  void serialize(Ar& ar) {
    ar(objects);
    if constexpr (is_pointer || !std::is_empty_v<H>) ar(function);
  }

  result operator()(std::decay_t<A>... args) const {
    object_group group(objects.data(), objects.size());
    H fn = resolve();
    return [&]<std::size_t... I>(std::index_sequence<I...>)->result {
      return fn(*static_cast<std::remove_cvref_t<T>*>(group.object(I))...,
                pass_argument<A>(args)...);
    }
    (std::index_sequence_for<T...>{});
  }

 private:
  H resolve() const {
    if constexpr (is_pointer) {
      return function_from_token<H>(function);
    } else {
      return function;
    }
  }
};

template <class H, std::size_t N>
struct split_params {
  template <std::size_t... I, std::size_t... J>
  static auto split(std::index_sequence<I...>, std::index_sequence<J...>)
      -> std::pair<std::tuple<std::tuple_element_t<I, typename handler_traits<H>::params>...>,
                   std::tuple<std::tuple_element_t<N + J, typename handler_traits<H>::params>...>>;
  using all = typename handler_traits<H>::params;
  using pair = decltype(split(std::make_index_sequence<N>{},
                              std::make_index_sequence<std::tuple_size_v<all> - N>{}));
  using objects = typename pair::first_type;
  using rest = typename pair::second_type;
};

template <class F, class... T>
auto make_together(F&& fn, const std::tuple<mobile_ptr<T>...>& objects) {
  using H = std::decay_t<F>;
  using split = split_params<H, sizeof...(T)>;
  []<class... P>(std::tuple<P...>*) {
    static_assert(
        ((std::is_lvalue_reference_v<P> && std::is_same_v<std::remove_cvref_t<P>, T>)&&...),
        "roam: a multi-object handler takes `T&` for each object of the group, in the "
        "group's order, before its other arguments");
  }(static_cast<typename split::objects*>(nullptr));
  together_handler<H, typename split::objects, typename split::rest> handler;
  if constexpr (handler_traits<H>::is_function_pointer)
    handler.function = encode_function(reinterpret_cast<const void*>(fn));
  else
    handler.function = fn;
  handler.objects = std::apply([](const auto&... p) { return std::array{p.id()...}; }, objects);
  for (const object_id& id : handler.objects)
    if (!id.index) throw usage_error("a multi-object handler was given a null mobile_ptr");
  return handler;
}

}  // namespace detail

/// Runs `fn(object..., args...)` with every object of `objects` on one node, held
/// exclusively; returns a future of its result. See the file comment.
template <class F, class... T, class... Args>
auto call_together(F&& fn, const std::tuple<mobile_ptr<T>...>& objects, Args&&... args) {
  auto handler = detail::make_together(std::forward<F>(fn), objects);
  return call(detail::last_known_location(std::get<0>(objects).id()), handler,
              std::forward<Args>(args)...);
}

/// The same, fire and forget: an exception in `fn` or a destroyed object stops the job.
template <class F, class... T, class... Args>
void send_together(F&& fn, const std::tuple<mobile_ptr<T>...>& objects, Args&&... args) {
  auto handler = detail::make_together(std::forward<F>(fn), objects);
  send(detail::last_known_location(std::get<0>(objects).id()), handler,
       std::forward<Args>(args)...);
}

}  // namespace roam

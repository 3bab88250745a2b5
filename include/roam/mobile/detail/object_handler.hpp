// roam — how member functions and callables become handlers on mobile objects.
#pragma once

#include <roam/am/detail/handler_traits.hpp>
#include <roam/mobile/detail/object_runtime.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

namespace roam::detail {

template <class M>
struct method_traits;
#define ROAM_METHOD_TRAITS(QUALIFIERS, IS_CONST)    \
  template <class C, class R, class... A>           \
  struct method_traits<R (C::*)(A...) QUALIFIERS> { \
    using object = C;                               \
    using result = R;                               \
    using params = std::tuple<A...>;                \
    static constexpr bool is_const = IS_CONST;      \
  };
ROAM_METHOD_TRAITS(, false)
ROAM_METHOD_TRAITS(const, true)
ROAM_METHOD_TRAITS(noexcept, false)
ROAM_METHOD_TRAITS(const noexcept, true)
ROAM_METHOD_TRAITS(&, false)
ROAM_METHOD_TRAITS(const&, true)
ROAM_METHOD_TRAITS(&noexcept, false)
ROAM_METHOD_TRAITS(const& noexcept, true)
#undef ROAM_METHOD_TRAITS

template <class Tuple>
struct tuple_tail;
template <class First, class... Rest>
struct tuple_tail<std::tuple<First, Rest...>> {
  using first = First;
  using type = std::tuple<Rest...>;
};

/// The access a handler gets when the caller does not say: shared through a const member
/// function or a `const T&` parameter, exclusive otherwise.
template <auto Method>
constexpr access method_access() {
  // Also evaluated (as a default template argument) for non-members, which the caller's
  // constraint then rejects: it must not fail to compile for them.
  if constexpr (std::is_member_function_pointer_v<decltype(Method)>)
    return method_traits<decltype(Method)>::is_const ? access::shared : access::exclusive;
  else
    return access::exclusive;
}
template <class H>
constexpr access callable_access() {
  using params = typename handler_traits<H>::params;
  if constexpr (std::tuple_size_v<params> == 0) {
    return access::exclusive;  // rejected by check_callable with a clear message
  } else {
    using first = typename tuple_tail<params>::first;
    return std::is_const_v<std::remove_reference_t<first>> ? access::shared : access::exclusive;
  }
}

/// A member function of the object as a handler. `T` is the object's type (the member may
/// belong to a base of it).
template <auto Method, access Access, class T>
struct method_kind {
  using traits = method_traits<decltype(Method)>;
  using object_type = T;
  using params = typename traits::params;
  using result = typename traits::result;
  using function = std::monostate;  // nothing travels: the method is part of the kind
  static constexpr access access_mode = Access;

  static function resolve(const message_header&, message_reader&) { return {}; }
  template <class Args, std::size_t... I>
  static decltype(auto) call(function, object_type& object, Args& args, std::index_sequence<I...>) {
    return (object.*Method)(pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
  }
};

/// A function, stateless lambda or serializable function object whose first parameter is
/// the object (`T&` or `const T&`, or a reference to a base of T).
template <class H, access Access, class T>
struct callable_kind {
  using traits = handler_traits<H>;
  using object_type = T;
  using params = typename tuple_tail<typename traits::params>::type;
  using result = typename traits::result;
  using function = H;
  static constexpr access access_mode = Access;

  static_assert(std::is_lvalue_reference_v<typename tuple_tail<typename traits::params>::first>,
                "roam: the first parameter of a handler on a mobile object must be T& or const T&");

  static H resolve(const message_header& h, message_reader& r) {
    return am_handler<H>::resolve(h, r);
  }
  template <class Args, std::size_t... I>
  static decltype(auto) call(H& fn, object_type& object, Args& args, std::index_sequence<I...>) {
    return fn(object, pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
  }
};

/// The registered handler of one kind: delivery goes through the mobile-object protocol,
/// which calls run() once the handler may run on the object.
template <class Kind>
struct object_handler {
  using params = typename Kind::params;
  using result = typename Kind::result;
  /// A free function travelling as a token: errors name it by its symbol.
  static constexpr bool by_symbol =
      std::is_pointer_v<typename Kind::function> &&
      std::is_function_v<std::remove_pointer_t<typename Kind::function>>;

  static void run(node_runtime& n, void* object, message_ptr& m, const object_message_header& oh) {
    const message_header h = m->header;  // bulk arguments may take the block over
    message_reader r(m);
    r.skip_to(sizeof(object_message_header));
    auto fn = Kind::resolve(h, r);
    auto args = read_arguments<params>(r);
    r.expect_end();
    auto& target = *static_cast<typename Kind::object_type*>(object);
    constexpr auto seq = std::make_index_sequence<std::tuple_size_v<params>>{};
    if (!(h.flags & flag_wants_reply)) {
      Kind::call(fn, target, args, seq);
      return;
    }
    if constexpr (std::is_void_v<result> || is_serializable<std::decay_t<result>>) {
      message_header request = h;
      request.source = oh.origin;  // forwarding changed the source; the caller is the origin
      run_and_reply<result>(
          n, request, entry.name,
          [&]() -> decltype(auto) { return Kind::call(fn, target, args, seq); },
          entry.names_function);
    } else {
      // call() rejects such handlers at compile time; only a corrupt flag gets here.
      throw deserialization_error("a reply was asked for a handler whose result cannot be sent");
    }
  }
  static void invoke(node_runtime& n, message_ptr& m) { deliver_object_message(n, m, &run); }

  static constexpr std::string_view name = type_name<Kind>();
  static inline handler_entry entry{name, &invoke, ~0u, &admit_object_message, nullptr, by_symbol};
  static inline const bool registered = handler_registry::add(&entry);
};

/// Builds the message that runs handler kind `Kind` (with function `fn` when it carries
/// one) on object `target`. The route is filled in by post_object_message.
template <class Kind, class... Args>
message_ptr build_object_message(const object_id& target, std::uint32_t flags,
                                 const typename Kind::function* fn, Args&&... args) {
  using params = typename Kind::params;
  static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                "roam: wrong number of arguments for this handler");
  (void)object_handler<Kind>::registered;
  message_ptr m = message::allocate(0);
  m->header.handler = id_of(object_handler<Kind>::entry);
  m->header.flags = flags;
  message_writer w(m);
  object_message_header oh;
  oh.target = target;
  oh.access = static_cast<std::uint8_t>(Kind::access_mode);
  oh.cost = current_send_cost();
  w.write(&oh, sizeof oh);
  using H = typename Kind::function;
  if constexpr (!std::is_same_v<H, std::monostate>) {
    check_handler_type<H>();
    if constexpr (handler_traits<H>::is_function_pointer)
      m->header.function = encode_function_cached(reinterpret_cast<const void*>(*fn));
    else if constexpr (!std::is_empty_v<H>)
      write_value(w, *fn);
  }
  write_arguments<params>(w, std::make_index_sequence<sizeof...(Args)>{},
                          std::forward<Args>(args)...);
  w.finish();
  return m;
}

template <auto Method, class T>
void check_method() {
  static_assert(std::is_base_of_v<typename method_traits<decltype(Method)>::object, T>,
                "roam: this member function belongs to another type than the mobile_ptr's");
}
template <class H, class T>
void check_callable() {
  static_assert(std::tuple_size_v<typename handler_traits<H>::params> >= 1,
                "roam: a handler on a mobile object takes the object (T& or const T&) first");
  using first = std::remove_cvref_t<typename tuple_tail<typename handler_traits<H>::params>::first>;
  static_assert(std::is_base_of_v<first, T>,
                "roam: this handler takes another type of object than the mobile_ptr points to");
}

/// Fire and forget.
template <class Kind, class... Args>
void send_to_object(const object_id& target, const typename Kind::function* fn, Args&&... args) {
  auto& n = sending_node("roam::mobile_ptr::send");
  post_object_message(n, build_object_message<Kind>(target, 0, fn, std::forward<Args>(args)...));
}

/// With a future of the result.
template <class Kind, class... Args>
auto call_object(const object_id& target, const typename Kind::function* fn, Args&&... args) {
  using R = std::decay_t<typename Kind::result>;
  static_assert(std::is_void_v<R> || is_serializable<R>,
                "roam: call() sends the handler's result back: it must be void or serializable "
                "(use send() for handlers whose result is not needed)");
  auto& n = sending_node("roam::mobile_ptr::call");
  auto state = std::make_shared<call_state<R>>();
  message_ptr m =
      build_object_message<Kind>(target, flag_wants_reply, fn, std::forward<Args>(args)...);
  m->header.reply_to = register_call(n, state);
  post_object_message(n, std::move(m));
  return make_future<R>(std::move(state));
}

}  // namespace roam::detail

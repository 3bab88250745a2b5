// roam — how a callable becomes a registered, invocable handler.
#pragma once

#include <roam/am/serialization.hpp>
#include <roam/base/error.hpp>
#include <roam/core/detail/function_symbol.hpp>
#include <roam/core/detail/function_table.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace roam::detail {

/// Human-readable name of a type, from the compiler (stable within one binary).
template <class T>
constexpr std::string_view type_name() {
  std::string_view p = __PRETTY_FUNCTION__;
  auto begin = p.find("T = ") + 4;
  auto end = p.find_first_of(";]", begin);
  return p.substr(begin, end - begin);
}

template <class Sig>
struct signature_traits;
template <class R, class... A>
struct signature_traits<R(A...)> {
  using result = R;
  using params = std::tuple<A...>;
};

template <class F>
struct call_operator_traits;
#define ROAM_CALL_OPERATOR_TRAITS(QUALIFIERS) \
  template <class C, class R, class... A>     \
  struct call_operator_traits<R (C::*)(A...) QUALIFIERS> : signature_traits<R(A...)> {};
ROAM_CALL_OPERATOR_TRAITS()
ROAM_CALL_OPERATOR_TRAITS(const)
ROAM_CALL_OPERATOR_TRAITS(noexcept)
ROAM_CALL_OPERATOR_TRAITS(const noexcept)
#undef ROAM_CALL_OPERATOR_TRAITS

template <class F, class = void>
struct has_single_call_operator : std::false_type {};
template <class F>
struct has_single_call_operator<F, std::void_t<decltype(&F::operator())>> : std::true_type {};

/// result and params of a handler type: a function pointer or a class with one
/// non-template operator().
template <class H>
struct handler_traits {
  static_assert(
      has_single_call_operator<H>::value,
      "roam: a handler must be a function, a lambda or a function object with exactly one "
      "non-template operator() (generic lambdas cannot be sent: name the parameter types)");
  using base = call_operator_traits<decltype(&H::operator())>;
  using result = typename base::result;
  using params = typename base::params;
  static constexpr bool is_function_pointer = false;
};
template <class R, class... A>
struct handler_traits<R (*)(A...)> : signature_traits<R(A...)> {
  static constexpr bool is_function_pointer = true;
};
template <class R, class... A>
struct handler_traits<R (*)(A...) noexcept> : signature_traits<R(A...)> {
  static constexpr bool is_function_pointer = true;
};

template <class H>
using handler_result_t = std::decay_t<typename handler_traits<H>::result>;

/// Lvalue-reference parameters receive the stored argument; all others receive it moved.
template <class P, class V>
decltype(auto) pass_argument(V& stored) {
  if constexpr (std::is_lvalue_reference_v<P>)
    return (stored);
  else
    return std::move(stored);
}

/// Checks parameter `Index` (from 0) of handler `Handler`: the compiler's note on a failed
/// assertion names this template's arguments, so the handler and the argument are named.
template <class Handler, std::size_t Index, class Parameter>
struct check_handler_parameter {
  static_assert(!std::is_pointer_v<Parameter>, "roam: handler parameters cannot be raw pointers");
  static_assert(std::is_default_constructible_v<Parameter>,
                "roam: handler parameter types must be default constructible");
  static_assert(!is_serializable<Parameter> || has_top_level_codec<Parameter>::value ||
                    deeply_serializable_v<Parameter>,
                "roam: a parameter of this handler holds a type that cannot be sent, inside a "
                "container or wrapper (see Index and Parameter in this check's arguments): give "
                "that type `template <class Ar> void serialize(Ar& ar)`, or make it trivially "
                "copyable");
  static constexpr bool ok = true;
};

/// Checks each parameter of handler H (check_handler_parameter).
template <class H>
void check_handler_parameters() {
  using traits = handler_traits<H>;
  []<std::size_t... I>(std::index_sequence<I...>) {
    (void)(check_handler_parameter<
               H, I, std::decay_t<std::tuple_element_t<I, typename traits::params>>>::ok &&
           ...);
  }
  (std::make_index_sequence<std::tuple_size_v<typename traits::params>>{});
}

template <class H>
void check_handler_type() {
  using traits = handler_traits<H>;
  static_assert(traits::is_function_pointer || std::is_empty_v<H> || is_serializable<H>,
                "roam: a handler must be a function, a stateless lambda or a serializable function "
                "object; lambdas with captures cannot be sent (pass the values as arguments)");
  static_assert(
      traits::is_function_pointer || std::is_empty_v<H> || std::is_default_constructible_v<H>,
      "roam: this handler is a lambda with captures (or a function object without a "
      "default constructor): captures are not allowed, because the receiving node "
      "rebuilds a handler from its type (and a function object's serialized state), "
      "and a lambda with captures cannot be constructed there; pass the captured "
      "values as arguments, or write a function object with a default constructor "
      "and `serialize`");
  check_handler_parameters<H>();
}

std::string describe_exception(const std::exception_ptr& e, std::string& type);

/// Reads a handler's arguments: one default-constructed value per parameter, filled in
/// order from the payload.
template <class Params>
auto read_arguments(message_reader& r) {
  auto args = []<class... P>(std::tuple<P...>*) {
    return std::tuple<std::decay_t<P>...>{};
  }(static_cast<Params*>(nullptr));
  std::apply([&r](auto&... a) { (read_value(r, a), ...); }, args);
  return args;
}

/// Runs `body` for a request that wants a reply, and sends the reply: its value, or the
/// description of the exception it threw (type, what, handler name) as an error reply.
/// `request.source` and `request.reply_to` say where the reply goes. With `by_symbol`, the
/// error names the function `request.function` points to (free-function handlers).
template <class Result, class Body>
void run_and_reply(node_runtime& node, const message_header& request, std::string_view handler,
                   Body&& body, bool by_symbol = false) {
  message_ptr reply = message::allocate(64);
  message_writer w(reply);
  bool failed = false;
  try {
    if constexpr (std::is_void_v<Result>) {
      body();
    } else {
      std::decay_t<Result> value = body();
      write_value_moved(w, std::move(value));
    }
  } catch (...) {
    std::string type;
    std::string what = describe_exception(std::current_exception(), type);
    reply->header.payload_size = 0;
    message_writer error_writer(reply);
    write_value(error_writer, type);
    write_value(error_writer, what);
    write_value(error_writer,
                by_symbol ? handler_display_name(handler, request.function) : std::string(handler));
    error_writer.finish();
    failed = true;
  }
  if (!failed) w.finish();
  send_reply(node, request, std::move(reply), failed);
}

/// The function pointer (of type F) that a token from a message names. Throws
/// deserialization_error when it names no code in this binary (a corrupt message, or a
/// peer running another program).
template <class F>
F function_from_token(std::uint64_t token) {
  const void* p = decode_function(token);
  if (!p)
    throw deserialization_error("the function token " + std::to_string(token) +
                                " names no code in this binary");
  return reinterpret_cast<F>(const_cast<void*>(p));
}

/// The registered handler for callable type H.
template <class H>
struct am_handler {
  using traits = handler_traits<H>;
  using params = typename traits::params;
  using result = handler_result_t<H>;

  static H resolve(const message_header& h, message_reader& r) {
    if constexpr (traits::is_function_pointer) {
      return function_from_token<H>(h.function);
    } else if constexpr (std::is_empty_v<H>) {
      return H{};
    } else {
      H fn{};
      read_value(r, fn);
      return fn;
    }
  }

  template <std::size_t... I>
  static decltype(auto) call(H& fn, auto& args, std::index_sequence<I...>) {
    return fn(pass_argument<std::tuple_element_t<I, params>>(std::get<I>(args))...);
  }

  static void invoke(node_runtime& node, message_ptr& owned) {
    const message_header h = owned->header;  // bulk arguments may take the block over
    message_reader r(owned);
    H fn = resolve(h, r);
    auto args = read_arguments<params>(r);
    r.expect_end();
    constexpr auto seq = std::make_index_sequence<std::tuple_size_v<params>>{};
    if (!(h.flags & flag_wants_reply)) {
      call(fn, args, seq);
      return;
    }
    run_and_reply<typename traits::result>(
        node, h, entry.name, [&]() -> decltype(auto) { return call(fn, args, seq); },
        entry.names_function);
  }

  static constexpr std::string_view name = type_name<H>();
  static inline handler_entry entry{name,    &invoke, ~0u,
                                    nullptr, nullptr, traits::is_function_pointer};
  static inline const bool registered = handler_registry::add(&entry);
};

/// Encodes function pointers with a one-entry cache per thread (handlers are usually sent
/// in runs to the same function).
inline std::uint64_t encode_function_cached(const void* fn) {
  thread_local const void* last = nullptr;
  thread_local std::uint64_t token = 0;
  if (fn != last) {
    token = encode_function(fn);
    last = fn;
  }
  return token;
}

/// Writes `args` converted to the parameter types of `Params` (a std::tuple of them).
template <class Params, class... Args, std::size_t... I>
void write_arguments(message_writer& w, std::index_sequence<I...>, Args&&... args) {
  using params = Params;
  (
      [&w]<class P, class A>(A&& a) {
        static_assert(std::is_constructible_v<P, A&&>,
                      "roam: an argument cannot be converted to the handler's parameter type");
        if constexpr (std::is_same_v<std::decay_t<A>, P>)
          write_value_moved(w, std::forward<A>(a));
        else
          write_value_moved(w, P(std::forward<A>(a)));
      }.template
      operator()<std::decay_t<std::tuple_element_t<I, params>>>(std::forward<Args>(args)),
      ...);
}

/// Builds the message that runs `fn(args...)` on `dest`.
template <class H, class... Args>
message_ptr build_message(node_id dest, const H& fn, std::uint32_t flags, Args&&... args) {
  check_handler_type<H>();
  using params = typename handler_traits<H>::params;
  static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                "roam: wrong number of arguments for this handler");
  (void)am_handler<H>::registered;
  message_ptr m = message::allocate(0);
  m->header.handler = id_of(am_handler<H>::entry);
  m->header.dest = dest;
  m->header.flags = flags;
  message_writer w(m);
  if constexpr (handler_traits<H>::is_function_pointer)
    m->header.function = encode_function_cached(reinterpret_cast<const void*>(fn));
  else if constexpr (!std::is_empty_v<H>)
    write_value(w, fn);
  write_arguments<params>(w, std::make_index_sequence<sizeof...(Args)>{},
                          std::forward<Args>(args)...);
  w.finish();
  return m;
}

}  // namespace roam::detail

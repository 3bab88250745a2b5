// roam — creating, moving, finding and destroying mobile objects.
//
// A mobile object's type T must be default constructible and serializable (trivially
// copyable, or with cereal's `template <class Ar> void serialize(Ar&)` or save/load): a
// migration packs the object, sends the bytes and rebuilds it on the destination. T may
// hold anything cereal can write: vectors of vectors, maps, strings, smart pointers.
//
// Every operation here is a message to the object like any other: it is ordered after the
// messages this node sent to the object before, and it waits for exclusive access (locate:
// shared).
//
// Lifetime: a mobile_ptr does not own its object (no reference counting): an object lives
// until roam::destroy, or until roam::run returns, when the objects still alive are
// destroyed after the workers have stopped (their destructors must not call roam then).
// A mobile_ptr is valid only within the roam::run that created its object, and in runs
// restarted from a checkpoint of it (roam::checkpoint).
#pragma once

#include <roam/mobile/mobile_ptr.hpp>

#include <memory>
#include <utility>

namespace roam {

/// Where to create an object: `roam::make_mobile<T>(roam::node(3), args...)`.
struct placement {
  node_id where;  ///< the node the object is created on
};
/// The placement "on node `where`".
inline placement node(node_id where) noexcept { return {where}; }

namespace detail {

/// A mobile type: its install handler (the entry whose id is the type's id) rebuilds
/// migrated objects.
template <class T>
struct mobile_type {
  static_assert(std::is_default_constructible_v<T>,
                "roam: a mobile object type must be default constructible (migration rebuilds "
                "it, then loads its serialized state)");
  static_assert(is_serializable<T>,
                "roam: a mobile object type must be serializable: trivially copyable, or with "
                "`template <class Ar> void serialize(Ar& ar)` (cereal)");
  static std::unique_ptr<object_box> unpack(message_reader& r) {
    auto box = std::make_unique<object_box_of<T>>();
    read_value(r, *static_cast<T*>(box->get()));
    return box;
  }
  static void invoke(node_runtime& n, message_ptr& m) { receive_migrated_object(n, m, &unpack); }
  /// Objects are installed as soon as they arrive, on the delivering thread: the load they
  /// bring counts at once (a balancer asking for work sees what it got) and their messages
  /// need not wait for a worker of a busy node.
  static bool admit(node_runtime& n, message_ptr& m) {
    receive_migrated_object(n, m, &unpack, true);
    note_handled(n);
    return true;
  }
  static std::uint32_t id() {
    (void)registered;
    (void)unpack_registered;
    return id_of(entry);
  }

  static constexpr std::string_view name = type_name<mobile_type<T>>();
  static inline handler_entry entry{name, &invoke, ~0u, &admit};
  static inline const bool registered = handler_registry::add(&entry);
  static inline const bool unpack_registered = register_mobile_unpack(&entry, &unpack);
};

/// Builds a T from constructor arguments on the node chosen by make_mobile.
template <class T, class... A>
struct constructor_handler {
  static void invoke(node_runtime& n, message_ptr& m) {
    message_reader r(m);
    object_id id;
    read_value(r, id);
    auto args = read_arguments<std::tuple<A...>>(r);
    r.expect_end();
    std::unique_ptr<object_box> box = std::apply(
        [](auto&... a) { return std::make_unique<object_box_of<T>>(std::move(a)...); }, args);
    install_constructed_object(n, id, std::move(box));
  }
  static constexpr std::string_view name = type_name<constructor_handler>();
  static inline handler_entry entry{name, &invoke};
  static inline const bool registered = handler_registry::add(&entry);
};

}  // namespace detail

/// Creates a T from `args` on the calling node and returns its pointer. The object exists
/// when this returns; the constructor's exceptions propagate to the caller.
template <class T, class... Args>
mobile_ptr<T> make_mobile(Args&&... args) {
  auto& n = detail::sending_node("roam::make_mobile");
  auto box = std::make_unique<detail::object_box_of<T>>(std::forward<Args>(args)...);
  return mobile_ptr<T>::from_id(
      detail::create_local_object(n, detail::mobile_type<T>::id(), std::move(box)));
}

/// Creates a T from `args` on node `at.where`; returns at once with a pointer that may be
/// used right away (messages wait for the object on its node). The arguments are
/// serialized; a constructor that throws there stops the job.
template <class T, class... Args>
mobile_ptr<T> make_mobile(placement at, Args&&... args) {
  auto& n = detail::sending_node("roam::make_mobile");
  if (at.where >= detail::size_of(n))
    throw usage_error("roam::make_mobile: node " + std::to_string(at.where) +
                      " is out of range (the job has " + std::to_string(detail::size_of(n)) +
                      " nodes)");
  if (at.where == detail::id_of(n)) return make_mobile<T>(std::forward<Args>(args)...);
  using handler = detail::constructor_handler<T, std::decay_t<Args>...>;
  (void)handler::registered;
  detail::message_ptr m = detail::message::allocate(0);
  m->header.handler = detail::id_of(handler::entry);
  detail::message_writer w(m);
  detail::write_value(w, object_id{});  // filled in with the reserved id
  (detail::write_value_moved(w, std::forward<Args>(args)), ...);
  w.finish();
  return mobile_ptr<T>::from_id(
      detail::create_remote_object(n, detail::mobile_type<T>::id(), at.where, std::move(m)));
}

/// Moves the object to node `dest`. The future is ready once it is installed there.
/// Handlers waiting for the object move with it; messages sent to the old node are
/// forwarded. Inside a handler on the same object, do not wait on the future: the
/// migration runs after that handler returns, so such a wait throws roam::usage_error
/// (the same holds for destroy, and for locate from an exclusive handler). An object that,
/// packed with the messages waiting for it, exceeds what one message carries (about 4 GiB)
/// does not move: the future throws roam::remote_error and the object stays, intact.
template <class T>
future<void> migrate(const mobile_ptr<T>& p, node_id dest) {
  return detail::migrate_object(p.id(), dest);
}

/// Destroys the object (its destructor runs where it is). Messages that reach it later
/// fail with roam::object_error (call) or stop the job (send). The future is ready once it
/// is gone.
template <class T>
future<void> destroy(const mobile_ptr<T>& p) {
  return detail::destroy_object(p.id());
}

/// The node the object is on when this message reaches it.
template <class T>
future<node_id> locate(const mobile_ptr<T>& p) {
  return detail::locate_object(p.id());
}

}  // namespace roam

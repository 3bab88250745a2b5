#pragma once
// Global pointers to hetero objects: one-sided put and get on device data that lives on another
// node (thesis §5.2; PPL's global pointers).
//
//   // on the node that owns the data
//   roam::hetero_object<double> field(n);
//   roam::global_hetero_ptr<double> g = roam::publish(field);   // send g anywhere
//   // on any node
//   roam::put(g, values, offset).get();                          // values now in field
//   roam::put(g, values, offset, [](roam::hetero_object<double>& f, std::size_t off,
//                                   std::size_t count) { /* runs on the owner */ });
//   roam::buffer<double> got = roam::get(g, offset, count).get();
//
// Guarantees:
// - Ordering: on the owner a put is hetero_object::write_range and a get read_range, so they
//   order with the owner's tasks as tasks that write (put) or read (get) the object do (a put
//   waits for the tasks submitted before it arrived; tasks submitted after it see its data).
//   Between several puts and gets, only the ordering of roam::call applies (one sender, one
//   owner: in the order sent).
// - Completion: put's future is ready once the values are in the object (and the completion
//   handler, if given, has returned on the owner); get's once the values are here. Both rethrow
//   the owner's errors (an unpublished pointer, a range outside the object) as
//   roam::remote_error.
// - Only the named elements move, on the owner too: a get reads them from the newest copy
//   (straight from the device holding it), a put writes them into every valid copy, and the
//   object stays resident where it is (no copy changes its coherence state).
// - Lifetime: a published object stays alive (held by its node) until unpublish() or the end of
//   roam::run. The pointer is plain data: copy it, send it, keep it; it is valid within the
//   roam::run that published it.
// Threading: every function here may be called from any thread of a node.
#include <roam/am/buffer.hpp>
#include <roam/am/send.hpp>
#include <roam/core/runtime.hpp>
#include <roam/hetero/hetero_object.hpp>
#include <roam/hetero_mobile/detail/fiber_waits.hpp>
#include <roam/hetero_mobile/detail/owned_buffers.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace roam {

template <class T>
class global_hetero_ptr;

namespace detail {

/// This node's table of published objects. The objects are held as shared_ptr<hetero_object<T>>
/// with the element type's type_info, checked on every access.
std::uint64_t publish_object(std::shared_ptr<void> object, const std::type_info& element_type);
std::shared_ptr<void> find_published(std::uint64_t id, const std::type_info& element_type);
void unpublish_object(std::uint64_t id);

template <class T>
struct global_hetero_access;

}  // namespace detail

/// Names a hetero_object<T> published on some node. Plain data: it travels in messages by
/// value.
template <class T>
class global_hetero_ptr {
 public:
  global_hetero_ptr() = default;
  /// The node that owns the object.
  [[nodiscard]] node_id where() const noexcept { return owner_; }
  /// The object's element count.
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(count_); }
  /// False for a default-constructed pointer, which names no object.
  explicit operator bool() const noexcept { return id_ != 0; }

  /// Its wire form (it also travels inside containers and other objects).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(owner_, id_, count_);
  }

 private:
  friend struct detail::global_hetero_access<T>;
  node_id owner_ = 0;
  std::uint64_t id_ = 0;
  std::uint64_t count_ = 0;
};

namespace detail {

template <class T>
struct global_hetero_access {
  static global_hetero_ptr<T> make(node_id owner, std::uint64_t id, std::size_t count) {
    global_hetero_ptr<T> p;
    p.owner_ = owner;
    p.id_ = id;
    p.count_ = count;
    return p;
  }
  static std::uint64_t id(const global_hetero_ptr<T>& p) { return p.id_; }

  static hetero_object<T> object(std::uint64_t id) {
    return *std::static_pointer_cast<hetero_object<T>>(find_published(id, typeid(T)));
  }
  static void check_range(const hetero_object<T>& object, std::uint64_t offset, std::uint64_t count,
                          const char* operation) {
    if (offset > object.size() || count > object.size() - offset)
      throw usage_error(std::string("roam::") + operation + ": elements [" +
                        std::to_string(offset) + ", " + std::to_string(offset + count) +
                        ") are outside the object's " + std::to_string(object.size()));
  }

  /// Runs on the owner: the values into [offset, offset + count) of every valid copy, the
  /// arrived block taken over (no staging copy where the devices copy from it directly). Waits
  /// (suspending the handler) until they are there.
  static hetero_object<T> write(std::uint64_t id, std::uint64_t offset, roam::buffer<T> values) {
    hetero_object<T> target = object(id);
    check_range(target, offset, values.size(), "put");
    target.write_range(static_cast<std::size_t>(offset), std::move(values)).wait();
    return target;
  }
  static void put_on_owner(std::uint64_t id, std::uint64_t offset, roam::buffer<T> values) {
    (void)write(id, offset, std::move(values));
  }
  template <class OnArrival>
  static void put_and_notify(std::uint64_t id, std::uint64_t offset, roam::buffer<T> values) {
    const std::size_t count = values.size();
    hetero_object<T> target = write(id, offset, std::move(values));
    OnArrival{}(target, static_cast<std::size_t>(offset), count);
  }
  /// Runs on the owner: elements [offset, offset + count) straight into the reply's block.
  static roam::buffer<T> get_on_owner(std::uint64_t id, std::uint64_t offset, std::uint64_t count) {
    hetero_object<T> source = object(id);
    check_range(source, offset, count, "get");
    roam::buffer<T> values(static_cast<std::size_t>(count));
    source.read_range(static_cast<std::size_t>(offset), values.span()).wait();
    return values;
  }
};

}  // namespace detail

/// Publishes `object` on the calling node and returns its global pointer. The node holds a
/// handle to it until unpublish(). Publishing one object twice gives two pointers.
template <class T>
[[nodiscard]] global_hetero_ptr<T> publish(const hetero_object<T>& object) {
  if (!object) throw usage_error("roam::publish: an empty hetero_object");
  const auto id = detail::publish_object(std::make_shared<hetero_object<T>>(object), typeid(T));
  return detail::global_hetero_access<T>::make(this_node(), id, object.size());
}

/// The object itself, on its owner node (throws usage_error elsewhere, or once unpublished).
template <class T>
[[nodiscard]] hetero_object<T> local_object(const global_hetero_ptr<T>& p) {
  if (p.where() != this_node())
    throw usage_error("roam::local_object: the object lives on node " + std::to_string(p.where()) +
                      ", not on node " + std::to_string(this_node()));
  return detail::global_hetero_access<T>::object(detail::global_hetero_access<T>::id(p));
}

/// Writes `values` into elements [offset, offset + values.size()) of the object.
template <class T>
future<void> put(const global_hetero_ptr<T>& to, std::span<const T> values,
                 std::size_t offset = 0) {
  using access = detail::global_hetero_access<T>;
  return call(to.where(), &access::put_on_owner, access::id(to), std::uint64_t{offset},
              roam::buffer<T>(values));
}

/// As put(), then runs `on_arrival(hetero_object<T>& object, std::size_t offset, std::size_t
/// count)` on the owner once the values are in place (to submit the task that uses them, say).
/// `on_arrival` must be stateless (a lambda without captures, or an empty function object): its
/// type, not its value, travels.
template <class T, class OnArrival>
future<void> put(const global_hetero_ptr<T>& to, std::span<const T> values, std::size_t offset,
                 OnArrival /*on_arrival*/) {
  static_assert(std::is_empty_v<OnArrival> && std::is_default_constructible_v<OnArrival>,
                "roam::put: the completion handler must be stateless (a lambda without "
                "captures or an empty function object); pass data in the values instead");
  static_assert(std::is_invocable_v<OnArrival, hetero_object<T>&, std::size_t, std::size_t>,
                "roam::put: the completion handler takes (hetero_object<T>&, std::size_t offset, "
                "std::size_t count)");
  using access = detail::global_hetero_access<T>;
  return call(to.where(), &access::template put_and_notify<OnArrival>, access::id(to),
              std::uint64_t{offset}, roam::buffer<T>(values));
}

/// Reads elements [offset, offset + count) of the object.
template <class T>
future<roam::buffer<T>> get(const global_hetero_ptr<T>& from, std::size_t offset,
                            std::size_t count) {
  using access = detail::global_hetero_access<T>;
  return call(from.where(), &access::get_on_owner, access::id(from), std::uint64_t{offset},
              std::uint64_t{count});
}

/// Reads the whole object.
template <class T>
future<roam::buffer<T>> get(const global_hetero_ptr<T>& from) {
  return get(from, 0, from.size());
}

/// Drops the owner's handle: later put/get through any copy of `p` fail. The object itself
/// lives on while other handles (or running tasks) hold it.
template <class T>
future<void> unpublish(const global_hetero_ptr<T>& p) {
  return call(p.where(), &detail::unpublish_object, detail::global_hetero_access<T>::id(p));
}

}  // namespace roam

// roam — the mobile-object layer's core as the public templates see it. Not for
// applications. The protocol itself (directory, ordering, access, migration) lives in
// src/mobile/.
#pragma once

#include <roam/am/send.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/mobile/object_info.hpp>
#include <roam/task/future.hpp>

#include <cereal/cereal.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace roam::detail {

/// Runtime operations carried by object messages (0: a user handler).
enum object_operation : std::uint8_t {
  operation_none = 0,
  operation_migrate = 1,
  operation_destroy = 2,
  operation_locate = 3,
  operation_gather = 4,
};

/// The first bytes of the payload of every message to a mobile object.
struct object_message_header {
  object_id target;
  std::uint64_t seq = 0;      ///< per (origin node, object, series), from 0
  std::uint32_t origin = 0;   ///< the node that sent it (forwarding keeps it)
  std::uint32_t version = 0;  ///< directory version of the route it was sent on
  std::uint8_t access = 0;    ///< roam::access
  std::uint8_t unused = 0;    ///< 0 (how far a node got is message::local_progress)
  std::uint8_t hops = 0;      ///< times it was forwarded (stays at 255 beyond)
  std::uint8_t operation = operation_none;
  /// The origin's numbering series for the object: a new one starts at 0 once the object's
  /// holder has delivered the last and asked for it (ADR 45).
  std::uint32_t series = 0;
  float cost = 1.0f;  ///< the sender's estimate of the handler's work (load balancing)
  /// 1 + the node that forwarded it last; 0 while it has not been forwarded. That node
  /// learns the object's newer route from the next one (forwarding shortcuts).
  std::uint32_t previous_hop = 0;
};
static_assert(sizeof(object_message_header) == 48);
/// The object header at the front of the payload of a message to a mobile object, checked
/// for a job of `nodes` nodes whose objects carry homes below `home_span`: throws
/// deserialization_error when the payload is too short or a field is out of range. A pure
/// function of the bytes (fuzzed: fuzz/object_header.cpp); the gates check the rest against
/// the node's directory.
object_message_header decode_object_header(std::span<const std::byte> payload, node_id nodes,
                                           node_id home_span);

/// A mobile object's value with its type erased.
class object_box {
 public:
  virtual ~object_box() = default;
  virtual void* get() noexcept = 0;
  /// Serializes the value (migration).
  virtual void pack(message_writer& w) const = 0;
  /// The object's own estimate of its load (`double load() const`), or a negative value
  /// when its type has none.
  virtual double load_hint() const { return -1.0; }
};

template <class T>
concept has_load_member = requires(const T& t) {
  { t.load() } -> std::convertible_to<double>;
};

template <class T>
class object_box_of final : public object_box {
 public:
  template <class... A>
  explicit object_box_of(A&&... a) : value_(std::forward<A>(a)...) {}
  void* get() noexcept override { return &value_; }
  void pack(message_writer& w) const override { write_value(w, value_); }
  double load_hint() const override {
    if constexpr (has_load_member<T>)
      return static_cast<double>(value_.load());
    else
      return -1.0;
  }

 private:
  T value_;
};

/// Runs a user handler whose access has been granted: reads the arguments after the object
/// header, calls it on `object`, replies if asked to.
using object_run_function = void (*)(node_runtime& n, void* object, message_ptr& m,
                                     const object_message_header& oh);
/// Rebuilds an object of a registered mobile type from its packed bytes.
using object_unpack_function = std::unique_ptr<object_box> (*)(message_reader& r);
/// Registers a mobile type's unpack function under its install handler's entry (whose id is
/// the type's id), for restarts from a checkpoint; mobile_type<T> does it at static
/// initialization. Returns true.
bool register_mobile_unpack(const handler_entry* entry, object_unpack_function unpack) noexcept;

/// Delivery of an object message on node `n` (the invoke function of every object
/// handler): runs it if the object is here, in order and its access is free; otherwise
/// forwards it, or sets it aside until its turn.
void deliver_object_message(node_runtime& n, message_ptr& m, object_run_function run);
/// The admit function of every object handler: passes a message through the location and
/// order gates on arrival (counting its load at once), and queues it if it may run.
bool admit_object_message(node_runtime& n, message_ptr& m);

/// Fills in the route of message `m` to the object named in its object header (sequence
/// number, destination, version tag) from `n`'s directory; returns the destination. Call
/// only once the whole message is written: the sequence number is taken here, so the
/// message must then be sent (the object's later messages wait for it).
node_id route_object_message(node_runtime& n, message& m);
/// route_object_message, then post.
void post_object_message(node_runtime& n, message_ptr m);

/// Creates an object on `n` itself; returns its id.
object_id create_local_object(node_runtime& n, std::uint32_t type, std::unique_ptr<object_box> box);
/// Reserves the id of an object that the message `construct` (already written, payload
/// starting with the id) will build on node `where`, records the route and posts it.
object_id create_remote_object(node_runtime& n, std::uint32_t type, node_id where,
                               message_ptr construct);
/// Installs an object built by a construction message on `n`.
void install_constructed_object(node_runtime& n, const object_id& id,
                                std::unique_ptr<object_box> box);
/// The invoke and admit functions of a mobile type's install handler: unpacks a migrated
/// object. `arriving`: called by its admission, on the delivering thread (traced as a run of
/// its own).
void receive_migrated_object(node_runtime& n, message_ptr& m, object_unpack_function unpack,
                             bool arriving = false);

/// The cost the calling thread gives the messages it sends to objects (roam::send_cost).
float& current_send_cost() noexcept;

/// Name of a registered mobile type, for errors ("Block").
std::string object_type_name(std::uint32_t type);
/// "object 0:17 (Block)": how errors name an object.
std::string describe_object(const object_id& id);

/// For tests: how many origin nodes the calling node keeps ordering state for, for an object
/// it holds (0 if it does not hold it).
std::size_t ordered_origins(const object_id& id);
/// For tests: how many directory entries the calling node keeps (ADR 46).
std::size_t directory_entries();
/// For tests: starts a sweep of the calling node's directory now (entry_collection.cpp).
void sweep_directory_now();

/// The runtime operations on one object (see lifecycle.hpp for their guarantees).
future<void> migrate_object(const object_id& id, node_id dest);
future<void> destroy_object(const object_id& id);
future<node_id> locate_object(const object_id& id);

/// An object's load as the load-balancing layer counts it. The mobile layer stores one per
/// object, beside its mailbox and under its lock, but only the layer's hooks below write it.
struct object_load_counters {
  double pending_cost = 0;          ///< costs of its messages that arrived and did not finish
  std::uint32_t pending_count = 0;  ///< those messages (running ones included)
  double mean_run_us = 0;           ///< the handlers' run times, as the layer averages them
};

/// What the load-balancing layer plugs into a node's object protocol. Install before any
/// traffic (the node's extension constructor); the hooks must outlive the node's workers.
/// Without them, objects' loads are not counted.
struct object_hooks {
  /// The load statistics, each called under the object's lock. May be null (nothing counted).
  ///@{
  /// A message for the object arrived (whether it can run yet or not).
  void (*arrived)(object_load_counters& load, double cost) = nullptr;
  /// A message counted on arrival finished; `run_us` is its handler's run time, or negative
  /// when not measured (measure_run_time).
  void (*finished)(object_load_counters& load, double cost, double run_us) = nullptr;
  /// The messages counted here are now these (`count` messages of total `cost`): the object
  /// left (its running handlers stay), was destroyed, or was installed (its carried messages
  /// arrive next).
  void (*recount)(object_load_counters& load, double cost, std::uint32_t count) = nullptr;
  ///@}
  /// An object's load changed (a message for it arrived or finished). May be null.
  void (*notify)(void* context, const object_id& id) = nullptr;
  /// A message was granted access to its object: queue it to run (instead of the node's
  /// own queues). It runs by going through node execution as usual. May be null.
  void (*push)(void* context, message_ptr m, const object_id& id) = nullptr;
  /// Keep a moving average of each object's handler run times.
  bool measure_run_time = false;
  void* context = nullptr;
};
void set_object_hooks(node_runtime& n, object_hooks* hooks) noexcept;

/// The cost carried by an object message.
double read_object_cost(const message& m) noexcept;
/// A snapshot of the objects resident on `n` and their loads (those leaving left out).
std::vector<object_load> resident_objects(node_runtime& n);
/// The sum of their load(), without building the snapshot.
double resident_load(node_runtime& n);
/// Moves a resident object to `dest` ahead of its queued messages, which go with it: at
/// once if no handler runs on it, else as soon as those finish (nothing new starts
/// meanwhile). Returns false if the object is not resident on `n` or already leaving, or
/// when it cannot move at once because it is too large for one message (it stays; a
/// warning says so once per process).
bool migrate_resident(node_runtime& n, const object_id& id, node_id dest);
/// Hands a granted message that a scheduling policy holds (object_hooks::push) back without
/// running it, when migrate_resident waits for it: it goes with its object. If its object
/// is not leaving, it is queued to run.
void give_back_granted(node_runtime& n, message_ptr m) noexcept;

/// Multi-object handlers: on the calling node (a fiber of it), brings every object of
/// `ids` to this node, in id order, and holds each exclusively; `objects` receives their
/// addresses in the order of `ids`. release_objects lets them go. Throws object_error
/// (after releasing what it held) if an object does not exist.
class object_group {
 public:
  object_group(const object_id* ids, std::size_t count);
  ~object_group();
  object_group(const object_group&) = delete;
  object_group& operator=(const object_group&) = delete;
  void* object(std::size_t i) const noexcept;

  struct hold;  ///< one object's gather request (src/mobile/migration.cpp)

 private:
  /// Lets go of every held object and waits until each request has finished.
  void release_all() noexcept;
  // Shared with the reply handlers, which may still touch a hold's flags after the
  // group has seen them set.
  std::vector<std::shared_ptr<hold>> holds_;
};

}  // namespace roam::detail

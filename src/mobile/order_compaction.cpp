// Compaction of per-object ordering state (ADR 45): the node holding an object asks origins
// that went quiet to number their next messages to it in a new series, and drops their
// entries once they agree. The two protocol messages are runtime-internal system messages,
// like location updates: quiescence does not count them, and one that arrives after the
// job's end is discarded (it has nothing left to compact).
//
// Exactness: an origin starts a new series only when the number of messages it has sent in
// the current one equals the number the holder delivered, so no message of the old series
// is in flight; the holder drops the entry only if nothing arrived from the origin since it
// asked. A message of a series the holder has no entry for (or a newer one) therefore starts
// that series at 0, and ordering stays exact across any number of rounds and migrations.
#include "mobile_node.hpp"

#include <roam/core/detail/grace_period.hpp>
#include <roam/core/detail/handler_registry.hpp>

#include <cstring>
#include <string>

namespace roam::detail {

namespace {

/// Holder -> origin: "start a new series if you sent exactly `delivered` in `series`".
/// Origin -> holder (the node that asked): "I have moved past `series`".
struct series_wire {
  object_id id;
  std::uint32_t series = 0;
  node_id origin = 0;
  std::uint64_t delivered = 0;
};

series_wire read_series_wire(const message& m, const char* what) {
  if (m.header.payload_size != sizeof(series_wire))
    throw deserialization_error(std::string(what) + " has " +
                                std::to_string(m.header.payload_size) + " bytes, not " +
                                std::to_string(sizeof(series_wire)));
  series_wire w;
  std::memcpy(&w, m.payload(), sizeof w);
  return w;
}

void post_series_wire(node_runtime& n, const handler_entry& entry, node_id to,
                      const series_wire& w) {
  post_protocol_message(n, entry, to, &w, sizeof w);
}

// On the holder: drop the origin's entry if it still stands where it was when asked. The
// object may have moved on meanwhile (its table went with it; its new holder asks again).
handler_entry series_restarted_entry{
    "roam.mobile.series_restarted", [](node_runtime& n, message_ptr& m) {
      const series_wire w = read_series_wire(*m, "a series restart notice");
      const grace_read_section reading;
      object_entry* e = directory_of(n).find(w.id);
      if (!e) return;
      std::lock_guard guard(e->lock);
      object_state* s = e->state_if_any();
      if (s && s->state == residence::resident) s->forget_origin(w.origin, w.series, w.delivered);
    }};
const bool series_restarted_registered = handler_registry::add(&series_restarted_entry);

// On the origin: restart if nothing is in flight, and say so; stay silent otherwise (the
// message in flight clears the holder's request when it arrives).
handler_entry restart_series_entry{
    "roam.mobile.restart_series", [](node_runtime& n, message_ptr& m) {
      (void)series_restarted_registered;
      const series_wire w = read_series_wire(*m, "a series restart request");
      if (w.origin != id_of(n))
        throw deserialization_error("a series restart request for node " +
                                    std::to_string(w.origin) + " reached node " +
                                    std::to_string(id_of(n)));
      const grace_read_section reading;
      object_entry* e = directory_of(n).find(w.id);
      // No entry: this node never numbered a message to the object (the request is corrupt,
      // or the entry was collected after it moved past every series); nothing can be in
      // flight from it.
      if (e && !e->restart_sequence(w.series, w.delivered)) return;
      post_series_wire(n, series_restarted_entry, m->header.source, w);
    }};
const bool restart_series_registered = handler_registry::add(&restart_series_entry);

}  // namespace

void ask_idle_origins_to_restart(node_runtime& n, object_entry& e) {
  (void)restart_series_registered;
  std::vector<forget_request> requests;
  {
    std::lock_guard guard(e.lock);
    object_state* s = e.state_if_any();
    if (!s || s->state != residence::resident) return;  // it left meanwhile: its table too
    s->start_compaction_round(requests);
  }
  for (const forget_request& r : requests)
    post_series_wire(n, restart_series_entry, r.origin, {e.id(), r.series, r.origin, r.delivered});
}

std::size_t ordered_origins(const object_id& id) {
  node_runtime& n = sending_node("roam::detail::ordered_origins");
  const grace_read_section reading;
  object_entry* e = directory_of(n).find(id);
  if (!e) return 0;
  std::lock_guard guard(e->lock);
  const object_state* s = e->state_if_any();
  return s && s->state == residence::resident ? s->expected.size() : 0;
}

}  // namespace roam::detail

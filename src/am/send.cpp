#include <roam/am/send.hpp>
#include <roam/coll/coll_settings.hpp>
#include <roam/task/this_task.hpp>

#include <cstdlib>

namespace roam::detail {

namespace {
// The collectives' settings (--roam-coll-*) registered wherever messages are sent, not
// only in programs that call a collective (whose code would link them): a flag given to
// a program without collectives is accepted, not refused as unknown.
[[maybe_unused]] const settings_group& coll_settings_registered =
    coll::coll_settings::registration();
}  // namespace

std::string describe_exception(const std::exception_ptr& e, std::string& type) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    type = type_name_of(typeid(ex));
    return ex.what();
  } catch (...) {
    type = "unknown";
    return "an exception not derived from std::exception";
  }
}

}  // namespace roam::detail

#include <roam/am/collectives.hpp>
#include <roam/am/event.hpp>

namespace roam::detail {

std::uint64_t next_event_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

node_runtime& collective_node(const char* caller, node_id root) {
  node_runtime& n = require_node(caller);
  // A handler (or tasklet) that waited for a collective would wait for every node's
  // application thread, while its own node's may be waiting for this very handler (a
  // barrier is quiescence's usual companion): the job hung without a word. The error
  // becomes a fatal error naming the handler (node_runtime::execute).
  if (this_task::is_suspendable())
    throw usage_error(std::string(caller) +
                      " called from inside a handler or tasklet; collectives are called by "
                      "every node's application thread (the body of roam::run), in the same "
                      "order on every node");
  if (root >= size_of(n))
    throw usage_error(std::string(caller) + ": root node " + std::to_string(root) +
                      " is out of range (the job has " + std::to_string(size_of(n)) + " nodes)");
  return n;
}

}  // namespace roam::detail

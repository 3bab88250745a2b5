// --roam-restart: before the body of roam::run, every node reads the checkpoint's manifest
// and the node files it needs, checks all of them, and only once every node has (a barrier)
// installs its objects and node_local states (ADR 50). A node that finds a problem ends the
// job, naming the file: nothing has been loaded anywhere by then.
#include "handler_table_hash.hpp"

#include <roam/am/collectives.hpp>
#include <roam/am/node_local.hpp>
#include <roam/base/detail/fatal.hpp>
#include <roam/checkpoint/checkpoint.hpp>
#include <roam/checkpoint/detail/checkpoint_format.hpp>
#include <roam/core/config.hpp>
#include <roam/mobile/detail/object_restoration.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace roam {

namespace {

namespace format = detail::checkpoint_format;

/// A node's part of the checkpoint layer.
struct checkpoint_node {
  explicit checkpoint_node(detail::node_runtime& node) : n(node) {}
  detail::node_runtime& n;
  bool restarted = false;
};

/// One node file this node reads, checked.
struct loaded_file {
  std::string path;
  std::vector<std::byte> bytes;  // the views of `contents` point into it
  format::node_file contents;
};

/// The part of a restart one node does.
class restoration {
 public:
  restoration(detail::node_runtime& n, const restart_settings& settings)
      : n_(n), settings_(settings), dir_(settings.directory) {}

  void run() {
    read_manifest();
    choose_objects();
    for (auto& [node, file] : files_) check(node, file);
    // This node's own state first: once past the barrier, other nodes may already tell it
    // where objects of the homes it adopts are.
    detail::freeze_migrations(n_, true);
    adopt_homes();
    // Every node has checked what it reads: only now does anything get installed.
    barrier();
    install();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    detail::fatal("cannot restart from the checkpoint in '" + settings_.directory + "': " + what);
  }

  std::string path_of(const std::string& name) const { return (dir_ / name).string(); }

  void read_manifest() {
    const std::string path = path_of(std::string(format::manifest_name));
    try {
      const std::vector<std::byte> bytes = format::read_file(path);
      manifest_ =
          format::decode_manifest(format::open_container(bytes, format::file_kind::manifest));
    } catch (const checkpoint_error& e) {
      fail(path + ": " + e.message());
    }
    if (manifest_.handler_hash != detail::handler_table_hash())
      fail(path +
           ": it was written by another program (its handler table differs from this "
           "one's); restart with the program that wrote it");
  }

  /// Which objects this node installs (a range of the checkpoint's objects in order), and
  /// which files it reads for them and for its node_local states.
  void choose_objects() {
    const std::uint64_t old_nodes = manifest_.nodes.size();
    const std::uint64_t nodes = detail::size_of(n_), me = detail::id_of(n_);
    std::vector<std::uint64_t> first(old_nodes + 1, 0);  // first[j]: file j's first object
    for (std::uint64_t j = 0; j < old_nodes; ++j)
      first[j + 1] = first[j] + manifest_.nodes[j].objects;
    const std::uint64_t total = first[old_nodes];
    if (settings_.objects == restart_settings::placement::automatic && nodes == old_nodes) {
      begin_ = first[me];
      end_ = first[me + 1];
    } else {
      // total * k / nodes without overflow: the remainder times k fits (both below 2^32).
      auto cut = [&](std::uint64_t k) { return total / nodes * k + total % nodes * k / nodes; };
      begin_ = cut(me);
      end_ = cut(me + 1);
    }
    for (std::uint64_t j = 0; j < old_nodes; ++j) {
      const bool objects = first[j] < end_ && begin_ < first[j + 1];
      if (objects || restores_states_of(static_cast<std::uint32_t>(j)))
        files_.emplace(static_cast<std::uint32_t>(j), loaded_file{});
    }
    for (auto& [j, file] : files_) {
      file.path = path_of(format::node_file_name(j, manifest_.generation));
      file_first_[j] = first[j];
    }
  }

  void check(std::uint32_t j, loaded_file& file) {
    const format::node_summary& expected = manifest_.nodes[j];
    try {
      file.bytes = format::read_file(file.path);
      if (file.bytes.size() != expected.file_bytes)
        throw checkpoint_error((file.bytes.size() < expected.file_bytes ? "truncated: " : "") +
                               std::to_string(file.bytes.size()) +
                               " bytes, where the manifest says " +
                               std::to_string(expected.file_bytes));
      file.contents =
          format::decode_node_file(format::open_container(file.bytes, format::file_kind::node));
      if (format::crc32(std::span(file.bytes).subspan(format::header_bytes)) != expected.body_crc)
        throw checkpoint_error("it is not the file the manifest names (its CRC differs)");
      if (file.contents.generation != manifest_.generation || file.contents.node != j)
        throw checkpoint_error("it says it is node " + std::to_string(file.contents.node) +
                               "'s file of generation " + std::to_string(file.contents.generation));
      if (file.contents.objects.size() != expected.objects)
        throw checkpoint_error("it holds " + std::to_string(file.contents.objects.size()) +
                               " objects, where the manifest says " +
                               std::to_string(expected.objects));
      std::uint64_t position = file_first_.at(j);
      for (const format::saved_object& o : file.contents.objects) {
        const std::string named =
            "object " + std::to_string(o.id.home) + ":" + std::to_string(o.id.index);
        if (o.id.home >= manifest_.home_span || o.id.index >= manifest_.next_index[o.id.home])
          throw checkpoint_error(named + " has an id its home never handed out");
        if (!detail::is_mobile_type(o.id.type))
          throw checkpoint_error(named + " has type #" + std::to_string(o.id.type) +
                                 ", which is no mobile type of this program");
        // Two copies of one object would be installed twice: refused where they meet.
        if (position >= begin_ && position < end_ &&
            !installing_.insert({o.id.home, o.id.index}).second)
          throw checkpoint_error(named + " is saved twice");
        ++position;
      }
      check_states(j, file.contents);
    } catch (const checkpoint_error& e) {
      fail(file.path + ": " + e.message());
    }
  }

  void check_states(std::uint32_t j, const format::node_file& contents) {
    const auto locals = detail::checkpointed_node_locals();
    for (const format::saved_state& s : contents.states) {
      auto it = std::find_if(locals.begin(), locals.end(),
                             [&](const auto& l) { return l.name == s.name; });
      if (it == locals.end())
        throw checkpoint_error("it saves node_local '" + std::string(s.name) +
                               "', and this program has no roam::checkpointed node_local of "
                               "that name");
      if (it->type != s.type)
        throw checkpoint_error("node_local '" + std::string(s.name) + "' was saved with type " +
                               detail::demangled(std::string(s.type).c_str()) +
                               ", and this program's has type " +
                               detail::demangled(it->type.c_str()));
      local_ids_[std::string(s.name)] = it->id;
      // A second saved instance for this node must be merged into the first.
      if (restores_states_of(j) && ++restored_instances_[std::string(s.name)] > 1 && !it->mergeable)
        throw checkpoint_error(
            "node " + std::to_string(j) + "'s node_local '" + std::string(s.name) +
            "' must be merged into node " + std::to_string(detail::id_of(n_)) + "'s (the run has " +
            std::to_string(detail::size_of(n_)) + " nodes, the checkpoint " +
            std::to_string(manifest_.nodes.size()) +
            "), and it has no merge function: give one to its constructor (roam::checkpointed)");
    }
  }

  /// Whether this node restores the states of file `j` (rather than only objects of it).
  bool restores_states_of(std::uint32_t j) const {
    const std::uint64_t nodes = detail::size_of(n_), me = detail::id_of(n_);
    return j == me || (j >= nodes && j % nodes == me);
  }

  /// Objects may carry the checkpoint's homes; this node answers for those of the nodes
  /// gone that map to it, and numbers its own objects after the checkpoint's.
  void adopt_homes() {
    const std::uint32_t nodes = detail::size_of(n_), me = detail::id_of(n_);
    const std::uint32_t span = std::max(manifest_.home_span, nodes);
    std::vector<std::pair<node_id, std::uint64_t>> adopted;
    for (std::uint32_t h = nodes; h < manifest_.home_span; ++h)
      if (h % nodes == me) adopted.emplace_back(h, manifest_.next_index[h]);
    detail::adopt_object_homes(n_, span, me < manifest_.home_span ? manifest_.next_index[me] : 1,
                               std::move(adopted));
  }

  void install() {
    std::vector<object_id> restored;
    for (const auto& [j, file] : files_) {
      std::uint64_t position = file_first_.at(j);
      for (const format::saved_object& o : file.contents.objects) {
        if (position >= begin_ && position < end_) {
          try {
            detail::install_restored_object(n_, o.id, o.bytes);
          } catch (const std::exception& e) {
            fail(file.path + ": object " + std::to_string(o.id.home) + ":" +
                 std::to_string(o.id.index) + " (" + detail::object_type_name(o.id.type) +
                 ") cannot be rebuilt: " + e.what());
          }
          restored.push_back(o.id);
        }
        ++position;
      }
    }
    // Node_local states: this node's own first, then those of nodes gone, in node order.
    for (const auto& [j, file] : files_) {
      if (!restores_states_of(j)) continue;
      for (const format::saved_state& s : file.contents.states) try {
          detail::restore_node_local(n_, local_ids_.at(std::string(s.name)), s.bytes);
        } catch (const std::exception& e) {
          fail(file.path + ": node_local '" + std::string(s.name) +
               "' cannot be rebuilt: " + e.what());
        }
    }
    files_.clear();  // the bytes are no longer needed
    detail::announce_restored_objects(n_, restored);
    barrier_all_handled();  // every home knows where its objects are
    detail::freeze_migrations(n_, false);
  }

  detail::node_runtime& n_;
  const restart_settings& settings_;
  std::filesystem::path dir_;
  format::manifest manifest_;
  std::uint64_t begin_ = 0, end_ = 0;           // the objects this node installs
  std::map<std::uint32_t, loaded_file> files_;  // by node of the checkpoint, in order
  std::map<std::uint32_t, std::uint64_t> file_first_;
  std::map<std::string, std::uint32_t> local_ids_;
  std::map<std::string, unsigned> restored_instances_;      // saved instances this node restores
  std::set<std::pair<node_id, std::uint64_t>> installing_;  // the objects this node installs
};

const detail::extension_key checkpoint_extension = detail::register_node_extension(
    {.name = "checkpoint and restart",
     .order = 70,
     .make = [](detail::node_runtime& n) -> void* { return new checkpoint_node(n); },
     .destroy = [](void* state) noexcept { delete static_cast<checkpoint_node*>(state); },
     .prepare =
         [](void* state) {
           auto& node = *static_cast<checkpoint_node*>(state);
           const auto& settings = detail::settings_of(node.n).of<restart_settings>();
           if (settings.directory.empty()) return;
           const detail::trace::region_scope traced("roam::restart", detail::id_of(node.n));
           restoration(node.n, settings).run();
           node.restarted = true;
         }});

}  // namespace

bool detail::link_checkpoint_layer() noexcept {
  (void)checkpoint_extension;
  (void)restart_settings::registration();
  return true;
}

bool restarted() {
  detail::node_runtime& n = detail::require_node("roam::restarted");
  return static_cast<checkpoint_node*>(detail::extension_state(n, checkpoint_extension))->restarted;
}

}  // namespace roam

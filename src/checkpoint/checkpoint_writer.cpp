// roam::checkpoint: a consistent cut of the job (every message handled, load balancing
// frozen), one file per node, and the manifest that makes them a checkpoint, written last by
// node 0 (ADR 50).
#include "handler_table_hash.hpp"

#include <roam/am/collectives.hpp>
#include <roam/am/node_local.hpp>
#include <roam/checkpoint/checkpoint.hpp>
#include <roam/checkpoint/detail/checkpoint_format.hpp>
#include <roam/mobile/detail/object_restoration.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace roam {

namespace {

namespace format = detail::checkpoint_format;
namespace fs = std::filesystem;

/// What node 0 tells every node before they write.
struct start_note {
  std::uint64_t generation = 0;
  std::string error;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(generation, error);
  }
};

/// What each node tells node 0 once its file is written.
struct node_report {
  std::string error;
  format::node_summary summary;
  node_id home_span = 0;
  std::vector<std::pair<node_id, std::uint64_t>> home_limits;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(error, summary.objects, summary.file_bytes, summary.body_crc, home_span, home_limits);
  }
};

/// The previous checkpoint in `dir`, if its manifest reads well.
std::optional<format::manifest> previous_manifest(const fs::path& dir) {
  const fs::path path = dir / format::manifest_name;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const std::vector<std::byte> bytes = format::read_file(path);
    return format::decode_manifest(format::open_container(bytes, format::file_kind::manifest));
  } catch (const checkpoint_error&) {
    return std::nullopt;  // replaced by this one
  }
}

void remove_quietly(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

/// Writes node `n`'s file of generation `generation` into `dir`.
node_report write_node_file(detail::node_runtime& n, const fs::path& dir,
                            std::uint64_t generation) {
  node_report report;
  report.home_span = detail::object_home_span(n);
  report.home_limits = detail::object_home_limits(n);
  const auto node = static_cast<std::uint32_t>(detail::id_of(n));
  const fs::path final_path = dir / format::node_file_name(node, generation);
  const fs::path temporary = fs::path(final_path).concat(".tmp");
  try {
    format::file_writer w(temporary, format::file_kind::node);
    format::write_node_file_start(w, generation, node);
    std::vector<std::pair<detail::checkpointed_node_local, std::vector<std::byte>>> states;
    for (detail::checkpointed_node_local& local : detail::checkpointed_node_locals()) {
      std::vector<std::byte> bytes;
      if (detail::save_node_local(n, local.id, bytes)) states.emplace_back(local, std::move(bytes));
    }
    format::write_state_count(w, states.size());
    for (const auto& [local, bytes] : states) format::write_state(w, local.name, local.type, bytes);
    report.summary.objects = detail::pack_resident_objects(
        n, [&w](const object_id& id, std::span<const std::byte> bytes) {
          format::write_object(w, id, bytes);
        });
    w.finish();
    report.summary.file_bytes = w.file_bytes();
    report.summary.body_crc = w.body_crc();
    std::error_code ec;
    fs::rename(temporary, final_path, ec);
    if (ec) throw checkpoint_error("cannot rename '" + temporary.string() + "': " + ec.message());
    format::sync_directory(dir.string());  // the rename too survives a power loss
  } catch (const error& e) {
    remove_quietly(temporary);
    report.error = e.message();
  } catch (const std::exception& e) {  // the objects' own serialization
    remove_quietly(temporary);
    report.error = std::string("saving its objects threw: ") + e.what();
  }
  return report;
}

/// Removes the node files of every generation but `generation` from `dir`: the previous
/// checkpoint's, and those a failed or interrupted attempt left.
void remove_other_generations(const fs::path& dir, std::uint64_t generation) {
  const std::string kept = ".g" + std::to_string(generation) + ".ckpt";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool node_file = name.starts_with("node") && name.find(".g") != std::string::npos &&
                           (name.ends_with(".ckpt") || name.ends_with(".ckpt.tmp"));
    if (node_file && !name.ends_with(kept)) remove_quietly(entry.path());
  }
}

/// Node 0: the manifest of the reports, then the previous checkpoint's files go. Returns
/// what went wrong, or an empty string.
std::string write_manifest(const fs::path& dir, std::uint64_t generation,
                           const std::vector<node_report>& reports) {
  format::manifest m;
  m.generation = generation;
  m.handler_hash = detail::handler_table_hash();
  for (const node_report& r : reports) m.home_span = std::max(m.home_span, r.home_span);
  m.home_span = std::max<std::uint32_t>(m.home_span, static_cast<std::uint32_t>(reports.size()));
  m.next_index.assign(m.home_span, 1);
  for (const node_report& r : reports)
    for (const auto& [home, next] : r.home_limits)
      if (home < m.home_span) m.next_index[home] = std::max(m.next_index[home], next);
  for (const node_report& r : reports) m.nodes.push_back(r.summary);
  const fs::path path = dir / format::manifest_name;
  const fs::path temporary = fs::path(path).concat(".tmp");
  try {
    format::file_writer w(temporary, format::file_kind::manifest);
    const std::vector<std::byte> body = format::encode_manifest(m);
    w.write(body.data(), body.size());
    w.finish();
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec) throw checkpoint_error("cannot rename '" + temporary.string() + "': " + ec.message());
    // On storage before the previous checkpoint goes: a power loss leaves one or the other.
    format::sync_directory(dir.string());
  } catch (const checkpoint_error& e) {
    remove_quietly(temporary);
    return "node 0: " + e.message();
  }
  remove_other_generations(dir, generation);
  return {};
}

}  // namespace

void checkpoint(const std::string& dir_name) {
  detail::node_runtime& n = detail::collective_node("roam::checkpoint", 0);
  const detail::trace::region_scope traced("roam::checkpoint", detail::id_of(n));
  const bool root = detail::id_of(n) == 0;
  const fs::path dir(dir_name);
  detail::freeze_migrations(n, true);
  struct thaw {
    detail::node_runtime& n;
    ~thaw() { detail::freeze_migrations(n, false); }
  } thawed{n};
  // Every node frozen, then every message handled: a consistent cut, which stays one until
  // the last broadcast below (every application thread is in here).
  barrier_all_handled();

  start_note start;
  std::optional<format::manifest> previous;
  if (root) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) start.error = "cannot create the directory '" + dir_name + "': " + ec.message();
    previous = previous_manifest(dir);
    start.generation = previous ? previous->generation + 1 : 1;
  }
  start = broadcast_value(start);
  if (!start.error.empty()) throw checkpoint_error("roam::checkpoint: " + start.error);

  const node_report mine = write_node_file(n, dir, start.generation);
  const std::vector<node_report> reports = gather(mine);
  std::string outcome;
  if (root) {
    std::size_t failed = 0;
    for (std::size_t k = 0; k < reports.size(); ++k)
      if (!reports[k].error.empty() && failed++ < 4)
        outcome +=
            (outcome.empty() ? "" : "; ") + ("node " + std::to_string(k) + ": ") + reports[k].error;
    if (failed > 4) outcome += "; and " + std::to_string(failed - 4) + " more nodes";
    if (outcome.empty()) outcome = write_manifest(dir, start.generation, reports);
    if (!outcome.empty())  // the files of this attempt go; the previous checkpoint stays
      for (std::uint32_t k = 0; k < reports.size(); ++k)
        remove_quietly(dir / format::node_file_name(k, start.generation));
  }
  outcome = broadcast_value(outcome);
  if (!outcome.empty())
    throw checkpoint_error("roam::checkpoint to '" + dir_name +
                           "' failed (the previous "
                           "checkpoint there, if any, stays): " +
                           outcome);
}

}  // namespace roam

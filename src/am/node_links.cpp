// The collectives layer's links over roam nodes: each transfer is one or more runtime
// messages to the peer's meeting point for the call (a rendezvous slot keyed by the call's
// sequence number), matched there like MPI matches receives: a posted receive takes the
// pieces that arrive for it, a piece that arrives first waits for its receive.
#include <roam/am/buffer.hpp>
#include <roam/am/detail/handler_traits.hpp>
#include <roam/am/detail/node_links.hpp>
#include <roam/base/error.hpp>
#include <roam/coll/coll_settings.hpp>
#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/model_probe.hpp>
#include <roam/core/config.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace roam::detail {

/// A transfer: from whom, with which tag, and its number among those of that peer and tag.
using transfer_key = std::tuple<node_id, int, std::uint32_t>;

struct node_inbox {
  struct posted {
    std::byte* data;
    std::uint64_t bytes, arrived = 0;
  };
  struct early_piece {
    std::uint64_t offset, total;
    buffer<std::byte> bytes;
  };
  std::mutex lock;
  std::map<transfer_key, posted> receiving;
  std::map<transfer_key, std::vector<early_piece>> early;
  std::size_t unfinished = 0;  // posted receives still missing bytes
  bool closed = false;         // the call is over (or unwound): pieces still arriving are dropped
  std::shared_ptr<ready_flag> finished;  // set when unfinished drops to 0 during complete()

  /// Copies `piece` into `p`; throws deserialization_error when it does not fit there.
  static void place(posted& p, const transfer_key& k, std::uint64_t offset, std::uint64_t total,
                    const buffer<std::byte>& piece) {
    if (total != p.bytes || offset > p.bytes || piece.size() > p.bytes - offset ||
        piece.size() > p.bytes - p.arrived)
      throw deserialization_error(
          "a collective's transfer from node " + std::to_string(std::get<0>(k)) + " (tag " +
          std::to_string(std::get<1>(k)) + ") carries bytes [" + std::to_string(offset) + ", +" +
          std::to_string(piece.size()) + ") of " + std::to_string(total) + " where " +
          std::to_string(p.bytes) + " were expected: the nodes disagree about the collective");
    if (!piece.empty()) std::memcpy(p.data + offset, piece.data(), piece.size());
    p.arrived += piece.size();
  }
};

namespace {

std::shared_ptr<node_inbox> inbox_of(node_runtime& n, std::uint64_t seq) {
  return std::static_pointer_cast<node_inbox>(rendezvous_slot(
      n, seq, [] { return std::shared_ptr<void>(std::make_shared<node_inbox>()); }));
}

/// One piece of a transfer, at its receiver.
struct collective_piece {
  void operator()(std::uint64_t seq, node_id from, int tag, std::uint32_t number,
                  std::uint64_t offset, std::uint64_t total, buffer<std::byte> bytes) const {
    auto inbox = inbox_of(*current_node(), seq);
    const transfer_key k{from, tag, number};
    std::shared_ptr<ready_flag> wake;
    {
      std::lock_guard guard(inbox->lock);
      if (inbox->closed) return;
      auto it = inbox->receiving.find(k);
      if (it == inbox->receiving.end()) {
        inbox->early[k].push_back({offset, total, std::move(bytes)});
        return;
      }
      node_inbox::place(it->second, k, offset, total, bytes);
      if (it->second.arrived < it->second.bytes) return;
      inbox->receiving.erase(it);
      if (--inbox->unfinished == 0) wake = std::move(inbox->finished);
    }
    if (wake) wake->set();
  }
};

/// The largest piece of a transfer one message carries to `peer`: what a message holds,
/// less room for the header and the arguments before the bytes.
std::uint64_t piece_limit(node_runtime& n, node_id peer) {
  const std::uint64_t largest = largest_message_to(n, peer);
  constexpr std::uint64_t room = 512;
  return largest > 2 * room ? largest - room : largest / 2;
}

// The node's probed rules live in a rendezvous slot for the job's lifetime: bit 61, below
// the event keys (bit 62) and quiescence's (bit 63), above any collective's sequence number.
constexpr std::uint64_t probed_rules_key = (std::uint64_t{1} << 61) | 0xC011;
/// Above every algorithm's tags (schedule.hpp: fewer than 6 x 64).
constexpr int probe_tag = 1000;

struct probed_rules {
  const coll::tuning_rules* rules = nullptr;  // set once, by the node's application thread
};

std::shared_ptr<probed_rules> probed_of(node_runtime& n) {
  return std::static_pointer_cast<probed_rules>(rendezvous_slot(
      n, probed_rules_key, [] { return std::shared_ptr<void>(std::make_shared<probed_rules>()); }));
}

/// The rules of a model, made once per process for each model (every node of a process
/// gets rank 0's model, so they share one set).
const coll::tuning_rules& rules_of_model(const coll::cost_model& m) {
  static std::mutex lock;
  static std::map<std::tuple<double, double, double, double>, coll::tuning_rules> made;
  std::lock_guard guard(lock);
  const auto key =
      std::make_tuple(m.alpha_us, m.beta_us_per_byte, m.gamma_us_per_byte, m.overhead_us);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, coll::rules_from(m)).first;
  return it->second;
}

/// The rules of the job's --roam-coll-tuning file, each file read once per process.
const coll::tuning_rules& rules_of_file(const std::string& path) {
  static std::mutex lock;
  static std::map<std::string, coll::tuning_rules> loaded;
  std::lock_guard guard(lock);
  auto it = loaded.find(path);
  if (it == loaded.end()) it = loaded.emplace(path, coll::tuning_rules::load(path)).first;
  return it->second;
}

}  // namespace

node_links::node_links(node_runtime& n, std::uint64_t seq)
    : node_(n), seq_(seq), inbox_(inbox_of(n, seq)) {}

node_links::~node_links() {
  // A call that unwinds (an operator threw) may leave receives posted into buffers that are
  // going away: pieces that still arrive must not be copied there.
  {
    std::lock_guard guard(inbox_->lock);
    inbox_->closed = true;
    inbox_->receiving.clear();
    inbox_->early.clear();
  }
  erase_rendezvous_slot(node_, seq_);
}

int node_links::rank() const noexcept { return static_cast<int>(id_of(node_)); }
int node_links::size() const noexcept { return static_cast<int>(size_of(node_)); }

void node_links::send(int peer, int tag, const std::byte* data, std::size_t bytes) {
  const std::uint32_t number = sent_[{peer, tag}]++;
  const auto to = static_cast<node_id>(peer);
  const std::uint64_t limit = piece_limit(node_, to);
  for (std::uint64_t at = 0; at < bytes; at += limit) {
    const std::uint64_t size = std::min<std::uint64_t>(limit, bytes - at);
    post(node_, build_message<collective_piece>(
                    to, collective_piece{}, flag_system, seq_, id_of(node_), tag, number, at,
                    static_cast<std::uint64_t>(bytes),
                    buffer<std::byte>(std::span<const std::byte>(data + at, size))));
  }
}

void node_links::recv(int peer, int tag, std::byte* data, std::size_t bytes) {
  const transfer_key k{static_cast<node_id>(peer), tag, received_[{peer, tag}]++};
  std::lock_guard guard(inbox_->lock);
  node_inbox::posted p{data, bytes};
  if (auto early = inbox_->early.find(k); early != inbox_->early.end()) {
    for (const auto& piece : early->second)
      node_inbox::place(p, k, piece.offset, piece.total, piece.bytes);
    inbox_->early.erase(early);
  }
  if (p.arrived == p.bytes) return;
  inbox_->receiving.emplace(k, p);
  ++inbox_->unfinished;
}

void node_links::complete() {
  std::shared_ptr<ready_flag> finished;
  {
    std::lock_guard guard(inbox_->lock);
    if (inbox_->unfinished == 0) return;
    finished = inbox_->finished = std::make_shared<ready_flag>();
  }
  wait(*finished);
}

const coll::tuning_rules& node_rules(node_runtime& n) {
  const std::string& file = settings_of(n).of<coll::coll_settings>().tuning_file;
  if (!file.empty()) return rules_of_file(file);
  const coll::tuning_rules* probed = probed_of(n)->rules;
  return probed ? *probed : coll::detail::default_model_rules();
}

std::uint64_t node_processes_per_node(node_runtime& n) noexcept {
  return std::max<std::uint64_t>(1, local_nodes_of(n).count);
}

const coll::tuning_rules& node_links::rules() const {
  const std::string& file = settings_of(node_).of<coll::coll_settings>().tuning_file;
  if (!file.empty()) return rules_of_file(file);
  // The first automatic choice of the job on this node probes the model: every node makes
  // the same choices in the same calls, so all probe together. The probe's transfers go
  // through these links; rules() is const only for its callers.
  auto probed = probed_of(node_);
  if (!probed->rules)
    probed->rules =
        &rules_of_model(coll::detail::probe_model(const_cast<node_links&>(*this), probe_tag));
  return *probed->rules;
}

std::uint64_t node_links::processes_per_node() const noexcept {
  return node_processes_per_node(node_);
}

coll::choice node_links::forced() const {
  return settings_of(node_).of<coll::coll_settings>().forced;
}

}  // namespace roam::detail

// Flow control between ranks: a credit window per pair of ranks.
//
// A rank may have at most `window` bytes on their way to another rank that the other has
// not yet handed to its nodes. Each message costs its wire size, counted up to half the
// window (a message larger than that still goes, alone), so a sender always gets a grant
// back once what it sent is delivered. The receiver grants the bytes back in batches of at
// least half a window, and may hold its grants while its nodes have too much queued: then
// senders stop, and their messages wait, in order, in their own process.
//
// What this bounds: frames waiting unmatched in MPI at a receiver (at most `window` per
// sending rank), and what a receiver takes in faster than its nodes run it. State is kept
// only for peers with credit in use or messages waiting (created on demand, erased when
// the window is whole again), so an idle pair costs nothing.
//
// Written here rather than taken from MPI: MPI has no flow control a program can see; an
// eager send to a slow receiver completes into the receiver's unexpected queue.
#pragma once

#include <roam/transport/message.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace roam::detail {

class send_credits {
 public:
  explicit send_credits(std::uint64_t window) : window_(std::max<std::uint64_t>(window, 2)) {}

  [[nodiscard]] std::uint64_t window() const noexcept { return window_; }
  /// What a message of `wire_bytes` takes from its window.
  [[nodiscard]] std::uint64_t cost(std::uint64_t wire_bytes) const noexcept {
    return std::min(wire_bytes, window_ / 2);
  }

  // ---- the sending side -------------------------------------------------------------------

  /// Takes the credit for a message of `wire_bytes` to `peer`. False when the window lacks
  /// it or messages to `peer` already wait (they go first).
  bool try_take(int peer, std::uint64_t wire_bytes) {
    const std::uint64_t cost = this->cost(wire_bytes);
    auto it = peers_.find(peer);
    if (it == peers_.end()) {
      peers_.emplace(peer, peer_state{window_ - cost, {}, false});
      return true;
    }
    peer_state& p = it->second;
    if (!p.stalled.empty() || p.available < cost) return false;
    p.available -= cost;
    return true;
  }
  /// Queues `m` behind the other messages waiting for `peer`'s credit (try_take failed).
  void stall(int peer, message* m) {
    peers_.at(peer).stalled.push_back(m);
    ++stalled_;
  }
  /// `peer` granted `amount` back. What exceeds the credit in use is ignored: only bytes
  /// that took no credit (a test's injected frames) are granted beyond it, and a window
  /// never grows past its size.
  void add(int peer, std::uint64_t amount) {
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;
    peer_state& p = it->second;
    p.available += std::min(amount, window_ - p.available);
    if (!p.stalled.empty() && !p.ready) {
      p.ready = true;
      ready_.push_back(peer);
    }
    forget_if_whole(it);
  }
  /// The oldest waiting message whose credit has come back, its credit taken; nullptr when
  /// none can go.
  message* take_ready() {
    while (!ready_.empty()) {
      auto it = peers_.find(ready_.front());
      peer_state& p = it->second;
      message* m = p.stalled.empty() ? nullptr : p.stalled.front();
      if (m && p.available >= cost(m->wire_size())) {
        p.available -= cost(m->wire_size());
        p.stalled.pop_front();
        --stalled_;
        return m;
      }
      p.ready = false;
      ready_.pop_front();
      forget_if_whole(it);
    }
    return nullptr;
  }
  /// Messages waiting for credit, all peers together.
  [[nodiscard]] std::size_t stalled() const noexcept { return stalled_; }

  // ---- the receiving side -----------------------------------------------------------------

  /// A message of `wire_bytes` from `peer` was handed to its node.
  void delivered(int peer, std::uint64_t wire_bytes) {
    std::uint64_t& owed = owed_[peer];
    const bool was_due = owed >= window_ / 2;
    owed += cost(wire_bytes);
    if (!was_due && owed >= window_ / 2) due_.push_back(peer);
  }
  /// Whether some peer is owed a grant of at least half a window.
  [[nodiscard]] bool grants_due() const noexcept { return !due_.empty(); }
  /// Calls `send_grant(peer, amount)` for each peer owed a grant, and forgets what it owed.
  template <class F>
  void grant_due(F&& send_grant) {
    for (const int peer : due_) {
      auto it = owed_.find(peer);
      send_grant(peer, it->second);
      owed_.erase(it);
    }
    due_.clear();
  }
  /// Of what is owed to `peer`, keeps up to `amount` back from grants until
  /// release_withheld() (a relay's records that have not left it yet).
  void withhold(int peer, std::uint64_t amount) {
    auto it = owed_.find(peer);
    if (it == owed_.end()) return;
    const std::uint64_t kept = std::min(amount, it->second);
    const bool was_due = it->second >= window_ / 2;
    it->second -= kept;
    withheld_[peer] += kept;
    // due_ lists exactly the peers owed half a window (delivered() adds them once).
    if (was_due && it->second < window_ / 2)
      due_.erase(std::remove(due_.begin(), due_.end(), peer), due_.end());
    if (it->second == 0) owed_.erase(it);
  }
  /// Whether some credit is withheld.
  [[nodiscard]] bool withholds() const noexcept { return !withheld_.empty(); }
  /// Owes again everything withheld (granted by the next grant_due or grant_all).
  void release_withheld() {
    for (const auto& [peer, amount] : withheld_) {
      std::uint64_t& owed = owed_[peer];
      const bool was_due = owed >= window_ / 2;
      owed += amount;
      if (!was_due && owed >= window_ / 2) due_.push_back(peer);
    }
    withheld_.clear();
  }

  /// Whether anything at all is owed (less than half a window included).
  [[nodiscard]] bool owes() const noexcept { return !owed_.empty(); }
  /// Grants everything owed, however little: a receiver does it when its traffic goes
  /// quiet, and now and then under traffic, so that neither side keeps state for long for
  /// a pair that no longer talks.
  template <class F>
  void grant_all(F&& send_grant) {
    for (const auto& [peer, amount] : owed_) send_grant(peer, amount);
    owed_.clear();
    due_.clear();
  }

 private:
  struct peer_state {
    std::uint64_t available;
    std::deque<message*> stalled;
    bool ready;  ///< queued in ready_
  };
  void forget_if_whole(std::unordered_map<int, peer_state>::iterator it) {
    if (it->second.available == window_ && it->second.stalled.empty() && !it->second.ready)
      peers_.erase(it);
  }

  const std::uint64_t window_;
  std::unordered_map<int, peer_state> peers_;  ///< peers with credit in use
  std::deque<int> ready_;                      ///< peers whose waiting messages may go
  std::size_t stalled_ = 0;
  std::unordered_map<int, std::uint64_t> owed_;      ///< delivered bytes not yet granted back
  std::vector<int> due_;                             ///< peers owed at least half a window
  std::unordered_map<int, std::uint64_t> withheld_;  ///< owed, kept back (withhold)
};

}  // namespace roam::detail

// Links between P ranks that are threads of one process, for testing the algorithms at
// every rank count without MPI: a send is copied into the receiver's mailbox at once, a
// receive is matched in complete(). Checks what the links promise: one message per tag
// and direction at a time, exact sizes; a wait that lasts 10 s is reported as a deadlock.
#pragma once

#include <roam/coll/detail/links.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace roam_test {

class mailboxes {
 public:
  using key = std::tuple<int, int, int>;  // from, to, tag
  void put(const key& k, std::vector<std::byte> bytes) {
    std::lock_guard guard(lock_);
    boxes_[k].push_back(std::move(bytes));
    arrived_.notify_all();
  }
  /// Takes the oldest message of `k`, waiting for it.
  std::vector<std::byte> take(const key& k) {
    std::unique_lock guard(lock_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (boxes_[k].empty())
      if (arrived_.wait_until(guard, deadline) == std::cv_status::timeout)
        throw std::runtime_error("deadlock: rank " + std::to_string(std::get<1>(k)) +
                                 " waits for tag " + std::to_string(std::get<2>(k)) +
                                 " from rank " + std::to_string(std::get<0>(k)));
    std::vector<std::byte> m = std::move(boxes_[k].front());
    boxes_[k].pop_front();
    return m;
  }
  /// Messages sent and never received.
  std::size_t left() {
    std::lock_guard guard(lock_);
    std::size_t n = 0;
    for (const auto& [k, q] : boxes_) n += q.size();
    return n;
  }

 private:
  std::mutex lock_;
  std::condition_variable arrived_;
  std::map<key, std::deque<std::vector<std::byte>>> boxes_;
};

class simulated_links final : public roam::coll::detail::links {
 public:
  simulated_links(mailboxes& boxes, int rank, int size) : boxes_(boxes), rank_(rank), size_(size) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void send(int peer, int tag, const std::byte* data, std::size_t bytes) override {
    check_peer(peer, bytes);
    boxes_.put({rank_, peer, tag}, std::vector<std::byte>(data, data + bytes));
  }
  void recv(int peer, int tag, std::byte* data, std::size_t bytes) override {
    check_peer(peer, bytes);
    for (const posted& p : posted_)
      if (p.peer == peer && p.tag == tag)
        throw std::runtime_error("two receives from one peer with one tag in a round");
    posted_.push_back({peer, tag, data, bytes});
  }
  void complete() override {
    std::vector<posted> now;
    now.swap(posted_);
    for (const posted& p : now) {
      const std::vector<std::byte> m = boxes_.take({p.peer, rank_, p.tag});
      if (m.size() != p.bytes)
        throw std::runtime_error("rank " + std::to_string(rank_) + " expected " +
                                 std::to_string(p.bytes) + " bytes from rank " +
                                 std::to_string(p.peer) + " (tag " + std::to_string(p.tag) +
                                 "), got " + std::to_string(m.size()));
      std::memcpy(p.data, m.data(), m.size());
    }
  }

 private:
  struct posted {
    int peer, tag;
    std::byte* data;
    std::size_t bytes;
  };
  void check_peer(int peer, std::size_t bytes) const {
    if (peer < 0 || peer >= size_ || peer == rank_ || bytes == 0)
      throw std::runtime_error("rank " + std::to_string(rank_) + " posts a transfer of " +
                               std::to_string(bytes) + " bytes with rank " + std::to_string(peer));
  }
  mailboxes& boxes_;
  int rank_, size_;
  std::vector<posted> posted_;
};

}  // namespace roam_test

// One or more nodes per MPI rank (mixed mode: rank r hosts nodes [r K, (r + 1) K)). A message
// between two nodes of one rank is delivered on the sending thread, as the inproc transport
// does, and never touches MPI; FIFO per (source, destination) holds on both paths.
//
// One thread at a time drives MPI (a try-lock around progress(): a dedicated
// communication thread, or whichever idle worker or waiting thread gets there first), so
// MPI_THREAD_SERIALIZED suffices. Only non-blocking calls are used. Payloads up to the
// frame size (mpi_transport_options::frame_payload_bytes: the inline threshold, raised to the size
// of an aggregation buffer) travel inside the header message; larger ones follow in chunks of
// at most payload_chunk_bytes (MPI counts are ints), whose exact receives the receiver posts,
// in order, when the header arrives (MPI matches messages of one source and tag in the order
// they were sent). Deliveries from
// one source are released in arrival order of their headers, so a small message never
// overtakes a large one sent before it (FIFO per source/destination pair). A credit window
// per pair of ranks (send_credits.hpp) bounds what one rank has in flight to another.
#include "mpi_check.hpp"
#include "mpi_window.hpp"
#include "send_credits.hpp"

#include <roam/transport/detail/backends.hpp>

#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/message_text.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace roam::detail {
namespace {

constexpr int tag_header = 7001;
constexpr int tag_data = 7002;
constexpr int tag_credit = 7003;  ///< a grant of send credit: one std::uint64_t of bytes
constexpr int tag_clock = 7004;   ///< clock alignment for traces, before any traffic

void abort_job() { MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE); }

MPI_Comm kept_communicator = MPI_COMM_NULL;

void finalize_at_exit() {
  int finalized = 0;
  if (const int rc = MPI_Finalized(&finalized); rc != MPI_SUCCESS || finalized) return;
  if (kept_communicator != MPI_COMM_NULL) MPI_Comm_free(&kept_communicator);
  // At exit nothing can stop the job any more: the failure is reported, not hidden.
  if (const int rc = MPI_Finalize(); rc != MPI_SUCCESS)
    std::fprintf(stderr, "%s\n", error_text("MPI_Finalize failed: " + mpi_error_text(rc)).c_str());
}

class mpi_transport final : public transport {
 public:
  mpi_transport(const mpi_transport_options& options, delivery_function deliver)
      : frame_payload_(options.frame_payload_bytes),
        direct_sends_(options.direct_sends),
        nodes_per_rank_(options.nodes_per_rank),
        deliver_(std::move(deliver)),
        receiver_overloaded_(options.receiver_overloaded),
        credits_(options.send_window_bytes) {
    int initialized = 0;
    check(MPI_Initialized(&initialized), "MPI_Initialized");
    int provided = 0;
    if (!initialized) {
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      std::atexit(finalize_at_exit);
    } else {
      check(MPI_Query_thread(&provided), "MPI_Query_thread");
    }
    set_job_abort_hook(abort_job);
    if (provided < MPI_THREAD_SERIALIZED)
      fatal("the MPI library provides thread level " + std::to_string(provided) +
            "; roam needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE");
    // One communicator for every run of the process. A grant of send credit may still be
    // on its way when a run ends (sent while a peer drained): freed and duplicated again,
    // the communicator's context is reused by MPI, and Open MPI's next MPI_Comm_dup hung
    // on such a message. Kept, the next run's credit receive takes it, and send_credits
    // ignores what it was not owed.
    if (kept_communicator == MPI_COMM_NULL) {
      check(MPI_Comm_dup(MPI_COMM_WORLD, &kept_communicator), "MPI_Comm_dup");
      // Errors on roam's communicator come back as codes so that roam can name them.
      check(MPI_Comm_set_errhandler(kept_communicator, MPI_ERRORS_RETURN),
            "MPI_Comm_set_errhandler");
    }
    comm_ = kept_communicator;
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    if (nodes_per_rank_ == 0 ||
        static_cast<std::uint64_t>(size_) * nodes_per_rank_ > std::uint64_t{1} << 31)
      fatal(std::to_string(size_) + " ranks x " + std::to_string(nodes_per_rank_) +
            " nodes per rank (--roam-nodes-per-rank) is not a valid number of nodes");
    MPI_Comm host;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host),
          "MPI_Comm_split_type");
    int host_size = 1, host_rank = 0;
    check(MPI_Comm_size(host, &host_size), "MPI_Comm_size");
    check(MPI_Comm_rank(host, &host_rank), "MPI_Comm_rank");
    host_index_ = static_cast<unsigned>(host_rank);
    check(MPI_Comm_free(&host), "MPI_Comm_free");
    host_processes_ = static_cast<unsigned>(host_size);
    ring_.resize(ring_slots);
    for (std::size_t i = 0; i < ring_.size(); ++i) post_receive(i);
    post_credit_receive();
  }

  ~mpi_transport() override {
    // Every process has passed process_barrier(): no frame will arrive any more (a late
    // grant of credit may: the next run's credit receive takes it).
    for (auto& slot : ring_) {
      check(MPI_Cancel(&slot.request), "MPI_Cancel");
      check(MPI_Wait(&slot.request, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    check(MPI_Cancel(&credit_request_), "MPI_Cancel");
    check(MPI_Wait(&credit_request_, MPI_STATUS_IGNORE), "MPI_Wait");
  }

  node_id size() const noexcept override { return static_cast<node_id>(size_) * nodes_per_rank_; }
  node_id first_local() const noexcept override {
    return static_cast<node_id>(rank_) * nodes_per_rank_;
  }
  node_id local_count() const noexcept override { return nodes_per_rank_; }
  unsigned processes_on_host() const noexcept override { return host_processes_; }
  unsigned index_on_host() const noexcept override { return host_index_; }
  const char* name() const noexcept override { return "mpi"; }
  bool needs_progress() const noexcept override { return true; }

  void send(message_ptr m) override {
    const int dest = rank_of(m->header.dest);
    if (dest == rank_) {
      deliver_(std::move(m), true);  // a node of this rank: MPI is not needed
      return;
    }
    seal(m->header);  // the header is checked by the receiving process
    if (direct_sends_ && !queued_.load(std::memory_order_acquire) && try_lock_progress()) {
      // Fast path: nobody drives MPI and nothing is queued before us, so starting the send
      // here keeps FIFO order and skips the queue.
      if (!queued_.load(std::memory_order_acquire) && backlog_.empty() &&
          send_requests_.size() + 2 <= max_requests_in_flight &&
          credits_.try_take(dest, m->wire_size())) {
        start_send(m.release());
        complete_sends();
        unlock_progress();
        return;
      }
      unlock_progress();
    }
    unsent_bytes_.fetch_add(m->wire_size(), std::memory_order_relaxed);
    if (m->relayed) relayed_unsent_bytes_.fetch_add(m->wire_size(), std::memory_order_relaxed);
    {
      std::lock_guard guard(out_lock_);
      outgoing_.push_back(m.release());
      queued_.store(true, std::memory_order_seq_cst);  // pairs with expose()'s unlock
    }
    if (direct_sends_) {
      // Start the send now if nobody else is driving MPI (seq_cst: see expose()).
      if (!progress_busy_.load(std::memory_order_seq_cst)) progress();
    } else if (comm_sleeping_.load()) {
      std::lock_guard guard(out_lock_);
      out_ready_.notify_one();
    }
  }

  void send_raw_for_testing(node_id dest, std::vector<std::byte> bytes) override {
    std::lock_guard guard(out_lock_);
    raw_outgoing_.push_back({rank_of(dest), tag_header, std::move(bytes)});
    queued_.store(true, std::memory_order_release);
  }
  void send_raw_payload_for_testing(node_id dest, std::vector<std::byte> bytes) override {
    std::lock_guard guard(out_lock_);
    raw_outgoing_.push_back({rank_of(dest), tag_data, std::move(bytes)});
    queued_.store(true, std::memory_order_release);
  }

  void idle_wait(std::chrono::microseconds max) override {
    std::unique_lock lock(out_lock_);
    comm_sleeping_.store(true);
    out_ready_.wait_for(lock, max, [this] { return !outgoing_.empty() || !raw_outgoing_.empty(); });
    comm_sleeping_.store(false);
  }

  bool progress() override {
    if (!try_lock_progress()) return false;
    // Grants come back now and then, and each MPI_Test that finds nothing drives all of
    // MPI's progress once: a spinning poller looks for them every 8th round, and at every
    // round while a send waits for one.
    bool did = (++progress_rounds_ & 7) == 0 || credits_.stalled() != 0 ? receive_credits() : false;
    did |= start_sends();
    did |= complete_sends();
    did |= receive();
    did |= complete_receives();
    did |= grant_credits(did);
    // Transfers in flight count as work: MPI moves large messages in steps that each need
    // a progress call, so a poller must not back off while any is under way.
    did |= live_sends_ > 0 || !backlog_.empty() || !waiting_.empty();
    unlock_progress();
    return did;
  }

  std::unique_ptr<exposed_memory> expose(std::uint64_t bytes) override {
    return make_mpi_window(
        comm_, rank_, bytes,
        [this] {
          while (!try_lock_progress()) std::this_thread::yield();
        },
        [this] {
          // A message queued while this thread held MPI for a one-sided copy (a reply a
          // worker sent meanwhile) leaves now, not at the next poll of a parked thread: a
          // thread busy with copies, which complete at once, never waits and polls. These
          // seq_cst accesses pair with send()'s: either this load sees the sender's queued_,
          // or the sender's load sees the lock free (a store then a load on each side,
          // which release and acquire alone let both miss). Not fences: ThreadSanitizer
          // does not model them.
          progress_busy_.store(false, std::memory_order_seq_cst);
          if (queued_.load(std::memory_order_seq_cst)) progress();
        });
  }

  void drain() override {
    for (;;) {
      progress();
      while (!try_lock_progress()) std::this_thread::yield();
      bool empty;
      {
        std::lock_guard out(out_lock_);
        empty = outgoing_.empty() && raw_outgoing_.empty();
      }
      const bool done = empty && live_sends_ == 0 && backlog_.empty() && credits_.stalled() == 0;
      unlock_progress();
      if (done) return;
    }
  }

  void validate_fingerprint(const std::string& fingerprint) override {
    int length = static_cast<int>(fingerprint.size());
    check(MPI_Bcast(&length, 1, MPI_INT, 0, comm_), "MPI_Bcast", 0);
    std::string root(static_cast<std::size_t>(length), '\0');
    if (rank_ == 0) root = fingerprint;
    check(MPI_Bcast(root.data(), length, MPI_CHAR, 0, comm_), "MPI_Bcast", 0);
    if (root == fingerprint) return;
    const fingerprint_difference d = first_difference(root, fingerprint);
    const auto side = [&](const std::optional<std::string>& line, const std::string& text) {
      return fingerprint_difference::describe(line, d.line, d.final_break_only,
                                              !text.empty() && text.back() == '\n');
    };
    // Not fatal(): no thread of this rank belongs to a node yet, and the line must name it.
    const std::string report =
        fatal_text(static_cast<long>(first_node_of(rank_)),
                   "this rank runs a different program than rank 0 (handler tables, global "
                   "node_locals or settings differ); first difference: rank 0 has " +
                       side(d.ours, root) + ", rank " + std::to_string(rank_) + " has " +
                       side(d.theirs, fingerprint));
    std::fprintf(stderr, "%s\n", report.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
  }

  clock_alignment align_clocks() override {
    // Rank 0 meets every other rank in turn: O(P) round trips, paid once at the start of a
    // traced job only (a tree would compound each level's error). The fastest of `rounds`
    // round trips bounds the error best.
    constexpr int rounds = 8;
    auto now = [] {
      return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count());
    };
    clock_alignment result;
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) {
        std::int64_t fastest = INT64_MAX, offset = 0;
        for (int i = 0; i < rounds; ++i) {
          const std::int64_t sent = now();
          check(MPI_Send(nullptr, 0, MPI_BYTE, r, tag_clock, comm_), "MPI_Send (clock alignment)",
                r);
          std::int64_t theirs = 0;
          check(MPI_Recv(&theirs, 1, MPI_INT64_T, r, tag_clock, comm_, MPI_STATUS_IGNORE),
                "MPI_Recv (clock alignment)", r);
          const std::int64_t back = now();
          if (back - sent < fastest) {
            fastest = back - sent;
            offset = theirs - (sent + (back - sent) / 2);
          }
        }
        check(MPI_Send(&offset, 1, MPI_INT64_T, r, tag_clock, comm_), "MPI_Send (clock alignment)",
              r);
      }
      result.epoch_ns = now();
    } else {
      for (int i = 0; i < rounds; ++i) {
        check(MPI_Recv(nullptr, 0, MPI_BYTE, 0, tag_clock, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv (clock alignment)", 0);
        const std::int64_t mine = now();
        check(MPI_Send(&mine, 1, MPI_INT64_T, 0, tag_clock, comm_), "MPI_Send (clock alignment)",
              0);
      }
      check(MPI_Recv(&result.offset_ns, 1, MPI_INT64_T, 0, tag_clock, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv (clock alignment)", 0);
    }
    check(MPI_Bcast(&result.epoch_ns, 1, MPI_INT64_T, 0, comm_), "MPI_Bcast", 0);
    return result;
  }

  void process_barrier() override {
    // Not MPI_Barrier: a peer may still be draining a send to this rank (an uncounted
    // message, such as a balancer's report sent before it stopped), and a payload larger
    // than a frame leaves only once this rank receives its header. Blocked in a barrier,
    // this rank would never receive it, and the peer would never reach the barrier.
    MPI_Request everyone = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm_, &everyone), "MPI_Ibarrier");
    for (;;) {
      int reached = 0;
      check(MPI_Test(&everyone, &reached, MPI_STATUS_IGNORE), "MPI_Test (the final barrier)");
      if (reached) break;
      if (!progress()) std::this_thread::yield();
    }
    // Every peer drained before it reached the barrier: the payloads whose headers arrived
    // are all on their way, and no receive may still be active when the communicator goes.
    // Grants sent while peers drained must leave before their buffers go.
    // Every peer has drained: nobody needs credit any more.
    closing_ = true;
    while (!waiting_.empty() || live_sends_ > 0) progress();
  }

  void hold_credit_for_relay(node_id source, std::uint64_t bytes) override {
    const int from = rank_of(source);
    if (from != rank_) credits_.withhold(from, credits_.cost(bytes));  // delivering: progress held
  }

  std::uint64_t unsent_bytes() const noexcept override {
    return unsent_bytes_.load(std::memory_order_relaxed);
  }

 private:
  struct send_slot {
    message* m;
    int remaining;
    int dest;  ///< for errors
    std::vector<std::byte> raw;
  };
  void check(int rc, const char* call, int peer = -1) const { check_mpi(rc, call, rank_, peer); }
  /// The rank hosting node `node`.
  [[nodiscard]] int rank_of(node_id node) const noexcept {
    return static_cast<int>(node / nodes_per_rank_);
  }
  [[nodiscard]] node_id first_node_of(int rank) const noexcept {
    return static_cast<node_id>(rank) * nodes_per_rank_;
  }

  struct posted_receive {
    message_ptr block;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  struct pending_receive {
    message_ptr m;
    /// The receives of a large payload's chunks, in order (none for a message that arrived
    /// whole), and how many of them completed.
    std::vector<MPI_Request> chunks;
    std::size_t chunks_done = 0;
  };

  void post_isend(const void* data, int bytes, int dest, int tag, std::size_t slot) {
    MPI_Request r;
    check(MPI_Isend(data, bytes, MPI_BYTE, dest, tag, comm_, &r), "MPI_Isend", dest);
    send_requests_.push_back(r);
    request_slot_.push_back(slot);
  }

  std::size_t new_slot(message* m, int remaining, int dest, std::vector<std::byte> raw = {}) {
    ++live_sends_;
    if (!free_slots_.empty()) {
      std::size_t s = free_slots_.back();
      free_slots_.pop_back();
      slots_[s] = send_slot{m, remaining, dest, std::move(raw)};
      return s;
    }
    slots_.push_back(send_slot{m, remaining, dest, std::move(raw)});
    return slots_.size() - 1;
  }

  // The progress lock: whoever holds it drives MPI. A flag rather than a mutex because it
  // is tried on every idle spin of every waiting thread.
  bool try_lock_progress() noexcept {
    return !progress_busy_.load(std::memory_order_relaxed) &&
           !progress_busy_.exchange(true, std::memory_order_acquire);
  }
  void unlock_progress() noexcept { progress_busy_.store(false, std::memory_order_release); }

  void start_send(message* m) {
    const int dest = rank_of(m->header.dest);
    if (m->header.payload_size <= frame_payload_) {
      post_isend(m->wire_data(), static_cast<int>(m->wire_size()), dest, tag_header,
                 new_slot(m, 1, dest));
    } else {
      const std::uint64_t size = m->header.payload_size;
      const std::size_t s = new_slot(m, 1 + static_cast<int>(chunk_count(size)), dest);
      post_isend(m->wire_data(), sizeof(message_header), dest, tag_header, s);
      for_each_chunk(size, [&](std::uint64_t at, int bytes, std::uint64_t) {
        post_isend(m->payload() + at, bytes, dest, tag_data, s);
      });
    }
  }

  bool start_sends() {
    if (queued_.load(std::memory_order_acquire)) {
      std::lock_guard guard(out_lock_);
      backlog_.insert(backlog_.end(), outgoing_.begin(), outgoing_.end());
      outgoing_.clear();
      raw_batch_.swap(raw_outgoing_);
      queued_.store(false, std::memory_order_relaxed);
    }
    // A bounded number of requests in flight keeps MPI_Testsome cheap; the backlog keeps
    // send order. Messages whose credit came back go first: they are older than anything
    // in the backlog for the same rank, which try_take() stalls behind them.
    bool did = false;
    auto room = [&] { return send_requests_.size() + 2 <= max_requests_in_flight; };
    while (room()) {
      message* m = credits_.take_ready();
      if (!m) break;
      start_unsent(m);
      did = true;
    }
    while (!backlog_.empty() && room()) {
      message* m = backlog_.front();
      backlog_.pop_front();
      const int dest = rank_of(m->header.dest);
      if (credits_.try_take(dest, m->wire_size())) {
        start_unsent(m);
        did = true;
      } else {
        credits_.stall(dest, m);
      }
    }
    for (auto& raw : raw_batch_) {
      std::size_t s = new_slot(nullptr, 1, raw.dest, std::move(raw.bytes));
      post_isend(slots_[s].raw.data(), static_cast<int>(slots_[s].raw.size()), raw.dest, raw.tag,
                 s);
    }
    did |= !raw_batch_.empty();
    raw_batch_.clear();
    return did;
  }

  void start_unsent(message* m) {
    unsent_bytes_.fetch_sub(m->wire_size(), std::memory_order_relaxed);
    if (m->relayed) relayed_unsent_bytes_.fetch_sub(m->wire_size(), std::memory_order_relaxed);
    start_send(m);
  }

  // ---- send credit (send_credits.hpp) ---------------------------------------------------
  void post_credit_receive() {
    check(MPI_Irecv(&credit_in_, sizeof credit_in_, MPI_BYTE, MPI_ANY_SOURCE, tag_credit, comm_,
                    &credit_request_),
          "MPI_Irecv (send credit)");
  }
  bool receive_credits() {
    bool did = false;
    for (;;) {
      int flag = 0;
      MPI_Status status;
      status.MPI_SOURCE = -1;
      check(MPI_Test(&credit_request_, &flag, &status), "MPI_Test (send credit)");
      if (!flag) return did;
      int count = 0;
      check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count", status.MPI_SOURCE);
      if (count != static_cast<int>(sizeof credit_in_))
        fatal("received a corrupt grant of send credit from rank " +
              std::to_string(status.MPI_SOURCE) + " (" + std::to_string(count) +
              " bytes instead of " + std::to_string(sizeof credit_in_) + ")");
      credits_.add(status.MPI_SOURCE, credit_in_);
      post_credit_receive();
      did = true;
    }
  }
  /// Grants credit back: half a window or more as soon as it is owed; whatever is owed at
  /// all once this rank's traffic has been quiet for a millisecond, and under traffic every
  /// 4096 busy progress rounds (so that a pair that stopped talking keeps no state, on
  /// either side, however busy the receiver is with others); neither while this process's
  /// nodes have too much queued (the rounds count on meanwhile). The clock is read only in
  /// every 64th quiet round: in a busy one it cost as much as the round on this machine's
  /// virtual clock, in every quiet one a tenth of a waiting thread's samples; and granting
  /// small amounts every millisecond flooded MPI: a 16-rank all-to-all ran 3 to 4 times
  /// slower.
  bool grant_credits(bool busy) {
    auto send_grant = [&](int peer, std::uint64_t amount) {
      std::vector<std::byte> bytes(sizeof amount);
      std::memcpy(bytes.data(), &amount, sizeof amount);
      const std::size_t s = new_slot(nullptr, 1, peer, std::move(bytes));
      post_isend(slots_[s].raw.data(), sizeof amount, peer, tag_credit, s);
    };
    if (credits_.withholds() &&
        relayed_unsent_bytes_.load(std::memory_order_relaxed) <= credits_.window())
      credits_.release_withheld();
    if (closing_ || !credits_.owes()) return false;
    const bool due = credits_.grants_due();
    if (!due) {
      using clock = std::chrono::steady_clock;
      if (busy) {
        quiet_since_ = {};
        quiet_rounds_ = 0;
        if (++busy_rounds_ < 4096) return false;
      } else {
        // The first look starts the quiet millisecond; a look at least that long after grants.
        if ((++quiet_rounds_ & 63) != 0) return false;
        const auto now = clock::now();
        if (quiet_since_ == clock::time_point{}) quiet_since_ = now;
        if (now - quiet_since_ < std::chrono::milliseconds(1)) return false;
      }
    }
    if (receiver_overloaded_ && receiver_overloaded_()) return false;
    if (due) {
      credits_.grant_due(send_grant);
      return true;
    }
    credits_.grant_all(send_grant);
    quiet_since_ = {};
    quiet_rounds_ = 0;
    busy_rounds_ = 0;
    return true;
  }

  bool complete_sends() {
    if (send_requests_.empty()) return false;
    // Sends complete roughly in the order they started: testing the oldest few keeps a
    // progress call cheap when hundreds are in flight (MPI_Testsome looks at each).
    const std::size_t window = std::min<std::size_t>(send_requests_.size(), test_window);
    int done = 0;
    indices_.resize(window);
    statuses_.resize(window);
    const int rc = MPI_Testsome(static_cast<int>(window), send_requests_.data(), &done,
                                indices_.data(), statuses_.data());
    int error_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
    if (error_class == MPI_ERR_IN_STATUS) {
      // Name the send that failed: its destination, and MPI's cause.
      for (int i = 0; i < done; ++i) {
        const auto& status = statuses_[static_cast<std::size_t>(i)];
        if (status.MPI_ERROR != MPI_SUCCESS)
          check(
              status.MPI_ERROR, "a send (MPI_Testsome)",
              slots_[request_slot_[static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)])]]
                  .dest);
      }
    }
    check(rc, "MPI_Testsome");
    if (done <= 0) return false;  // includes MPI_UNDEFINED (no active requests)
    for (int i = 0; i < done; ++i) {
      std::size_t s =
          request_slot_[static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)])];
      if (--slots_[s].remaining == 0) {
        if (slots_[s].m) message_deleter{}(slots_[s].m);
        slots_[s] = send_slot{nullptr, 0, -1, {}};
        free_slots_.push_back(s);
        --live_sends_;
      }
    }
    // Drop completed (now MPI_REQUEST_NULL) entries, keeping the rest in order.
    std::size_t keep = 0;
    for (std::size_t i = 0; i < send_requests_.size(); ++i)
      if (send_requests_[i] != MPI_REQUEST_NULL) {
        send_requests_[keep] = send_requests_[i];
        request_slot_[keep] = request_slot_[i];
        ++keep;
      }
    send_requests_.resize(keep);
    request_slot_.resize(keep);
    return true;
  }

  // Header frames are received into a ring of pre-posted receives: MPI then copies an
  // arriving frame straight into a message block instead of through its unexpected-message
  // queue (what MPI_Improbe + MPI_Mrecv would cost). All frames share one tag and any
  // source, so MPI matches them to the receives in posting order: testing the oldest
  // posted receive is enough, and frames are handled in arrival order.
  void post_receive(std::size_t slot) {
    ring_[slot].block = message::allocate(frame_payload_);
    repost_receive(slot);
  }
  void repost_receive(std::size_t slot) {
    check(MPI_Irecv(ring_[slot].block->wire_data(), frame_bytes(), MPI_BYTE, MPI_ANY_SOURCE,
                    tag_header, comm_, &ring_[slot].request),
          "MPI_Irecv");
  }
  int frame_bytes() const noexcept {
    return static_cast<int>(sizeof(message_header) + frame_payload_);
  }

  bool receive() {
    bool did = false;
    for (int k = 0; k < 64; ++k) {
      posted_receive& slot = ring_[ring_head_];
      int flag = 0;
      MPI_Status status;
      status.MPI_SOURCE = -1;  // filled only when the receive completes
      const int rc = MPI_Test(&slot.request, &flag, &status);
      if (rc != MPI_SUCCESS) {
        int error_class = 0;
        MPI_Error_class(rc, &error_class);
        if (error_class == MPI_ERR_TRUNCATE)
          fatal("received a frame larger than the " + std::to_string(frame_bytes()) +
                "-byte header frame from rank " + std::to_string(status.MPI_SOURCE) +
                " (corrupt, or a peer with different --roam-inline-bytes, --roam-aggregate-bytes "
                "or --roam-aggregate-growth)");
        check(rc, "MPI_Test (a header frame)", status.MPI_SOURCE);
      }
      if (!flag) break;
      did = true;
      int count = 0;
      check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count", status.MPI_SOURCE);
      const auto bytes = static_cast<std::size_t>(count);
      message_ptr m;
      if (bytes <= sizeof(message_header) + pooled_payload_capacity &&
          slot.block->capacity() > pooled_payload_capacity) {
        // Frames are sized for a full aggregation bundle
        // (mpi_transport_options::frame_payload_bytes): a small message is copied into a pooled
        // block and its frame posted again, which costs less than a fresh frame from the
        // large-block cache.
        m = message::allocate(bytes > sizeof(message_header) ? bytes - sizeof(message_header) : 0);
        std::memcpy(m->wire_data(), slot.block->wire_data(), bytes);
        repost_receive(ring_head_);
      } else {
        m = std::move(slot.block);
        post_receive(ring_head_);
      }
      ring_head_ = (ring_head_ + 1) % ring_.size();
      handle_frame(std::move(m), bytes, status.MPI_SOURCE);
    }
    return did;
  }

  void handle_frame(message_ptr m, std::size_t bytes, int source) {
    if (bytes < sizeof(message_header))
      message_from_wire(m->wire_data(), bytes, first_node_of(source));  // fatal
    const message_header& h = m->header;
    const std::size_t payload = bytes - sizeof(message_header);
    pending_receive p;
    if (h.payload_size != payload) {
      // A header alone announcing a large payload starts a split-phase receive; anything
      // else is a truncated or corrupt frame. Check the header before trusting its size.
      bool split = payload == 0 && h.payload_size > frame_payload_ && h.magic == message_magic &&
                   h.checksum == header_checksum(h) && h.payload_size <= max_payload_bytes;
      if (!split)
        fatal("received a truncated or corrupt message from rank " + std::to_string(source) +
              ": its header announces " + std::to_string(h.payload_size) + " payload bytes but " +
              std::to_string(payload) + " arrived");
      message::reserve(m, h.payload_size, 0);
      const std::uint64_t size = m->header.payload_size;
      p.chunks.resize(chunk_count(size), MPI_REQUEST_NULL);
      for_each_chunk(size, [&](std::uint64_t at, int bytes, std::uint64_t i) {
        check(MPI_Irecv(m->payload() + at, bytes, MPI_BYTE, source, tag_data, comm_, &p.chunks[i]),
              "MPI_Irecv", source);
      });
    }
    auto queue = waiting_.find(source);
    if (queue == waiting_.end() && p.chunks.empty()) {
      deliver_from(source, std::move(m));
      return;
    }
    p.m = std::move(m);
    if (queue == waiting_.end()) queue = waiting_.try_emplace(source).first;
    queue->second.push_back(std::move(p));
  }

  void deliver_from(int source, message_ptr m) {
    credits_.delivered(source, m->wire_size());
    deliver_(std::move(m), false);
  }

  bool complete_receives() {
    bool did = false;
    for (auto next = waiting_.begin(); next != waiting_.end();) {
      const int source = next->first;
      auto& queue = next->second;
      while (!queue.empty()) {
        auto& front = queue.front();
        while (front.chunks_done < front.chunks.size()) {
          int flag = 0;
          MPI_Status status;
          const int rc = MPI_Test(&front.chunks[front.chunks_done], &flag, &status);
          if (rc != MPI_SUCCESS) {
            int error_class = 0;
            MPI_Error_class(rc, &error_class);
            if (error_class == MPI_ERR_TRUNCATE)
              fatal("the payload of a message from rank " + std::to_string(source) +
                    " is larger than the " + std::to_string(front.m->header.payload_size) +
                    " bytes its header announced (corrupt, or a peer running another program)");
            check(rc, "MPI_Test (a payload)", source);
          }
          if (!flag) break;
          ++front.chunks_done;
        }
        if (front.chunks_done < front.chunks.size()) break;  // the rest waits behind it
        deliver_from(source, std::move(front.m));
        queue.pop_front();
        did = true;
      }
      next = queue.empty() ? waiting_.erase(next) : std::next(next);
    }
    return did;
  }

  MPI_Comm comm_{};
  int rank_ = -1, size_ = 1;  ///< -1 until MPI_Comm_rank answered
  unsigned host_processes_ = 1;
  unsigned host_index_ = 0;
  const std::uint32_t frame_payload_;  ///< options.frame_payload_bytes: inline up to this
  const bool direct_sends_;
  const node_id nodes_per_rank_;
  delivery_function deliver_;
  const std::function<bool()> receiver_overloaded_;

  std::mutex out_lock_;
  std::condition_variable out_ready_;
  std::atomic<bool> comm_sleeping_{false};
  std::atomic<bool> queued_{false};
  std::vector<message*> outgoing_;
  struct raw_send {
    int dest;
    int tag;
    std::vector<std::byte> bytes;
  };
  std::vector<raw_send> raw_outgoing_, raw_batch_;

  std::atomic<bool> progress_busy_{false};  // whoever holds it drives MPI; guards all below
  static constexpr std::size_t max_requests_in_flight = 1024;
  /// A large payload travels in chunks of this size at most (an MPI count is an int).
  static constexpr std::uint64_t payload_chunk_bytes = std::uint64_t{1} << 30;
  static std::uint64_t chunk_count(std::uint64_t payload) noexcept {
    return (payload + payload_chunk_bytes - 1) / payload_chunk_bytes;
  }
  /// Calls f(offset, bytes, index) for each chunk of a payload of `size` bytes, in order:
  /// how both sides split it.
  template <class F>
  static void for_each_chunk(std::uint64_t size, F&& f) {
    for (std::uint64_t at = 0, i = 0; at < size; at += payload_chunk_bytes, ++i)
      f(at, static_cast<int>(std::min(payload_chunk_bytes, size - at)), i);
  }
  static constexpr std::size_t test_window = 64;
  std::deque<message*> backlog_;  // sends waiting for a free request slot, in order
  std::vector<MPI_Request> send_requests_;
  std::vector<std::size_t> request_slot_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::vector<send_slot> slots_;
  std::vector<std::size_t> free_slots_;
  std::size_t live_sends_ = 0;
  static constexpr std::size_t ring_slots = 64;
  std::vector<posted_receive> ring_;
  std::size_t ring_head_ = 0;  // the oldest posted receive
  /// The sources with a large message whose payload is still arriving, and what arrived from
  /// each behind it (held back for FIFO order). Made when needed and erased when drained: an
  /// empty std::deque costs about 0.6 KB, which per source rank would be O(P) per rank.
  std::unordered_map<int, std::deque<pending_receive>> waiting_;
  send_credits credits_;
  std::uint64_t credit_in_ = 0;  ///< the posted receive of a grant
  MPI_Request credit_request_ = MPI_REQUEST_NULL;
  unsigned busy_rounds_ = 0;      ///< busy progress rounds since everything owed was granted
  unsigned quiet_rounds_ = 0;     ///< quiet progress rounds since the last busy one
  unsigned progress_rounds_ = 0;  ///< progress() calls that took the progress lock
  std::chrono::steady_clock::time_point quiet_since_{};  ///< no traffic since (else 0)
  std::atomic<std::uint64_t> unsent_bytes_{0};
  std::atomic<std::uint64_t> relayed_unsent_bytes_{0};  ///< of messages marked `relayed`
  bool closing_ = false;                                ///< past the final barrier: no more grants
};

}  // namespace

std::unique_ptr<transport> make_mpi_transport(const mpi_transport_options& options,
                                              delivery_function deliver) {
  return std::make_unique<mpi_transport>(options, std::move(deliver));
}

}  // namespace roam::detail

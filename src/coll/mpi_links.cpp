// The collectives' links over a plain MPI communicator: a duplicate of it, cached as an
// attribute of the communicator (MPI's own mechanism for a library's per-communicator
// state), so that the collectives' messages never meet the application's.
#include <roam/base/error.hpp>
#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/model_probe.hpp>
#include <roam/coll/mpi.hpp>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace roam::coll::mpi::detail {

namespace {

std::string mpi_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

class mpi_links final : public roam::coll::detail::links {
 public:
  explicit mpi_links(MPI_Comm comm) : user_(comm) {
    const char* file = std::getenv("ROAM_COLL_TUNING");
    rules_from_file_ = file && *file;
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup", -1);
    try {
      check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
      check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", -1);
      check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", -1);
      ppn_ = count_processes_per_node();
    } catch (...) {
      MPI_Comm_free(&comm_);
      throw;
    }
  }
  ~mpi_links() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  /// The application's communicator these links serve.
  MPI_Comm user() const noexcept { return user_; }
  mpi_links(const mpi_links&) = delete;
  mpi_links& operator=(const mpi_links&) = delete;

  int rank() const noexcept override { return rank_; }
  std::uint64_t processes_per_node() const noexcept override { return ppn_; }

  // The rules of the file ROAM_COLL_TUNING names, or rules from a cost model measured on
  // this communicator at its first automatic call (collective, so every rank probes and
  // gets rank 0's measurement: every rank must choose alike).
  const tuning_rules& rules() const override {
    if (rules_from_file_) return roam::coll::detail::default_rules();
    if (!probed_) probed_ = rules_from(model());
    return *probed_;
  }
  /// The measured model (collective at its first call on the communicator).
  const cost_model& model() const {
    if (!model_) model_ = measured_model();
    return *model_;
  }
  int size() const noexcept override { return size_; }

  // More than INT_MAX bytes go as several messages of one tag: both sides cut alike, and
  // MPI keeps their order.
  void send(int peer, int tag, const std::byte* data, std::size_t bytes) override {
    for (std::size_t at = 0; at < bytes; at += piece) {
      MPI_Request& r = requests_.emplace_back(MPI_REQUEST_NULL);
      posted(MPI_Isend(data + at, piece_size(bytes - at), MPI_BYTE, peer, tag, comm_, &r),
             "MPI_Isend", peer);
    }
  }
  void recv(int peer, int tag, std::byte* data, std::size_t bytes) override {
    for (std::size_t at = 0; at < bytes; at += piece) {
      MPI_Request& r = requests_.emplace_back(MPI_REQUEST_NULL);
      posted(MPI_Irecv(data + at, piece_size(bytes - at), MPI_BYTE, peer, tag, comm_, &r),
             "MPI_Irecv", peer);
    }
  }
  void complete() override {
    if (requests_.empty()) return;
    statuses_.resize(requests_.size());
    const int code =
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), statuses_.data());
    if (code == MPI_SUCCESS) {
      requests_.clear();
      return;
    }
    int failed = code, peer = -1;
    if (code == MPI_ERR_IN_STATUS)
      for (std::size_t i = 0; i < requests_.size(); ++i)
        if (statuses_[i].MPI_ERROR != MPI_SUCCESS && statuses_[i].MPI_ERROR != MPI_ERR_PENDING) {
          failed = statuses_[i].MPI_ERROR;
          peer = statuses_[i].MPI_SOURCE;
          break;
        }
    abandon_requests();
    check(failed, "MPI_Waitall", peer);
  }

 private:
  static constexpr std::size_t piece = std::size_t{1} << 30;
  /// Above every round's tag (tag_of: fewer than 6 x 64).
  static constexpr int probe_tag = 1000;

  /// Ranks per shared-memory node, on average (rounded).
  std::uint64_t count_processes_per_node() {
    MPI_Comm local = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type", -1);
    int local_rank = 0;
    check(MPI_Comm_rank(local, &local_rank), "MPI_Comm_rank", -1);
    MPI_Comm_free(&local);
    int leader = local_rank == 0 ? 1 : 0, nodes = 0;
    check(MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm_), "MPI_Allreduce", -1);
    return static_cast<std::uint64_t>((size_ + nodes / 2) / std::max(nodes, 1));
  }

  /// The cost model: ROAM_COLL_MODEL's, or measured over these links (model_probe.cpp).
  /// The probe's transfers go through this object; rules() is const only for callers.
  cost_model measured_model() const {
    return probe_model(const_cast<mpi_links&>(*this), probe_tag);
  }
  /// A transfer just posted: on failure the round's other transfers are withdrawn first
  /// (their buffers belong to the algorithm, which unwinds), then the error is thrown.
  void posted(int code, const char* call, int peer) {
    if (code == MPI_SUCCESS) return;
    requests_.back() = MPI_REQUEST_NULL;
    abandon_requests();
    check(code, call, peer);
  }
  /// Cancels and completes every outstanding request, so that MPI no longer touches the
  /// buffers; the communicator stays usable for the next call.
  void abandon_requests() noexcept {
    for (MPI_Request& r : requests_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    requests_.clear();
  }
  static int piece_size(std::size_t left) noexcept {
    return static_cast<int>(left < piece ? left : piece);
  }
  void check(int code, const char* call, int peer) const {
    if (code == MPI_SUCCESS) return;
    throw error(errc::communication, std::string("roam::coll over MPI: ") + call +
                                         (peer >= 0 ? " with rank " + std::to_string(peer) : "") +
                                         " failed on rank " + std::to_string(rank_) + ": " +
                                         mpi_text(code));
  }

  MPI_Comm user_ = MPI_COMM_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1, size_ = 0;
  std::uint64_t ppn_ = 1;
  bool rules_from_file_ = false;  ///< ROAM_COLL_TUNING was set when the links were made
  mutable std::optional<cost_model> model_;
  mutable std::optional<tuning_rules> probed_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

// Every links object alive, so that MPI_Finalize frees them: MPI promises to delete the
// attributes of MPI_COMM_SELF first at MPI_Finalize, but not those of MPI_COMM_WORLD (Open
// MPI skips them), whose duplicate would otherwise leak.
struct live_links {
  std::mutex lock;
  std::vector<mpi_links*> all;
};
live_links& live() {
  static auto* l = new live_links;  // never destroyed: MPI_Finalize may run after statics
  return *l;
}

int delete_links(MPI_Comm, int, void* value, void*) {
  auto* links = static_cast<mpi_links*>(value);
  {
    live_links& l = live();
    std::lock_guard guard(l.lock);
    l.all.erase(std::remove(l.all.begin(), l.all.end(), links), l.all.end());
  }
  delete links;
  return MPI_SUCCESS;
}

int links_key() {
  // Made once, never freed: MPI frees keyvals at MPI_Finalize.
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_links, &k, nullptr) != MPI_SUCCESS)
      throw error(errc::communication, "roam::coll over MPI: MPI_Comm_create_keyval failed");
    return k;
  }();
  return key;
}

// MPI_COMM_SELF's attribute, deleted first at MPI_Finalize: frees the links still alive.
int free_live_links(MPI_Comm, int, void*, void*) {
  std::vector<mpi_links*> left;
  {
    live_links& l = live();
    std::lock_guard guard(l.lock);
    left = l.all;
  }
  for (mpi_links* links : left) MPI_Comm_delete_attr(links->user(), links_key());
  return MPI_SUCCESS;
}

void free_links_at_finalize() {
  static const bool registered = [] {
    int key = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_live_links, &key, nullptr) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr) != MPI_SUCCESS)
      throw error(errc::communication,
                  "roam::coll over MPI: cannot register the clean-up at MPI_Finalize");
    return true;
  }();
  (void)registered;
}

mpi_links& mpi_links_of(MPI_Comm comm);

}  // namespace

roam::coll::detail::links& links_of(MPI_Comm comm) { return mpi_links_of(comm); }

namespace {

mpi_links& mpi_links_of(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw usage_error(std::string("roam::coll::mpi: called ") +
                      (initialized ? "after MPI_Finalize" : "before MPI_Init"));
  free_links_at_finalize();
  const int key = links_key();
  void* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS)
    throw usage_error("roam::coll::mpi: the communicator is not valid");
  if (found) return *static_cast<mpi_links*>(value);
  auto made = std::make_unique<mpi_links>(comm);
  if (MPI_Comm_set_attr(comm, key, made.get()) != MPI_SUCCESS)
    throw error(errc::communication, "roam::coll over MPI: MPI_Comm_set_attr failed");
  live_links& l = live();
  std::lock_guard guard(l.lock);
  l.all.push_back(made.get());
  return *made.release();
}

}  // namespace

}  // namespace roam::coll::mpi::detail

namespace roam::coll::mpi {

cost_model measured_model(MPI_Comm comm) { return detail::mpi_links_of(comm).model(); }

}  // namespace roam::coll::mpi

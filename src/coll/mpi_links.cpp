// The collectives' links over a plain MPI communicator: a duplicate of it, cached as an
// attribute of the communicator (MPI's own mechanism for a library's per-communicator
// state), so that the collectives' messages never meet the application's.
#include <roam/base/error.hpp>
#include <roam/coll/mpi.hpp>

#include <climits>
#include <memory>
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
  explicit mpi_links(MPI_Comm comm) {
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup", -1);
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", -1);
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", -1);
  }
  ~mpi_links() override { MPI_Comm_free(&comm_); }
  mpi_links(const mpi_links&) = delete;
  mpi_links& operator=(const mpi_links&) = delete;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  // More than INT_MAX bytes go as several messages of one tag: both sides cut alike, and
  // MPI keeps their order.
  void send(int peer, int tag, const std::byte* data, std::size_t bytes) override {
    for (std::size_t at = 0; at < bytes; at += piece) {
      MPI_Request& r = requests_.emplace_back(MPI_REQUEST_NULL);
      check(MPI_Isend(data + at, piece_size(bytes - at), MPI_BYTE, peer, tag, comm_, &r),
            "MPI_Isend", peer);
    }
  }
  void recv(int peer, int tag, std::byte* data, std::size_t bytes) override {
    for (std::size_t at = 0; at < bytes; at += piece) {
      MPI_Request& r = requests_.emplace_back(MPI_REQUEST_NULL);
      check(MPI_Irecv(data + at, piece_size(bytes - at), MPI_BYTE, peer, tag, comm_, &r),
            "MPI_Irecv", peer);
    }
  }
  void complete() override {
    if (requests_.empty()) return;
    statuses_.resize(requests_.size());
    const int code =
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), statuses_.data());
    const std::size_t n = requests_.size();
    requests_.clear();
    if (code == MPI_SUCCESS) return;
    for (std::size_t i = 0; i < n; ++i)
      if (code == MPI_ERR_IN_STATUS && statuses_[i].MPI_ERROR != MPI_SUCCESS &&
          statuses_[i].MPI_ERROR != MPI_ERR_PENDING)
        check(statuses_[i].MPI_ERROR, "MPI_Waitall", statuses_[i].MPI_SOURCE);
    check(code, "MPI_Waitall", -1);
  }

 private:
  static constexpr std::size_t piece = std::size_t{1} << 30;
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

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1, size_ = 0;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

int delete_links(MPI_Comm, int, void* value, void*) {
  delete static_cast<mpi_links*>(value);
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

}  // namespace

roam::coll::detail::links& links_of(MPI_Comm comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw usage_error("roam::coll::mpi: called before MPI_Init");
  const int key = links_key();
  void* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS)
    throw usage_error("roam::coll::mpi: the communicator is not valid");
  if (found) return *static_cast<mpi_links*>(value);
  auto made = std::make_unique<mpi_links>(comm);
  if (MPI_Comm_set_attr(comm, key, made.get()) != MPI_SUCCESS)
    throw error(errc::communication, "roam::coll over MPI: MPI_Comm_set_attr failed");
  return *made.release();
}

}  // namespace roam::coll::mpi::detail

// The collectives over a plain MPI communicator, with no roam runtime: every algorithm,
// radix, root and size on MPI_COMM_WORLD and on a split of it, checked against a serial
// reference; the typed calls; and the application's own messages on the same
// communicator, which the collectives must leave alone.
//
//   mpiexec -n N coll_mpi_test     (exit status 0 when every rank found everything right)
#include "collective_cases.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/mpi.hpp>

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace roam_test;
namespace mpi = roam::coll::mpi;

std::vector<std::string> typed_calls(MPI_Comm comm) {
  std::vector<std::string> failures;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::vector<double> mine{1.0 * rank, 2.0 * rank, 0.5};
  std::vector<double> sum(3);
  mpi::allreduce(comm, mine.data(), sum.data(), 3, std::plus<>{},
                 {algorithm::recursive_multiplying, 3});
  const double ranks = size * (size - 1) / 2.0;
  if (sum != std::vector<double>{ranks, 2 * ranks, 0.5 * size})
    failures.push_back("typed allreduce of doubles");
  int top = 0;
  const int me = rank * 7 % (size + 1);
  mpi::allreduce(comm, &me, &top, 1,
                 roam::coll::commutative{[](int a, int b) { return std::max(a, b); }});
  int want = 0;
  for (int r = 0; r < size; ++r) want = std::max(want, r * 7 % (size + 1));
  if (top != want) failures.push_back("typed allreduce with a commutative max");
  std::vector<int> all(static_cast<std::size_t>(size));
  mpi::allgather(comm, &rank, all.data(), 1, {algorithm::knomial, 4});
  std::vector<int> iota(static_cast<std::size_t>(size));
  std::iota(iota.begin(), iota.end(), 0);
  if (all != iota) failures.push_back("typed allgather");
  long word = rank == size - 1 ? 424242 : 0;
  mpi::bcast(comm, &word, 1, size - 1);
  if (word != 424242) failures.push_back("typed bcast");
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::string> failures;
  // An application message posted before the collectives, on their tags' range: it must
  // still be there for its own receive afterwards.
  int app_in = -1;
  MPI_Request app{};
  const int app_out = 1000 + rank;
  MPI_Irecv(&app_in, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &app);
  MPI_Send(&app_out, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
  // ROAM_COLL_MODEL=broken: the first automatic call names the setting, on every rank.
  if (const char* model = std::getenv("ROAM_COLL_MODEL"); model && std::string(model) == "broken") {
    int sum = 0;
    try {
      mpi::allreduce(MPI_COMM_WORLD, &rank, &sum, 1, std::plus<>{});
      failures.push_back("a malformed ROAM_COLL_MODEL was accepted");
    } catch (const roam::config_error& e) {
      if (std::string(e.what()).find("ROAM_COLL_MODEL='broken': expected three or four") ==
          std::string::npos)
        failures.push_back(std::string("unexpected error text: ") + e.what());
    }
    MPI_Wait(&app, MPI_STATUS_IGNORE);  // the neighbour's message, sent above
    for (const auto& f : failures) std::fprintf(stderr, "rank %d: FAIL %s\n", rank, f.c_str());
    int bad = failures.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any) std::printf("coll over MPI: a malformed model is refused\n");
    MPI_Finalize();
    return any;
  }
  try {
    auto& world = mpi::detail::links_of(MPI_COMM_WORLD);
    // Every rank of these tests runs on this machine.
    if (world.processes_per_node() != static_cast<std::uint64_t>(size))
      failures.push_back("processes per node " + std::to_string(world.processes_per_node()) +
                         ", not " + std::to_string(size));
    const roam::coll::cost_model model = mpi::measured_model(MPI_COMM_WORLD);
    double mine[4] = {model.alpha_us, model.beta_us_per_byte, model.gamma_us_per_byte,
                      model.overhead_us},
           top[4];
    MPI_Allreduce(mine, top, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < 4; ++i)
      if (top[i] != mine[i] || !(mine[i] >= 0))
        failures.push_back("the measured model differs between ranks or is negative");
    if (const char* given = std::getenv("ROAM_COLL_MODEL");
        given && std::string(given) == "1.5,0.001,0.002,0.3" &&
        (mine[0] != 1.5 || mine[1] != 0.001 || mine[2] != 0.002 || mine[3] != 0.3))
      failures.push_back("ROAM_COLL_MODEL was not taken");
    for (auto& f : case_runner(world).run_all()) failures.push_back("world: " + f);
    for (auto& f : typed_calls(MPI_COMM_WORLD)) failures.push_back("world: " + f);
    // A communicator of the odd and of the even ranks, with ranks of their own.
    MPI_Comm half = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    for (auto& f : case_runner(mpi::detail::links_of(half)).run_all())
      failures.push_back("half: " + f);
    for (auto& f : typed_calls(half)) failures.push_back("half: " + f);
    MPI_Comm_free(&half);  // frees its links too
    try {
      std::byte b{};
      mpi::bcast(MPI_COMM_WORLD, &b, 1, size);
      failures.push_back("a root outside the communicator was accepted");
    } catch (const roam::usage_error& e) {
      if (std::string(e.what()).find("root " + std::to_string(size) + " is not one of") ==
          std::string::npos)
        failures.push_back(std::string("unexpected error text: ") + e.what());
    }
  } catch (const std::exception& e) {
    failures.push_back(std::string("threw: ") + e.what());
  }
  MPI_Wait(&app, MPI_STATUS_IGNORE);
  if (app_in != 1000 + (rank + size - 1) % size)
    failures.push_back("the application's message was lost or changed");
  for (std::size_t i = 0; i < failures.size() && i < 20; ++i)
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, failures[i].c_str());
  int bad = failures.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any) std::printf("coll over MPI: every case right on %d ranks\n", size);
  MPI_Finalize();
  return any;
}

// Sparse triangular solve by fan-out of partial sums (examples/gas/sptrsv.hpp), checked
// against a serial solve.
//
//   ./build/default/examples/sptrsv --poisson2d 200 --roam-nodes 4
//   mpiexec -n 2 ./build/default/examples/sptrsv --poisson3d 40
//   ./build/default/examples/sptrsv --matrix some.mtx
#include "gas/sptrsv.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "sptrsv: %s\nusage: sptrsv [--poisson2d SIDE | --poisson3d SIDE | --matrix FILE.mtx] "
      "[roam flags]\n",
      why.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  roam::config cfg = roam::config::from_args(argc, argv);
  std::string what = "ILU(0) of the 2-D Poisson matrix, side 100";
  sptrsv::lower_matrix l;
  bool chosen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    try {
      if (a == "--poisson2d" || a == "--poisson3d") {
        const int dimensions = a == "--poisson2d" ? 2 : 3;
        const bool digits =
            !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) usage("not a grid side: " + v);
        l = sptrsv::poisson_ilu0(static_cast<std::uint32_t>(std::stoul(v)), dimensions);
        what = "ILU(0) of the " + std::to_string(dimensions) + "-D Poisson matrix, side " + v;
      } else if (a == "--matrix") {
        l = sptrsv::read_matrix_market(v);
        what = "the lower triangle of " + v;
      } else {
        usage("unknown option " + a);
      }
    } catch (const std::exception& e) {
      usage(e.what());
    }
    chosen = true;
  }
  if (!chosen) l = sptrsv::poisson_ilu0(100, 2);
  const std::vector<double> b = sptrsv::right_hand_side(l.n);
  return roam::run(cfg, [&] {
    sptrsv::prepare(l, b);
    roam::barrier();
    const auto start = std::chrono::steady_clock::now();
    sptrsv::solve_roam();
    roam::barrier();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const auto parts = roam::gather(sptrsv::stripes.local().x, 0);
    if (roam::this_node() != 0) return;
    std::vector<double> x;
    for (const auto& p : parts) x.insert(x.end(), p.begin(), p.end());
    const double error = sptrsv::relative_error(x, sptrsv::solve_serial(l, b));
    std::printf(
        "sptrsv: %s, %u rows, %zu nonzeros, %u nodes: %.3f ms; against a serial solve: "
        "relative error %.1e: %s\n",
        what.c_str(), l.n, l.value.size(), roam::num_nodes(), ms, error,
        error <= 1e-12 ? "right" : "WRONG");
  });
}

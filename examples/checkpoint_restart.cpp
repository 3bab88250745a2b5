// Checkpoint and restart: heat spreading along a rod cut into blocks of uneven size
// (mobile objects). Node 0 drives the steps; every few steps the job writes a checkpoint.
// A run started from one (--roam-restart DIR), on the same or another node count, goes on
// from there and ends with exactly the numbers of a run that was never interrupted.
//
//   checkpoint_restart --steps 40 --checkpoint-every 20 --checkpoint-dir ckpt --roam-nodes 4
//   checkpoint_restart --steps 40 --roam-restart ckpt --roam-nodes 3
//   mpiexec -n 3 checkpoint_restart --steps 40 --roam-restart ckpt
#include <roam/roam.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct block {
  std::vector<double> cells;
  roam::mobile_ptr<block> left, right;       // null at the rod's ends
  double from_left = 1.0, from_right = 0.0;  // the neighbours' edges (or the fixed ends)

  template <class Ar>
  void serialize(Ar& ar) {
    ar(cells, left, right, from_left, from_right);
  }

  void send_edges() const {
    if (left) left.send<&block::set_from_right>(cells.front());
    if (right) right.send<&block::set_from_left>(cells.back());
  }
  void set_from_left(double v) { from_left = v; }
  void set_from_right(double v) { from_right = v; }

  void relax() {
    std::vector<double> next(cells.size());
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const double l = i == 0 ? from_left : cells[i - 1];
      const double r = i + 1 == cells.size() ? from_right : cells[i + 1];
      next[i] = cells[i] + 0.25 * (l - 2 * cells[i] + r);
    }
    cells = std::move(next);
  }

  // Every bit of the cells: the runs compare these, not rounded sums.
  std::uint64_t digest() const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (double c : cells) {
      std::uint64_t bits;
      std::memcpy(&bits, &c, sizeof bits);
      h = (h ^ bits) * 0x100000001b3ull;
    }
    return h;
  }
  double heat() const {
    double sum = 0;
    for (double c : cells) sum += c;
    return sum;
  }
};

// What the driver needs to go on after a restart: saved by roam::checkpoint on every node.
// The blocks are node 0's alone and every node is at the same step, so a restart on fewer
// nodes has nothing to merge from the nodes gone.
struct driver {
  std::vector<roam::mobile_ptr<block>> blocks;
  int step = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(blocks, step);
  }
};
roam::node_local<driver> state(roam::checkpointed{"driver"}, [](driver&, driver&&) {});

int option(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}
std::string text_option(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  return roam::run(argc, argv, [](int argc, char** argv) {
    const int steps = option(argc, argv, "--steps", 40);
    const int every = option(argc, argv, "--checkpoint-every", 0);
    const int blocks_count = option(argc, argv, "--blocks", 64);
    const std::string dir = text_option(argc, argv, "--checkpoint-dir");
    driver& d = *state;
    const bool drives = roam::this_node() == 0;
    if (!roam::restarted()) {
      // Every node makes its share of the blocks (block i on node i % nodes); node 0 keeps
      // them all, in order, and links the neighbours.
      std::vector<std::pair<int, roam::mobile_ptr<block>>> mine;
      for (int i = static_cast<int>(roam::this_node()); i < blocks_count;
           i += static_cast<int>(roam::num_nodes())) {
        block b;
        b.cells.assign(8 + (i * 37) % 41, 0.0);  // uneven blocks: irregular work
        mine.emplace_back(i, roam::make_mobile<block>(b));
      }
      const auto made = roam::gather(mine);
      if (drives) {
        d.blocks.resize(blocks_count);
        for (const auto& part : made)
          for (const auto& [i, b] : part) d.blocks[i] = b;
      }
    }
    if (drives && !roam::restarted()) {
      for (int i = 0; i < blocks_count; ++i) {
        auto& b = d.blocks[i];
        b.send(
            [](block& me, roam::mobile_ptr<block> l, roam::mobile_ptr<block> r) {
              me.left = l;
              me.right = r;
            },
            i > 0 ? d.blocks[i - 1] : roam::mobile_ptr<block>{},
            i + 1 < blocks_count ? d.blocks[i + 1] : roam::mobile_ptr<block>{});
      }
    }
    // A node the checkpoint did not have (a restart on more nodes) starts with a fresh
    // driver: it takes the step from node 0.
    if (roam::restarted()) d.step = roam::broadcast_value(d.step);
    if (drives && roam::restarted())
      std::printf("restarted at step %d with %zu blocks on %u nodes\n", d.step, d.blocks.size(),
                  roam::num_nodes());
    roam::barrier_all_handled();
    for (; d.step < steps; ++d.step) {
      if (drives)
        for (auto& b : d.blocks) b.send<&block::send_edges>();
      roam::barrier_all_handled();
      if (drives)
        for (auto& b : d.blocks) b.send<&block::relax>();
      roam::barrier_all_handled();
      if (every > 0 && !dir.empty() && (d.step + 1) % every == 0 && d.step + 1 < steps) {
        ++d.step;  // saved as the next step to run
        const auto start = std::chrono::steady_clock::now();
        roam::checkpoint(dir);
        const std::chrono::duration<double, std::milli> took =
            std::chrono::steady_clock::now() - start;
        --d.step;
        if (drives)
          std::printf("checkpoint after step %d in %s (%.1f ms)\n", d.step + 1, dir.c_str(),
                      took.count());
      }
    }
    if (!drives) return;
    std::uint64_t h = 0;
    double heat = 0;
    for (auto& b : d.blocks) {
      h = h * 31 + b.call<&block::digest>().get();
      heat += b.call<&block::heat>().get();
    }
    std::printf("after %d steps: heat %.12f, digest %016llx\n", steps, heat,
                static_cast<unsigned long long>(h));
  });
}

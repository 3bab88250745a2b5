// Over-decomposition with mobile objects: a 1-D domain cut into many more blocks than
// there are workers. Every block smooths its cells, then sends its boundary values to its
// neighbours wherever they are; node 0 moves some blocks around meanwhile, and the result
// does not depend on where the blocks ran.
//
//   build/default/examples/mobile_objects --roam-nodes 4          # 4 virtual nodes
//   mpiexec -n 4 build/default/examples/mobile_objects            # 4 MPI ranks
#include <roam/roam.hpp>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

namespace {

struct block {
  int index = 0;
  std::vector<double> cells;
  std::vector<roam::mobile_ptr<block>> neighbours;  // left, right (null at the ends)
  double halo_left = 0, halo_right = 0;
  int halos_received = 0;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(index, cells, neighbours, halo_left, halo_right, halos_received);
  }

  void connect(std::vector<roam::mobile_ptr<block>> n) { neighbours = std::move(n); }

  // Exclusive: scales the cells, then sends the edge values to the neighbours.
  void step(double factor) {
    for (double& c : cells) c *= factor;
    if (neighbours[0]) neighbours[0].send<&block::receive_halo>(1, cells.front());
    if (neighbours[1]) neighbours[1].send<&block::receive_halo>(0, cells.back());
  }

  void receive_halo(int side, double value) {
    (side == 0 ? halo_left : halo_right) = value;
    ++halos_received;
  }

  // Shared: several of these may run at once on one block.
  double total() const {
    return std::accumulate(cells.begin(), cells.end(), 0.0) + halo_left + halo_right;
  }
  roam::node_id where() const { return roam::this_node(); }
};

}  // namespace

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {
    if (roam::this_node() != 0) return;  // node 0 drives; every node hosts blocks
    constexpr int blocks_count = 1024, cells_per_block = 64;
    std::vector<roam::mobile_ptr<block>> blocks;
    for (int i = 0; i < blocks_count; ++i) {
      block b;
      b.index = i;
      b.cells.assign(cells_per_block, 1.0);
      blocks.push_back(roam::make_mobile<block>(roam::node(i % roam::num_nodes()), std::move(b)));
    }
    for (int i = 0; i < blocks_count; ++i)
      blocks[i].send<&block::connect>(std::vector<roam::mobile_ptr<block>>{
          i > 0 ? blocks[i - 1] : roam::mobile_ptr<block>{},
          i + 1 < blocks_count ? blocks[i + 1] : roam::mobile_ptr<block>{}});

    for (auto& b : blocks) b.send<&block::step>(0.5);
    // Move every 16th block to the next node while the steps and halos are in flight.
    std::vector<roam::future<void>> moves;
    for (int i = 0; i < blocks_count; i += 16)
      moves.push_back(roam::migrate(blocks[i], (i / 16 + 1) % roam::num_nodes()));
    for (auto& m : moves) m.get();
    roam::wait_quiescence();

    double sum = 0;
    for (auto& b : blocks) sum += b.call<&block::total>().get();
    // Each block: 64 cells of 0.5, plus one halo of 0.5 per neighbour.
    const double expected = blocks_count * cells_per_block * 0.5 + (blocks_count - 1) * 2 * 0.5;
    std::printf("%d blocks on %u nodes: total %.1f (expected %.1f), block 16 is on node %u\n",
                blocks_count, roam::num_nodes(), sum, expected,
                blocks[16].call<&block::where>().get());
    if (std::abs(sum - expected) > 1e-9) std::printf("WRONG RESULT\n");
  });
}

// K-ring (Wilkins, thesis 4.4.3; k = 1 is the classic ring). The P ranks are cut into
// g = ceil(P/k) groups of consecutive ranks, as even as counts allow (at most k each). Each
// group holds one group's blocks at a time (its own first), spreads them among its members
// in a small ring, then hands them to the next group in one inter-group round: g(k-1)
// intra-group rounds and g-1 inter-group rounds, P-1 in all when k divides P, and each
// group sends and receives 2n(P-k)/P bytes across groups where a ring moves 2n(P-1)/P.
//
// The "pieces" of a group's blocks that a group of m members spreads: its blocks cut into
// m runs of consecutive ranks' blocks, member j's run starting at rank block j·size/m.
// Groups of equal size pass one block per member; uneven groups pass runs of one or two
// blocks (or none), all the rounds still one message per member at most.
//
// The allreduce is a reduce-scatter then the allgather: the reduce-scatter runs the
// allgather's schedule backwards, every transfer reversed and combined where it arrives.
// Each byte reaches each rank exactly once in the allgather, along a tree rooted at the
// byte's owner; backwards, the partial results flow up that tree to the owner. Their
// order follows the ring, not the ranks: the operator must commute.
#include "kernels.hpp"

#include <roam/base/error.hpp>

#include <cstring>
#include <vector>

namespace roam::coll::detail {

namespace {

/// Elements [at, at + count) of the buffer go to `peer` (send) or come from it.
struct transfer {
  std::uint64_t peer;  // relative rank
  bool send;
  std::size_t at, count;
};
struct ring_round {
  phase tag;
  std::vector<transfer> moves;
};

/// The allgather's rounds at relative rank v, over a buffer of P blocks cut as `b`.
class ring_schedule {
 public:
  ring_schedule(std::uint64_t p, std::uint64_t k, const blocks& b)
      : groups_{p, (p + k - 1) / k}, b_(b) {}

  std::vector<ring_round> rounds_of(std::uint64_t v) const {
    std::vector<ring_round> rounds;
    const std::uint64_t g = groups_.q, own = groups_.range_of(v);
    const std::uint64_t m = v - groups_.first(own), size = groups_.size_of(own);
    for (std::uint64_t step = 0; step < g; ++step) {
      const std::uint64_t held = (own + g - step) % g;  // whose blocks the group holds
      // Member m passes on piece (m - t) and gets piece (m - t - 1), around the group.
      for (std::uint64_t t = 0; t + 1 < size; ++t) {
        const std::uint64_t right = groups_.first(own) + (m + 1) % size;
        const std::uint64_t left = groups_.first(own) + (m + size - 1) % size;
        ring_round r{phase::main, {}};
        add(r, right, true, piece(held, size, (m + size - t) % size));
        add(r, left, false, piece(held, size, (m + 2 * size - t - 1) % size));
        rounds.push_back(std::move(r));
      }
      if (step + 1 == g) break;
      // Hand the held blocks to the next group, cut as it spreads them; get the previous
      // group's, cut as this group spreads them.
      ring_round r{phase::forward, {}};
      const std::uint64_t next = (own + 1) % g, next_size = groups_.size_of(next);
      for (std::uint64_t j = m; j < next_size; j += size)
        add(r, groups_.first(next) + j, true, piece(held, next_size, j));
      const std::uint64_t before = (own + g - 1) % g;
      add(r, groups_.first(before) + m % groups_.size_of(before), false,
          piece((held + g - 1) % g, size, m));
      rounds.push_back(std::move(r));
    }
    return rounds;
  }

 private:
  struct span {
    std::size_t at, count;
  };
  /// Piece j of group `whose` blocks cut into `parts`.
  span piece(std::uint64_t whose, std::uint64_t parts, std::uint64_t j) const noexcept {
    const std::uint64_t first = groups_.first(whose), n = groups_.size_of(whose);
    const std::size_t from = b_.edge(first + j * n / parts);
    return {from, b_.edge(first + (j + 1) * n / parts) - from};
  }
  static void add(ring_round& r, std::uint64_t peer, bool send, span s) {
    if (s.count != 0) r.moves.push_back({peer, send, s.at, s.count});
  }

  even_ranges groups_;
  blocks b_;
};

/// Posts round `r` over `data` (elements of `unit` bytes) and completes it.
void run_round(links& l, const ranks& g, const ring_round& r, std::byte* data, std::size_t unit) {
  for (const transfer& t : r.moves) {
    const int peer = g.absolute(static_cast<int>(t.peer));
    if (t.send)
      l.send(peer, tag_of(r.tag, 0), data + t.at * unit, t.count * unit);
    else
      l.recv(peer, tag_of(r.tag, 0), data + t.at * unit, t.count * unit);
  }
  l.complete();
}

}  // namespace

void k_ring_allgather(links& l, std::byte* data, const blocks& b, int root, unsigned k) {
  const ranks g{l.size(), root};
  if (g.size == 1) return;
  const ring_schedule schedule(static_cast<std::uint64_t>(g.size), k, b);
  for (const ring_round& r : schedule.rounds_of(static_cast<std::uint64_t>(g.relative(l.rank()))))
    run_round(l, g, r, data, 1);
}

void k_ring_allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                      const reduction& op, unsigned k) {
  if (!op.commutative)
    throw usage_error(
        "roam::coll::allreduce: the k_ring algorithm combines in ring order, not rank order, "
        "and the operator is not known to commute: declare it with roam::coll::commutative{op} "
        "if it does, or choose another algorithm");
  const std::uint64_t p = static_cast<std::uint64_t>(l.size());
  const std::size_t size = op.element_size, bytes = count * size;
  if (bytes != 0 && in != out) std::memmove(out, in, bytes);
  if (p == 1 || bytes == 0) return;
  // Rank v owns elements [edge(v), edge(v+1)) of the result.
  const blocks elements{count, p, 0};
  const auto rounds = ring_schedule(p, k, elements).rounds_of(static_cast<std::uint64_t>(l.rank()));
  // Backwards and reversed: what the allgather receives, this rank sends its partial of;
  // what it sends, it gets partials of from the ranks it would have fed.
  scratch buffer;
  for (auto r = rounds.rbegin(); r != rounds.rend(); ++r) {
    std::size_t incoming = 0;
    for (const transfer& t : r->moves)
      if (t.send) incoming += t.count * size;
    std::byte* const partials = buffer.get(incoming);
    const int tag = tag_of(r->tag == phase::main ? phase::pre : phase::post, 0);
    std::size_t slot = 0;
    for (const transfer& t : r->moves) {
      const int peer = static_cast<int>(t.peer);
      if (t.send) {
        l.recv(peer, tag, partials + slot, t.count * size);
        slot += t.count * size;
      } else {
        l.send(peer, tag, out + t.at * size, t.count * size);
      }
    }
    l.complete();
    slot = 0;
    for (const transfer& t : r->moves)
      if (t.send) {
        op.combine(op.op, out + t.at * size, partials + slot, t.count);
        slot += t.count * size;
      }
  }
  for (const ring_round& r : rounds) run_round(l, ranks{l.size(), 0}, r, out, size);
}

}  // namespace roam::coll::detail

// Every algorithm x radix x root x size of every collective on one set of links, checked
// against a serial reference. Every rank runs run_cases() with the same arguments (SPMD);
// each checks its own results and returns what was wrong.
#pragma once

#include <roam/base/error.hpp>
#include <roam/coll/commutative.hpp>
#include <roam/coll/detail/algorithms.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace roam_test {

using roam::coll::algorithm;
using roam::coll::choice;
namespace cd = roam::coll::detail;

/// An affine map x -> a x + b (mod 2^32); composing them is associative and not
/// commutative: the reductions must keep rank order.
struct affine {
  std::uint32_t a = 1, b = 0;
  friend bool operator==(const affine&, const affine&) = default;
};
/// x then y.
inline affine then(const affine& x, const affine& y) { return {x.a * y.a, x.b * y.a + y.b}; }

inline std::uint32_t value_of(int rank, std::size_t i, int salt) {
  std::uint32_t h = static_cast<std::uint32_t>(rank) * 2654435761u ^
                    static_cast<std::uint32_t>(i) * 40503u ^ static_cast<std::uint32_t>(salt) * 97u;
  h ^= h >> 13;
  return h * 0x5bd1e995u;
}

inline std::vector<std::uint32_t> input_of(int rank, std::size_t count, int salt) {
  std::vector<std::uint32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = value_of(rank, i, salt);
  return v;
}
inline std::vector<affine> maps_of(int rank, std::size_t count, int salt) {
  std::vector<affine> v(count);
  for (std::size_t i = 0; i < count; ++i)
    v[i] = {value_of(rank, i, salt) | 1u, value_of(rank, i, salt + 1)};
  return v;
}

/// The radices worth trying at `p` ranks: 2, 3, 4, 5 and p itself.
inline std::vector<unsigned> radices(int p) {
  std::set<unsigned> k{2, 3, 4, 5};
  if (p >= 2) k.insert(static_cast<unsigned>(p));
  return {k.begin(), k.end()};
}

/// What serves each collective (docs/guide/collectives.md).
enum class collective { bcast, reduce, gather, allgather, allreduce };
inline std::vector<choice> choices(int p, collective what) {
  std::vector<choice> c{{algorithm::linear, 0}};
  const bool rooted = what == collective::reduce || what == collective::gather;
  for (unsigned k : radices(p)) {
    c.push_back({algorithm::knomial, k});
    if (!rooted) c.push_back({algorithm::recursive_multiplying, k});
    if (what == collective::allreduce) c.push_back({algorithm::reduce_scatter_allgather, k});
  }
  // K-ring's radix is its groups' size: 1 (the ring) up to P, even and uneven groups.
  if (!rooted)
    for (unsigned k : {1u, 2u, 3u, 4u, 5u, static_cast<unsigned>(std::max(p, 1))})
      c.push_back({algorithm::k_ring, k});
  return c;
}

class case_runner {
 public:
  explicit case_runner(cd::links& l) : l_(l), p_(l.size()), me_(l.rank()) {}

  std::vector<std::string> run_all() {
    const std::vector<std::size_t> counts{0, 1, 7, 1000};
    std::vector<int> roots{0, p_ - 1, p_ / 2};
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    for (std::size_t count : counts) {
      for (const choice& c : choices(p_, collective::bcast))
        for (int root : roots) bcast(c, count * 4 + 1, root);  // odd byte counts
      for (const choice& c : choices(p_, collective::allgather)) allgather(c, count);
      for (const choice& c : choices(p_, collective::allreduce)) {
        allreduce_sum(c, count);
        allreduce_affine(c, count);
        allreduce_same_bits(c, count);
      }
      for (const choice& c : choices(p_, collective::reduce))
        for (int root : roots) {
          reduce_sum(c, count, root);
          reduce_affine(c, count, root);
        }
      for (const choice& c : choices(p_, collective::gather))
        for (int root : roots) gather(c, count, root);
    }
    serialized(roots);
    return failures_;
  }

 private:
  std::string where(const char* what, const choice& c, std::size_t n, int root) const {
    return std::string(what) + " " + roam::coll::describe(c) + " P=" + std::to_string(p_) +
           " n=" + std::to_string(n) + " root=" + std::to_string(root) +
           " rank=" + std::to_string(me_);
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) failures_.push_back(what);
  }
  int salt() { return ++salt_; }

  void bcast(const choice& c, std::size_t bytes, int root) {
    const int s = salt();
    std::vector<std::byte> data(bytes), want(bytes);
    for (std::size_t i = 0; i < bytes; ++i) want[i] = static_cast<std::byte>(value_of(root, i, s));
    if (me_ == root) data = want;
    cd::bcast(l_, data.data(), bytes, root, c);
    expect(data == want, where("bcast", c, bytes, root));
  }
  void gather(const choice& c, std::size_t count, int root) {
    const int s = salt();
    const auto in = input_of(me_, count, s);
    std::vector<std::uint32_t> out(me_ == root ? count * p_ : 0);
    cd::gather(l_, bytes(in), me_ == root ? wbytes(out) : nullptr, count * 4, root, c);
    if (me_ == root) expect(out == concatenated(count, s), where("gather", c, count, root));
  }
  void allgather(const choice& c, std::size_t count) {
    const int s = salt();
    const auto in = input_of(me_, count, s);
    std::vector<std::uint32_t> out(count * p_);
    cd::allgather(l_, bytes(in), wbytes(out), count * 4, c);
    expect(out == concatenated(count, s), where("allgather", c, count, -1));
  }
  void reduce_sum(const choice& c, std::size_t count, int root) {
    const int s = salt();
    auto data = input_of(me_, count, s);
    const std::plus<> op;
    const auto r = cd::reduction_of<std::uint32_t>(op);
    cd::reduce(l_, bytes(data), wbytes(data), count, r, root, c);  // in place
    if (me_ == root) expect(data == sums(count, s), where("reduce sum", c, count, root));
  }
  void allreduce_sum(const choice& c, std::size_t count) {
    const int s = salt();
    const auto in = input_of(me_, count, s);
    std::vector<std::uint32_t> out(count);
    const std::plus<> op;
    cd::allreduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<std::uint32_t>(op), c);
    expect(out == sums(count, s), where("allreduce sum", c, count, -1));
  }
  /// Every rank gets the same bits, though floating-point sums depend on their order, and
  /// a max that keeps its first NaN commutes only mathematically: a group member must not
  /// combine its own part first where another combines it second.
  void allreduce_same_bits(const choice& c, std::size_t count) {
    const int s = salt();
    std::vector<double> in(count), out(count);
    for (std::size_t i = 0; i < count; ++i)
      in[i] = static_cast<double>(value_of(me_, i, s)) * (me_ % 3 == 0 ? 1e-9 : 1e7) /
              static_cast<double>(value_of(me_, i, s + 1) | 1u);
    const std::plus<> op;
    cd::allreduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<double>(op), c);
    same_bits_everywhere(out, c, "allreduce of doubles: the same bits on every rank");
    for (std::size_t i = 0; i < count; ++i)
      in[i] = me_ % 2 == 1 ? std::numeric_limits<double>::quiet_NaN() : in[i];
    const roam::coll::commutative first_nan_max{
        [](double a, double b) { return a < b ? b : a; }};  // max(1, NaN) = 1, max(NaN, 1) NaN
    cd::allreduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<double>(first_nan_max), c);
    same_bits_everywhere(out, c, "allreduce of a max keeping NaNs: the same bits on every rank");
  }
  void same_bits_everywhere(const std::vector<double>& out, const choice& c, const char* what) {
    const std::size_t count = out.size();
    std::vector<double> everyone(count * static_cast<std::size_t>(p_));
    cd::allgather(l_, bytes(out), wbytes(everyone), count * sizeof(double), {algorithm::linear, 0});
    bool same = true;
    for (std::size_t i = 0; i < everyone.size(); ++i)
      same = same && std::memcmp(&everyone[i], &everyone[i % count], sizeof(double)) == 0;
    expect(same, where(what, c, count, -1));
  }
  void reduce_affine(const choice& c, std::size_t count, int root) {
    const int s = salt();
    const auto in = maps_of(me_, count, s);
    std::vector<affine> out(count);
    const auto op = [](const affine& x, const affine& y) { return then(x, y); };
    cd::reduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<affine>(op), root, c);
    if (me_ == root) expect(out == composed(count, s), where("reduce in order", c, count, root));
  }
  void allreduce_affine(const choice& c, std::size_t count) {
    const int s = salt();
    const auto in = maps_of(me_, count, s);
    std::vector<affine> out(count);
    const auto op = [](const affine& x, const affine& y) { return then(x, y); };
    if (c.alg == algorithm::k_ring) {  // combines in ring order: refuses the operator
      try {
        cd::allreduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<affine>(op), c);
        expect(false, where("allreduce in order took a non-commutative operator", c, count, -1));
      } catch (const roam::usage_error& e) {
        expect(std::string(e.what()).find("not known to commute") != std::string::npos,
               where("allreduce in order's error", c, count, -1) + ": " + e.what());
      }
      return;
    }
    cd::allreduce(l_, bytes(in), wbytes(out), count, cd::reduction_of<affine>(op), c);
    expect(out == composed(count, s), where("allreduce in order", c, count, -1));
  }

  // Values of any size: rank r's is r mod 4 (0 for some) x 3 + (rank == 2 ? 9000 : 0)
  // bytes, so that rules by size would choose differently on rank 2 if each rank chose by
  // its own value; concatenation is associative and not commutative.
  static std::vector<std::byte> serialized_of(int rank, int s) {
    std::vector<std::byte> v(static_cast<std::size_t>(rank % 4 * 3 + (rank == 2 ? 9000 : 0)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::byte>(value_of(rank, i, s));
    return v;
  }
  static void concatenate(const void*, std::vector<std::byte>& acc,
                          const std::vector<std::byte>& next) {
    acc.insert(acc.end(), next.begin(), next.end());
  }
  void serialized(const std::vector<int>& roots) {
    const cd::serialized_reduction concat{&concatenate, nullptr, false};
    const int s = salt();
    std::vector<std::vector<std::byte>> all;
    std::vector<std::byte> joined;
    for (int r = 0; r < p_; ++r) {
      all.push_back(serialized_of(r, s));
      joined.insert(joined.end(), all.back().begin(), all.back().end());
    }
    const auto mine = serialized_of(me_, s);
    for (int root : roots)
      for (const choice& c : choices(p_, collective::bcast)) {
        auto data = me_ == root ? all[static_cast<std::size_t>(root)] : std::vector<std::byte>(3);
        cd::bcast_serialized(l_, data, root, c);
        expect(data == all[static_cast<std::size_t>(root)], where("bcast serialized", c, 0, root));
      }
    for (int root : roots)
      for (const choice& c : choices(p_, collective::gather)) {
        const auto got = cd::gather_serialized(l_, mine, root, c);
        expect(me_ == root ? got == all : got.empty(), where("gather serialized", c, 0, root));
      }
    for (const choice& c : choices(p_, collective::allgather))
      expect(cd::allgather_serialized(l_, mine, c) == all, where("allgather serialized", c, 0, -1));
    for (const choice& c : {choice{}, choice{algorithm::linear, 0}, choice{algorithm::knomial, 2},
                            choice{algorithm::knomial, 3}}) {
      for (int root : roots) {
        auto value = mine;
        cd::reduce_serialized(l_, value, concat, root, c);
        if (me_ == root) expect(value == joined, where("reduce serialized", c, 0, root));
      }
      auto value = mine;
      cd::allreduce_serialized(l_, value, concat, c);
      expect(value == joined, where("allreduce serialized", c, 0, -1));
    }
    // Algorithms that split or exchange fixed-size buffers cannot reduce them: every rank
    // refuses before it sends anything.
    try {
      auto value = mine;
      cd::allreduce_serialized(l_, value, concat, {algorithm::recursive_multiplying, 2});
      expect(false, where("allreduce serialized took recursive multiplying", {}, 0, -1));
    } catch (const roam::usage_error& e) {
      expect(std::string(e.what()).find("cannot combine serialized values") != std::string::npos,
             e.what());
    }
  }

  std::vector<std::uint32_t> concatenated(std::size_t count, int s) const {
    std::vector<std::uint32_t> all;
    for (int r = 0; r < p_; ++r) {
      const auto v = input_of(r, count, s);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  std::vector<std::uint32_t> sums(std::size_t count, int s) const {
    std::vector<std::uint32_t> sum(count, 0);
    for (int r = 0; r < p_; ++r) {
      const auto v = input_of(r, count, s);
      for (std::size_t i = 0; i < count; ++i) sum[i] += v[i];
    }
    return sum;
  }
  std::vector<affine> composed(std::size_t count, int s) const {
    std::vector<affine> acc = maps_of(0, count, s);
    for (int r = 1; r < p_; ++r) {
      const auto v = maps_of(r, count, s);
      for (std::size_t i = 0; i < count; ++i) acc[i] = then(acc[i], v[i]);
    }
    return acc;
  }
  template <class T>
  static const std::byte* bytes(const std::vector<T>& v) {
    return reinterpret_cast<const std::byte*>(v.data());
  }
  template <class T>
  static std::byte* wbytes(std::vector<T>& v) {
    return reinterpret_cast<std::byte*>(v.data());
  }

  cd::links& l_;
  int p_, me_;
  int salt_ = 0;
  std::vector<std::string> failures_;
};

}  // namespace roam_test

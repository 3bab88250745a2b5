#include "ward_merges.hpp"

#include <algorithm>

namespace roam::gas::detail {

void ward_merges::merge(std::uint64_t sequence, std::uint64_t region_bytes, bool check,
                        node_id writer, std::byte* memory, const std::vector<byte_run>& runs,
                        const std::byte* data, const std::vector<byte_run>& read_runs) {
  const std::uint32_t mark = writer + 1;
  std::lock_guard guard(lock_);
  table& t = regions_[sequence];
  if (t.winner.empty() && region_bytes != 0) {
    t.winner.assign(region_bytes, 0);
    if (check)
      for (auto* v : {&t.writer_low, &t.writer_high, &t.reader_low, &t.reader_high})
        v->assign(region_bytes, 0);
  }
  for (const byte_run& r : runs)
    for (std::uint64_t b = r.offset; b < r.offset + r.bytes; ++b, ++data) {
      // The highest-numbered writer wins, whatever order the merges come in.
      if (t.winner[b] < mark) {
        memory[b] = *data;
        t.winner[b] = mark;
      }
      if (!t.writer_low.empty()) {
        if (t.writer_low[b] == 0 || mark < t.writer_low[b]) t.writer_low[b] = mark;
        t.writer_high[b] = std::max(t.writer_high[b], mark);
      }
    }
  if (!t.reader_low.empty())
    for (const byte_run& r : read_runs)
      for (std::uint64_t b = r.offset; b < r.offset + r.bytes; ++b) {
        if (t.reader_low[b] == 0 || mark < t.reader_low[b]) t.reader_low[b] = mark;
        t.reader_high[b] = std::max(t.reader_high[b], mark);
      }
}

ward_violation ward_merges::finish(std::uint64_t sequence) {
  table t;
  {
    std::lock_guard guard(lock_);
    const auto at = regions_.find(sequence);
    if (at == regions_.end()) return {};
    t = std::move(at->second);
    regions_.erase(at);
  }
  for (std::uint64_t b = 0; b < t.reader_low.size(); ++b) {
    if (t.reader_low[b] == 0 || t.writer_low[b] == 0) continue;
    // Read and written: fine only when one node did both.
    if (t.writer_low[b] != t.writer_high[b] || t.reader_low[b] != t.reader_high[b] ||
        t.writer_low[b] != t.reader_low[b]) {
      const std::uint32_t reader =
          t.reader_low[b] != t.writer_low[b] ? t.reader_low[b] : t.reader_high[b];
      const std::uint32_t writer = t.writer_low[b] != reader ? t.writer_low[b] : t.writer_high[b];
      return {true, b, writer - 1, reader - 1};
    }
  }
  return {};
}

}  // namespace roam::gas::detail

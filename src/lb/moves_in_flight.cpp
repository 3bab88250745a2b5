#include "moves_in_flight.hpp"

namespace roam::lb::builtin {

void moves_in_flight::ordered(const std::vector<planned_move>& moves,
                              const std::vector<node_report>& reports) {
  std::map<key, const reported_object*> reported;
  for (const auto& m : moves) reported.emplace(key_of(m.id), nullptr);
  for (const auto& r : reports)
    for (const auto& o : r.objects)
      if (auto it = reported.find(key_of(o.id)); it != reported.end()) it->second = &o;
  for (const auto& m : moves)
    if (const auto* o = reported[key_of(m.id)]) pending_[key_of(m.id)] = {*o, m.to, 0};
}

void moves_in_flight::correct(std::vector<node_report>& reports) {
  if (pending_.empty()) return;
  for (const auto& r : reports)
    for (const auto& o : r.objects) pending_.erase(key_of(o.id));  // seen: no longer a guess
  for (auto p = pending_.begin(); p != pending_.end();) {
    if (++p->second.rounds > patience_ || p->second.to >= reports.size()) {
      p = pending_.erase(p);
      continue;
    }
    reported_object travelling = p->second.object;
    travelling.movable = 0;  // not to be planned again before it lands
    reports[p->second.to].objects.push_back(travelling);
    ++p;
  }
}

}  // namespace roam::lb::builtin

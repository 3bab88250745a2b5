// The rules file: a restricted JSON (objects of objects, keys of the form "name=value" or
// "name<=number") read by a parser of its own. Why not a JSON library: every error must
// name its line, the semantic ones ("radix 1", "rule after =any") included, and the JSON
// libraries at hand keep no positions for values once parsed; the grammar needed is
// objects and strings only, a few dozen lines.
#include <roam/coll/tuning_rules.hpp>

#include <roam/base/error.hpp>

#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace roam::coll {

namespace {

constexpr std::uint64_t any = std::numeric_limits<std::uint64_t>::max();
constexpr collective all_collectives[] = {collective::bcast, collective::reduce, collective::gather,
                                          collective::allgather, collective::allreduce};

/// An object of the file: its members in order, each key with its line.
struct object {
  int line = 0;
  struct member;
  std::vector<member> members;
};
struct object::member {
  std::string key;
  int line = 0;
  object value;
};

class reader {
 public:
  reader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw config_error(std::string(source_) + ":" + std::to_string(line) + ": " + what);
  }

  object document() {
    skip_space();
    object top = read_object(0);
    skip_space();
    if (at_ != text_.size()) fail(line_, "text after the rules' closing brace");
    return top;
  }

 private:
  // The format nests six objects deep; more is an error, not a deep recursion.
  static constexpr int max_depth = 8;

  object read_object(int depth) {
    if (depth > max_depth) fail(line_, "rules nested more than 8 objects deep");
    expect('{', "a rule's value must be an object: '{'");
    object o;
    o.line = line_;
    skip_space();
    if (peek() == '}') {
      ++at_;
      return o;
    }
    for (;;) {
      skip_space();
      object::member m;
      m.line = line_;
      m.key = read_string();
      skip_space();
      expect(':', "expected ':' after \"" + m.key + "\"");
      skip_space();
      m.value = read_object(depth + 1);
      o.members.push_back(std::move(m));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}', "expected ',' or '}'");
      return o;
    }
  }

  std::string read_string() {
    expect('"', "expected a quoted key");
    std::string s;
    while (at_ < text_.size() && text_[at_] != '"') {
      const char c = text_[at_];
      if (c == '\\' || c == '\n' || static_cast<unsigned char>(c) < 0x20)
        fail(line_, "a key holds an escape or a control character");
      s += c;
      ++at_;
    }
    if (at_ == text_.size()) fail(line_, "a key's closing quote is missing");
    ++at_;
    return s;
  }

  void expect(char c, const std::string& what) {
    if (peek() != c) fail(line_, at_ == text_.size() ? "the rules end too early: " + what : what);
    ++at_;
  }
  char peek() const noexcept { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() noexcept {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\r' || text_[at_] == '\n')) {
      if (text_[at_] == '\n') ++line_;
      ++at_;
    }
  }

  std::string_view text_, source_;
  std::size_t at_ = 0;
  int line_ = 1;
};

std::uint64_t number(const reader& r, const object::member& m, std::string_view digits) {
  std::uint64_t value = 0;
  const auto [end, problem] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || problem != std::errc{} || end != digits.data() + digits.size())
    r.fail(m.line, "\"" + m.key + "\": '" + std::string(digits) + "' is not a whole number");
  return value;
}

choice read_choice(const reader& r, const object& o, collective what) {
  if (o.members.size() != 1)
    r.fail(o.line, "a message size's rule holds exactly one \"algorithm=NAME\"");
  const object::member& m = o.members.front();
  constexpr std::string_view prefix = "algorithm=";
  if (m.key.rfind(prefix, 0) != 0)
    r.fail(m.line, "expected \"algorithm=NAME\", not \"" + m.key + "\"");
  const auto a = algorithm_named(std::string_view(m.key).substr(prefix.size()));
  if (!a || *a == algorithm::automatic) r.fail(m.line, "unknown algorithm in \"" + m.key + "\"");
  if (!serves(*a, what))
    r.fail(m.line, "the " + std::string(to_string(*a)) + " algorithm has no " +
                       std::string(to_string(what)));
  choice c{*a, 0};
  const object& options = m.value;
  if (options.members.empty()) return c;
  const object::member& k = options.members.front();
  if (options.members.size() != 1 || k.key.rfind("k=", 0) != 0 || !k.value.members.empty())
    r.fail(options.line, "an algorithm's options are {} or {\"k=N\": {}}");
  if (*a == algorithm::linear) r.fail(k.line, "the linear algorithm takes no radix");
  const std::uint64_t radix = number(r, k, std::string_view(k.key).substr(2));
  if (radix < smallest_radix(*a) || radix > std::numeric_limits<unsigned>::max())
    r.fail(k.line, "the " + std::string(to_string(*a)) + " algorithm's radix k must be at least " +
                       std::to_string(smallest_radix(*a)) + ", not " +
                       std::string(k.key.substr(2)));
  c.k = static_cast<unsigned>(radix);
  return c;
}

/// One level of bounds named `name` ("comm_size"): "name<=N" in increasing N, then
/// "name=any"; `inner` reads each rule's value.
template <class Next, class Inner>
std::vector<detail::bounded<Next>> read_level(const reader& r, const object& o,
                                              std::string_view name, Inner inner) {
  std::vector<detail::bounded<Next>> level;
  if (o.members.empty()) r.fail(o.line, "no " + std::string(name) + " rule here");
  const std::string at_most = std::string(name) + "<=", everything = std::string(name) + "=any";
  for (const object::member& m : o.members) {
    if (!level.empty() && level.back().up_to == any)
      r.fail(m.line, "\"" + m.key + "\" follows \"" + everything + "\" and can never apply");
    std::uint64_t bound = any;
    if (m.key != everything) {
      if (m.key.rfind(at_most, 0) != 0) {
        std::string what = "expected \"";
        what.append(at_most).append("N\" or \"").append(everything).append("\", not \"");
        r.fail(m.line, what.append(m.key).append("\""));
      }
      bound = number(r, m, std::string_view(m.key).substr(at_most.size()));
      if (!level.empty() && bound <= level.back().up_to)
        r.fail(m.line, "\"" + m.key + "\" does not exceed the bound before it: bounds increase");
    }
    level.push_back({bound, inner(m.value)});
  }
  if (level.back().up_to != any)
    r.fail(o.members.back().line, "the last " + std::string(name) + " rule must be \"" +
                                      everything + "\", so that every call finds a rule");
  return level;
}

template <class Next>
const Next& first_holding(const std::vector<detail::bounded<Next>>& level,
                          std::uint64_t value) noexcept {
  for (const auto& rule : level)
    if (value <= rule.up_to) return rule.next;
  return level.back().next;  // unreachable: the last bound is "any"
}

}  // namespace

bool serves(algorithm a, collective c) noexcept {
  switch (a) {
    case algorithm::linear:
    case algorithm::knomial:
      return true;
    case algorithm::recursive_multiplying:
      return c == collective::bcast || c == collective::allgather || c == collective::allreduce;
    case algorithm::reduce_scatter_allgather:
      return c == collective::allreduce;
    case algorithm::k_ring:
      return c == collective::bcast || c == collective::allgather || c == collective::allreduce;
    case algorithm::automatic:
      return false;
  }
  return false;
}

std::string_view to_string(collective c) noexcept {
  constexpr std::string_view names[] = {"bcast", "reduce", "gather", "allgather", "allreduce"};
  return names[static_cast<std::size_t>(c)];
}

tuning_rules tuning_rules::parse(std::string_view text, std::string_view source) {
  reader r(text, source);
  const object top = r.document();
  tuning_rules rules;
  bool seen[5] = {};
  for (const object::member& m : top.members) {
    constexpr std::string_view prefix = "collective=";
    const std::string_view name =
        m.key.rfind(prefix, 0) == 0 ? std::string_view(m.key).substr(prefix.size()) : "";
    const collective* c = nullptr;
    for (const collective& candidate : all_collectives)
      if (to_string(candidate) == name) c = &candidate;
    if (!c)
      r.fail(m.line,
             "expected \"collective=NAME\" (bcast, reduce, gather, allgather, "
             "allreduce), not \"" +
                 m.key + "\"");
    const auto index = static_cast<std::size_t>(*c);
    if (seen[index]) r.fail(m.line, "a second rule set for " + std::string(name));
    seen[index] = true;
    rules.rules_[index] =
        read_level<detail::rules_by_ppn>(r, m.value, "comm_size", [&](const object& ranks) {
          return read_level<detail::rules_by_bytes>(r, ranks, "ppn", [&](const object& ppn) {
            return read_level<choice>(r, ppn, "msg_size",
                                      [&](const object& leaf) { return read_choice(r, leaf, *c); });
          });
        });
  }
  for (const collective c : all_collectives)
    if (!seen[static_cast<std::size_t>(c)])
      r.fail(top.line, "no rules for " + std::string(to_string(c)) +
                           ": every collective needs a \"collective=" + std::string(to_string(c)) +
                           "\" entry");
  return rules;
}

tuning_rules tuning_rules::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("cannot read the collectives' rules file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw config_error("cannot read the collectives' rules file " + path);
  return parse(text.str(), path);
}

choice tuning_rules::select(collective what, std::uint64_t ranks, std::uint64_t ppn,
                            std::uint64_t bytes) const noexcept {
  const detail::rules_by_ranks& level = rules_[static_cast<std::size_t>(what)];
  return first_holding(first_holding(first_holding(level, ranks), ppn), bytes);
}

}  // namespace roam::coll

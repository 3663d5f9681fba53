// The topology file reader. yaml-cpp parses; this file checks every key and value and says
// where a bad one is (file:line:column, from yaml-cpp's marks, printed 1-based).
#include "model/topology.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>

#include "arlab/arlab.hpp"

namespace arlab::detail {

namespace {

using Keys = std::initializer_list<const char*>;

std::string join(Keys keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

constexpr double kUsPerByteAtOneGBps = 1e-3;  // 1 GB/s = 10^9 B per 10^6 us
constexpr long kMaxExactInteger = 1L << 53;     // doubles hold every integer up to here

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const {
    std::string where = file_;
    if (mark.line >= 0) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    throw Error(Error::Code::InvalidArgument, where + ": " + message);
  }
  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const { fail(at.Mark(), message); }

  // The entries of the mapping `node` (called `what`), after checking that every key is one of
  // `valid`, appears once, and that every key in `required` is present.
  std::map<std::string, YAML::Node> mapping(const YAML::Node& node, const std::string& what, Keys valid,
                                            Keys required) const {
    if (!node.IsMap()) fail(node, what + " must be a mapping with keys " + join(valid) + shown(node));
    std::map<std::string, YAML::Node> out;
    for (const auto& entry : node) {  // yaml-cpp yields (key, value) pairs by value
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) fail(key, "a key in " + what + " is not a plain name; valid keys: " + join(valid));
      const std::string name = key.Scalar();
      bool known = false;
      for (const char* v : valid) known = known || name == v;
      if (!known) fail(key, "unknown key '" + name + "' in " + what + "; valid keys: " + join(valid));
      if (!out.emplace(name, entry.second).second) fail(key, "key '" + name + "' appears twice in " + what);
    }
    for (const char* r : required)
      if (!out.count(r))
        fail(node, what + ": missing field '" + std::string(r) + "' (required: " + join(required) + ")");
    return out;
  }

  std::string text(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node, what + " must be a string" + shown(node));
    return node.Scalar();
  }

  long integer(const YAML::Node& node, const std::string& what, long min,
               long max = std::numeric_limits<long>::max()) const {
    long v = 0;
    if (!node.IsScalar() || !YAML::convert<long>::decode(node, v))
      fail(node, what + " must be an integer" + shown(node));
    if (v < min) fail(node, what + " must be at least " + std::to_string(min) + shown(node));
    if (v > max) fail(node, what + " must be at most " + std::to_string(max) + shown(node));
    return v;
  }

  // A byte count the Machine keeps as a double: at most 2^53, as beyond it a double rounds the
  // count (and topology_yaml() could then write one above what a long holds, which this
  // reader refuses).
  double byte_count(const YAML::Node& node, const std::string& what) const {
    return static_cast<double>(integer(node, what, 1, kMaxExactInteger));
  }

  // A finite number; positive, or with `zero_ok` non-negative.
  double number(const YAML::Node& node, const std::string& what, bool zero_ok) const {
    double v = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v))
      fail(node, what + " must be a number" + shown(node));
    if (v < 0 || (v == 0 && !zero_ok))
      fail(node, what + " must be " + (zero_ok ? "zero or positive" : "positive") + shown(node));
    return v;
  }

  // A bandwidth in GB/s, as microseconds per byte. Bandwidths outside 1e-300..1e300 GB/s are
  // refused: beyond them the rate, or the bandwidth topology_yaml() writes back from it,
  // overflows to infinity or loses its digits in a subnormal double.
  double us_per_byte(const YAML::Node& node, const std::string& what) const {
    const double gbps = number(node, what, false);
    if (gbps < 1e-300 || gbps > 1e300) fail(node, what + " must be from 1e-300 to 1e300" + shown(node));
    return kUsPerByteAtOneGBps / gbps;
  }

 private:
  static std::string shown(const YAML::Node& node) {
    if (node.IsScalar()) return ", got '" + node.Scalar() + "'";
    if (node.IsNull()) return ", got nothing";
    if (node.IsSequence()) return ", got a list";
    return ", got a mapping";
  }

  std::string file_;
};

constexpr const char* kBeyond = "bandwidth_GBps_beyond_cache";

// A rate in cache and, optionally, beyond it (0: the same), in us per byte. `beyond_at` is
// where the beyond-cache value stands, for the check that the file has cache_bytes.
struct Rate {
  double in_cache = 0, beyond = 0;
  bool has_beyond = false;
  std::string beyond_name;  // "links.intra.bandwidth_GBps_beyond_cache"
  YAML::Mark beyond_at;
};

Rate rate(const Reader& r, const std::map<std::string, YAML::Node>& f, const std::string& what) {
  Rate out;
  out.in_cache = r.us_per_byte(f.at("bandwidth_GBps"), what + ".bandwidth_GBps");
  if (f.count(kBeyond)) {
    out.has_beyond = true;
    out.beyond_name = what + "." + kBeyond;
    out.beyond_at = f.at(kBeyond).Mark();
    out.beyond = r.us_per_byte(f.at(kBeyond), out.beyond_name);
  }
  return out;
}

// A table by message size, { BYTES: VALUE, ... }: sizes in ascending order, each once; values
// at least 0. `example` shows the form in the error.
std::vector<std::pair<double, double>> size_table(const Reader& r, const YAML::Node& node, const std::string& what,
                                                  const std::string& values, const std::string& example) {
  if (!node.IsMap() || node.size() == 0)
    r.fail(node, what + " must be a mapping of message sizes in bytes to " + values + ", e.g. " + example);
  std::vector<std::pair<double, double>> out;
  for (const auto& entry : node) {
    const double bytes = r.byte_count(entry.first, "a message size in " + what);
    const std::string at = what + "[" + std::to_string(static_cast<long>(bytes)) + "]";
    if (!out.empty() && bytes <= out.back().first)
      r.fail(entry.first, what + ": message sizes must ascend, each once; " + std::to_string(static_cast<long>(bytes)) + " comes after " +
                              std::to_string(static_cast<long>(out.back().first)));
    out.push_back({bytes, r.number(entry.second, at, true)});
  }
  return out;
}

// latency_us: { BYTES: US, ... }.
std::vector<LinkCost::LatencyPoint> latency_points(const Reader& r, const YAML::Node& node, const std::string& what) {
  std::vector<LinkCost::LatencyPoint> out;
  for (const auto& [bytes, us] : size_table(r, node, what, "latencies in us", "{ 8: 0.3, 2048: 1.2 }"))
    out.push_back({bytes, us});
  return out;
}

// writeback_us_per_byte: { BYTES: US_PER_BYTE, ... }.
std::vector<LinkCost::WritebackPoint> writeback_points(const Reader& r, const YAML::Node& node, const std::string& what) {
  std::vector<LinkCost::WritebackPoint> out;
  for (const auto& [bytes, us] : size_table(r, node, what, "us per byte", "{ 32768: 8e-05, 2097152: 1e-05 }"))
    out.push_back({bytes, us});
  return out;
}

struct Link {
  LinkCost cost;
  Rate rate;
};

Link link(const Reader& r, const YAML::Node& node, const std::string& what) {
  const auto f =
      r.mapping(node, what,
                {"alpha_us", "bandwidth_GBps", kBeyond, "copied_by", "shared_by", "rendezvous_bytes", "alpha_us_rendezvous",
                 "latency_us", "writeback_us_per_byte", "writeback_later_us_per_byte"},
                {"alpha_us", "bandwidth_GBps"});
  Link l;
  l.cost.alpha_us = r.number(f.at("alpha_us"), what + ".alpha_us", true);
  if (f.count("copied_by")) {
    const std::string by = r.text(f.at("copied_by"), what + ".copied_by");
    if (by != "cpu" && by != "dma")
      r.fail(f.at("copied_by"), what + ".copied_by must be 'cpu' or 'dma', got '" + by + "'");
    l.cost.cpu_copies = by == "cpu";
  }
  if (f.count("shared_by")) {
    const std::string by = r.text(f.at("shared_by"), what + ".shared_by");
    if (by != "node" && by != "rank")
      r.fail(f.at("shared_by"), what + ".shared_by must be 'node' (one port for the node's ranks: a NIC) or 'rank', got '" +
                                    by + "'");
    l.cost.shared_by_node = by == "node";
  }
  // The protocol switch: both fields or neither.
  if (f.count("rendezvous_bytes") != f.count("alpha_us_rendezvous")) {
    const bool has_bytes = f.count("rendezvous_bytes") != 0;
    r.fail(f.at(has_bytes ? "rendezvous_bytes" : "alpha_us_rendezvous"),
           what + (has_bytes ? ".rendezvous_bytes needs alpha_us_rendezvous" : ".alpha_us_rendezvous needs rendezvous_bytes") +
               " (messages of more than rendezvous_bytes pay alpha_us_rendezvous)");
  }
  if (f.count("rendezvous_bytes")) {
    l.cost.rendezvous_bytes = r.byte_count(f.at("rendezvous_bytes"), what + ".rendezvous_bytes");
    l.cost.alpha_us_rendezvous = r.number(f.at("alpha_us_rendezvous"), what + ".alpha_us_rendezvous", true);
  }
  if (f.count("latency_us")) l.cost.latency = latency_points(r, f.at("latency_us"), what + ".latency_us");
  if (f.count("writeback_us_per_byte"))
    l.cost.writeback = writeback_points(r, f.at("writeback_us_per_byte"), what + ".writeback_us_per_byte");
  if (f.count("writeback_later_us_per_byte"))
    l.cost.writeback_later =
        writeback_points(r, f.at("writeback_later_us_per_byte"), what + ".writeback_later_us_per_byte");
  l.rate = rate(r, f, what);
  l.cost.us_per_byte = l.rate.in_cache;
  return l;
}

Rate per_byte(const Reader& r, const YAML::Node& node, const std::string& what) {
  return rate(r, r.mapping(node, what, {"bandwidth_GBps", kBeyond}, {"bandwidth_GBps"}), what);
}

// rank_to_node: every rank's node, each node holding ranks_per_node ranks.
std::vector<int> placement(const Reader& r, const YAML::Node& node, int nodes, int ranks_per_node) {
  if (!node.IsSequence()) r.fail(node, "rank_to_node must be a list of node indices, one per rank");
  const std::size_t ranks = static_cast<std::size_t>(nodes) * static_cast<std::size_t>(ranks_per_node);
  if (node.size() != ranks)
    r.fail(node, "rank_to_node has " + std::to_string(node.size()) + " entries; nodes x ranks_per_node = " +
                     std::to_string(ranks));
  std::vector<int> out;
  std::vector<int> load(static_cast<std::size_t>(nodes), 0);
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& e = node[i];
    const long n = r.integer(e, "rank_to_node[" + std::to_string(i) + "]", 0);
    if (n >= nodes)
      r.fail(e, "rank_to_node[" + std::to_string(i) + "] is node " + std::to_string(n) + ", but nodes = " +
                    std::to_string(nodes) + " (valid: 0.." + std::to_string(nodes - 1) + ")");
    if (++load[n] > ranks_per_node)
      r.fail(e, "rank_to_node puts more than ranks_per_node = " + std::to_string(ranks_per_node) +
                    " ranks on node " + std::to_string(n));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

constexpr long kMaxRanks = 1L << 24;  // keeps nodes x ranks_per_node far from overflow

Machine read(const Reader& r, const YAML::Node& root, const std::string& file_name) {
  const auto top = r.mapping(root, "the topology",
                             {"name", "description", "nodes", "ranks_per_node", "rank_to_node", "cache_bytes",
                              "call_overhead_us", "state_probe_us", "links", "reduce", "copy"},
                             {"name", "nodes", "ranks_per_node", "links", "reduce"});
  Machine m;
  m.source = file_name;
  m.name = r.text(top.at("name"), "name");
  if (top.count("description")) m.description = r.text(top.at("description"), "description");
  const long nodes = r.integer(top.at("nodes"), "nodes", 1);
  const long per_node = r.integer(top.at("ranks_per_node"), "ranks_per_node", 1);
  if (nodes > kMaxRanks || per_node > kMaxRanks || nodes * per_node > kMaxRanks)
    r.fail(top.at("nodes"), "nodes x ranks_per_node exceeds " + std::to_string(kMaxRanks) + " ranks");
  m.nodes = static_cast<int>(nodes);
  m.ranks_per_node = static_cast<int>(per_node);
  if (top.count("rank_to_node")) m.rank_to_node = placement(r, top.at("rank_to_node"), m.nodes, m.ranks_per_node);

  // intra is needed when a node holds several ranks, inter when there are several nodes; a
  // class no rank pair uses may be left out and takes the other's numbers (one rank: either).
  const YAML::Node& links_node = top.at("links");
  const auto links = nodes == 1 && per_node == 1 ? r.mapping(links_node, "links", {"intra", "inter"}, {})
                     : nodes == 1                ? r.mapping(links_node, "links", {"intra", "inter"}, {"intra"})
                     : per_node == 1             ? r.mapping(links_node, "links", {"intra", "inter"}, {"inter"})
                                                 : r.mapping(links_node, "links", {"intra", "inter"}, {"intra", "inter"});
  if (links.empty()) r.fail(links_node, "links must hold intra or inter (one rank: either)");
  const Link intra = links.count("intra") ? link(r, links.at("intra"), "links.intra") : Link{};
  const Link inter = links.count("inter") ? link(r, links.at("inter"), "links.inter") : intra;
  const Link& intra_or_inter = links.count("intra") ? intra : inter;
  m.intra = intra_or_inter.cost;
  m.inter = inter.cost;

  const Rate reduce = per_byte(r, top.at("reduce"), "reduce");
  const Rate copy = top.count("copy") ? per_byte(r, top.at("copy"), "copy") : reduce;
  m.reduce_us_per_byte = reduce.in_cache;
  m.copy_us_per_byte = copy.in_cache;

  // The second regime: beyond-cache rates apply only past cache_bytes, so they need it.
  for (const Rate* x : {&intra_or_inter.rate, &inter.rate, &reduce, &copy})
    if (x->has_beyond && !top.count("cache_bytes"))
      r.fail(x->beyond_at,
             x->beyond_name + " needs cache_bytes at the top level (the working set where it starts to apply)");
  if (top.count("cache_bytes")) m.cache_bytes = r.byte_count(top.at("cache_bytes"), "cache_bytes");
  m.beyond_cache = {intra_or_inter.rate.beyond, inter.rate.beyond, reduce.beyond, copy.beyond};
  if (top.count("call_overhead_us")) m.call_us = r.number(top.at("call_overhead_us"), "call_overhead_us", true);
  if (top.count("state_probe_us")) m.state_probe_us = r.number(top.at("state_probe_us"), "state_probe_us", false);
  return m;
}

Machine parse(const std::string& text, const std::string& file_name) {
  const Reader r(file_name);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    r.fail(e.mark, "malformed YAML: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) r.fail(YAML::Mark(), "the file is empty; expected a topology mapping");
  return read(r, root, file_name);
}

}  // namespace

Machine parse_topology(const std::string& text, const std::string& file_name) { return parse(text, file_name); }

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) {  // control characters as YAML escapes
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += esc;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string integer_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string gbps(double us_per_byte) {
  if (!(us_per_byte > 0) || !std::isfinite(us_per_byte))
    throw Error(Error::Code::InvalidArgument, "topology_yaml: a rate of " + number_text(us_per_byte) +
                                                  " us per byte has no bandwidth to write");
  return number_text(kUsPerByteAtOneGBps / us_per_byte);
}

// ", KEY: { BYTES: VALUE, ... }" of a table by message size; nothing for an empty one.
template <typename Point>
std::string size_table_yaml(const char* key, const std::vector<Point>& table, double Point::*value) {
  if (table.empty()) return "";
  std::string y = std::string(", ") + key + ": {";
  for (std::size_t i = 0; i < table.size(); ++i)
    y += (i ? ", " : " ") + integer_text(table[i].bytes) + ": " + number_text(table[i].*value);
  return y + " }";
}

std::string link_yaml(const LinkCost& l, double beyond_us_per_byte) {
  std::string y = "{ alpha_us: " + number_text(l.alpha_us) + ", bandwidth_GBps: " + gbps(l.us_per_byte);
  if (beyond_us_per_byte > 0) y += ", bandwidth_GBps_beyond_cache: " + gbps(beyond_us_per_byte);
  y += std::string(", copied_by: ") + (l.cpu_copies ? "cpu" : "dma");
  if (l.shared_by_node) y += ", shared_by: node";
  if (l.rendezvous_bytes > 0)
    y += ", rendezvous_bytes: " + integer_text(l.rendezvous_bytes) + ", alpha_us_rendezvous: " +
         number_text(l.alpha_us_rendezvous);
  y += size_table_yaml("latency_us", l.latency, &LinkCost::LatencyPoint::alpha_us);
  y += size_table_yaml("writeback_us_per_byte", l.writeback, &LinkCost::WritebackPoint::us_per_byte);
  y += size_table_yaml("writeback_later_us_per_byte", l.writeback_later, &LinkCost::WritebackPoint::us_per_byte);
  return y + " }";
}

std::string rate_yaml(double us_per_byte, double beyond_us_per_byte) {
  std::string y = "{ bandwidth_GBps: " + gbps(us_per_byte);
  if (beyond_us_per_byte > 0) y += ", bandwidth_GBps_beyond_cache: " + gbps(beyond_us_per_byte);
  return y + " }";
}

}  // namespace

std::string topology_yaml(const Machine& m) {
  if (m.nodes < 1 || m.ranks_per_node < 1)
    throw Error(Error::Code::InvalidArgument, "topology_yaml: '" + m.name + "' has " + std::to_string(m.nodes) +
                                                  " nodes of " + std::to_string(m.ranks_per_node) +
                                                  " ranks; a file needs at least 1 of each");
  // Beyond-cache rates are only written with cache_bytes, which they need.
  const bool two = m.cache_bytes > 0;
  const auto beyond = [&](double v) { return two ? v : 0.0; };
  std::string y = "name: " + quoted(m.name) + "\n";
  if (!m.description.empty()) y += "description: " + quoted(m.description) + "\n";
  y += "nodes: " + std::to_string(m.nodes) + "\nranks_per_node: " + std::to_string(m.ranks_per_node) + "\n";
  if (!m.rank_to_node.empty()) {
    y += "rank_to_node: [";
    for (std::size_t i = 0; i < m.rank_to_node.size(); ++i) y += (i ? ", " : "") + std::to_string(m.rank_to_node[i]);
    y += "]\n";
  }
  if (m.call_us > 0) y += "call_overhead_us: " + number_text(m.call_us) + "\n";
  if (m.state_probe_us > 0) y += "state_probe_us: " + number_text(m.state_probe_us) + "\n";
  if (two) y += "cache_bytes: " + integer_text(m.cache_bytes) + "\n";
  y += "links:\n  intra: " + link_yaml(m.intra, beyond(m.beyond_cache.intra_us_per_byte)) + "\n";
  y += "  inter: " + link_yaml(m.inter, beyond(m.beyond_cache.inter_us_per_byte)) + "\n";
  y += "reduce: " + rate_yaml(m.reduce_us_per_byte, beyond(m.beyond_cache.reduce_us_per_byte)) + "\n";
  y += "copy: " + rate_yaml(m.copy_us_per_byte, beyond(m.beyond_cache.copy_us_per_byte)) + "\n";
  return y;
}

Machine load_topology(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(Error::Code::InvalidArgument, "topology file '" + path + "' is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  const int why = errno;
  if (!in)
    throw Error(Error::Code::InvalidArgument, "cannot open topology file '" + path + "'" +
                                                  (why ? std::string(": ") + std::strerror(why) : std::string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

}  // namespace arlab::detail

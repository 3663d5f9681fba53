#include "cli.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "calibrate/calibration.hpp"
#include "core/environment.hpp"

namespace arlab::tool::cli {

void bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
  throw BadArgument{"bad value '" + std::string(value) + "' for " + std::string(flag) + ": expected " +
                    std::string(expected)};
}

bool walk(int argc, const char* const* argv, std::span<const Flag> flags,
          const std::function<void(const Flag&, const std::string&)>& apply) {
  auto names = [&] {
    std::string out;
    for (const Flag& f : flags) out += (out.empty() ? "" : ", ") + std::string(f.name);
    return out;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      inline_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags)
      if (arg == f.name || (f.alias && arg == f.alias)) flag = &f;
    if (!flag) throw BadArgument{"unknown argument '" + std::string(argv[i]) + "'; flags: " + names()};
    arg = flag->name;
    if (arg == "--help") return false;
    if (!flag->metavar) {
      if (inline_value) throw BadArgument{arg + " takes no value"};
      apply(*flag, "");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) throw BadArgument{arg + " needs a value: " + flag->metavar + " (" + flag->help + ")"};
      value = argv[++i];
    }
    apply(*flag, value);
  }
  return true;
}

std::string flag_table(std::span<const Flag> flags, std::size_t column) {
  std::string out;
  for (const Flag& f : flags) {
    std::string head = "  ";
    if (f.alias) head.append(f.alias).append(", ");
    head.append(f.name);
    if (f.metavar) head.append(" ").append(f.metavar);
    if (head.size() < column) head.resize(column, ' ');
    else head.append("\n").append(column, ' ');
    out.append(head).append(f.help);
    if (f.default_text) out += " (default: " + std::string(f.default_text) + ")";
    out += "\n";
  }
  return out;
}

SizeRange parse_range(std::string_view flag, const std::string& v, std::size_t default_factor,
                      std::string_view expected) {
  std::vector<std::string> parts;
  std::istringstream in(v);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  if (parts.size() < 2 || parts.size() > 3 || v.back() == ':') bad_value(flag, v, expected);
  const auto lo = detail::parse_size(parts[0]), hi = detail::parse_size(parts[1]);
  if (!lo || !hi || *lo > *hi || *lo == 0) bad_value(flag, v, expected);
  SizeRange r{*lo, *hi, default_factor};
  if (parts.size() == 3) {
    unsigned long long f = 0;
    auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), f);
    if (ec != std::errc{} || end != parts[2].data() + parts[2].size() || f < 2 || f > (1u << 20))
      bad_value(flag, v, expected);
    r.factor = static_cast<std::size_t>(f);
  }
  return r;
}

std::vector<std::size_t> geometric_sizes(const SizeRange& r, std::size_t multiple) {
  return calib::geometric_sizes(r.min_bytes, r.max_bytes, r.factor, multiple);
}

std::string human_bytes(double bytes) { return calib::size_text(bytes); }

bool can_write(const std::string& path, std::string* why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *why = "it is a directory";
    return false;
  }
  if (std::filesystem::exists(path, ec)) {
    if (access(path.c_str(), W_OK) == 0) return true;
    *why = std::strerror(errno);
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    *why = std::strerror(errno);
    return false;
  }
  std::fclose(f);
  std::remove(path.c_str());
  return true;
}

}  // namespace arlab::tool::cli

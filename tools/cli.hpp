// What arlab-model's and arlab-calibrate's command lines share: the flag table, the walk over
// argv (--flag VALUE, --flag=VALUE, short aliases), one-line errors, the --help table, size
// ranges MIN:MAX[:FACTOR], and sizes printed for people.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arlab::tool::cli {

struct Flag {
  const char* name;          // "--sizes"
  const char* alias;         // "-t", or nullptr
  const char* metavar;       // "MIN:MAX[:FACTOR]"; nullptr: the flag takes no value
  const char* help;
  const char* default_text;  // nullptr: no default shown
};

// Thrown by the parsers; its message is the one line the tool prints.
struct BadArgument {
  std::string message;
};

[[noreturn]] void bad_value(std::string_view flag, std::string_view value, std::string_view expected);

// Calls apply(flag, value) for each flag of argv in order ("" for flags without a value).
// Returns false when --help (or its alias) is seen, before applying anything after it.
// Throws BadArgument for an unknown flag, a missing value, or a value given to a bare flag.
bool walk(int argc, const char* const* argv, std::span<const Flag> flags,
          const std::function<void(const Flag&, const std::string&)>& apply);

// One line per flag: "  -a, --name METAVAR   help (default: ...)", help starting at `column`.
std::string flag_table(std::span<const Flag> flags, std::size_t column);

struct SizeRange {
  std::size_t min_bytes, max_bytes, factor;
};
// "MIN:MAX[:FACTOR]" with K/M/G suffixes and an integer FACTOR in 2..2^20 (default_factor
// when absent); MIN >= 1 and MIN <= MAX. Callers add their own bounds.
SizeRange parse_range(std::string_view flag, const std::string& value, std::size_t default_factor,
                      std::string_view expected);

// MIN, MIN*FACTOR, ... <= MAX, rounded down to multiples of `multiple`; zeros and repeats dropped.
std::vector<std::size_t> geometric_sizes(const SizeRange& r, std::size_t multiple);

// "8 B", "64 KiB", "1.5 MiB".
std::string human_bytes(double bytes);

// Whether a file could be written at `path` now, without writing it: an existing file must be
// writable and not a directory; a new one is created and removed again. Otherwise false, with
// the reason in *why ("it is a directory", or the system's).
bool can_write(const std::string& path, std::string* why);

}  // namespace arlab::tool::cli

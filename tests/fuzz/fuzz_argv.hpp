// The fuzz input as a command line, for the command-line targets: argv entries separated by NUL
// bytes, as in /proc/PID/cmdline (a trailing NUL ends the last entry rather than starting an
// empty one), after a fixed argv[0]. Seeds: printf '%s\0' ARG... > corpus/<target>/<name>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"

namespace arlab::fuzz {

class FuzzArgv {
 public:
  FuzzArgv(const char* program, const std::uint8_t* data, std::size_t size) {
    args_.emplace_back(program);
    const char* text = reinterpret_cast<const char*>(data);
    std::size_t start = 0;
    for (std::size_t i = 0; i <= size; ++i) {
      if (i < size && text[i] != '\0') continue;
      if (i < size || i > start) args_.emplace_back(text + start, i - start);
      start = i + 1;
    }
    for (const std::string& a : args_) {
      argv_.push_back(a.c_str());
      newline_ = newline_ || a.find('\n') != std::string::npos;
    }
    argv_.push_back(nullptr);  // argv[argc], as main() gets it
  }

  int argc() const { return static_cast<int>(args_.size()); }
  const char* const* argv() const { return argv_.data(); }
  // Whether an entry holds a newline (messages may quote entries, so then may span lines).
  bool has_newline() const { return newline_; }

 private:
  std::vector<std::string> args_;
  std::vector<const char*> argv_;
  bool newline_ = false;
};

// One input of a command-line target: `parse` (the tool's parser, returning a result with
// status Run, Help or Error and a message) on the input as argv; a Run result goes to
// `check_run`, an Error must carry a one-line message (unless an argument quoted in it holds
// a newline).
template <class Parse, class CheckRun>
int fuzz_command_line(const char* program, const std::uint8_t* data, std::size_t size, Parse&& parse,
                      CheckRun&& check_run) {
  return guarded([&] {
    const FuzzArgv args(program, data, size);
    const auto r = parse(args.argc(), args.argv());
    using Status = decltype(r.status);
    switch (r.status) {
      case Status::Run:
        check_run(r.options);
        break;
      case Status::Help:
        break;
      case Status::Error:
        require(!r.message.empty(), "empty error message");
        require(args.has_newline() || r.message.find('\n') == std::string::npos, "multi-line error message");
        break;
    }
  });
}

}  // namespace arlab::fuzz

// What the fuzz targets do when the code under test breaks a promise that is not a crash: say
// which on stderr and abort, so that libFuzzer reports it and keeps the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace arlab::fuzz {

[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) bug(what);
}

// Runs one input through `body`; an exception that leaves it (the parsers report bad input in
// their result, or as the error the target catches itself) is a bug, named with its message.
template <class Body>
int guarded(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    bug(std::string("unexpected exception: ") + e.what());
  } catch (...) {
    bug("unexpected exception of a type not derived from std::exception");
  }
  return 0;
}

}  // namespace arlab::fuzz

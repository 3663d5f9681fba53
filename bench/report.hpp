// arlab-bench table on stdout, nccl-tests style: a three-line heading (section names, column
// names, units), then one line per size x algorithm x transport.
#pragma once

#include <cstdio>

#include "results.hpp"

namespace arlab::bench {

// Which sections the table has (-z).
struct Sections {
  bool out_of_place = true;
  bool in_place = true;
};

void print_heading(std::FILE*, Sections);
void print_line(std::FILE*, const Line&, Sections);

}  // namespace arlab::bench

// Prints a schedule as text: one line a step, for reading an algorithm and for debugging.
#pragma once

#include <ostream>

#include "schedule/schedule.hpp"

namespace arlab::detail {

void print_schedule(std::ostream& out, const Schedule& schedule, int rank);

}  // namespace arlab::detail

// arlab-bench data: what each rank puts in its send buffer, and the check of the result.
//
// Element i of rank r holds a small integer drawn from a hash of (r, i mod kPeriod), kPeriod a
// prime (1021), so a contribution that is missing, doubled, taken from another index or from
// another rank changes the result (for sum and avg at almost every element; min and max cannot
// see a doubled contribution, prod only where the value is 2). No power-of-two shift of a
// chunk is a multiple of the period, and no two ranks share a pattern.
//   sum, avg, min, max: 1..9
//   prod:               2 with probability 2/9, else 1 (a product of powers of two is exact)
// Partial sums stay exact integers in every type while they fit its significand (bfloat16: 256,
// i.e. up to 28 ranks; half: 2048); past that the check allows the rounding of a sum in any
// order. A half product overflows to inf on both sides alike.
// The expected result folds the same values over the ranks with the op's semantics: integers
// wrap (two's complement), avg = sum / ranks (integers: the wrapped sum divided, truncated
// toward zero), floating results rounded to nearest even.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arlab::bench {

struct Mismatch {
  std::size_t index = 0;
  std::string got;
  std::string expected;
};

class Checker {
 public:
  static constexpr std::size_t kPeriod = 1021;

  Checker(DataType type, ReduceOp op, int rank, int nranks);

  // Writes this rank's pattern into count elements of buf.
  void fill(void* buf, std::size_t count) const;

  // Writes, into count elements of buf, values that all differ from the expected result (its
  // bits inverted: never equal, and never within the tolerance since no expected value is 0).
  void poison(void* buf, std::size_t count) const;

  // Number of elements of buf (the all-reduce result) that differ from the expected value
  // beyond the rounding the arithmetic allows; the first one goes to *first when given.
  std::size_t count_wrong(const void* buf, std::size_t count, Mismatch* first) const;

  // Number of elements of buf that no longer hold this rank's pattern (bitwise): an
  // out-of-place call must leave its send buffer alone.
  std::size_t count_changed(const void* buf, std::size_t count) const;

 private:
  DataType type_;
  std::vector<unsigned char> pattern_;   // kPeriod elements of type_: this rank's values
  std::vector<unsigned char> expected_;  // kPeriod elements of type_: the reduced values
  std::vector<double> tolerance_;        // kPeriod absolute tolerances (0 = exact)
};

}  // namespace arlab::bench

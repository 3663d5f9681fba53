// arlab-bench data: what each rank puts in its send buffer, and the check of the result.
//
// Element i of rank r holds a small integer that depends on r and on i mod kPeriod, so a
// contribution that is missing, doubled or taken from the wrong index changes the result:
//   base(r, i) = (r^2 + i) mod 7 + (i / 7 + r) mod 3                        in 0..8
//   sum, avg, min, max: 1 + base                                           in 1..9
//   prod:               2 if base mod 5 == 0 else 1   (a product of powers of two is exact)
// With these values every partial sum is exact in every type up to 42 ranks (bfloat16 holds
// integers up to 256; half up to 2048, 291 ranks); past that the check allows the rounding of
// a sum in any order. A half product overflows to inf from 46 ranks on, on both sides.
// The expected result folds the same values over the ranks with the
// op's semantics: integers wrap (two's complement), avg = sum / ranks (integers: the wrapped
// sum divided, truncated toward zero), floating results rounded to nearest even.
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
  static constexpr std::size_t kPeriod = 21;

  Checker(DataType type, ReduceOp op, int rank, int nranks);

  // Writes this rank's pattern into count elements of buf.
  void fill(void* buf, std::size_t count) const;

  // Writes, into count elements of buf, values that all differ from the expected result (its
  // bits inverted: never equal, and never within the tolerance since no expected value is 0).
  void poison(void* buf, std::size_t count) const;

  // Number of elements of buf (the all-reduce result) that differ from the expected value
  // beyond the rounding the arithmetic allows; the first one goes to *first when given.
  std::size_t count_wrong(const void* buf, std::size_t count, Mismatch* first) const;

 private:
  DataType type_;
  std::vector<unsigned char> pattern_;   // kPeriod elements of type_: this rank's values
  std::vector<unsigned char> expected_;  // kPeriod elements of type_: the reduced values
  std::vector<double> tolerance_;        // kPeriod absolute tolerances (0 = exact)
};

}  // namespace arlab::bench

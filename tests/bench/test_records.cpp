// arlab-bench's records and footer: every key in every JSON record and CSV row, no non-finite
// number, baselines over "native", and the failing sizes named.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "records.hpp"
#include "summary.hpp"

namespace arlab::bench {
namespace {

Line line(Algorithm a, std::size_t size, double time_us, std::optional<std::uint64_t> wrong) {
  Line l;
  l.size = size;
  l.count = size / 4;
  l.algorithm = a;
  l.transport = TransportKind::Ucx;
  l.ranks = 2;
  if (a != Algorithm::Mpi) l.predicted_us = 2.0;
  Section s;
  s.time_us = s.min_us = s.max_us = time_us;
  s.algbw_GBps = algbw_GBps(size, time_us);
  s.busbw_GBps = busbw_GBps(s.algbw_GBps, 2);
  s.wrong = wrong;
  l.out_of_place = s;
  l.in_place = s;
  return l;
}

std::vector<Line> sample() {
  return {line(Algorithm::Ring, 8, 1.0, 0), line(Algorithm::Mpi, 8, 0.5, 0), line(Algorithm::Ring, 64, 2.0, 3),
          line(Algorithm::Ring, 512, std::numeric_limits<double>::quiet_NaN(), std::nullopt)};
}

TEST(BenchRecords, JsonHasEveryKeyInEveryRecord) {
  RunInfo info;
  info.version = "x";
  info.transports = {"ucx"};
  const std::string json = to_json(info, sample());
  std::size_t records = 0;
  for (std::size_t at = json.find("{\"size\""); at != std::string::npos; at = json.find("{\"size\"", at + 1)) {
    const std::string rec = json.substr(at, json.find('}', at) - at);
    for (const std::string& k : record_keys()) EXPECT_NE(rec.find("\"" + k + "\": "), std::string::npos) << k;
    ++records;
  }
  EXPECT_EQ(records, 8u);  // 4 lines x 2 sections
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);
  EXPECT_NE(json.find("\"transport\": \"native\""), std::string::npos);  // the mpi baseline
  EXPECT_NE(json.find("\"predicted_us\": null"), std::string::npos);
  EXPECT_NE(json.find("\"wrong\": null"), std::string::npos);
  EXPECT_EQ(json.rfind("{\"arlab_bench\": {", 0), 0u);
}

TEST(BenchRecords, CsvHasAHeaderAndEveryField) {
  RunInfo info;
  const std::string csv = to_csv(info, sample());
  std::istringstream in(csv);
  std::string row;
  std::getline(in, row);
  std::string header;
  for (const std::string& k : record_keys()) header += (header.empty() ? "" : ",") + k;
  EXPECT_EQ(row, header);
  int rows = 0;
  while (std::getline(in, row)) {
    EXPECT_EQ(std::count(row.begin(), row.end(), ','), static_cast<long>(record_keys().size() - 1)) << row;
    ++rows;
  }
  EXPECT_EQ(rows, 8);
}

TEST(BenchSummary, NamesTheFailingSizesAndTheBest) {
  std::vector<Line> lines = sample();
  lines.push_back(line(Algorithm::Ring, 4096, 3.0, 1));
  const Summary s = summarize(lines);
  EXPECT_EQ(s.wrong, 8u);  // (3 + 1) x 2 sections
  ASSERT_EQ(s.wrong_where.size(), 2u);
  EXPECT_EQ(s.wrong_where[0], "ring over ucx, float sum, out-of-place: 64B, 4KiB");
  EXPECT_EQ(s.wrong_where[1], "ring over ucx, float sum, in-place: 64B, 4KiB");
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->series, "ring over ucx");
  ASSERT_EQ(s.averages.size(), 2u);
  EXPECT_EQ(s.averages[1].series, "mpi baseline");
}

}  // namespace
}  // namespace arlab::bench

// arlab-bench's records and footer: every key in every JSON record and CSV row, no non-finite
// number, baselines over "native", and the failing sizes named; --rounds' combination.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "measure.hpp"
#include "records.hpp"
#include "report.hpp"
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

TEST(BenchSummary, CountsTheSectionsThatRanInAnotherStateOfTheMachine) {
  EXPECT_EQ(state_note(sample()), "");  // nothing probed: no note
  std::vector<Line> lines;
  for (const double probe : {0.16, 0.2, 0.41, 0.17}) {
    lines.push_back(line(Algorithm::Ring, 8, 1.0, 0));
    lines.back().out_of_place->state_probe_us = probe;
    lines.back().in_place->state_probe_us = probe;
  }
  const std::string unknown = state_note(lines);  // no calibrated state to compare with
  EXPECT_NE(unknown.find("0.16-0.41 us before the sections"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("holds no calibrated state"), std::string::npos) << unknown;
  for (Line& l : lines) l.calibrated_state_probe_us = 0.17;
  const std::string note = state_note(lines);
  EXPECT_NE(note.find(", 0.17 us when the model was calibrated"), std::string::npos) << note;
  EXPECT_NE(note.find("; 2 of 8 sections ran in another state (over 1.6x apart): their err% compares two machines"),
            std::string::npos)
      << note;  // 0.41 / 0.17 = 2.4x, both sections; 0.2 / 0.17 = 1.18x is the same state
  // The slow state as the reference: the fast sections are the other state.
  for (Line& l : lines) l.calibrated_state_probe_us = 0.4;
  EXPECT_NE(state_note(lines).find("; 6 of 8 sections ran in another state"), std::string::npos) << state_note(lines);
  EXPECT_EQ(state_note(lines).find("more ranks than cores"), std::string::npos);
  EXPECT_NE(state_note(lines, true).find("(more ranks than cores on a host: the probe spreads 2x within a state as well)"),
            std::string::npos);
  // A record says both.
  const std::string json = to_json(RunInfo{}, lines);
  EXPECT_NE(json.find("\"state_probe_us\": 0.41, \"calibrated_state_probe_us\": 0.4"), std::string::npos) << json;
}

TEST(Rounds, TheMedianRoundWithTheExtremesOfEveryCall) {
  const auto round = [](double t, double lo, double hi, std::optional<std::uint64_t> wrong) {
    Section s;
    s.time_us = t;
    s.min_us = lo;
    s.max_us = hi;
    s.wrong = wrong;
    return s;
  };
  // Odd: the middle one; the wrong count is the last (checked) round's.
  std::vector<Section> rounds{round(30, 20, 40, {}), round(10, 5, 12, {}), round(11, 10, 90, 0)};
  for (std::size_t i = 0; i < rounds.size(); ++i) rounds[i].state_probe_us = 0.4 - 0.1 * static_cast<double>(i);
  Section s = combine_rounds(rounds, 4000, 2);
  EXPECT_DOUBLE_EQ(s.time_us, 11);  // not the mean, 17
  EXPECT_DOUBLE_EQ(s.state_probe_us, 0.3);  // the median of the rounds' probes
  EXPECT_DOUBLE_EQ(s.min_us, 5);
  EXPECT_DOUBLE_EQ(s.max_us, 90);
  EXPECT_DOUBLE_EQ(s.algbw_GBps, 4000 / 11e-6 / 1e9);
  EXPECT_DOUBLE_EQ(s.busbw_GBps, s.algbw_GBps);  // 2 ranks: 2(p-1)/p = 1
  EXPECT_EQ(s.wrong, std::optional<std::uint64_t>(0));
  // Even: the mean of the two middle ones.
  s = combine_rounds({round(90, 90, 90, 3), round(10, 10, 10, 1), round(20, 20, 20, 2), round(30, 30, 30, 7)}, 8, 4);
  EXPECT_DOUBLE_EQ(s.time_us, 25);  // not the mean, 37.5
  EXPECT_EQ(s.wrong, std::optional<std::uint64_t>(7));
  EXPECT_DOUBLE_EQ(s.busbw_GBps, s.algbw_GBps * 1.5);
  // One round: unchanged.
  s = combine_rounds({round(7, 6, 8, 0)}, 8, 2);
  EXPECT_DOUBLE_EQ(s.time_us, 7);
  EXPECT_DOUBLE_EQ(s.min_us, 6);
  EXPECT_DOUBLE_EQ(s.max_us, 8);
}

TEST(BenchTable, ValuesWiderThanTheirColumnStaySeparated) {
  // A prediction 20x the time gives err% -1900.0, and a time of seconds: both wider than
  // their columns; the line must still split on blanks into its 18 fields.
  Line l = line(Algorithm::Ring, 512, 21.78, 0);
  l.predicted_us = 469.45;
  l.in_place->time_us = 12345678.9;
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  print_line(f, l, Sections{true, true});
  std::rewind(f);
  char buf[512] = {};
  ASSERT_NE(std::fgets(buf, sizeof buf, f), nullptr);
  std::fclose(f);
  std::istringstream in(buf);
  std::vector<std::string> fields;
  for (std::string w; in >> w;) fields.push_back(w);
  ASSERT_EQ(fields.size(), 18u) << buf;
  EXPECT_EQ(fields[10], "0") << buf;
  EXPECT_EQ(fields[11], "-2055.4") << buf;
  EXPECT_EQ(fields[13], "12345678.90") << buf;
}

}  // namespace
}  // namespace arlab::bench

#include "report.hpp"

#include <string>

namespace arlab::bench {
namespace {

// Column widths. The first column gives one character to the heading's leading '#'.
// Each section has its own prediction (an out-of-place call also copies or reads its input).
constexpr int kSize = 12, kCount = 11, kType = 9, kOp = 6, kTransport = 10, kAlgo = 38, kPred = 10;
constexpr int kTime = 10, kBw = 7, kWrong = 7, kErr = 7;
constexpr int kSectionWidth = kPred + kTime + 2 * kBw + kWrong + kErr;
constexpr int kLeftWidth = kSize + kCount + kType + kOp + kTransport + kAlgo;

// Right-trimmed, so the heading has no trailing blanks.
void put_line(std::FILE* out, std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  std::fprintf(out, "%s\n", line.c_str());
}

// Right-aligned in `width`, and always after at least one blank: a value wider than its
// column (an err% of -2055.0, a time of seconds) widens the line instead of merging with the
// cell before it, so the columns stay separable by blanks.
std::string cell(int width, const std::string& text) {
  const std::size_t w = static_cast<std::size_t>(width);
  return text.size() < w ? std::string(w - text.size(), ' ') + text : " " + text;
}

std::string number(double x, const char* format = "%.2f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string centred(int width, const std::string& title) {
  const int pad = width - static_cast<int>(title.size());
  return std::string(static_cast<std::size_t>(pad / 2 + pad % 2), ' ') + title +
         std::string(static_cast<std::size_t>(pad / 2), ' ');
}

void section_cells(std::FILE* out, const Line& l, const Section& s, bool in_place) {
  const std::string wrong = s.wrong ? std::to_string(*s.wrong) : std::string("N/A");
  std::string err = "-", pred = "-";
  if (auto e = err_pct(l, s, in_place)) err = number(*e, "%+.1f");
  if (const auto& p = predicted(l, in_place)) pred = number(*p);
  const std::string cells = cell(kPred, pred) + cell(kTime, number(s.time_us)) + cell(kBw, number(s.algbw_GBps)) +
                            cell(kBw, number(s.busbw_GBps)) + cell(kWrong, wrong) + cell(kErr, err);
  std::fputs(cells.c_str(), out);
}

}  // namespace

void print_heading(std::FILE* out, Sections z) {
  const int sections = z.out_of_place + z.in_place;
  std::string groups(kLeftWidth, ' ');
  groups[0] = '#';
  if (z.out_of_place) groups += centred(kSectionWidth, "out-of-place");
  if (z.in_place) groups += centred(kSectionWidth, "in-place");
  std::string names(1, '#'), units(1, '#');
  names += cell(kSize - 1, "size") + cell(kCount, "count") + cell(kType, "type") + cell(kOp, "redop") +
           cell(kTransport, "transport") + cell(kAlgo, "algorithm");
  units += cell(kSize - 1, "(B)") + cell(kCount, "(elements)") + cell(kType, "") + cell(kOp, "") +
           cell(kTransport, "") + cell(kAlgo, "");
  for (int k = 0; k < sections; ++k) {
    names += cell(kPred, "pred");
    units += cell(kPred, "(us)");
    names += cell(kTime, "time") + cell(kBw, "algbw") + cell(kBw, "busbw") + cell(kWrong, "#wrong") + cell(kErr, "err%");
    units += cell(kTime, "(us)") + cell(kBw, "(GB/s)") + cell(kBw, "(GB/s)") + cell(kWrong, "") + cell(kErr, "");
  }
  put_line(out, groups);
  put_line(out, names);
  put_line(out, units);
  std::fflush(out);
}

void print_line(std::FILE* out, const Line& l, Sections z) {
  const std::string left = cell(kSize, std::to_string(l.size)) + cell(kCount, std::to_string(l.count)) +
                           cell(kType, to_string(l.dtype)) + cell(kOp, to_string(l.op)) +
                           cell(kTransport, transport_label(l)) + cell(kAlgo, label(l));
  std::fputs(left.c_str(), out);
  if (z.out_of_place) {
    if (l.out_of_place) section_cells(out, l, *l.out_of_place, false);
    else std::fprintf(out, "%*s", kSectionWidth, "failed");
  }
  if (z.in_place) {
    if (l.in_place) section_cells(out, l, *l.in_place, true);
    else std::fprintf(out, "%*s", kSectionWidth, "failed");
  }
  std::fprintf(out, "\n");
  std::fflush(out);
}

}  // namespace arlab::bench

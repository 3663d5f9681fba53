#include "report.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>

namespace arlab::bench {
namespace {

// Column widths; the first column gives one character to the leading '#' of the header.
constexpr int kSize = 13, kCount = 12, kType = 9, kOp = 6, kAlgo = 25, kTime = 11, kBw = 12,
              kWrong = 7, kPred = 11;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

double algbw_GBps(std::size_t bytes, double time_us) {
  if (!(time_us > 0)) return 0;
  return static_cast<double>(bytes) / (time_us * 1e3);  // bytes / (us * 1e-6) / 1e9
}

double busbw_GBps(double algbw, int ranks) {
  if (ranks <= 1) return 0;
  return algbw * 2.0 * (ranks - 1) / ranks;
}

std::string format_bytes(std::size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

void print_columns(std::FILE* out) {
  std::fprintf(out, "#%*s%*s%*s%*s%*s%*s%*s%*s%*s%*s\n", kSize - 1, "size(B)", kCount, "count",
               kType, "type", kOp, "redop", kAlgo, "algorithm", kTime, "time(us)", kBw,
               "algbw(GB/s)", kBw, "busbw(GB/s)", kWrong, "#wrong", kPred, "pred(us)");
  std::fflush(out);
}

void print_row(std::FILE* out, const Row& r) {
  const std::string wrong = r.wrong ? std::to_string(*r.wrong) : std::string("N/A");
  char pred[32] = "-";
  if (r.predicted_us) std::snprintf(pred, sizeof pred, "%.2f", *r.predicted_us);
  std::fprintf(out, "%*zu%*zu%*s%*s%*s%*.2f%*.2f%*.2f%*s%*s\n", kSize, r.size, kCount, r.count,
               kType, to_string(r.dtype).c_str(), kOp, to_string(r.op).c_str(), kAlgo,
               r.label.c_str(), kTime, r.time_us, kBw, r.algbw_GBps, kBw, r.busbw_GBps, kWrong,
               wrong.c_str(), kPred, pred);
  std::fflush(out);
}

void print_averages(std::FILE* out, const std::vector<Row>& rows, const std::vector<Algorithm>& order) {
  for (Algorithm a : order) {
    double sum = 0;
    int n = 0;
    for (const Row& r : rows) {
      if (r.algorithm != a) continue;
      sum += r.busbw_GBps;
      ++n;
    }
    if (n > 0) std::fprintf(out, "# Avg bus bandwidth %s: %.3f GB/s\n", to_string(a).c_str(), sum / n);
  }
  std::fflush(out);
}

std::string to_json(const std::vector<Row>& rows) {
  std::string out = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out += i ? ",\n " : "\n ";
    out += "{\"size\": " + std::to_string(r.size);
    out += ", \"count\": " + std::to_string(r.count);
    out += ", \"dtype\": " + json_string(to_string(r.dtype));
    out += ", \"op\": " + json_string(to_string(r.op));
    out += ", \"algorithm\": " + json_string(to_string(r.algorithm));
    out += ", \"transport\": " + json_string(to_string(r.transport));
    out += ", \"ranks\": " + std::to_string(r.ranks);
    out += ", \"inplace\": " + std::string(r.inplace ? "true" : "false");
    out += ", \"time_us\": " + json_number(r.time_us);
    out += ", \"algbw_GBps\": " + json_number(r.algbw_GBps);
    out += ", \"busbw_GBps\": " + json_number(r.busbw_GBps);
    out += ", \"wrong\": " + (r.wrong ? std::to_string(*r.wrong) : std::string("null"));
    out += ", \"predicted_us\": " + (r.predicted_us ? json_number(*r.predicted_us) : std::string("null"));
    out += "}";
  }
  out += rows.empty() ? "]\n" : "\n]\n";
  return out;
}

bool write_json(const std::string& path, const std::vector<Row>& rows, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    if (error) *error = std::strerror(errno);
    return false;
  }
  const std::string text = to_json(rows);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int saved = errno;
  if (std::fclose(f) != 0 || !ok) {
    if (error) *error = std::strerror(ok ? errno : saved);
    return false;
  }
  return true;
}

}  // namespace arlab::bench

#include "schedule/printer.hpp"

namespace arlab::detail {

namespace {
std::ostream& operator<<(std::ostream& o, const Region& r) {
  return o << to_string(r.buffer) << "[" << r.offset << ".." << r.offset + r.count << ")";
}
}  // namespace

void print_schedule(std::ostream& out, const Schedule& s, int rank) {
  out << "rank " << rank << ": " << s.steps.size() << " steps, " << s.scratch_count
      << " scratch elements\n";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    out << "  " << i << ": ";
    switch (st.kind) {
      case StepKind::Send: out << "send   " << st.src << " -> r" << st.peer; break;
      case StepKind::Recv: out << "recv   " << st.dst << " <- r" << st.peer; break;
      case StepKind::Reduce: out << "reduce " << st.dst << " = " << st.src << " + " << st.aux; break;
      case StepKind::Copy: out << "copy   " << st.dst << " = " << st.src; break;
    }
    if (!st.deps.empty()) {
      out << "  after";
      for (auto d : st.deps) out << " " << d;
    }
    out << "\n";
  }
}

}  // namespace arlab::detail

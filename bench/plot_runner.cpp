#include "plot_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

extern char** environ;

namespace arlab::bench {
namespace {

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }
bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

// Runs argv, stdout and stderr inherited; the exit status, 127 when it cannot start.
int spawn(const std::vector<std::string>& args, bool silent) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (silent) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Plotter find_plotter() {
  Plotter p;
  if (const char* py = std::getenv("ARLAB_BENCH_PYTHON"); py && *py) p.python = py;
  else p.python = executable("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

  const std::string dir = exe_dir();
  if (const char* s = std::getenv("ARLAB_BENCH_PLOT"); s && *s) p.script = s;
  else if (readable(dir + "/plot.py")) p.script = dir + "/plot.py";
  else if (readable(dir + "/../share/arlab/plot.py")) p.script = dir + "/../share/arlab/plot.py";
  else p.script = ARLAB_BENCH_PLOT_SOURCE;
  return p;
}

bool plotter_ready(const Plotter& p, std::string* why) {
  if (!readable(p.script)) {
    *why = "the plot script " + p.script + " is missing (set ARLAB_BENCH_PLOT)";
    return false;
  }
  if (spawn({p.python, "-c", "import matplotlib"}, true) != 0) {
    *why = p.python + " cannot import matplotlib (apt-get install python3-matplotlib, or set ARLAB_BENCH_PYTHON)";
    return false;
  }
  return true;
}

int run_plotter(const Plotter& p, const std::string& json, const std::string& image) {
  return spawn({p.python, p.script, "--quiet", json, image}, false);
}

}  // namespace arlab::bench

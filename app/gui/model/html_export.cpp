#include "app/gui/model/html_export.h"

#include "core/io/session_manifest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mnemo::app {

namespace {
bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}
std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

std::pair<int64_t, int64_t> html_export_range(const PublishedView& s) {
  if (s.visited.empty()) return {std::max<int64_t>(0, s.position), std::max<int64_t>(0, s.position)};
  const int64_t last = s.visited.rbegin()->first;
  return {std::max(s.visited.begin()->first, last - 99), last};
}

std::vector<std::string> html_export_args(const PublishedView& s, int64_t from, int64_t to, bool mean_only,
                                          const std::string& out, const std::string& scratch, std::string* why) {
  const auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return std::vector<std::string>{};
  };
  if (!s.info || !s.info->doc) return fail("open a document first");
  const ViewSource& info = *s.info;
  std::vector<std::string> a = {"html"};
  // The document: its file, else (a replay's probe, a document made in memory) its bytes.
  std::string doc = info.doc->path;
  if (doc == "synthetic") return fail("the gallery's synthetic traces come from no model: open a document and a model");
  if (doc.empty()) {
    doc = scratch + "/document.txt";
    if (!write_text(doc, std::string(info.doc->bytes))) return fail("cannot write " + doc);
  }
  a.insert(a.end(), {"--doc", doc});
  if (!s.session_dir.empty()) {  // a replay: the session's newest checkpoint
    const std::string latest = read_text(s.session_dir + "/checkpoints/latest");
    const auto step = io::parse_latest_pointer(latest);
    if (!step)
      return fail("the session " + s.session_dir + " has no checkpoint yet (checkpoints/latest); wait for one, or export "
                  "its panels instead");
    a.insert(a.end(), {"--checkpoint", s.session_dir + "/checkpoints/" + io::step_file_name(*step)});
  } else if (!info.random_weights && !info.checkpoint.empty()) {
    a.insert(a.end(), {"--checkpoint", info.checkpoint});
  } else {  // a randomly initialised model: its config under its seed
    const std::string cfg = scratch + "/model.json";
    if (!write_text(cfg, nlohmann::json{{"model", info.cfg.to_json()}}.dump(2))) return fail("cannot write " + cfg);
    a.insert(a.end(), {"--config", cfg, "--random", "--seed", std::to_string(info.seed)});
  }
  if (s.session_dir.empty() && !info.stepping.as_trained()) a.insert(a.end(), {"--segment-len", std::to_string(info.segment_len)});
  a.insert(a.end(), {"--from", std::to_string(from), "--to", std::to_string(to), "--out", out});
  if (mean_only) a.push_back("--mean-only");
  return a;
}

ChildRun::~ChildRun() {
  if (pid_ > 0 && state_ == State::kRunning) {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
}

bool ChildRun::start(const std::string& program, const std::vector<std::string>& args, const std::string& log,
                     std::string* error) {
  if (poll() == State::kRunning) {
    if (error) *error = "an export is still running";
    return false;
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot write " + log + ": " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& x : argv_s) argv.push_back(x.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    if (error) *error = std::string("cannot start the export: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fd);
  pid_ = pid;
  log_ = log;
  state_ = State::kRunning;
  exit_code_ = -1;
  return true;
}

ChildRun::State ChildRun::poll() {
  if (state_ != State::kRunning) return state_;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    state_ = State::kExited;
    exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
  return state_;
}

std::string ChildRun::last_line() const {
  const std::string text = read_text(log_);
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  const size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

}  // namespace mnemo::app

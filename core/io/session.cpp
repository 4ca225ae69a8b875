#include "core/io/session.h"

#include "core/io/atomic_file.h"
#include "core/io/json_file.h"
#include "core/io/read_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace mnemo::io {

namespace {

bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void make_dir(const std::string& p) {
  if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST)
    throw IoError(p + ": cannot create directory: " + std::strerror(errno));
}

std::string step_name(int64_t step) { return step_file_name(step); }

// Steps of files named step-<N>.safetensors in `sub` (a folder of the session); symbolic
// links, and everything when `sub` itself is one, are left out.
std::vector<int64_t> steps_in(const std::string& dir, const std::string& sub) {
  std::vector<int64_t> steps;
  if (!outside_session(dir, sub).empty()) return steps;
  for (const auto& n : list_dir(dir + "/" + sub)) {
    const auto s = parse_step_file_name(n);
    if (s && outside_session(dir, sub + "/" + n).empty()) steps.push_back(*s);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

Session::Session(std::string dir, nlohmann::json manifest, int keep_last, bool read_only)
    : dir_(std::move(dir)), manifest_(std::move(manifest)), keep_last_(keep_last), read_only_(read_only) {}

void Session::check_writable(const char* what) const {
  if (read_only_) throw SessionError(dir_ + ": opened read-only; cannot " + what);
}

std::string Session::model_kind() const {
  const auto& m = manifest_;
  if (!m.is_object() || !m.contains("config") || !m["config"].is_object()) return "";
  const auto& c = m["config"];
  if (!c.contains("model") || !c["model"].is_object() || !c["model"].contains("model") || !c["model"]["model"].is_string())
    return "";
  return c["model"]["model"].get<std::string>();
}

Session Session::create(const std::string& dir, nlohmann::json manifest, int keep_last) {
  if (keep_last < 1) throw SessionError("keep_last must be >= 1, got " + std::to_string(keep_last));
  if (path_exists(dir) && !list_dir(dir).empty())
    throw SessionError(dir + ": directory exists and is not empty; pass a new directory (or --resume it)");
  make_dir(dir);
  make_dir(dir + "/checkpoints");
  make_dir(dir + "/traces");
  manifest["format_version"] = kSessionFormatVersion;
  manifest["format_minor"] = kSessionFormatMinor;
  manifest["created"] = now_iso8601();
#ifdef MNEMO_VERSION
  manifest["program_version"] = MNEMO_VERSION;
#endif
  write_file_atomic(dir + "/manifest.json", manifest.dump(2) + "\n");
  Session s(dir, std::move(manifest), keep_last, false);
  s.metrics_ = std::make_shared<FramedLogWriter>(dir + "/metrics.log");
  return s;
}

SessionWriteLock::SessionWriteLock(const std::string& dir, const std::string& busy) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw IoError("cannot open session directory " + dir + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK && !busy.empty()) throw SessionError(dir + ": " + busy);
    if (e == EWOULDBLOCK)
      throw SessionError(dir + ": another process is writing this session (a `train` of it still running, or its "
                         "--resume); wait for it to end, or stop it, then run this again: two writers would "
                         "interleave its checkpoints and metrics.log");
    throw IoError("cannot lock session directory " + dir + ": " + std::strerror(e));
  }
}

SessionWriteLock::~SessionWriteLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

Session Session::open(const std::string& dir, int keep_last, SessionAccess access) {
  const std::string mpath = dir + "/manifest.json";
  if (const std::string why = outside_session(dir, "manifest.json"); !why.empty())
    throw SessionError(dir + ": " + why + "; copy the real file into the session");
  std::string text;
  // A FIFO in its place is refused without waiting; a huge manifest without reading it.
  if (const std::string why = read_regular_file(mpath, &text, kMaxManifestBytes); !why.empty()) {
    if (why == kNoSuchFile)
      throw SessionError(dir + ": not a session (no readable manifest.json); pass a session directory");
    if (why.find("larger than the limit") != std::string::npos)  // the words of parse_session_manifest
      throw SessionError(mpath + ": manifest is larger than the limit of " + std::to_string(kMaxManifestBytes) +
                         " bytes; it is not a session manifest");
    throw SessionError(mpath + ": " + why);
  }
  nlohmann::json m = parse_session_manifest(text, mpath);
  if (access == SessionAccess::kReadOnly) return Session(dir, std::move(m), keep_last, true);
  // Writing follows no link out of the session either.
  for (const char* rel : {"checkpoints", "traces", "metrics.log", "checkpoints/latest"})
    if (const std::string why = outside_session(dir, rel); !why.empty())
      throw SessionError(dir + ": " + why + "; a session writes only inside its directory");
  make_dir(dir + "/checkpoints");
  make_dir(dir + "/traces");
  Session s(dir, std::move(m), keep_last, false);
  s.remove_stale_temp_files();
  return s;
}

int Session::remove_stale_temp_files() const {
  if (read_only_) return 0;
  int removed = 0;
  for (const char* sub : {"", "/checkpoints", "/traces"}) {
    const std::string d = dir_ + sub;
    for (const auto& n : list_dir(d)) {
      if (n.size() > 1 && n[0] == '.' && n.find(".tmp-") != std::string::npos) {
        if (::unlink((d + "/" + n).c_str()) == 0) ++removed;
      }
    }
  }
  return removed;
}

std::string Session::checkpoint_path(int64_t step) const { return dir_ + "/checkpoints/" + step_name(step); }
std::string Session::trace_path(int64_t step) const { return dir_ + "/traces/" + step_name(step); }
std::vector<int64_t> Session::checkpoint_steps() const { return steps_in(dir_, "checkpoints"); }
std::vector<int64_t> Session::trace_steps() const { return steps_in(dir_, "traces"); }

std::string Session::save_checkpoint(int64_t step, const NamedTensors& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  check_writable("save a checkpoint");
  auto meta = metadata;
  meta["step"] = std::to_string(step);
  const std::string path = checkpoint_path(step);
  save_safetensors(path, tensors, meta);
  write_file_atomic(dir_ + "/checkpoints/latest", step_name(step) + "\n");
  auto steps = checkpoint_steps();
  for (size_t i = 0; i + static_cast<size_t>(keep_last_) < steps.size(); ++i) {
    if (steps[i] != step) ::unlink(checkpoint_path(steps[i]).c_str());
  }
  return path;
}

namespace {
// Why `path` cannot be read at all ("" when it can be opened as a regular file): an
// unreadable checkpoint is not a damaged one, and must not be overwritten.
std::string cannot_read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO must not block
  if (fd < 0) return errno == ENOENT ? std::string() : "cannot be read: " + std::string(std::strerror(errno));
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) why = "cannot be read: " + std::string(std::strerror(errno));
  else if (S_ISDIR(st.st_mode)) why = "cannot be read: it is a directory, not a file";
  else if (!S_ISREG(st.st_mode)) why = "cannot be read: it is not a regular file";
  ::close(fd);
  return why;
}
}  // namespace

std::optional<LoadedCheckpoint> Session::load_latest() const {
  std::string pointed;
  if (outside_session(dir_, "checkpoints/latest").empty()) {
    std::string text;  // a FIFO or a huge file named `latest` names nothing
    if (read_regular_file(dir_ + "/checkpoints/latest", &text, 4096).empty())
      pointed = text.substr(0, text.find('\n'));
  }
  const auto steps = checkpoint_steps();
  LoadedCheckpoint lc;
  for (int64_t s : steps)
    if (step_name(s) == pointed) lc.latest_names = s;
  // Symbolic links among the checkpoints are not followed; say so, since they look present.
  for (const auto& n : list_dir(dir_ + "/checkpoints"))
    if (parse_step_file_name(n) && !outside_session(dir_, "checkpoints/" + n).empty())
      lc.skipped.push_back(dir_ + "/checkpoints/" + n + ": " + outside_session(dir_, "checkpoints/" + n));
  if (!pointed.empty() && lc.latest_names < 0)
    lc.skipped.push_back(dir_ + "/checkpoints/latest: names '" + pointed + "', which is missing");
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const int64_t s = *it;
    if (const std::string why = cannot_read(checkpoint_path(s)); !why.empty()) {
      lc.unreadable.push_back(checkpoint_path(s) + ": " + why);
      lc.skipped.push_back(lc.unreadable.back());
      continue;
    }
    try {
      lc.tensors = load_safetensors(checkpoint_path(s), &lc.metadata);
      lc.step = s;
      lc.path = checkpoint_path(s);
      return lc;
    } catch (const SafetensorsError& e) {
      lc.skipped.push_back(e.what());
    }
  }
  if (!lc.skipped.empty()) {
    std::string all;
    for (const auto& k : lc.skipped) all += "\n  " + k;
    throw SessionError(dir_ + ": no checkpoint loads:" + all);
  }
  return std::nullopt;
}

void Session::append_metrics(const nlohmann::json& record, bool sync) {
  check_writable("append to metrics.log");
  if (!metrics_) metrics_ = std::make_shared<FramedLogWriter>(dir_ + "/metrics.log");
  metrics_->append(record.dump(), sync);
}

std::string Session::repair_metrics_log() {
  check_writable("repair metrics.log");
  const std::string path = dir_ + "/metrics.log";
  LogReadResult r = read_framed_log(path);
  if (r.stop_reason.empty()) return "";  // gaps in the middle stay: readers skip them
  metrics_.reset();
  if (::truncate(path.c_str(), static_cast<off_t>(r.good_bytes)) != 0)
    throw IoError(path + ": cannot cut the damaged tail (" + std::strerror(errno) + "); copy the session and retry");
  return "metrics.log: dropped " + std::to_string(r.file_bytes - r.good_bytes) + " damaged bytes after byte " +
         std::to_string(r.good_bytes) + " (" + r.stop_reason + ")";
}

std::vector<nlohmann::json> Session::read_metrics(LogReadResult* read) const {
  if (const std::string why = outside_session(dir_, "metrics.log"); !why.empty())
    throw SessionError(dir_ + ": " + why + "; copy the real file into the session");
  LogReadResult r = read_framed_log(dir_ + "/metrics.log");
  std::vector<nlohmann::json> out;
  std::vector<std::string> kept;
  std::vector<uint64_t> kept_offsets;
  for (size_t i = 0; i < r.records.size(); ++i) {
    try {
      out.push_back(parse_json(r.records[i]));
      kept.push_back(std::move(r.records[i]));
      kept_offsets.push_back(r.offsets[i]);
    } catch (const nlohmann::json::exception&) {
      // Checksummed but not JSON: skipped like damage and reported as a gap.
      r.clean = false;
      const uint64_t b = r.offsets[i];
      LogGap g{b, b + 12 + r.records[i].size(), "record is not valid JSON"};
      auto at = std::find_if(r.gaps.begin(), r.gaps.end(), [&](const LogGap& x) { return x.begin > b; });
      r.gaps.insert(at, std::move(g));
    }
  }
  r.records = std::move(kept);
  r.offsets = std::move(kept_offsets);
  if (read) *read = std::move(r);
  return out;
}

std::string Session::save_trace(int64_t step, const NamedTensors& tensors,
                                const std::map<std::string, std::string>& metadata) {
  check_writable("save a trace");
  auto meta = metadata;
  meta["step"] = std::to_string(step);
  const std::string path = trace_path(step);
  save_safetensors(path, tensors, meta);
  return path;
}

std::string sessions_root(const std::string& root) {
  if (!root.empty()) return root;
  if (const char* env = std::getenv("MNEMO_SESSIONS"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/mnemoscope/sessions";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/share/mnemoscope/sessions";
  return "runs";
}

std::string default_session_dir(const std::string& config, const std::string& root) {
  std::string base = config;
  auto slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
  return sessions_root(root) + "/" + (base.empty() ? std::string("train") : base);
}

}  // namespace mnemo::io

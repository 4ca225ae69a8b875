// A session directory (docs/formats.md#sessions):
//   manifest.json   format version, model/train/data config, creation time, program version
//   checkpoints/    step-<NNNNNNNNN>.safetensors, each written atomically; `latest` names the
//                   newest good one (written atomically too); only the last keep_last are kept
//   metrics.log     append-only framed JSON records (core/io/framed_log.h)
//   traces/         step-<NNNNNNNNN>.safetensors recorded traces of a probe document
// Crash safety: every file is either complete or absent; temp files left by a crash are
// removed when the session is opened; a corrupt newest checkpoint falls back to the
// previous good one, and the fallback is reported (one that cannot be read is reported apart:
// load_latest).
// Hostile sessions (docs/reliability.md#sessions): every path read is built from the session
// directory and fixed names (`latest` only names one of the listed step files); a file or
// folder below the directory that is a symbolic link is not followed: it is skipped (and
// reported, for checkpoints) as if absent.
#pragma once
#include "core/errors.h"
#include "core/io/framed_log.h"
#include "core/io/safetensors.h"
#include "core/io/session_manifest.h"  // SessionError, format version, file names, path rules

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo::io {

// Where sessions live by default: `root` when given, else $MNEMO_SESSIONS, else
// $XDG_DATA_HOME/mnemoscope/sessions (~/.local/share/mnemoscope/sessions).
std::string sessions_root(const std::string& root = "");
// Where `train --config F` puts its session without --out: sessions_root(root)/<F's name
// without directory and .json>.
std::string default_session_dir(const std::string& config, const std::string& root = "");

struct LoadedCheckpoint {
  int64_t step = -1;
  std::string path;
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> skipped;  // "file: reason" for each newer checkpoint that failed to load
  // Of those, the files that could not be read at all ("file: reason": no permission, not a
  // regular file): unlike a damaged one they may hold good weights, so a writer must not go
  // on from an older step and overwrite them (`train --resume` refuses).
  std::vector<std::string> unreadable;
  int64_t latest_names = -1;  // the step `checkpoints/latest` names (-1: none, or not a listed step file)
};

// kReadOnly: for watching a session another process is writing (the app following a CLI
// run) or replaying one: opening removes nothing, creates nothing, and every write throws.
enum class SessionAccess { kWrite, kReadOnly };

// An exclusive lock on a session directory for the one process that writes it (`train`, new
// or --resume): a second writer is refused with a SessionError instead of interleaving the
// first one's checkpoints and metrics.log or removing its in-flight temp files (Session::open).
// flock(2) on the directory itself, so nothing is written into the session; the lock is
// released when this is destroyed or the process ends, however it ends (a killed run leaves
// no stale lock). Readers (SessionAccess::kReadOnly: the app following a run) take none.
class SessionWriteLock {
 public:
  // SessionError naming `dir` when another process (or another lock in this one) holds it
  // ("DIR: " + `busy` when given, else what a second `train` of a session is told);
  // IoError when the directory cannot be opened. The same lock guards any folder one
  // process at a time may write (`step --out`, app/cli/owned_dir.h).
  explicit SessionWriteLock(const std::string& dir, const std::string& busy = "");
  ~SessionWriteLock();
  SessionWriteLock(const SessionWriteLock&) = delete;
  SessionWriteLock& operator=(const SessionWriteLock&) = delete;

 private:
  int fd_ = -1;
};

class Session {
 public:
  // Creates `dir` (must not exist or be empty) with its manifest. `manifest` gets
  // format_version, format_minor, created and program_version added. Throws SessionError / IoError.
  static Session create(const std::string& dir, nlohmann::json manifest, int keep_last = 3);
  // Opens an existing session: reads and checks the manifest; for writing it also removes
  // stale temp files (never open for writing a session another process is still writing).
  static Session open(const std::string& dir, int keep_last = 3, SessionAccess access = SessionAccess::kWrite);
  bool read_only() const { return read_only_; }

  const std::string& dir() const { return dir_; }
  const nlohmann::json& manifest() const { return manifest_; }
  // The model kind of the config in the manifest (config.model.model), "" when it has none.
  std::string model_kind() const;
  int keep_last() const { return keep_last_; }

  // Writes checkpoints/step-N.safetensors atomically, then `latest`, then prunes old ones.
  // Returns the path. On failure (e.g. disk full) nothing previously saved is touched.
  std::string save_checkpoint(int64_t step, const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata = {});
  // Steps of the checkpoint files present, ascending.
  std::vector<int64_t> checkpoint_steps() const;
  // The newest checkpoint that loads; the newer ones that did not are listed in `skipped`
  // with their reasons (those that could not be read at all also in `unreadable`). `latest`
  // only says which file was written last: when it names an older step than a newer file that
  // loads (a crash between the checkpoint's rename and latest's, or an edited latest), the
  // newer one is taken and `latest_names` tells the caller so, since going on from the older
  // step would overwrite the newer work. nullopt when there is no checkpoint; SessionError
  // listing every file when none loads.
  std::optional<LoadedCheckpoint> load_latest() const;
  std::string checkpoint_path(int64_t step) const;

  // Cuts a damaged tail off metrics.log (a record torn by a crash, or damage no whole record
  // follows), so records appended after a resume are readable; returns what was dropped (""
  // when the log ends at a record's end). Damage in the middle is left alone: readers skip
  // it and read on. Call before appending to a session that was interrupted.
  std::string repair_metrics_log();

  // Appends one JSON record to metrics.log (flushed; fsynced when `sync`).
  void append_metrics(const nlohmann::json& record, bool sync = false);
  // Every complete record that is JSON, in file order; `read` (when given) holds their offsets,
  // the gaps skipped (a checksummed record that is not JSON becomes a gap too) and the tail.
  std::vector<nlohmann::json> read_metrics(LogReadResult* read = nullptr) const;

  std::string save_trace(int64_t step, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});
  std::vector<int64_t> trace_steps() const;
  std::string trace_path(int64_t step) const;

  // Removes temp files left by an interrupted write; returns how many.
  int remove_stale_temp_files() const;

 private:
  Session(std::string dir, nlohmann::json manifest, int keep_last, bool read_only);
  void check_writable(const char* what) const;
  std::string dir_;
  nlohmann::json manifest_;
  int keep_last_;
  bool read_only_ = false;
  std::shared_ptr<FramedLogWriter> metrics_;  // opened on the first append
};

}  // namespace mnemo::io

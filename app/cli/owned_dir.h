// Output folders that Mnemoscope owns file by file. A command that may be told to clear its
// output folder (`step --force`, the headless demo) lists every file it writes, as paths
// relative to the folder, in DIR/manifest.json ("files": [...], written before the first
// figure and rewritten after each segment, atomically). Clearing removes exactly those files,
// the manifest, and the folders that are left empty by that; anything else in the folder — a
// user's file, a user's subfolder, an older run's unlisted file — makes the clear refuse,
// naming what is there, before anything is removed. Nothing a user owns is ever deleted.
// A folder the run creates for one segment is listed as "pending" in the manifest before
// anything is written into it and taken off the list once its files are listed, so a run
// killed (or stopped by a full disk) half-way through a segment leaves nothing unowned: that
// folder is cleared whole, and so are the temp files of interrupted atomic writes of listed
// files (".NAME.tmp-..." beside NAME). One run writes a folder at a time (lock_owned_dir).
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace mnemo::io {
class SessionWriteLock;
}

namespace mnemo::app {

// The entries of `dir` (recursively; folders by their files) that its manifest.json does not
// list, as relative paths in sorted order. Every entry when there is no manifest, or one
// without a "files" list. Empty for a folder that does not exist or holds only listed files.
std::vector<std::string> unlisted_entries(const std::string& dir);

// UsageError (as clear_owned_dir's) when `dir` holds anything its manifest does not list.
void refuse_unowned(const std::string& dir, const std::string& flag = "--out");
// Removes what `dir`'s manifest lists (files, then folders left empty) and the manifest.
// UsageError naming `flag`, the folder and up to five unlisted entries when anything else is
// there (nothing removed then); also refuses a file system root.
void clear_owned_dir(const std::string& dir, const std::string& flag = "--out");

// UsageError naming `flag` and the first few when any of `planned` (paths relative to `dir`;
// a folder as "maps/") exists in `dir` and its manifest.json does not list it: a command that
// writes into a folder the user names (`export --out`) never overwrites a user's file. The
// folder's manifest.json itself counts as planned when `with_manifest`.
void refuse_overwriting(const std::string& dir, const std::vector<std::string>& planned, const std::string& flag,
                        bool with_manifest = true);

// The single-writer lock of `dir` (an existing folder; flock, as `train` takes on its session:
// io::SessionWriteLock), held until the returned object is destroyed or the process ends.
// UsageError naming `flag` and the folder when another process (`mnemoscope COMMAND`) holds it.
std::unique_ptr<io::SessionWriteLock> lock_owned_dir(const std::string& dir, const std::string& flag = "--out",
                                                     const std::string& command = "step");

// The manifest of an owned output folder: `meta` plus the files written so far. add() records
// a file (relative to the folder) and save() rewrites DIR/manifest.json atomically.
class OwnedDirManifest {
 public:
  OwnedDirManifest(std::string dir, nlohmann::json meta);
  void add(const std::string& relative_path);
  // Lists again what the folder's manifest.json lists now (a run adding to an earlier one's folder).
  void keep_listed();
  // Records an absolute or folder-prefixed path ("DIR/step-0001/x.png" -> "step-0001/x.png").
  void add_written(const std::string& path);
  // A folder (relative) this run created and is about to write into: listed as "pending" by
  // the next save() until end_folder(), so everything in it counts as this run's meanwhile.
  void begin_folder(const std::string& relative_path);
  void end_folder(const std::string& relative_path);
  void save(bool complete);

 private:
  std::string dir_;
  nlohmann::json meta_;
  std::vector<std::string> files_;  // in the order written
  std::set<std::string> listed_;     // the same, for add()'s membership test
  std::vector<std::string> pending_;  // folders being written (begin_folder)
};

}  // namespace mnemo::app

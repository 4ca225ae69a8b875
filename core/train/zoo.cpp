#include "core/train/zoo.h"

#include "core/io/json_file.h"
#include "core/data/text_task.h"
#include "core/train/train_config.h"
#include "core/io/read_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace mnemo {

namespace {

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

int64_t file_size(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

}  // namespace

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::string why;  // a FIFO would block the read forever: refused at the open, and only that descriptor is read
  uint64_t size = 0;
  const int fd = io::open_regular_file(path, &why, &size);
  if (fd < 0) throw io::SafetensorsError("'" + path + "' " + (why == io::kNoSuchFile ? std::string("cannot be opened") : why));
  std::string header;
  try {
    unsigned char len_bytes[8];
    if (!io::read_exactly(fd, len_bytes, 8).empty()) throw io::SafetensorsError("'" + path + "' is shorter than 8 bytes");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    if (n > io::kMaxHeaderBytes || n > size - 8)
      throw io::SafetensorsError("'" + path + "': header length " + std::to_string(n) + " is past the end of the file");
    header.resize(static_cast<size_t>(n));
    if (!io::read_exactly(fd, header.data(), header.size()).empty()) throw io::SafetensorsError("'" + path + "': short header");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  nlohmann::json j;
  try {
    j = mnemo::io::parse_json(header);
  } catch (const nlohmann::json::exception& e) {
    throw io::SafetensorsError("'" + path + "': the header is not valid JSON (" + e.what() + ")");
  }
  std::map<std::string, std::string> meta;
  if (j.is_object() && j.contains("__metadata__") && j["__metadata__"].is_object())
    for (auto it = j["__metadata__"].begin(); it != j["__metadata__"].end(); ++it)
      if (it.value().is_string()) meta[it.key()] = it.value().get<std::string>();
  return meta;
}

ZooEntry pack_zoo_model(const std::string& checkpoint, const std::string& out, const std::string& name,
                        const std::string& summary, const std::string& card,
                        const std::vector<std::pair<std::string, std::string>>& sets) {
  if (!valid_name(name))
    throw ConfigError("zoo model name '" + name + "' must be 1..64 characters of a-z, 0-9 and '-'");
  if (summary.empty() || summary.find('\n') != std::string::npos)
    throw ConfigError("zoo model summary must be one non-empty line");
  WeightsFile f = read_weights_file(checkpoint);
  if (f.training_config.is_null())
    throw ConfigError("'" + checkpoint + "' has no training config in its metadata (a " + f.kind +
                      "); pack a checkpoint written by `mnemoscope train`");
  // What a text model saw: its training split's bytes and passages, from the config as trained
  // (before --set edits name another corpus to evaluate on).
  std::string training_text, training_text_note;
  if (f.training_config.contains("task") && f.training_config["task"].is_object() &&
      f.training_config["task"].value("name", std::string()) == "text") {
    try {
      const TextTask task(f.training_config["task"]);
      const TrainingTextStats stats = training_text_stats(task);
      training_text = stats.to_json().dump();
      training_text_note = "statistics of its training text: " + std::to_string(stats.bytes) + " bytes, " +
                           std::to_string(stats.passages.size()) + " sampled passages";
    } catch (const Error& e) {
      training_text_note = std::string("no statistics of its training text (its corpus cannot be read now: ") + e.what() +
                           "); eval --doc and the app will say so";
    }
  }
  nlohmann::json set_list = nlohmann::json::array();
  for (const auto& [key, value] : sets) {
    apply_config_set(f.training_config, key, value);
    set_list.push_back(key + "=" + value);
  }
  // The edited config must still be one; it is recorded as the Trainer writes configs
  // (to_json), so `--set task.split=null` leaves no "split" behind.
  if (!sets.empty()) f.training_config = TrainingConfig::from_json(f.training_config).to_json();
  std::map<std::string, std::string> meta = {{"format", kZooFormat},
                                             {"format_version", std::to_string(kZooVersion)},
                                             {"name", name},
                                             {"summary", summary},
                                             {"card", card},
                                             {"config", f.training_config.dump()},
                                             {"step", std::to_string(f.step)},
                                             {"source", checkpoint},
                                             {"program_version", MNEMO_VERSION}};
  if (!sets.empty()) meta["config_sets"] = set_list.dump();
  if (!training_text.empty()) meta["training_text"] = training_text;
  // The size before writing (data + a generous header estimate), so an oversized model
  // never replaces a file already at `out`.
  int64_t estimate = 8;
  for (const auto& [k, v] : meta) estimate += static_cast<int64_t>(k.size() + v.size()) + 8;
  for (const auto& [k, t] : f.weights)
    estimate += static_cast<int64_t>(k.size()) + 96 + t.numel() * static_cast<int64_t>(t.element_size());
  if (estimate > kZooMaxBytes)
    throw ConfigError("zoo model '" + name + "' would take about " + std::to_string(estimate) + " bytes, over the " +
                      std::to_string(kZooMaxBytes) + "-byte budget per model; train a smaller model");
  const auto parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  io::save_safetensors(out, f.weights, meta);
  const int64_t bytes = file_size(out);
  ZooEntry e;
  e.path = out;
  e.name = name;
  e.summary = summary;
  e.card = card;
  e.config = f.training_config;
  e.step = f.step;
  e.bytes = bytes;
  e.training_text_note = training_text_note;
  return e;
}

std::optional<TrainingTextStats> training_text_stats_of(const WeightsFile& f, std::string* how) {
  const auto it = f.metadata.find("training_text");
  if (it != f.metadata.end()) {
    nlohmann::json j;
    try {
      j = mnemo::io::parse_json(it->second);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError("'" + f.path + "': its training_text metadata is not valid JSON (" + e.what() + ")");
    }
    try {
      auto s = TrainingTextStats::from_json(j);
      if (how) *how = "its metadata";
      return s;
    } catch (const ConfigError& e) {
      throw ConfigError("'" + f.path + "': " + e.what());
    }
  }
  // No statistics shipped: the training corpus itself, when it is still here and not large.
  if (!f.training_config.is_object() || !f.training_config.contains("task") || !f.training_config["task"].is_object() ||
      f.training_config["task"].value("name", std::string()) != "text")
    return std::nullopt;
  try {
    const TextTask task(f.training_config["task"]);
    int64_t bytes = 0;
    for (const auto& r : task.corpus().ranges(Split::kTrain)) bytes += r.size();
    if (bytes > kMaxStatsCorpusBytes) return std::nullopt;
    if (how) *how = "its training corpus";
    return training_text_stats(task);
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool trained_on_text(const WeightsFile& f) {
  if (!f.training_config.is_object() || !f.training_config.contains("task") || !f.training_config["task"].is_object())
    return false;
  const std::string task = f.training_config["task"].value("name", std::string());
  return task == "text" || task == "moby-dick";
}

bool trained_on_text_file(const std::string& path) {
  const auto meta = read_safetensors_metadata(path);
  const auto it = meta.find("config");
  if (it == meta.end()) return false;
  try {
    WeightsFile f;
    f.training_config = mnemo::io::parse_json(it->second);
    return trained_on_text(f);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

std::optional<TrainingTextStats> training_text_stats_of_file(const std::string& path, std::string* how) {
  WeightsFile f;
  f.path = path;
  f.metadata = read_safetensors_metadata(path);
  if (f.metadata.count("training_text") == 0)
    if (const auto it = f.metadata.find("config"); it != f.metadata.end()) {
      try {
        f.training_config = mnemo::io::parse_json(it->second);
      } catch (const nlohmann::json::exception&) {
        return std::nullopt;
      }
    }
  return training_text_stats_of(f, how);
}

std::vector<ZooEntry> list_zoo(const std::string& dir) {
  std::vector<ZooEntry> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 12 && n.compare(n.size() - 12, 12, ".safetensors") == 0) files.push_back(dir + "/" + n);
  }
  ::closedir(d);
  for (const auto& p : files) {
    std::map<std::string, std::string> meta;
    try {
      meta = read_safetensors_metadata(p);
    } catch (const io::SafetensorsError&) {
      continue;
    }
    auto get = [&](const char* k) { return meta.count(k) ? meta[k] : std::string(); };
    if (get("format") != kZooFormat) continue;
    ZooEntry e;
    e.path = p;
    e.name = get("name");
    e.summary = get("summary");
    e.card = get("card");
    try {
      e.config = mnemo::io::parse_json(get("config"));
    } catch (const nlohmann::json::exception&) {
      continue;
    }
    try {
      e.step = std::stoll(get("step"));
    } catch (const std::exception&) {
      e.step = -1;
    }
    e.bytes = file_size(p);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const ZooEntry& a, const ZooEntry& b) { return a.name < b.name; });
  return out;
}

}  // namespace mnemo

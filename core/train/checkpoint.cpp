#include "core/train/checkpoint.h"

#include "core/io/json_file.h"
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/data/tasks.h"
#include "core/train/optim.h"

#include <sys/stat.h>

#include <set>
#include <sstream>
#include <stdexcept>

namespace mnemo {

int64_t Checkpoint::step() const {
  auto it = metadata.find("step");
  if (it == metadata.end()) return -1;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return -1;
  }
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  auto meta = ckpt.metadata;
  meta["format"] = kCheckpointFormat;
  meta["format_version"] = std::to_string(kCheckpointVersion);
  io::save_safetensors(path, ckpt.tensors, meta);
}

Checkpoint load_checkpoint(const std::string& path) {
  Checkpoint c;
  c.tensors = io::load_safetensors(path, &c.metadata);
  auto it = c.metadata.find("format");
  if (it == c.metadata.end() || it->second != kCheckpointFormat)
    throw std::invalid_argument("'" + path + "' is not a training checkpoint (no '" + kCheckpointFormat +
                                "' metadata); a weights-only file can be passed as --checkpoint to step/eval");
  return c;
}

io::NamedTensors model_weights_only(const io::NamedTensors& tensors) {
  io::NamedTensors out;
  const std::string pre = kOptimPrefix;
  for (const auto& [name, t] : tensors)
    if (name.compare(0, pre.size(), pre) != 0) out.emplace_back(name, t);
  return out;
}

namespace {

nlohmann::json parse_meta_json(const std::string& path, const std::string& key, const std::string& text) {
  try {
    return mnemo::io::parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("'" + path + "': its \"" + key + "\" metadata is not valid JSON (" + e.what() + ")");
  }
}

std::string short_value(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

std::string resolve_checkpoint_path(const std::string& path) {
  auto is = [](const std::string& p, bool dir) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
  };
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  const std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
  const std::string parent = slash == std::string::npos ? "." : p.substr(0, slash);
  std::string session;
  if (is(p, true)) {
    if (is(p + "/manifest.json", false)) session = p;
    else if (base == "checkpoints" && is(parent + "/manifest.json", false)) session = parent;
    else
      throw InputError("'" + path + "' is a directory but not a training session; pass a checkpoint (.safetensors) "
                       "or a session directory");
  } else if (base == "latest" && is(p, false)) {
    const size_t s2 = parent.find_last_of('/');
    const std::string pbase = s2 == std::string::npos ? parent : parent.substr(s2 + 1);
    const std::string grand = s2 == std::string::npos ? "." : parent.substr(0, s2);
    if (pbase == "checkpoints" && is(grand + "/manifest.json", false)) session = grand;
  }
  if (session.empty()) return path;
  auto latest = io::Session::open(session, 3, io::SessionAccess::kReadOnly).load_latest();
  if (!latest) throw InputError("'" + path + "': the session has no checkpoint yet");
  return latest->path;
}

void save_model_weights(const std::string& path, const torch::nn::Module& model, const ModelConfig& cfg,
                        std::map<std::string, std::string> metadata) {
  metadata["model"] = cfg.to_json().dump();
  io::save_safetensors(path, named_weights(model), metadata);
}

WeightsFile read_weights_file(const std::string& path_given) {
  const std::string path = resolve_checkpoint_path(path_given);
  WeightsFile f;
  f.path = path;
  io::NamedTensors all = io::load_safetensors(path, &f.metadata);
  f.weights = model_weights_only(all);
  const auto fmt = f.metadata.find("format");
  f.kind = fmt == f.metadata.end()               ? "weights"
           : fmt->second == kCheckpointFormat    ? "training checkpoint"
           : fmt->second == kZooFormat           ? "zoo model"
                                                 : "weights";
  if (auto it = f.metadata.find("config"); it != f.metadata.end()) {
    f.training_config = parse_meta_json(path, "config", it->second);
    if (!f.training_config.is_object())
      throw ConfigError("'" + path + "': its \"config\" metadata is not a JSON object");
    if (auto seg = f.metadata.find("segments"); seg != f.metadata.end() && f.training_config.contains("task")) {
      try {
        f.training_config["task"]["segments"] = std::stoll(seg->second);
      } catch (const std::exception&) {
        throw ConfigError("'" + path + "': its \"segments\" metadata '" + seg->second + "' is not a number");
      }
    }
    if (f.training_config.contains("model")) f.model_config = f.training_config["model"];
  }
  if (f.model_config.is_null())
    if (auto it = f.metadata.find("model"); it != f.metadata.end()) f.model_config = parse_meta_json(path, "model", it->second);
  if (auto it = f.metadata.find("step"); it != f.metadata.end()) {
    try {
      f.step = std::stoll(it->second);
    } catch (const std::exception&) {
      f.step = -1;
    }
  }
  return f;
}

std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix) {
  std::vector<std::string> out;
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys) {
      const std::string path = prefix.empty() ? k : prefix + "." + k;
      const bool in_a = a.contains(k), in_b = b.contains(k);
      if (in_a && in_b) {
        auto sub = config_differences(a[k], b[k], path);
        out.insert(out.end(), sub.begin(), sub.end());
      } else {
        out.push_back(path + ": " + (in_a ? short_value(a[k]) : std::string("absent")) + " vs " +
                      (in_b ? short_value(b[k]) : std::string("absent")));
      }
    }
    return out;
  }
  // Numbers compare by value (16 and 16.0 are the same setting).
  if (a.is_number() && b.is_number()) {
    if (a.get<double>() != b.get<double>()) out.push_back(prefix + ": " + short_value(a) + " vs " + short_value(b));
    return out;
  }
  if (a != b) out.push_back(prefix + ": " + short_value(a) + " vs " + short_value(b));
  return out;
}

int64_t trained_segment_len(const WeightsFile& f) {
  if (!f.training_config.is_object() || !f.training_config.contains("task")) return 0;
  return task_segment_len(f.training_config["task"]);
}

void load_weights_checked(torch::nn::Module& model, const ModelConfig& cfg, const WeightsFile& f,
                          const std::string& cfg_source, const std::string& advice) {
  try {
    load_weights(model, f.weights, f.path);
  } catch (const ConfigError& e) {
    if (!f.has_model_config()) throw;
    nlohmann::json theirs;
    try {
      theirs = ModelConfig::from_json(f.model_config).to_json();  // defaults filled in, as ours
    } catch (const ConfigError&) {
      theirs = f.model_config;
    }
    const auto diff = config_differences(theirs, cfg.to_json(), "model");
    if (diff.empty()) throw;
    std::ostringstream os;
    // "the flags' values", "run.json's values"
    const bool plural = !cfg_source.empty() && cfg_source.back() == 's';
    os << "'" << f.path << "' (a " << f.kind << ") belongs to another model config; differing fields (the file's value vs "
       << cfg_source << (plural ? "'" : "'s") << "): ";
    for (size_t i = 0; i < diff.size(); ++i) os << (i ? "; " : "") << diff[i];
    os << ". " << (advice.empty() ? "Leave out --config (the file's own config is used) or pass the config it was trained with"
                                  : advice)
       << " (" << e.what() << ")";
    throw ConfigError(os.str());
  }
}

}  // namespace mnemo

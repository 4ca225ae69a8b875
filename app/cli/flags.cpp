#include "app/cli/flags.h"
#include "app/cli/assets.h"
#include "app/cli/owned_dir.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/io/atomic_file.h"
#include "core/io/json_file.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/nn/torch_compat.h"
#include "core/train/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

namespace mnemo::app {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

void check_out_dir(const std::string& out) { io::check_output_dir(out, "--out"); }

void make_dirs(const std::string& path) { io::make_dirs(path); }

void make_out_dir(const std::string& path, const std::string& flag) {
  try {
    io::make_dirs(path);
  } catch (const IoError& e) {
    throw UsageError(flag + " '" + path + "' cannot be created: " + e.what() + "; pass a directory you can write to");
  }
}

void prepare_out_dir(const std::string& out, bool force, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(out, ec)) return;
  std::vector<fs::path> entries;
  for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    entries.push_back(it->path());
  if (ec) throw UsageError(flag + " '" + out + "' cannot be read: " + ec.message());
  if (entries.empty()) return;
  if (force) return clear_owned_dir(out, flag);  // refuses, removing nothing, when anything is not ours
  std::sort(entries.begin(), entries.end());
  const std::string head = flag + " '" + out + "' is not empty (it holds " + std::to_string(entries.size()) + " entr" +
                           (entries.size() == 1 ? "y" : "ies") + ", e.g. '" + entries.front().filename().string() +
                           "'): files of an earlier run would mix with this one's. Pass a new or empty directory";
  const std::vector<std::string> foreign = unlisted_entries(out);
  if (foreign.empty()) throw UsageError(head + ", or --force to clear the files an earlier run wrote there");
  throw UsageError(head + " (--force would not help: it clears only files Mnemoscope wrote, and '" + foreign.front() +
                   "' is not one of them)");
}

void check_can_write_in(const std::string& dir, const std::string& what) {
  std::string tmpl = (dir.empty() ? std::string(".") : dir) + "/.mnemoscope-write-check-XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw UsageError(what + ": cannot write in '" + dir + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(tmpl.c_str());
}

std::string config_error_with_flags(const ConfigError& e, const std::string& fallback) {
  const std::string flag = ModelConfig::flag_of(e.field());
  return (flag.empty() ? fallback : flag) + ": " + e.what();
}

std::vector<std::string> ModelFlags::given() const {
  std::vector<std::string> out;
  if (o_config && o_config->count()) out.push_back("--config");
  for (const auto& f : fields)
    if (f.given()) out.push_back(f.flag);
  const std::pair<CLI::Option*, const char*> opts[] = {{o_seed, "--seed"}, {o_checkpoint, "--checkpoint"}, {o_random, "--random"}};
  for (const auto& [o, name] : opts)
    if (o && o->count()) out.push_back(name);
  return out;
}

const ModelFlags::FieldFlag* ModelFlags::field_flag(const std::string& name) const {
  for (const auto& f : fields)
    if (f.field == name) return &f;
  return nullptr;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

FigureFormats parse_formats(const std::string& list) {
  FigureFormats f;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "png") f.png = true;
    else if (item == "svg") f.svg = true;
    else if (item == "csv") f.csv = true;
    else throw UsageError("--format: unknown format '" + item + "'; use a comma list of png, svg, csv");
  }
  if (!f.png && !f.svg && !f.csv) throw UsageError("--format: no format given; use a comma list of png, svg, csv");
  return f;
}

torch::Device parse_device_flag(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name != "cuda") throw UsageError("--device must be cpu or cuda, not '" + name + "'");
  if (cuda_devices() < 1)
    throw UsageError("--device cuda: this LibTorch sees no CUDA device (a CPU build, or no GPU on this machine); "
                     "use --device cpu");
  return torch::Device(torch::kCUDA, 0);
}

void parse_step_range(const std::string& s, int64_t* lo, int64_t* hi, const std::string& flag) {
  *lo = 0;
  *hi = std::numeric_limits<int64_t>::max();
  if (s.empty()) return;
  auto bad = [&]() {
    return UsageError(flag + " '" + s + "': use A-B, A-, -B or A with non-negative step numbers and A <= B, e.g. " + flag +
                      " 100-500");
  };
  auto parse = [&](const std::string& t, int64_t* v) {
    if (t.empty()) return;
    size_t used = 0;
    try {
      *v = std::stoll(t, &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used != t.size() || *v < 0) throw bad();
  };
  const auto dash = s.find('-');
  if (dash == std::string::npos) {
    parse(s, lo);
    *hi = *lo;
    return;
  }
  if (s.find('-', dash + 1) != std::string::npos) throw bad();
  parse(s.substr(0, dash), lo);
  parse(s.substr(dash + 1), hi);
  if (*lo > *hi) throw bad();
}

TrainingConfig load_training_config(const std::string& path, const std::vector<std::string>& sets) {
  nlohmann::json j;
  try {
    j = io::read_json_config(path);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  return config_with_sets(j, sets, "--config: '" + path + "'");
}

std::pair<std::string, std::string> split_set_flag(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--set '" + s + "': use --set key=value, e.g. --set task.segments=4");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

TrainingConfig config_with_sets(nlohmann::json j, const std::vector<std::string>& sets, const std::string& source) {
  for (const auto& s : sets) {
    const auto [key, value] = split_set_flag(s);
    try {
      apply_config_set(j, key, value);
    } catch (const ConfigError& e) {
      throw UsageError("--set '" + s + "': " + e.what());
    }
  }
  try {
    return TrainingConfig::from_json(j);
  } catch (const ConfigError& e) {
    // The --set that gave the field at fault, if one did (the last one wins, as in the config).
    for (auto it = sets.rbegin(); it != sets.rend(); ++it)
      if (!e.field().empty() && it->substr(0, it->find('=')) == e.field())
        throw UsageError("--set '" + *it + "': " + e.what());
    throw UsageError(source + (sets.empty() ? "" : " with --set") + ": " + e.what());
  }
}

bool ModelFlags::apply_default_text_model(std::ostream& log) {
  if (!wants_default_model()) return false;
  const std::string path = find_text_model();
  if (path.empty()) {
    log << "note: the zoo's text model (assets/models/" << kTextModel
        << ".safetensors) is not here: a randomly initialised model is shown\n";
    return false;
  }
  checkpoint = path;
  log << "model: the zoo's text model " << kTextModel << " (docs/zoo/" << kTextModel
      << ".md: " << kTextModelWhat << "); --random for a randomly initialised model\n";
  return true;
}

void ModelFlags::add_to(CLI::App* c) {
  // A flag given twice takes its last value (handy for overriding a scripted command line).
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  o_config = c->add_option("--config", config, "model config JSON (sessions/*.json)");
  // One option per row of ModelConfig::fields() with a flag, its help field_tip(row) (the row's
  // help and range); the text is read as the row's kind in resolve(), so its messages are the table's.
  fields.clear();
  for (const auto& row : ModelConfig::fields().fields())
    if (!row.flag.empty()) fields.push_back(FieldFlag{row.name, row.flag, "", false, nullptr});
  for (auto& f : fields) {  // `fields` no longer grows: CLI11 keeps pointers into it
    const auto& row = *ModelConfig::fields().find(f.field);
    if (row.kind == FieldKind::kBool) {
      const bool sets_false = f.flag.rfind("--no-", 0) == 0;
      f.opt = c->add_flag(f.flag, f.on, (sets_false ? "turn off: " : "turn on: ") + field_tip(row));
      continue;
    }
    static const std::map<FieldKind, const char*> type_names = {
        {FieldKind::kInt, "INT"}, {FieldKind::kSeed, "UINT"}, {FieldKind::kReal, "FLOAT"}, {FieldKind::kString, "TEXT"}};
    f.opt = c->add_option(f.flag, f.text, field_tip(row))->type_name(type_names.at(row.kind));
  }
  if (auto* len = field_flag("segment_len"))
    len->opt->description(field_tip(*ModelConfig::fields().find("segment_len")) +
                          "; with --checkpoint: how the document is cut (default: as the model was trained; at most "
                          "its segment_len)");
  o_seed = c->add_option("--seed", seed, "seed of the random initialisation (default 0)");
  o_checkpoint = c->add_option("--checkpoint", checkpoint, "weights (.safetensors) from export-weights or training");
  o_random = c->add_flag("--random", random,
                         "a randomly initialised model (default Memformer, or the --config / --model fields); without "
                         "any model flag the zoo's text model opens");
}

ModelConfig ModelFlags::resolve() const {
  ModelConfig cfg;
  if (!config.empty()) {
    try {
      cfg = ModelConfig::load(config);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--config: ") + e.what());
    }
  } else if (!checkpoint.empty()) {
    // No --config: the checkpoint's own config (core/train/checkpoint.h), else the defaults.
    try {
      const WeightsFile& f = checkpoint_file();
      cfg = f.has_model_config() ? ModelConfig::from_json(f.model_config)
                                 : ModelConfig::from_json(nlohmann::json::parse(R"({})"));
    } catch (const io::SafetensorsError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
  } else {
    cfg = ModelConfig::from_json(nlohmann::json::parse(R"({})"));
  }
  // The flags set their fields, read as the rows' kinds; ModelConfig::fields() checks them,
  // and a message names the flag of the field at fault (config_error_with_flags).
  for (const auto& f : fields) {
    if (!f.given()) continue;
    // With trained weights --segment-len chooses how the document is cut (stepping(), which
    // checks it), not the model: its positions are fixed by the weights.
    if (f.field == "segment_len" && !checkpoint.empty()) continue;
    const auto& table = ModelConfig::fields();
    const auto& row = *table.find(f.field);
    const nlohmann::json v = row.kind == FieldKind::kBool ? nlohmann::json(f.flag.rfind("--no-", 0) != 0)
                                                          : ConfigFields<ModelConfig>::set_value(&row, f.text);
    try {
      table.set(cfg, row, v);
    } catch (const ConfigError& e) {
      throw UsageError(config_error_with_flags(e, f.flag));
    }
  }
  const std::string fallback = config.empty() ? "the model flags" : "--config";
  try {
    ModelConfig::fields().validate(cfg);  // every field in range before the checks below divide by them
  } catch (const ConfigError& e) {
    throw UsageError(config_error_with_flags(e, fallback));
  }
  if (cfg.dim % cfg.heads != 0)
    throw UsageError("--dim " + std::to_string(cfg.dim) + " must be divisible by --heads " + std::to_string(cfg.heads));
  if (cfg.linear == "hashed" && cfg.dim % cfg.hash_bits != 0)
    throw UsageError("--dim " + std::to_string(cfg.dim) + " must be a multiple of --hash-bits " + std::to_string(cfg.hash_bits) +
                     " with --linear hashed (each projection's input is cut into chunks of hash_bits); change --dim or "
                     "--hash-bits");
  try {
    cfg.validate();
  } catch (const ConfigError& e) {
    throw UsageError(config_error_with_flags(e, fallback));
  }
  if (!checkpoint.empty()) check_against_checkpoint(cfg);
  return cfg;
}

void ModelFlags::check_against_checkpoint(const ModelConfig& cfg) const {
  // Trained weights fix the model: a flag or --config that asks for another one would be
  // ignored (the file's config wins, gui) or half applied (a field the weights do not
  // depend on, e.g. --slots of a transformer): refused, naming the fields and the flags.
  const WeightsFile* file = nullptr;
  try {
    file = &checkpoint_file();
  } catch (const std::exception& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  const WeightsFile& f = *file;
  if (!f.has_model_config()) return;  // plain weights: the flags say what model they are
  nlohmann::json theirs;
  try {
    theirs = ModelConfig::from_json(f.model_config).to_json();
  } catch (const ConfigError&) {
    return;  // loading names the problem
  }
  const auto diff = config_differences(theirs, cfg.to_json(), "model");
  if (diff.empty()) return;
  std::string fields;
  for (const auto& d : diff) fields += (fields.empty() ? "" : "; ") + d;
  // The flags of the differing fields, in the order of the fields' names (as `diff` lists them).
  std::vector<std::string> flags;
  const nlohmann::json ours = cfg.to_json();
  for (auto it = theirs.begin(); it != theirs.end(); ++it) {
    if (config_differences(it.value(), ours.value(it.key(), nlohmann::json()), "").empty()) continue;
    const std::string flag = ModelConfig::flag_of(it.key());
    if (!flag.empty() && std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
  }
  std::string asked = config.empty() ? std::string() : "--config " + config;
  if (config.empty())
    for (const auto& fl : flags) asked += (asked.empty() ? "" : ", ") + fl;
  const bool several = config.empty() && flags.size() > 1;
  throw UsageError("--checkpoint: '" + checkpoint + "' (a " + f.kind + ") holds a model other than " +
                   (asked.empty() ? std::string("the flags ask for") : asked + (several ? " ask for" : " asks for")) +
                   "; differing fields (the file's value vs " + (config.empty() ? "the flags'" : config + "'s") +
                   "): " + fields + ". Trained weights fix the model: " +
                   (config.empty() ? "leave out " + (asked.empty() ? std::string("the model flags") : asked)
                                   : "leave out --config (the file's own config is used) or pass the config it was trained with") +
                   (fields.find("model.segment_len:") != std::string::npos
                        ? " (to cut the document differently give --segment-len, which with a checkpoint leaves the model alone)"
                        : ""));
}

MemoryModel ModelFlags::build(const ModelConfig& cfg, std::ostream& log) const {
  MemoryModel m;
  try {
    m = make_model(cfg, seed);
  } catch (const ConfigError& e) {
    throw UsageError(config_error_with_flags(e, "--model"));
  }
  if (!checkpoint.empty()) {
    try {
      // A training checkpoint also holds "optim." state, skipped; a file of another config
      // gets a message naming the differing fields.
      load_weights_checked(*m, cfg, checkpoint_file(), config.empty() ? "the flags" : config,
                           config.empty() ? "Pass the model flags it was trained with (--model, --slots, --dim, ...)"
                                          : "");
    } catch (const io::SafetensorsError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
    log << "model: " << cfg.model << " weights from " << checkpoint << "\n";
  } else {
    log << "model: " << cfg.model << " with no checkpoint: randomly initialised (seed " << seed
        << "); pass --checkpoint F for trained weights\n";
  }
  return m;
}

const WeightsFile& ModelFlags::checkpoint_file() const {
  if (!file_ || file_path_ != checkpoint) {
    file_ = std::make_shared<const WeightsFile>(read_weights_file(checkpoint));
    file_path_ = checkpoint;
  }
  return *file_;
}

Stepping ModelFlags::stepping(const ModelConfig& cfg) const {
  int64_t trained = 0;
  if (!checkpoint.empty()) {
    try {
      trained = trained_segment_len(checkpoint_file());
    } catch (const std::exception& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
  }
  int64_t requested = 0;
  const FieldFlag* len = field_flag("segment_len");
  if (!checkpoint.empty() && len && len->given()) {
    ModelConfig asked = cfg;  // read as the row reads it, for the row's type message
    const auto& table = ModelConfig::fields();
    try {
      table.set(asked, *table.find("segment_len"), ConfigFields<ModelConfig>::set_value(table.find("segment_len"), len->text));
    } catch (const ConfigError& e) {
      throw UsageError(config_error_with_flags(e, "--segment-len"));
    }
    requested = asked.segment_len;
  }
  try {
    return choose_stepping(cfg, trained, requested, "--segment-len");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
}

Document load_doc_flag(const std::string& path) {
  try {
    return load_document(path);
  } catch (const DocumentError& e) {
    throw UsageError(std::string("--doc: ") + e.what());
  }
}

}  // namespace mnemo::app

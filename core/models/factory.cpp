#include "core/models/factory.h"

#include "core/models/family.h"
#include "core/platform/memory.h"

#include <map>
#include <set>
#include <mutex>
#include <sstream>

namespace mnemo {

void check_model_fits_memory(const ModelConfig& cfg, int copies) {
  const double need = cfg.parameter_lower_bound() * 4.0 * copies;
  const double machine = static_cast<double>(platform::machine_memory_bytes());
  if (machine > 0 && need > machine)
    throw field_error("dim", "= " + std::to_string(cfg.dim) + " with " + std::to_string(cfg.layers) +
                                 " layers needs at least " + platform::format_bytes(need) + " for its weights" +
                                 (copies > 1 ? " and their training state" : "") + ", more than this machine's " +
                                 platform::format_bytes(machine) + "; choose a smaller model (model.dim, model.layers, "
                                 "model.ff)");
}

MemoryModel make_model(const ModelConfig& cfg, uint64_t seed, torch::Device device) {
  cfg.validate();
  check_model_fits_memory(cfg, 1);
  // Initialisation draws from LibTorch's global generator: two threads building models at once
  // (the app's two workers side by side) would interleave their draws and get other weights
  // than the seed gives. One model is built at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  torch::manual_seed(seed);
  // The kind's family builds it (core/models/family.h); validate() admitted only registered kinds.
  const ModelFamily& family = family_of(cfg.model);
  if (!family.make) throw field_error("model", "= '" + cfg.model + "': this build has no constructor for the " + family.name + " family");
  MemoryModel m = family.make(cfg);
  m->to(device);
  m->eval();
  return m;
}

std::vector<std::pair<std::string, torch::Tensor>> named_weights(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers(true)) out.emplace_back(b.key(), b.value());
  return out;
}

namespace {
// Why the file's tensor `given` cannot fill the model's `mine` ("" when it can).
std::string misfit(const torch::Tensor& given, const torch::Tensor& mine) {
  if (given.sizes() != mine.sizes()) {
    std::ostringstream os;
    os << "has shape " << given.sizes() << " but the model expects " << mine.sizes()
       << "; pass the config the checkpoint was made with";
    return os.str();
  }
  if (!given.is_floating_point() && mine.is_floating_point()) return "is not floating point";
  return "";
}
}  // namespace

void load_weights(torch::nn::Module& model, const std::vector<std::pair<std::string, torch::Tensor>>& weights,
                  const std::string& source) {
  std::map<std::string, torch::Tensor> given(weights.begin(), weights.end());
  auto mine = named_weights(model);
  for (const auto& [name, t] : mine) {
    auto it = given.find(name);
    if (it == given.end())
      throw ConfigError(source + ": tensor '" + name + "' is missing; the checkpoint was made for another model config");
    if (const std::string why = misfit(it->second, t); !why.empty())
      throw ConfigError(source + ": tensor '" + name + "' " + why);
  }
  for (const auto& [name, t] : given) {
    bool known = false;
    for (const auto& m : mine) known = known || m.first == name;
    if (!known) throw ConfigError(source + ": tensor '" + name + "' is not part of this model; wrong checkpoint?");
  }
  torch::NoGradGuard g;
  for (auto& [name, t] : mine) t.copy_(given[name].to(t.device(), t.scalar_type()));
}

MatchedWeights load_matching_weights(torch::nn::Module& model,
                                     const std::vector<std::pair<std::string, torch::Tensor>>& weights,
                                     const std::string& source) {
  std::map<std::string, const torch::Tensor*> given;
  for (const auto& [name, t] : weights) given[name] = &t;
  auto mine = named_weights(model);
  MatchedWeights m;
  std::set<std::string> used;
  for (const auto& [name, t] : mine) {
    auto it = given.find(name);
    if (it != given.end() && misfit(*it->second, t).empty()) {
      m.taken.push_back(name);
      used.insert(name);
    } else {
      m.fresh.push_back(name);
    }
  }
  for (const auto& [name, t] : weights)
    if (!used.count(name)) m.unused.push_back(name);
  if (m.taken.empty())
    throw ConfigError(source + ": no tensor has the name and shape of one of this model's (" +
                      std::to_string(weights.size()) + " in the file, " + std::to_string(mine.size()) +
                      " in the model); the file belongs to another kind or size of model");
  torch::NoGradGuard g;
  for (auto& [name, t] : mine)
    if (used.count(name)) t.copy_(given[name]->to(t.device(), t.scalar_type()));
  return m;
}

}  // namespace mnemo

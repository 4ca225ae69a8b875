#include "core/models/model.h"

#include "core/errors.h"
#include "core/models/config.h"

#include <stdexcept>

namespace mnemo {

const torch::Tensor& MemoryState::at(const std::string& key) const {
  auto it = tensors.find(key);
  if (it == tensors.end()) throw std::out_of_range("memory state has no tensor '" + key + "'");
  return it->second;
}

void MemoryModelImpl::set_task_head(const TaskHead& head) {
  if (head.kind == TaskHead::Kind::kLanguageModel) return;
  std::string can;
  for (const auto& k : ModelConfig::known_models())
    if (capabilities_of(k).mtn_family) can += (can.empty() ? "" : ", ") + k;
  throw ConfigError("task '" + head.task + "' tags answer bytes and needs an MTN-family model (model.model = " + can +
                    "), not '" + kind() + "'");
}

const char* ablation_name(MemoryAblation a) {
  switch (a) {
    case MemoryAblation::kCarried: return "carried";
    case MemoryAblation::kReset: return "reset";
    case MemoryAblation::kZeroed: return "zeroed";
  }
  return "?";
}

MemoryState ablated_memory(MemoryAblation a, const MemoryState& carried, const MemoryState& initial) {
  if (a == MemoryAblation::kCarried) return carried;
  if (a == MemoryAblation::kReset) return initial;
  MemoryState z = carried;
  for (auto& [k, v] : z.tensors) {
    if (!v.defined()) continue;
    v = v.is_floating_point() ? torch::zeros_like(v) : initial.tensors.at(k).clone();
  }
  return z;
}

MemoryState MemoryState::detached_clone() const {
  MemoryState out;
  for (const auto& [k, t] : tensors) out.tensors[k] = t.defined() ? t.detach().clone() : t;
  return out;
}

bool MemoryState::bit_equal(const MemoryState& other) const {
  if (tensors.size() != other.tensors.size()) return false;
  for (const auto& [k, t] : tensors) {
    auto it = other.tensors.find(k);
    if (it == other.tensors.end()) return false;
    const auto& u = it->second;
    if (t.defined() != u.defined()) return false;
    if (!t.defined()) continue;
    if (t.scalar_type() != u.scalar_type() || t.sizes() != u.sizes()) return false;
    auto a = t.to(torch::kCPU).contiguous();
    auto b = u.to(torch::kCPU).contiguous();
    if (std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) != 0) return false;
  }
  return true;
}

torch::Device MemoryModelImpl::device() const {
  for (const auto& p : parameters()) return p.device();
  return torch::kCPU;
}

}  // namespace mnemo

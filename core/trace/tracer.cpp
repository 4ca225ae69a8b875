#include "core/trace/tracer.h"

#include <stdexcept>

namespace mnemo {

bool TraceSpec::wants(const std::string& key) const {
  for (const auto& p : patterns) {
    if (p == "*" || p == key) return true;
    if (!p.empty() && p.back() == '*' && key.compare(0, p.size() - 1, p, 0, p.size() - 1) == 0) return true;
  }
  return false;
}

const torch::Tensor& Trace::at(const std::string& key) const {
  auto it = tensors.find(key);
  if (it == tensors.end()) throw std::out_of_range("trace has no key '" + key + "'");
  return it->second;
}

std::vector<std::string> Trace::keys_with_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  for (auto it = tensors.lower_bound(prefix); it != tensors.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    out.push_back(it->first);
  }
  return out;
}

void Tracer::put(const std::string& key, const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  // clone() guarantees the trace never aliases model state, also when t is already on the CPU.
  trace_.tensors[key] = t.detach().to(torch::kCPU).contiguous().clone();
}

bool Tracer::put_if_wanted(const std::string& key, const torch::Tensor& t) {
  if (!wants(key)) return false;
  put(key, t);
  return true;
}

}  // namespace mnemo

#include "core/trace/key_check.h"

#include <cctype>
#include <vector>

namespace mnemo {

namespace {

struct Rule {
  const char* pattern;  // exact key; "<layer>" = a layer number; "<path>" = a module path
  const char* shape;
  torch::ScalarType dtype;
};

// The table of docs/formats.md "Traces" (and python/mnemoscope/keys.py).
const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {"input.tokens", "[B, L]", torch::kInt64},
      {"input.offsets", "[B, L, 2]", torch::kInt64},
      {"lm.loss", "[B, L]", torch::kFloat32},
      {"memformer.writer_attn", "[B, H, k, 1+L+C]", torch::kFloat32},
      {"memformer.read_attn.<layer>", "[B, H, L, k]", torch::kFloat32},
      {"memformer.memory_prev", "[B, k, d]", torch::kFloat32},
      {"memformer.memory", "[B, k, d]", torch::kFloat32},
      {"memformer.forget_norm", "[k]", torch::kFloat32},
      {"memformer.slot_type", "[B, k]", torch::kInt8},
      {"rmt.attn.<layer>", "[B, H, T, T]", torch::kFloat32},
      {"rmt.block_mass.<layer>", "[B, H, 3]", torch::kFloat32},
      {"rmt.memory_prev", "[B, m, d]", torch::kFloat32},
      {"rmt.memory", "[B, m, d]", torch::kFloat32},
      {"trxl.attn.<layer>", "[B, H, L, P]", torch::kFloat32},
      {"hash.<path>.bucket", "[N, K]", torch::kInt32},
      {"hash.<path>.p", "[N, K]", torch::kFloat32},
      {"hash.<path>.counts", "[K, R]", torch::kInt64},
      {"mtn.importance", "[B, m+L]", torch::kFloat32},
      {"mtn.candidate_source", "[B, m+L]", torch::kInt64},
      {"mtn.importance_prev", "[B, m]", torch::kFloat32},
      {"mtn.kept_source", "[B, m]", torch::kInt64},
      {"mtn.kept_index", "[B, m]", torch::kInt64},
      {"mtn.kept_importance", "[B, m]", torch::kFloat32},
      {"mtn.age", "[B, m]", torch::kInt64},
      {"mtn.e", "[B, m+L, d]", torch::kFloat32},
      {"mtn.joint_attn.<layer>", "[B, H, J, J]", torch::kFloat32},
      {"mtn.blocks", "[3]", torch::kInt64},
      {"qa.answer_prob", "[B, L]", torch::kFloat32},
      {"qa.loss", "[B, L]", torch::kFloat32},
  };
  return r;
}

bool is_layer(const std::string& s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_path(const std::string& s) {
  if (s.empty() || s[0] == '.') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

bool matches(const std::string& pattern, const std::string& key) {
  for (const char* hole : {"<layer>", "<path>"}) {
    const auto at = pattern.find(hole);
    if (at == std::string::npos) continue;
    const std::string pre = pattern.substr(0, at), post = pattern.substr(at + std::string(hole).size());
    if (key.size() < pre.size() + post.size() || key.compare(0, pre.size(), pre) != 0 ||
        key.compare(key.size() - post.size(), post.size(), post) != 0)
      return false;
    const std::string mid = key.substr(pre.size(), key.size() - pre.size() - post.size());
    return std::string(hole) == "<layer>" ? is_layer(mid) : is_path(mid);
  }
  return pattern == key;
}

int rank_of(const char* shape) {
  int commas = 0;
  for (const char* p = shape; *p; ++p) commas += *p == ',';
  return commas + 1;
}

const char* dtype_text(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat64: return "F64";
    case torch::kFloat32: return "F32";
    case torch::kFloat16: return "F16";
    case torch::kBFloat16: return "BF16";
    case torch::kInt64: return "I64";
    case torch::kInt32: return "I32";
    case torch::kInt16: return "I16";
    case torch::kInt8: return "I8";
    case torch::kUInt8: return "U8";
    case torch::kBool: return "BOOL";
    default: return "another dtype";
  }
}

}  // namespace

std::string check_trace_tensor(const std::string& key, const torch::Tensor& t) {
  for (const auto& r : rules()) {
    if (!matches(r.pattern, key)) continue;
    if (t.defined() && t.scalar_type() == r.dtype && t.dim() == rank_of(r.shape)) return "";
    std::string shape = "[";
    if (t.defined())
      for (int64_t i = 0; i < t.dim(); ++i) shape += (i ? ", " : "") + std::to_string(t.size(i));
    shape += "]";
    return "trace key '" + key + "' is stored as " + (t.defined() ? dtype_text(t.scalar_type()) : "nothing") +
           " with shape " + shape + "; the canonical key is " + dtype_text(r.dtype) + " " + r.shape +
           " (docs/formats.md \"Traces\")";
  }
  return "";
}

}  // namespace mnemo

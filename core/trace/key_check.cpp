#include "core/trace/key_check.h"

#include "core/trace/keys.h"
#include "families/mtn/core/keys.h"

#include <cctype>
#include <vector>

namespace mnemo {

namespace {

struct Rule {
  std::string pattern;  // exact key; "<layer>" = a layer number; "<path>" = a module path
  const char* shape;
  torch::ScalarType dtype;
};

std::string layered(const char* prefix) { return std::string(prefix) + "<layer>"; }

// The table of docs/formats.md "Trace keys" (and python/mnemoscope/keys.py), by the names of
// core/trace/keys.h and the families' own (families/mtn/core/keys.h).
const std::vector<Rule>& rules() {
  using namespace keys;
  static const std::vector<Rule> r = {
      {kInputTokens, "[B, L]", torch::kInt64},
      {kInputOffsets, "[B, L, 2]", torch::kInt64},
      {kLmLoss, "[B, L]", torch::kFloat32},
      {kLmLossMemoryReset, "[B, L]", torch::kFloat32},
      {kLmLossMemoryZeroed, "[B, L]", torch::kFloat32},
      {kWriterAttn, "[B, H, k, 1+L+C]", torch::kFloat32},
      {layered(kReadAttnPrefix), "[B, H, L, k]", torch::kFloat32},
      {kMemoryPrev, "[B, k, d]", torch::kFloat32},
      {kMemory, "[B, k, d]", torch::kFloat32},
      {kForgetNorm, "[k]", torch::kFloat32},
      {kSlotType, "[B, k]", torch::kInt8},
      {kEncoderOut, "[B, L+C, d]", torch::kFloat32},
      {layered(kCrossAttnPrefix), "[B, H, L', L+C]", torch::kFloat32},
      {kDecoderRead, "[B, L', k]", torch::kFloat32},
      {kReadGate, "[N_enc]", torch::kFloat32},
      {layered(kRmtAttnPrefix), "[B, H, T, T]", torch::kFloat32},
      {layered(kRmtBlockMassPrefix), "[B, H, 3]", torch::kFloat32},
      {kRmtMemoryPrev, "[B, m, d]", torch::kFloat32},
      {kRmtMemory, "[B, m, d]", torch::kFloat32},
      {layered(kTrxlAttnPrefix), "[B, H, L, P]", torch::kFloat32},
      {hash_bucket_key("<path>"), "[N, K]", torch::kInt32},
      {hash_p_key("<path>"), "[N, K]", torch::kFloat32},
      {hash_counts_key("<path>"), "[K, R]", torch::kInt64},
      {kMtnImportance, "[B, m+L]", torch::kFloat32},
      {kMtnCandidateSource, "[B, m+L]", torch::kInt64},
      {kMtnImportancePrev, "[B, m]", torch::kFloat32},
      {kMtnKeptSource, "[B, m]", torch::kInt64},
      {kMtnKeptIndex, "[B, m]", torch::kInt64},
      {kMtnKeptImportance, "[B, m]", torch::kFloat32},
      {kMtnAge, "[B, m]", torch::kInt64},
      {kMtnOutput, "[B, m+L, d]", torch::kFloat32},
      {layered(kMtnJointAttnPrefix), "[B, H, J, J]", torch::kFloat32},
      {kMtnBlocks, "[3]", torch::kInt64},
      {kQaAnswerProb, "[B, L]", torch::kFloat32},
      {kQaLoss, "[B, L]", torch::kFloat32},
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

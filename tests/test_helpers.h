// Small helpers shared by the test suites.
#pragma once
#include "core/models/config.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>

namespace mnemo::test {

// A tiny Memformer config for fast tests.
inline ModelConfig tiny_memformer(int64_t slots = 4, int64_t len = 8) {
  ModelConfig c;
  c.slots = slots;
  c.segment_len = len;
  c.dim = 16;
  c.heads = 2;
  c.layers = 2;
  c.dec_layers = 1;
  c.ff = 32;
  c.n_cls = 1;
  c.temperature = 0.25;
  return c;
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// A fresh empty temp directory.
inline std::string temp_dir(const std::string& tag) {
  std::string tmpl = "/tmp/mnemo-test-" + tag + "-XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  return p ? std::string(p) : std::string();
}

}  // namespace mnemo::test

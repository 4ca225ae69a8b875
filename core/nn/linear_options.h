// How a projection (every Linear in attention and FFN) is built: dense or MemoryFormer-hashed
// (docs/models.md#memoryformer). Plain data, no LibTorch, so model configs can be read
// without compiling the model code (core/nn/linear.h builds the projections).
#pragma once
#include <cstdint>
#include <string>

namespace mnemo {

struct LinearOptions {
  std::string kind = "dense";   // "dense" | "hashed"
  int64_t hash_bits = 8;        // tau: bits per chunk (hashed)
  double hash_temperature = 1;  // t in p(z) (hashed)
};

}  // namespace mnemo

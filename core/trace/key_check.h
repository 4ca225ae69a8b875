// The dtype and rank of each canonical trace key (docs/formats.md "Traces"), checked when a
// probe recording is read (core/train/recorder.h read_recording), so that a recording written
// by another program — the Python package (docs/python.md), a hand-made file — with a key of
// the wrong dtype or rank is rejected naming the key instead of being drawn wrongly or
// crashing a panel. The Python package checks the same table (python/mnemoscope/keys.py).
#pragma once
#include <torch/torch.h>

#include <string>

namespace mnemo {

// "" when `key` is not a canonical key (readers accept such tensors: "user.*" keys, keys a
// newer minor format version adds) or when `t` has the key's dtype and rank; otherwise what is
// wrong, e.g. "trace key 'rmt.attn.0' is stored as I64 with shape [1, 2, 11, 11]; the canonical
// key is F32 [B, H, T, T]".
std::string check_trace_tensor(const std::string& key, const torch::Tensor& t);

}  // namespace mnemo

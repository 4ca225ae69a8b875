#include "core/models/rmt.h"

#include <limits>

namespace mnemo {

DecoderMaskParts decoder_mask_parts(const SequenceLayout& lay, torch::Device dev) {
  const int64_t p = lay.prefix, r = lay.read, l = lay.tokens, t = lay.rows();
  auto bopt = torch::TensorOptions().dtype(torch::kBool).device(dev);
  DecoderMaskParts parts;
  auto& allow = parts.allow = torch::zeros({t, p + t}, bopt);
  if (p > 0) allow.narrow(0, r, l + lay.write).narrow(1, 0, p).fill_(true);  // tokens, write -> prefix
  if (r > 0) allow.narrow(1, p, r).fill_(true);                                // everyone -> read
  allow.narrow(0, r, l).narrow(1, p + r, l).copy_(torch::ones({l, l}, bopt).tril());  // causal tokens
  if (lay.write > 0) allow.narrow(0, r + l, lay.write).narrow(1, p + r, l + lay.write).fill_(true);
  parts.self = torch::eye(t, p + t, bopt).roll(p, 1);  // query i <-> key p + i
  return parts;
}

torch::Tensor decoder_attention_mask(const SequenceLayout& lay, const torch::Tensor& prefix_valid,
                                     const torch::Tensor& token_valid) {
  TORCH_CHECK(token_valid.defined(), "token_valid must be [B, ", lay.tokens, "] bool");
  return decoder_attention_mask(lay, decoder_mask_parts(lay, token_valid.device()), prefix_valid, token_valid);
}

torch::Tensor decoder_attention_mask(const SequenceLayout& lay, const DecoderMaskParts& parts,
                                     const torch::Tensor& prefix_valid, const torch::Tensor& token_valid) {
  TORCH_CHECK(token_valid.dim() == 2 && token_valid.size(1) == lay.tokens && token_valid.scalar_type() == torch::kBool,
              "token_valid must be [B, ", lay.tokens, "] bool");
  const int64_t b = token_valid.size(0), p = lay.prefix, r = lay.read, t = lay.rows();
  TORCH_CHECK(parts.allow.defined() && parts.allow.size(0) == t && parts.allow.size(1) == p + t,
              "mask parts are for another layout");
  auto dev = token_valid.device();
  auto bopt = torch::TensorOptions().dtype(torch::kBool).device(dev);
  std::vector<torch::Tensor> kv;
  if (p > 0) {
    TORCH_CHECK(prefix_valid.defined() && prefix_valid.dim() == 2 && prefix_valid.size(0) == b &&
                    prefix_valid.size(1) == p,
                "prefix_valid must be [B, ", p, "]");
    kv.push_back(prefix_valid.to(torch::kBool));
  }
  if (r > 0) kv.push_back(torch::ones({b, r}, bopt));
  kv.push_back(token_valid);
  if (lay.write > 0) kv.push_back(torch::ones({b, lay.write}, bopt));
  auto key_ok = torch::cat(kv, 1);                                                       // [B, P + T]
  auto ok = (parts.allow.unsqueeze(0) & key_ok.unsqueeze(1)) | parts.self.unsqueeze(0);  // [B, T, P + T]
  auto mask = torch::zeros({b, 1, t, p + t}, torch::TensorOptions().dtype(torch::kFloat32).device(dev));
  mask.masked_fill_(ok.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  return mask;
}

torch::Tensor rmt_block_mass(const torch::Tensor& attn, int64_t m, const torch::Tensor& token_valid) {
  TORCH_CHECK(attn.dim() == 4 && attn.size(2) == attn.size(3), "rmt attention must be [B, H, T, T]");
  const int64_t b = attn.size(0), t = attn.size(2), l = t - 2 * m;
  TORCH_CHECK(m >= 1 && l >= 1, "rmt attention of size ", t, " cannot hold 2 x ", m, " memory tokens and a segment");
  auto a = attn.to(torch::kFloat32);
  auto tv = token_valid.defined() ? token_valid.to(torch::kFloat32).to(a.device())
                                  : torch::ones({b, l}, a.options());  // [B, L]
  auto tok_rows = a.narrow(2, m, l);        // [B, H, L, T]
  auto write_rows = a.narrow(2, m + l, m);  // [B, H, m, T]
  auto per_tok = tok_rows.narrow(3, 0, m).sum(-1);  // [B, H, L]
  auto w = tv.unsqueeze(1);                          // [B, 1, L]
  auto reading = (per_tok * w).sum(-1) / w.sum(-1).clamp_min(1.0);
  auto writing = (write_rows.narrow(3, m, l) * w.unsqueeze(2)).sum(-1).mean(-1);
  auto rewriting = write_rows.narrow(3, 0, m).sum(-1).mean(-1);
  return torch::stack({reading, writing, rewriting}, -1);
}

}  // namespace mnemo

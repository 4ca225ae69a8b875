#include "app/gui/model/synthetic.h"

#include "app/view/publisher.h"
#include "core/engine/engine.h"

#include "core/models/rmt.h"
#include "core/trace/analysis.h"
#include "core/trace/hash_stats.h"
#include "families/mtn/core/keys.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace mnemo::app {

namespace {

const char* kWords[] = {"call",  "me",    "ishmael", "some", "years", "ago",   "never", "mind",  "how",   "long",
                        "whale", "sea",   "ship",    "the",  "water", "shore", "money", "purse", "sail",  "about",
                        "world", "grey",  "harpoon", "deck", "wind",  "ahab",  "white", "tide",  "hull",  "mast"};

std::string make_text(size_t bytes, uint64_t seed) {
  std::string s;
  s.reserve(bytes + 16);
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  int col = 0;
  while (s.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const char* w = kWords[(x >> 33) % (sizeof kWords / sizeof kWords[0])];
    s += w;
    col += static_cast<int>(std::char_traits<char>::length(w)) + 1;
    if (col > 60) {
      s += ".\n";
      col = 0;
    } else {
      s += ' ';
    }
  }
  s.resize(bytes);
  return s;
}

}  // namespace

ViewPtr make_synthetic_view(const SyntheticSpec& sp) {
  if (sp.slots < 1 || sp.tokens < 1 || sp.heads < 1 || sp.dim < 1 || sp.visited < 1 || sp.n_cls < 0)
    throw std::invalid_argument("synthetic view: every size must be >= 1");
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(sp.seed);
  const int64_t k = sp.slots, L = sp.tokens, H = sp.heads, d = sp.dim, C = sp.n_cls;
  const int64_t segments = sp.visited + 1;
  auto doc = std::make_shared<const Document>(make_document(make_text(static_cast<size_t>(segments * L), sp.seed), "synthetic"));
  const int64_t shown = sp.visited - 1;

  // Writer logits: per slot a tendency to keep itself (retain), spread (mix) or be replaced.
  auto kind = torch::randint(0, 3, {k}, gen, torch::kInt64);
  auto self_bias = torch::where(kind == 0, torch::full({k}, 8.0), torch::where(kind == 1, torch::full({k}, 3.5), torch::full({k}, -3.0)));
  auto logits = torch::randn({1, H, k, 1 + L + C}, gen) * 1.2;
  logits.select(3, 0).add_(self_bias.view({1, 1, k}));
  // A few "favourite" tokens so rows have visible structure.
  auto fav = torch::randint(0, L, {k}, gen, torch::kInt64);
  for (int64_t i = 0; i < k; ++i) logits[0].select(1, i).select(1, 1 + fav[i].item<int64_t>()).add_(3.0);
  auto attn = torch::softmax(logits, 3);

  auto mem_prev = torch::randn({1, k, d}, gen);
  mem_prev = mem_prev / mem_prev.norm(2, 2, true);
  auto mix = attn.select(3, 0).mean(1).unsqueeze(2);  // [1, k, 1] self mass
  auto mem = mix * mem_prev + (1 - mix) * torch::randn({1, k, d}, gen) * 0.5;
  mem = mem / mem.norm(2, 2, true).clamp_min(1e-6);

  auto snap = std::make_shared<Snapshot>();
  snap->segment = shown;
  snap->num_segments = segments;
  snap->first_token = shown * L;
  snap->length = L;
  auto& tr = snap->trace.tensors;
  tr[keys::kInputTokens] = torch::tensor(doc->ids(shown * L, (shown + 1) * L)).view({1, L});
  tr[keys::kWriterAttn] = attn.contiguous();
  tr[keys::kMemoryPrev] = mem_prev.contiguous();
  tr[keys::kMemory] = mem.contiguous();
  tr[keys::kForgetNorm] = (torch::rand({k}, gen) * 1.8 + 0.2).contiguous();
  tr[keys::kLmLoss] = (torch::rand({1, L}, gen) * 4.0 + 2.0).contiguous();
  tr[keys::kSlotType] = classify_slots(attn, SlotThresholds{});
  snap->loss = tr[keys::kLmLoss].mean().item<double>();

  if (sp.other_models) {
    // RMT: [read m | tokens L | write m] with its mask (read rows see the read block, token
    // rows the read block and earlier tokens, write rows everything), two layers.
    const int64_t m = std::min<int64_t>(k, 32), t = 2 * m + L;
    auto mask = torch::full({t, t}, -INFINITY);
    mask.narrow(0, 0, m).narrow(1, 0, m).fill_(0.f);
    mask.narrow(0, m, L).narrow(1, 0, m).fill_(0.f);
    mask.narrow(0, m, L).narrow(1, m, L).copy_(torch::triu(torch::full({L, L}, -INFINITY), 1));
    mask.narrow(0, m + L, m).fill_(0.f);
    for (int l = 0; l < 2; ++l) {
      auto a = torch::softmax(torch::randn({1, H, t, t}, gen) * (1.0 + l) + mask, 3);
      tr[keys::kRmtAttnPrefix + std::to_string(l)] = a.contiguous();
      tr[keys::kRmtBlockMassPrefix + std::to_string(l)] = rmt_block_mass(a, m, torch::Tensor()).contiguous();
    }
    // Hashed projections: 8 tables x 256 buckets, rows = the segment's tokens, some buckets favoured.
    for (const char* path : {"layers.0.attn.q", "layers.0.ffn.fc1", "layers.1.attn.q"}) {
      auto skew = torch::rand({1, 256}, gen).pow(3.0) + 0.02;
      auto bucket = torch::multinomial(skew.expand({8, 256}), L, true, gen).t().contiguous().to(torch::kInt32);  // [L, 8]
      tr[keys::hash_bucket_key(path)] = bucket;
      tr[keys::hash_p_key(path)] = torch::rand({L, 8}, gen).pow(2.0).contiguous();
      tr[keys::hash_counts_key(path)] = bucket_counts(bucket, 256);
    }
    // MTN: candidates = the previous memory (tokens before the segment) then the segment's
    // tokens; the m2 most important are kept, in decreasing importance.
    const int64_t m2 = std::min<int64_t>(k, 32), first = shown * L;
    std::vector<int64_t> cand(static_cast<size_t>(m2 + L), -1);
    for (int64_t i = 0; i < m2 && i < first; ++i) cand[static_cast<size_t>(i)] = first - 1 - i * std::max<int64_t>(1, first / m2);
    for (int64_t j = 0; j < L; ++j) cand[static_cast<size_t>(m2 + j)] = first + j;
    auto imp = (torch::randn({m2 + L}, gen) * 0.8).to(torch::kFloat32).contiguous();
    std::vector<float> impv(imp.data_ptr<float>(), imp.data_ptr<float>() + m2 + L);
    std::vector<int64_t> order;
    for (int64_t c = 0; c < m2 + L; ++c)
      if (cand[static_cast<size_t>(c)] >= 0) order.push_back(c);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return impv[static_cast<size_t>(a)] > impv[static_cast<size_t>(b)]; });
    std::vector<int64_t> kept_index(static_cast<size_t>(m2), -1), kept_source(static_cast<size_t>(m2), -1), age(static_cast<size_t>(m2), -1);
    std::vector<float> kept_imp(static_cast<size_t>(m2), 0.f);
    for (int64_t i = 0; i < m2 && i < static_cast<int64_t>(order.size()); ++i) {
      const int64_t c = order[static_cast<size_t>(i)];
      kept_index[static_cast<size_t>(i)] = c;
      kept_source[static_cast<size_t>(i)] = cand[static_cast<size_t>(c)];
      kept_imp[static_cast<size_t>(i)] = impv[static_cast<size_t>(c)];
      age[static_cast<size_t>(i)] = c < m2 ? 1 + (c % std::max<int64_t>(1, shown)) : 0;
    }
    for (int64_t c = 0; c < m2 + L; ++c)
      if (cand[static_cast<size_t>(c)] < 0) impv[static_cast<size_t>(c)] = 0.f;
    tr[keys::kMtnImportance] = torch::tensor(impv).view({1, m2 + L});
    tr[keys::kMtnCandidateSource] = torch::tensor(cand).view({1, m2 + L});
    tr[keys::kMtnKeptIndex] = torch::tensor(kept_index).view({1, m2});
    tr[keys::kMtnKeptSource] = torch::tensor(kept_source).view({1, m2});
    tr[keys::kMtnKeptImportance] = torch::tensor(kept_imp).view({1, m2});
    tr[keys::kMtnAge] = torch::tensor(age).view({1, m2});
  }

  auto info = std::make_shared<ViewSource>();
  info->id = sp.seed * 1000003ull + static_cast<uint64_t>(k * 7919 + L);
  info->doc = doc;
  info->cfg.slots = k;
  info->cfg.segment_len = L;
  info->cfg.heads = H;
  info->cfg.dim = d;
  info->cfg.n_cls = C;
  info->seed = sp.seed;
  info->segment_len = L;
  info->stepping.segment_len = info->stepping.model_len = L;
  info->num_segments = segments;
  info->line_starts = line_starts_of(*doc);
  const std::string model_kind = info->cfg.model;

  // The memory benefit's losses (the same tokens with the memory reset / zeroed) and
  // Memformer's memory read (each token over the slots), from a generator of their own so the
  // traces above stay what they were.
  auto gen_extra = at::detail::createCPUGenerator(sp.seed + 0x9E37u);
  tr[keys::kLmLossMemoryReset] = (tr[keys::kLmLoss] + torch::randn({1, L}, gen_extra) * 0.6).clamp_min(0.0).contiguous();
  tr[keys::kLmLossMemoryZeroed] = (tr[keys::kLmLossMemoryReset] + torch::rand({1, L}, gen_extra) * 0.5).contiguous();
  tr[keys::layer_key(keys::kReadAttnPrefix, 1)] = torch::softmax(torch::randn({1, H, L, k}, gen_extra) * 2.0, 3).contiguous();

  // The same path as a live step; the earlier segments and the provenance are made up below.
  ViewPublisher publisher;
  publisher.open(std::move(info), /*chain=*/false);
  auto step = publisher.show(*snap).step;
  // Earlier segments: each slot's self mass drifts around its tendency.
  auto base = attn.select(3, 0).mean(1)[0];  // the shown step's self mass [k]
  std::vector<std::shared_ptr<SegmentRecord>> records;
  for (int64_t s = 0; s < sp.visited; ++s) {
    auto rec = std::make_shared<SegmentRecord>();
    if (s == shown) {
      rec->self_mass = step->memformer.self_mass;
    } else {
      auto m = (base + torch::randn({k}, gen) * 0.12).clamp(0.0, 1.0).to(torch::kFloat32).contiguous();
      rec->self_mass.assign(m.data_ptr<float>(), m.data_ptr<float>() + k);
    }
    auto l = (torch::rand({L}, gen) * 4.0 + 1.5).to(torch::kFloat32).contiguous();
    rec->token_losses.first = predicted_token(loss_target_of(model_kind), s, L, 0);
    rec->token_losses.values.assign(l.data_ptr<float>(), l.data_ptr<float>() + L);
    auto r = (l + torch::randn({L}, gen_extra) * 0.6).clamp_min(0.0).to(torch::kFloat32).contiguous();
    rec->token_losses_reset = rec->token_losses;
    rec->token_losses_reset.values.assign(r.data_ptr<float>(), r.data_ptr<float>() + L);
    records.push_back(rec);
  }
  // Provenance (docs/models.md#provenance): each visited step keeps its slots' self mass and
  // spreads the rest over its tokens like the shown step's writer rows. The chain covers the
  // last kSyntheticChain visited steps (what came before counts as its initial memory), so the
  // largest gallery sizes stay small.
  constexpr int64_t kSyntheticChain = 8;
  const int64_t chain_start = std::max<int64_t>(0, sp.visited - kSyntheticChain);
  ProvenanceState state = initial_provenance(static_cast<int>(k), 5, chain_start * L);
  const float* w = step->memformer.writer_block(-1);
  for (int64_t s = chain_start; s < sp.visited; ++s) {
    const auto& rec = records[static_cast<size_t>(s)];
    ProvenanceStep p;
    p.segment = s;
    p.slots = static_cast<int>(k);
    p.first_token = s * L;
    p.tokens = static_cast<int>(L);
    p.carry = rec->self_mass;
    p.source.assign(static_cast<size_t>(k * L), 0.f);
    p.other.assign(static_cast<size_t>(k), 0.f);
    for (int64_t i = 0; i < k; ++i) {
      const float* row = w + i * step->memformer.cols;
      double tok = 0.0;
      for (int64_t j = 0; j < L; ++j) tok += row[1 + j];
      const float rest = std::max(0.f, 1.f - rec->self_mass[static_cast<size_t>(i)]);
      const float cls = static_cast<float>(C > 0 ? rest * 0.05 : 0.0);
      p.other[static_cast<size_t>(i)] = cls;
      for (int64_t j = 0; j < L; ++j)
        p.source[static_cast<size_t>(i * L + j)] = static_cast<float>((rest - cls) * row[1 + j] / std::max(tok, 1e-12));
    }
    p.normalise();
    state = advance_provenance(state, p);
    rec->prov_top_k = state.top_k;
    rec->prov_top = state.top;
    rec->prov_initial = state.initial;
  }
  for (int64_t s = 0; s < sp.visited; ++s) publisher.remember(s, records[static_cast<size_t>(s)]);
  publisher.set_provenance(std::make_shared<const ProvenanceState>(std::move(state)));
  return publisher.view(shown, "synthetic traces (no model)");
}

}  // namespace mnemo::app

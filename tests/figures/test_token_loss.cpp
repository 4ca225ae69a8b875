// "The loss of a token" has one meaning for every model family (docs/formats.md "lm.loss",
// core/models/config.h LossTarget): the cross-entropy of predicting that document token. The
// values the app shows (the Document tint and tooltip: token_loss_at over the visited
// segments) and exports (document_tokens.csv, the document_loss figure's data) are checked
// against an independent computation: each segment's logits from model->step on inputs built
// here from the document's bytes, log-softmax, and the true token each position predicts by
// the family's definition (docs/models.md).
#include "app/figures/extract.h"
#include "app/figures/memformer.h"
#include "core/data/tokenizer.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

using namespace mnemo;
using namespace mnemo::app;

namespace {

const std::string kIshmael = "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.";

// Document token -> (loss, the segment whose step predicted it), from the logits alone.
std::map<int64_t, std::pair<double, int64_t>> token_loss_reference(MemoryModelImpl& model, const std::string& text, int64_t L) {
  torch::NoGradGuard g;
  model.eval();
  const int64_t n = static_cast<int64_t>(text.size()), segs = (n + L - 1) / L;
  auto tok = [&](int64_t t) { return t < n ? static_cast<int64_t>(static_cast<unsigned char>(text[static_cast<size_t>(t)])) : ByteTokenizer::kPad; };
  auto segment = [&](int64_t s, torch::Tensor* ids, torch::Tensor* valid) {
    *ids = torch::empty({1, L}, torch::kInt64);
    *valid = torch::empty({1, L}, torch::kBool);
    for (int64_t j = 0; j < L; ++j) {
      ids->index_put_({0, j}, tok(s * L + j));
      valid->index_put_({0, j}, s * L + j < n);
    }
  };
  const bool next_segment = model.kind() == "memformer";  // docs/models.md: its decoder predicts the next segment
  std::map<int64_t, std::pair<double, int64_t>> out;
  MemoryState mem = model.initial_memory(1);
  for (int64_t s = 0; s < segs; ++s) {
    SegmentInput in;
    segment(s, &in.tokens, &in.valid);
    if (s + 1 < segs) segment(s + 1, &in.next_tokens, &in.next_valid);
    in.targets = torch::empty({1, L}, torch::kInt64);
    in.target_valid = torch::empty({1, L}, torch::kBool);
    for (int64_t j = 0; j < L; ++j) {
      in.targets.index_put_({0, j}, tok(s * L + j + 1));
      in.target_valid.index_put_({0, j}, s * L + j + 1 < n);
    }
    SegmentOutput o = model.step(in, mem, nullptr);
    mem = o.memory;
    if (!o.logits.defined()) continue;
    auto logp = torch::log_softmax(o.logits[0].to(torch::kFloat64), -1);  // [L, V]
    for (int64_t j = 0; j < L; ++j) {
      const int64_t t = next_segment ? (s + 1) * L + j : s * L + j + 1;
      if (t >= n) continue;
      out[t] = {-logp[j][tok(t)].item<double>(), s};
    }
  }
  return out;
}

std::vector<std::vector<std::string>> read_csv_rows(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, std::string()));
      else cell += c;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

void check_token_losses(const std::string& kind) {
  CAPTURE(kind);
  ModelConfig cfg = test::tiny_decoder(kind, 4, 16);
  cfg.dec_layers = cfg.n1_layers = cfg.n2_layers = 1;
  const int64_t L = cfg.segment_len;
  MemoryModel model = make_model(cfg, 7);
  const auto ref = token_loss_reference(*model, kIshmael, L);
  REQUIRE(ref.size() >= kIshmael.size() - L - 1);  // every family predicts all but at most a segment's tokens

  // What the app keeps of each visited step, through the one path every view takes.
  Document doc = make_document(kIshmael, "ishmael.txt");
  Engine engine(model, doc, L, TraceSpec::all());
  VisitedSegments visited;
  for (int64_t s = 0; s < engine.num_segments(); ++s) {
    SnapshotPtr snap = engine.jump(s);
    visited.set(s, std::make_shared<SegmentRecord>(segment_record_of(make_step_data(*snap, engine.document(), kind), nullptr)));
  }
  int64_t shown = 0;
  for (int64_t t = 0; t < doc.size(); ++t) {
    CAPTURE(t);
    const TokenLossAt got = token_loss_at(visited, L, t);
    auto it = ref.find(t);
    if (it == ref.end()) {
      CHECK(got.segment == -1);
      CHECK(std::isnan(got.loss));
      continue;
    }
    ++shown;
    CHECK(got.segment == it->second.second);
    CHECK(got.loss == doctest::Approx(it->second.first).epsilon(1e-4));
    CHECK(predicting_segment(loss_target_of(kind) == LossTarget::kNextSegment, L, t) == it->second.second);
  }
  CHECK(shown == static_cast<int64_t>(ref.size()));

  // The export: one row per token, its loss and the segment that predicted it.
  const std::string dir = test::temp_dir("token-loss-" + kind);
  FigureFormats fm;
  fm.png = fm.svg = false;
  fm.csv = true;
  std::vector<std::string> written;
  write_token_losses(visited, engine.document(), L, dir + "/document", fm, written);
  const auto rows = read_csv_rows(dir + "/document_tokens.csv");
  REQUIRE(rows.size() == static_cast<size_t>(doc.size()) + 1);
  CHECK(rows[0] == std::vector<std::string>{"token", "segment", "id", "text", "loss", "predicted_at_segment"});
  for (size_t r = 1; r < rows.size(); ++r) {
    const int64_t t = std::stoll(rows[r][0]);
    CAPTURE(t);
    auto it = ref.find(t);
    if (it == ref.end()) {
      CHECK(rows[r][4].empty());
      continue;
    }
    REQUIRE(!rows[r][4].empty());
    CHECK(std::stod(rows[r][4]) == doctest::Approx(it->second.first).epsilon(1e-4));
    CHECK(std::stoll(rows[r][5]) == it->second.second);
  }
}

}  // namespace

TEST_CASE("token losses: Memformer's (next segment) shown and exported on the tokens they predict") { check_token_losses("memformer"); }
TEST_CASE("token losses: RMT's (next token) shown and exported on the tokens they predict") { check_token_losses("rmt"); }
TEST_CASE("token losses: RMT write-only's shown and exported on the tokens they predict") { check_token_losses("rmt-write-only"); }
TEST_CASE("token losses: Transformer-XL's shown and exported on the tokens they predict") { check_token_losses("trxl"); }
TEST_CASE("token losses: Transformer-XL + RMT's shown and exported on the tokens they predict") { check_token_losses("trxl-rmt"); }
TEST_CASE("token losses: the decoder LM's shown and exported on the tokens they predict") { check_token_losses("transformer"); }
TEST_CASE("token losses: MTN's (language model) shown and exported on the tokens they predict") { check_token_losses("mtn"); }

namespace {
// A record told apart by its self mass [segment].
std::shared_ptr<const SegmentRecord> record_of(int64_t segment) {
  auto r = std::make_shared<SegmentRecord>();
  r->self_mass = {static_cast<float>(segment)};
  return r;
}
}  // namespace

TEST_CASE("visited segments: sets, forgets, finds and iterates like a std::map of the same records, and a copy shares them") {
  // A reference std::map under the same random sets and erases (segments past several blocks,
  // gaps of whole empty blocks, re-sets of a visited segment).
  VisitedSegments v;
  std::map<int64_t, std::shared_ptr<const SegmentRecord>> ref;
  uint64_t x = 12345;
  auto next = [&x](int64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(n));
  };
  for (int op = 0; op < 2000; ++op) {
    const int64_t seg = next(4) == 0 ? 1000 + next(300) : next(200);
    if (next(5) == 0) {
      v.erase(seg);
      ref.erase(seg);
    } else {
      auto r = record_of(seg);
      v.set(seg, r);
      ref[seg] = r;
    }
    if (op % 97 != 0) continue;
    REQUIRE(v.size() == ref.size());
    CHECK(v.empty() == ref.empty());
    std::vector<int64_t> fwd, bwd, want;
    for (const auto& [s, r] : v) {
      fwd.push_back(s);
      CHECK(r == ref.at(s));
    }
    for (auto it = v.rbegin(); it != v.rend(); ++it) bwd.push_back(it->first);
    for (const auto& kv : ref) want.push_back(kv.first);
    CHECK(fwd == want);
    std::reverse(want.begin(), want.end());
    CHECK(bwd == want);
    for (int64_t s = -2; s < 1310; s += 7) {
      CHECK(v.count(s) == ref.count(s));
      const auto it = v.find(s);
      CHECK((it != v.end()) == (ref.count(s) == 1));
      if (it != v.end()) CHECK(it->second == ref.at(s));
    }
  }
  // A copy is a snapshot: later changes to the original do not reach it, and copying adds no
  // reference to any record (the blocks are shared, not the records copied one by one).
  v.clear();
  v.set(3, record_of(3));
  v.set(200, record_of(200));
  const auto r3 = v.at(3);
  const long uses = r3.use_count();
  const VisitedSegments copy = v;
  CHECK(r3.use_count() == uses);
  v.set(3, record_of(30));
  v.erase(200);
  CHECK(copy.size() == 2);
  CHECK(copy.at(3) == r3);
  CHECK(copy.at(200)->self_mass.at(0) == 200.f);
  CHECK(v.size() == 1);
  CHECK(v.at(3)->self_mass.at(0) == 30.f);
  // Bad use gets a message naming the segment.
  CHECK_THROWS_WITH_AS(v.at(200), "segment 200 was not visited", std::out_of_range);
  CHECK_THROWS_WITH_AS(v.set(-1, record_of(0)), "a visited segment's index is >= 0, not -1", std::invalid_argument);
  VisitedSegments init{{5, record_of(5)}, {70, record_of(70)}};
  CHECK(init.size() == 2);
  CHECK(init.begin()->first == 5);
  CHECK(init.rbegin()->first == 70);
  VisitedSegments none;
  CHECK(none.begin() == none.end());
  CHECK(none.rbegin() == none.rend());
}

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
    visited[s] = std::make_shared<SegmentRecord>(segment_record_of(make_step_data(*snap, engine.document(), kind), nullptr));
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

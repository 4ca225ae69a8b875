// The figure builders of app/figures/ (one input type, StepData, for the CLI and the app):
// the RMT / Transformer-XL attention maps and their files, the MemoryFormer hash figures.
// (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#include "app/figures/attention.h"
#include "app/figures/extract.h"
#include "app/figures/figures.h"
#include "app/figures/hash.h"
#include "app/figures/palette.h"
#include "app/figures/run_curves.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#include "core/trace/hash_stats.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cmath>
#include <fstream>

using namespace mnemo;

using test::tiny_decoder;
const auto gen = test::cpu_generator;

TEST_CASE("engine + figures: stepping rmt and trxl through a document writes the RMT figures") {
  const std::string dir = test::temp_dir("rmtfig");
  REQUIRE(!dir.empty());
  Document doc = make_document("abcdefgh>abcdefghabcdefgh");
  for (const char* kind : {"rmt", "trxl", "transformer"}) {
    CAPTURE(kind);
    auto cfg = tiny_decoder(kind, 4, 8);
    Engine engine(make_model(cfg, 1), doc, 8, TraceSpec::all());
    auto s0 = engine.jump(0);
    REQUIRE(s0);
    // decoder-only targets: the last position predicts the next segment's first token.
    CHECK(s0->trace.at("lm.loss")[0][7].item<float>() > 0.f);
    CHECK(std::isfinite(s0->loss));
    auto s3 = engine.jump(3);  // the last segment: 1 real token, no next token to predict
    CHECK(s3->trace.at("lm.loss").sum().item<float>() == 0.f);
    auto s1 = engine.jump(1);
    app::FigureFormats fm;
    fm.svg = fm.csv = true;
    const std::string sub = dir + "/" + kind;
    ::mkdir(sub.c_str(), 0755);
    const app::StepData st = app::make_step_data(*s1, engine.document(), kind);
    auto files = app::write_step_figures(st, engine.document(), sub, fm);
    if (std::string(kind) == "rmt") {
      CHECK(test::file_exists(sub + "/rmt_attention_l0_mean.svg"));
      CHECK(test::file_exists(sub + "/rmt_attention_l1_head1.csv"));
      CHECK(test::file_exists(sub + "/rmt_block_mass.svg"));
      CHECK(test::file_exists(sub + "/rmt_block_mass.csv"));
      auto spec = app::attention_map_spec(st.attention, st.segment, 0, -1);
      CHECK(spec.rows == 4 + 8 + 4);
      CHECK(spec.col_labels.front() == "r0");
      CHECK(spec.col_labels.back() == "w3");
      CHECK(spec.col_groups.size() == 3);
    } else if (std::string(kind) == "transformer") {
      // The decoder-only model is no Transformer-XL: its maps are named for what it is.
      CHECK(test::file_exists(sub + "/transformer_attention_l0_mean.svg"));
      CHECK_FALSE(test::file_exists(sub + "/trxl_attention_l0_mean.svg"));
    } else {
      CHECK(test::file_exists(sub + "/trxl_attention_l0_mean.svg"));
      auto spec = app::attention_map_spec(st.attention, st.segment, 1, 0);
      CHECK(spec.cols == 4 + 8);
      CHECK(spec.col_labels[0] == "e");  // the cache holds the previous segment's last 4 tokens
      CHECK(spec.col_groups.size() == 2);
    }
  }
}

TEST_CASE("hash figures: loads heat strip, table bars with the uniform line, p histogram, stats CSV") {
  Trace tr;
  auto bucket = torch::randint(0, 16, {200, 3}, gen(2)).to(torch::kInt32);
  tr.tensors[keys::hash_bucket_key("enc.q")] = bucket;
  tr.tensors[keys::hash_counts_key("enc.q")] = bucket_counts(bucket, 16);
  tr.tensors[keys::hash_p_key("enc.q")] = torch::rand({200, 3}, gen(3));
  const app::HashData h = app::hash_data_of(tr);
  REQUIRE(h.paths.size() == 1);
  const app::HashPathData& q = h.paths[0];
  auto loads = app::hash_loads_spec(q, "segment 0");
  CHECK(loads.rows == 3);
  CHECK(loads.cols == 16);
  CHECK(loads.values.size() == 48);
  auto bars = app::hash_table_bars_spec(q, 0, "segment 0");
  REQUIRE(bars.reference_line.has_value());
  CHECK(*bars.reference_line == doctest::Approx(200.0 / 16));
  CHECK_THROWS_AS(app::hash_table_bars_spec(q, 3, "x"), InputError);
  auto hist = app::hash_p_spec(q, "segment 0");
  CHECK(hist.samples.size() == 600);

  const std::string dir = test::temp_dir("hashfig");
  app::FigureFormats fm;
  fm.svg = fm.csv = true;
  std::vector<std::string> files;
  app::write_hash_figures(h, dir, fm, "segment 0", files);
  for (const auto* f : {"/hash/entropy.svg", "/hash/enc.q.loads.svg", "/hash/enc.q.loads.csv", "/hash/enc.q.table0.svg",
                        "/hash/enc.q.p.svg", "/hash/stats.csv"})
    CHECK_MESSAGE(test::file_exists(dir + f), f);
  std::ifstream in(dir + "/hash/stats.csv");
  std::string header;
  std::getline(in, header);
  CHECK(header == "path,table,buckets,lookups,entropy,dead_fraction,max_load");
  Trace two = tr;
  auto b6 = torch::randint(0, 64, {10, 2}, gen(4)).to(torch::kInt32);
  two.tensors[keys::hash_counts_key("a.fc2")] = bucket_counts(b6, 64);
  two.tensors[keys::hash_counts_key("z.k")] = bucket_counts(b6, 64);
  const app::HashData h2 = app::hash_data_of(two);
  CHECK(app::default_hash_detail_paths(h2) == std::vector<std::string>{"a.fc2", "enc.q"});
  auto ent = app::hash_entropy_spec(h2, "x");
  CHECK(ent.values.size() == 3);
  REQUIRE(ent.reference_line.has_value());
  CHECK(*ent.reference_line == doctest::Approx(1.0));
  // No hash keys: nothing written.
  std::vector<std::string> none;
  app::write_hash_figures(app::hash_data_of(Trace{}), dir + "/none", fm, "x", none);
  CHECK(none.empty());
  CHECK_FALSE(test::path_exists(dir + "/none"));
}


TEST_CASE("hash figures: the stats' mean row means every column - tables alike say why") {
  // 200 rows hashed into 3 tables: each table sees every row once, so the mean row's lookups
  // is 200 (as each table's), not the sum 600.
  Trace tr;
  auto bucket = torch::randint(0, 16, {200, 3}, gen(5)).to(torch::kInt32);
  tr.tensors[keys::hash_counts_key("enc.q")] = bucket_counts(bucket, 16);
  const app::HashPathData q = app::hash_data_of(tr).paths.at(0);
  const auto rows = app::hash_stats_rows(q);
  REQUIRE(rows.size() == 4);
  CHECK(rows[3][1] == "mean");
  CHECK(rows[3][3] == "200");
  for (int k = 0; k < 3; ++k) CHECK(rows[static_cast<size_t>(k)][3] == "200");
  CHECK(app::format_lookups(12.5) == "12.5");
  // Random buckets: tables differ, no note.
  CHECK(app::hash_same_tables_note(q, {}).empty());

  // Tokens whose bucket depends on the token alone (a different permutation per table, as
  // memoryformer-lm's layer 0 hashes each byte's embedding): every table has the loads of the
  // token counts, in a different bucket order, and the note says so.
  const std::vector<int64_t> ids = {3, 1, 3, 7, 3, 1, 9, 3, 7, 2};  // 3 x4, 1 x2, 7 x2, 9, 2
  auto by_token = torch::zeros({static_cast<int64_t>(ids.size()), 4}, torch::kInt32);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t k = 0; k < 4; ++k) by_token[static_cast<int64_t>(i)][k] = static_cast<int32_t>((ids[i] * (2 * k + 1) + k) % 16);
  Trace same;
  same.tensors[keys::hash_counts_key("layers.0.attn.q")] = bucket_counts(by_token, 16);
  const app::HashPathData s = app::hash_data_of(same).paths.at(0);
  const std::string note = app::hash_same_tables_note(s, ids);
  CAPTURE(note);
  CHECK(note.find("All 4 tables have the same loads in a different bucket order") == 0);
  CHECK(note.find("exactly the segment's token counts (5 distinct tokens, as many buckets used)") != std::string::npos);
  // Other tokens than the ones hashed: the tables are still alike, but no claim about tokens.
  const std::string other = app::hash_same_tables_note(s, {1, 2, 3});
  CHECK(other.find("All 4 tables have the same loads") == 0);
  CHECK(other.find("token counts") == std::string::npos);
  // The same buckets in every table: "bucket for bucket".
  Trace copy;
  auto one = torch::randint(0, 16, {50, 1}, gen(6)).to(torch::kInt32);
  copy.tensors[keys::hash_counts_key("x")] = bucket_counts(torch::cat({one, one}, 1).contiguous(), 16);
  CHECK(app::hash_same_tables_note(app::hash_data_of(copy).paths.at(0), {}).find("bucket for bucket") != std::string::npos);
}

TEST_CASE("session figures: every curve but 'segments' marks each curriculum change inside the step range") {
  std::vector<nlohmann::json> rec;
  for (int s = 1; s <= 10; ++s)
    rec.push_back({{"type", "step"}, {"step", s}, {"loss", 3.0 - 0.1 * s}, {"accuracy", 0.1 * s}, {"lr", 1e-3}});
  rec.push_back({{"type", "curriculum"}, {"step", 4}, {"from", 2}, {"to", 3}, {"segments", 3}, {"reason", "every 4 steps"}});
  rec.push_back({{"type", "curriculum"}, {"step", 8}, {"from", 3}, {"to", 4}, {"segments", 4}, {"reason", "every 4 steps"}});
  const RunLog log = parse_run_log(rec);
  auto loss = app::run_curve_spec(log, "loss", 0, 100);
  REQUIRE(loss.markers.size() == 2);
  CHECK(loss.markers[0].x == 4.f);
  CHECK(loss.markers[0].label == "2\u21923 segments");
  CHECK(loss.markers[1].x == 8.f);
  CHECK(app::run_curve_spec(log, "loss", 5, 100).markers.size() == 1);  // only the change at 8
  CHECK(app::run_curve_spec(log, "segments", 0, 100).markers.empty());
  CHECK_NOTHROW(viz::make_lines(loss));
}

TEST_CASE("session figures: train, valid and valid with the memory zeroed keep one colour in every chart") {
  std::vector<nlohmann::json> rec;
  for (int s = 1; s <= 4; ++s) rec.push_back({{"type", "step"}, {"step", s}, {"loss", 3.0 - 0.1 * s}});  // no accuracy
  rec.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 2.5}, {"accuracy", 0.4}});
  rec.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"zero_memory", true}, {"loss", 2.7}, {"accuracy", 0.3}});
  const RunLog log = parse_run_log(rec);
  const auto loss = app::run_curve_spec(log, "loss", 0, 100);
  const auto acc = app::run_curve_spec(log, "accuracy", 0, 100);  // no train curve here
  REQUIRE(loss.series.size() == 3);
  REQUIRE(acc.series.size() == 2);
  CHECK(acc.series[0].name == "valid");
  CHECK(acc.series[0].color == loss.series[1].color);  // "valid" is not drawn in the train colour
  CHECK(acc.series[1].color == loss.series[2].color);
  CHECK(acc.series[0].color == app::palette::series(1));
  CHECK(app::curve_color("learning rate", 0) == 0);
  CHECK(app::curve_color("layer 0 writing", 4) == 4);
}

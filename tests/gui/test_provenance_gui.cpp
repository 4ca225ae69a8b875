// Memory provenance in the app: the worker publishes the chain's state for the shown step
// (exact after a jump: the same as stepping there), MTN kept entries as their source tokens;
// the Document panel tints by it and the Slot timeline lists what a slot holds in the
// null backend at every gallery size; Export writes the provenance figures and tables.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/figures/provenance.h"
#include "app/gui/model/synthetic.h"


using namespace mnemo;
using namespace mnemo::app;

namespace {
double row_sum(const ProvenanceState& p, int slot) {
  double s = p.initial[slot] + p.other[slot];
  for (int64_t t = 0; t < p.tokens; ++t) s += p.at(slot, t);
  return s;
}
}  // namespace

TEST_CASE("provenance in the worker: published per step, exact after a jump, MTN entries are their tokens") {
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  for (std::string kind : {"memformer", "rmt"}) {
    CAPTURE(kind);
    auto cfg = kind == "memformer" ? test::tiny_memformer(4, 16) : test::tiny_decoder("rmt", 3, 16);
    Worker stepped, jumped;
    stepped.start(doc, cfg, 3, "");
    jumped.start(doc, cfg, 3, "");
    for (int i = 0; i < 6; ++i) stepped.step(+1);
    jumped.jump(5);
    test::wait_worker(stepped, 7);
    test::wait_worker(jumped, 2);
    ViewPtr a = stepped.latest(), b = jumped.latest();
    REQUIRE(a->provenance);
    REQUIRE(b->provenance);
    CHECK(a->provenance->segment == 5);
    CHECK(b->provenance->segment == 5);
    CHECK(a->provenance->tokens == 6 * 16);
    REQUIRE(a->provenance->weight.size() == b->provenance->weight.size());
    for (size_t i = 0; i < a->provenance->weight.size(); ++i)
      CHECK(a->provenance->weight[i] == doctest::Approx(b->provenance->weight[i]).epsilon(1e-5));
    for (int sl = 0; sl < a->provenance->slots; ++sl) CHECK(row_sum(*a->provenance, sl) == doctest::Approx(1.0).epsilon(1e-4));
    // Every visited segment keeps what the slots held then (the timeline's list).
    for (int64_t seg = 0; seg < 6; ++seg) {
      CAPTURE(seg);
      REQUIRE(a->visited.count(seg));
      CHECK(a->visited.at(seg)->prov_top_k == 5);
      CHECK(a->visited.at(seg)->prov_top.size() == static_cast<size_t>(5 * a->provenance->slots));
    }
    CHECK(a->provenance_note.empty());
  }
  // MTN: a kept entry's provenance is its source token, exactly.
  auto mtn = test::tiny_decoder("mtn", 4, 16);
  mtn.n1_layers = 1;
  mtn.n2_layers = 1;
  Worker m;
  m.start(doc, mtn, 1, "");
  m.jump(3);
  test::wait_worker(m, 2);
  ViewPtr s = m.latest();
  REQUIRE(s->step);
  REQUIRE(s->step->mtn.present);
  REQUIRE(s->provenance);
  for (size_t i = 0; i < s->step->mtn.entries.size(); ++i) {
    const int64_t src = s->step->mtn.entries[i].source;
    if (src < 0) CHECK(s->provenance->initial[i] == 1.f);
    else CHECK(s->provenance->at(static_cast<int>(i), src) == 1.f);
  }
  // A model without provenance says so.
  Worker t;
  t.start(doc, test::tiny_decoder("trxl", 3, 16), 1, "");
  t.step(+1);
  test::wait_worker(t, 2);
  CHECK_FALSE(t.latest()->provenance);
  CHECK(t.latest()->provenance_note.find("no memory provenance") != std::string::npos);
}

TEST_CASE("provenance in the app: Document tint and the timeline's list draw at every gallery size - export writes them") {
  for (int g = 0; g < GalleryPanel::size_count(); ++g) {
    CAPTURE(GalleryPanel::size_name(g));
    int slots = 0, tokens = 0;
    REQUIRE(std::sscanf(GalleryPanel::size_name(g), "%d %*s x %d", &slots, &tokens) == 2);
    SyntheticSpec spec;
    spec.slots = slots;
    spec.tokens = tokens;
    spec.visited = 12;
    spec.dim = slots >= 1024 ? 64 : 16;
    ViewPtr s = make_synthetic_view(spec);
    REQUIRE(s->provenance);
    CHECK(s->provenance->slots == slots);
    for (int sl = 0; sl < slots; sl += std::max(1, slots / 7))
      CHECK(row_sum(*s->provenance, sl) == doctest::Approx(1.0).epsilon(1e-3));
    ui::NullTextureApi textures;
    RecordingController control;
    try {
      test::NullImGui ui(1920.f, 1080.f);
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      for (int f = 0; f < 20; ++f) {
        ImGui::GetIO().MousePos = ImVec2(static_cast<float>(20 + (f * 53) % 480), static_cast<float>(460 + (f * 37) % 600));
        if (f == 2) shell.view_model().select_slot(slots - 1);
        if (f == 10) shell.view_model().select_slot(0);
        ui.frame([&] {
          if (f == 1) shell.document_panel().set_tint(DocumentPanel::kTintProvenance);
          shell.frame(s, control);
        });
      }
      CHECK(shell.document_panel().tint() == DocumentPanel::kTintProvenance);
      CHECK(control.calls == 0);
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
    if (g != 0) continue;
    // Export (Document and Slot timeline with a slot selected): the provenance figures.
    ExportRequest req;
    req.view = s;
    req.selected_slot = 3;
    req.dir = test::temp_dir("prov-export");
    req.panel = PanelId::kDocument;
    auto paths = export_panel(req);
    req.panel = PanelId::kTimeline;
    auto more = export_panel(req);
    paths.insert(paths.end(), more.begin(), more.end());
    char pre[32];
    std::snprintf(pre, sizeof pre, "/seg-%04lld-", static_cast<long long>(s->step->segment));
    const std::string base = req.dir + pre;
    CHECK(test::file_exists(base + "document_provenance_slot3_map.png"));
    CHECK(test::file_exists(base + "document_provenance_slot3_map.svg"));
    CHECK(test::file_exists(base + "document_provenance_slot3_top.png"));
    CHECK(test::file_exists(base + "slot_timeline_holds_slot3.csv"));
    // The CSV holds exactly the state's shares.
    const std::string csv = test::read_file(base + "document_provenance_slot3.csv");
    REQUIRE_FALSE(csv.empty());
    CHECK(csv.find("token,segment,position,text,share") == 0);
    CHECK(csv.find("initial,,,," + viz::csv_number(s->provenance->initial[3])) != std::string::npos);
    const ProvenanceSource& top = s->provenance->top_of(3)[0];
    CHECK(csv.find("\n" + std::to_string(top.token) + ",") != std::string::npos);
    CHECK(csv.find(viz::csv_number(top.weight)) != std::string::npos);
  }
}

TEST_CASE("provenance figures: the map puts each token's share at its segment row and position") {
  ProvenanceState p = initial_provenance(1, 2);
  ProvenanceStep st;
  st.segment = 0;
  st.slots = 1;
  st.tokens = 4;
  st.carry = {0.5f};
  st.source = {0.1f, 0.f, 0.3f, 0.1f};
  p = advance_provenance(p, st);
  st.segment = 1;
  st.first_token = 4;
  st.tokens = 2;
  st.carry = {0.5f};
  st.source = {0.f, 0.5f};
  p = advance_provenance(p, st);
  auto spec = provenance_map_spec(p, 0, 4, 6);
  REQUIRE(spec.rows == 2);
  REQUIRE(spec.cols == 4);
  CHECK(spec.values[2] == doctest::Approx(0.15));   // token 2: 0.3, halved at step 1
  CHECK(spec.values[5] == doctest::Approx(0.5));    // token 5, segment 1 position 1
  CHECK(std::isnan(spec.values[6]));                // past the document's end
  CHECK(spec.vmax == doctest::Approx(0.5));
  CHECK(spec.title.find("initial memory 25.0%") != std::string::npos);
  Document doc = make_document("abcdef", "d");
  auto bars = provenance_top_spec(p, 0, doc, 2);
  REQUIRE(bars.labels.size() == 3);
  CHECK(bars.labels[0] == "#5 'f'");
  CHECK(bars.labels[1] == "#2 'c'");
  CHECK(bars.labels[2] == "initial memory");
  CHECK(bars.values[2] == doctest::Approx(0.25));
}

#endif  // MNEMO_WITH_GUI

// Tour claims about one memory entry (docs/formats.md#tour-checks, "slot_effect"): parsed and
// rejected by field; measured on the slot effects the app shows (the Document panel's
// slot-effect tint) and passed only when the computation apart (app/gui/model/entry_effect.h:
// the document scored whole, patched with the entry removed) agrees; that computation equals the
// worker's on the shipped tour's model; `tour --check` fails a false claim; the shipped tour
// plays in the null-backend GUI with its slot effects computed at the stop.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/gui/model/entry_effect.h"
#include "app/gui/model/lockstep.h"
#include "app/gui/model/tour.h"
#include "app/gui/model/tour_check.h"
#endif
#include "tests/support/skip.h"

#ifdef MNEMO_WITH_GUI
#include <cmath>
#include <stdexcept>

using namespace mnemo;
using namespace mnemo::app;

namespace {
const std::string kZoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models";
const std::string kNameTour = std::string(MNEMO_SOURCE_DIR) + "/assets/tours/memformer-slot-holds-a-name.json";

std::string one_stop(const std::string& checks, const std::string& extra = "") {
  return R"({"format": "mnemoscope-tour", "version": 1, "title": "t", "stops": [{"model": "memformer-copy", "segment": 1,
      "panels": ["document", "slot_effects"], "caption": "slot 2 saves 0.5 bits")" +
         extra + R"(, "checks": [)" + checks + "]}]}";
}

std::string error_of(const std::string& text) {
  try {
    parse_tour(text, "t.json", kZoo);
  } catch (const TourError& e) {
    return e.what();
  }
  return "";
}

// A shown step of segment 1 whose slot effects hold two slots over tokens 10 and 11: slot 1
// costs them 0.5 and 3 bits more when removed (reset), slot 0 nothing.
PublishedView shown_effects() {
  PublishedView v;
  v.info = std::make_shared<ViewSource>();
  auto step = std::make_shared<StepData>();
  step->segment = 1;
  v.step = step;
  auto fx = std::make_shared<SlotEffects>();
  fx->segment = 1;
  fx->entry_kind = "slot";
  fx->labels = {"slot 0", "slot 1"};
  fx->tokens = {10, 11};
  fx->carried = {1.f, 2.f};
  fx->ablations = {"reset"};
  const float ln2 = static_cast<float>(std::log(2.0));
  fx->removed = {{{1.f, 2.f}, {1.f + 0.5f * ln2, 2.f + 3.f * ln2}}};
  fx->all_removed = {{2.f, 5.f}};
  v.slot_effects = fx;
  return v;
}

TourCheck effect_check(int slot, int64_t from, int64_t to, double lo, double hi, const std::string& stat = "each") {
  TourCheck c;
  c.kind = "slot_effect";
  c.says = "x";
  c.slot = slot;
  c.token_from = from;
  c.token_to = to;
  c.min = lo;
  c.max = hi;
  c.stat = stat;
  c.of = "reset";
  return c;
}

CheckResult check_one(const TourCheck& c, const PublishedView& v, const EntryEffectApart& apart) {
  TourStop st;
  st.segment = 1;
  st.checks = {c};
  auto r = check_stop(st, v, apart);
  REQUIRE(r.size() == 1);
  CheckResult out = r[0];
  out.check = nullptr;  // points into st, gone here
  return out;
}

}  // namespace

TEST_CASE("tour checks: slot_effect - parsed with its defaults, and rejected by field") {
  const std::string ok = R"({"check": "slot_effect", "slot": 2, "tokens": [18, 21], "stat": "sum", "min": 0.4, "max": 0.6,
      "says": "slot 2 saves 0.5 bits"})";
  Tour t = parse_tour(one_stop(ok, R"(, "tint": "slot_effect", "select": {"slot": 2})"), "t.json", kZoo);
  REQUIRE(t.stops.size() == 1);
  REQUIRE(t.stops[0].checks.size() == 1);
  const TourCheck& c = t.stops[0].checks[0];
  CHECK(c.kind == "slot_effect");
  CHECK(c.slot == 2);
  CHECK(c.of == "reset");  // the default removal
  CHECK(c.stat == "sum");
  CHECK(c.token_from == 18);
  CHECK(c.token_to == 21);
  CHECK(t.stops[0].tint == "slot_effect");
  CHECK(parse_tour(one_stop(R"({"check": "slot_effect", "slot": 2, "tokens": [18, 21], "of": "zeroed", "min": 0,
      "says": "slot 2 saves 0.5 bits"})"), "t.json", kZoo).stops[0].checks[0].of == "zeroed");

  struct Case {
    std::string check, expect;
  };
  const std::vector<Case> cases = {
      {R"({"check": "slot_effect", "tokens": [18, 21], "min": 0, "says": "slot 2"})",
       "field 'checks[0]': slot_effect needs \"slot\" (the memory entry), \"tokens\" and a \"min\" or \"max\""},
      {R"({"check": "slot_effect", "slot": 2, "min": 0, "says": "slot 2"})", "slot_effect needs \"slot\""},
      {R"({"check": "slot_effect", "slot": 2, "tokens": [18, 21], "says": "slot 2"})", "slot_effect needs \"slot\""},
      {R"({"check": "slot_effect", "slot": 2, "tokens": [18, 21], "of": "erased", "min": 0, "says": "slot 2"})",
       "field 'checks[0].of': must be reset or zeroed (how the entry is removed)"},
      {R"({"check": "slot_effect", "slot": 99, "tokens": [18, 21], "min": 0, "says": "slot 2"})",
       "field 'checks[0].slot': must be an integer in 0..7"},
      {R"({"check": "loss", "tokens": [18, 21], "stat": "sum", "min": 0, "says": "slot 2"})",
       "field 'checks[0].stat': sum is for provenance shares and slot effects"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.check);
    const std::string e = error_of(one_stop(k.check));
    CHECK_MESSAGE(e.find(k.expect) != std::string::npos, e);
  }
  const std::string e = error_of(one_stop(ok, R"(, "tint": "slot-effects")"));
  CHECK_MESSAGE(e.find("field 'tint': 'slot-effects' is not a tint; use visited, loss, provenance, benefit or slot_effect") !=
                    std::string::npos,
                e);
}

TEST_CASE("tour checks: slot_effect measures the tint's bits - passes only when the computation apart agrees - or says why") {
  const PublishedView v = shown_effects();
  const auto same = [](const TourStop&, const TourCheck& c) {
    std::vector<double> out;
    for (int64_t t = c.token_from; t < c.token_to; ++t) out.push_back(t == 10 ? 0.5 : t == 11 ? 3.0 : NAN);
    return out;
  };
  CheckResult r = check_one(effect_check(1, 10, 12, 0.4, 3.1), v, same);
  CHECK(r.pass);
  CHECK_MESSAGE(r.measured.find("2 values in 0.5..3 bits (slot 1 reset); computed apart: the same within") == 0, r.measured);
  // Bounds: the first value outside is named.
  r = check_one(effect_check(1, 10, 12, 0.0, 1.0), v, same);
  CHECK_FALSE(r.pass);
  CHECK_MESSAGE(r.measured.find("; token 11 is 3") != std::string::npos, r.measured);
  // The sum over the tokens, and the mean.
  r = check_one(effect_check(1, 10, 12, 3.45, 3.55, "sum"), v, same);
  CHECK_MESSAGE(r.pass, r.measured);
  CHECK(r.measured.find("sum 3.5 of 2 bits (slot 1 reset)") == 0);
  CHECK_FALSE(check_one(effect_check(1, 10, 12, 3.6, 4.0, "sum"), v, same).pass);
  CHECK(check_one(effect_check(1, 10, 12, 1.7, 1.8, "mean"), v, same).pass);
  CHECK(check_one(effect_check(0, 10, 12, -0.01, 0.01), v, same).pass == false);  // `same` is slot 1's
  // The computation apart disagrees, fails, or is missing.
  const auto off = [](const TourStop&, const TourCheck&) { return std::vector<double>{0.5, 3.1}; };
  r = check_one(effect_check(1, 10, 12, 0.4, 3.1), v, off);
  CHECK_FALSE(r.pass);
  CHECK_MESSAGE(r.measured.find("computed apart: differs by up to 0.1 bits") != std::string::npos, r.measured);
  const auto broken = [](const TourStop&, const TourCheck&) -> std::vector<double> {
    throw std::runtime_error("cannot read the checkpoint");
  };
  r = check_one(effect_check(1, 10, 12, 0.4, 3.1), v, broken);
  CHECK_FALSE(r.pass);
  CHECK(r.measured.find("computed apart: cannot read the checkpoint") != std::string::npos);
  r = check_one(effect_check(1, 10, 12, 0.4, 3.1), v, nullptr);
  CHECK(r.pass);
  CHECK(r.measured.find("; not computed apart") != std::string::npos);
  // A token the step does not predict has no effect shown: it fails.
  r = check_one(effect_check(1, 10, 13, -10, 10), v, same);
  CHECK_FALSE(r.pass);
  CHECK_MESSAGE(r.measured.find("token 12 is nan") != std::string::npos, r.measured);
  // No slot effects shown, those of another segment, an ablation not computed, an entry past the end.
  PublishedView none = v;
  none.slot_effects = nullptr;
  r = check_one(effect_check(1, 10, 12, 0.4, 3.1), none, same);
  CHECK_FALSE(r.pass);
  CHECK(r.measured.find("no slot effects shown at segment 1") == 0);
  PublishedView other = v;
  auto fx2 = std::make_shared<SlotEffects>(*v.slot_effects);
  fx2->segment = 2;
  other.slot_effects = fx2;
  CHECK_FALSE(check_one(effect_check(1, 10, 12, 0.4, 3.1), other, same).pass);
  TourCheck zeroed = effect_check(1, 10, 12, 0.4, 3.1);
  zeroed.of = "zeroed";
  r = check_one(zeroed, v, same);
  CHECK_FALSE(r.pass);
  CHECK(r.measured == "no 'zeroed' ablation shown");
  r = check_one(effect_check(5, 10, 12, 0.4, 3.1), v, same);
  CHECK_FALSE(r.pass);
  CHECK(r.measured == "no slot 5 (2 entries)");
}

TEST_CASE("side by side: compute slot effects goes to side A (the Document panel's button, a slot-effect tour stop)") {
  RecordingController a, b;
  LockstepController lock(&a, &b);
  lock.compute_slot_effects();
  CHECK(a.last == "slot effects");
  CHECK(a.calls == 1);
  CHECK(b.calls == 0);
}

TEST_CASE("tour slot_effect: the computation apart equals the worker's slot effects on memformer-general, reset and zeroed") {
  if (!test::path_exists(kZoo + "/memformer-general.safetensors")) {
    MNEMO_SKIP("assets/models/memformer-general.safetensors is not in this checkout (the zoo)");
    return;
  }
  const Tour tour = load_tour(kNameTour, kZoo);
  REQUIRE(tour.stops.size() == 2);
  const TourStop& st = tour.stops[1];
  REQUIRE(st.tint == "slot_effect");
  Worker w;
  w.open_document_and_model(st.document, st.cfg, 0, st.checkpoint, st.segment_len);
  w.jump(st.segment);
  w.compute_slot_effects();
  test::wait_worker(w, 3, std::chrono::seconds(300));
  CHECK(w.take_errors().empty());
  ViewPtr v = w.latest();
  REQUIRE(v->slot_effects);
  const SlotEffects& fx = *v->slot_effects;
  REQUIRE(fx.segment == st.segment);
  REQUIRE(fx.entries() == 32);
  REQUIRE(fx.tokens.size() == 32);
  const int64_t first = fx.tokens.front(), end = fx.tokens.back() + 1;
  CHECK(first == (st.segment + 1) * st.segment_len);  // a Memformer step predicts the next segment
  for (const std::string of : {"reset", "zeroed"}) {
    const int a = fx.ablation(of);
    REQUIRE(a >= 0);
    for (int e : {0, 26, 28}) {
      CAPTURE(of);
      CAPTURE(e);
      TourCheck c = effect_check(e, first - 1, end + 1, -1e9, 1e9);
      c.of = of;
      const std::vector<double> apart = entry_effect_apart(st, c);
      REQUIRE(apart.size() == static_cast<size_t>(end - first + 2));
      // One token either side lies outside the step's predictions: the worker shows none there,
      // and the ablation at this step changes the one before nothing.
      CHECK(std::isnan(fx.token_bits(static_cast<size_t>(a), e, first - 1)));
      CHECK(std::fabs(apart.front()) < 1e-6);
      double biggest = 0;
      for (int64_t t = first; t < end; ++t) {
        const double shown = fx.token_bits(static_cast<size_t>(a), e, t);
        CHECK(std::fabs(apart[static_cast<size_t>(t - first + 1)] - shown) < 1e-3);
        biggest = std::max(biggest, std::fabs(shown));
      }
      if (e == 26 && of == "reset") CHECK(biggest > 3.6);  // the `p` of the name, 3.7 bits (the tour's claim)
    }
  }
  // An entry outside the memory is refused, naming the count.
  CHECK_THROWS_WITH_AS(entry_effect_apart(st, effect_check(40, first, end, 0, 1)), "no memory entry 40 (32 entries)",
                       std::out_of_range);
}

TEST_CASE("cli: tour --check measures a slot_effect claim against the computation apart - a false one fails with exit 1") {
  const std::string dir = test::temp_dir("tour-slot-effect");
  // memformer-copy, segment 1: its step predicts segment 2 (tokens 18..26).
  test::write_file(dir + "/t.json", one_stop(R"({"check": "slot_effect", "slot": 2, "tokens": [18, 21], "min": -100,
      "max": 100, "says": "slot 2"}, {"check": "slot_effect", "slot": 2, "tokens": [18, 21], "stat": "sum", "min": 50,
      "says": "slot 2 saves"}, {"check": "slot_effect", "slot": 3, "tokens": [18, 21], "of": "zeroed", "min": -100,
      "max": 100, "says": "saves 0.5"})"));
  auto r = test::run_cli("--threads 1 tour " + dir + "/t.json --check");
  CAPTURE(r.output);
  CHECK(r.code == 1);
  CHECK(r.output.find("[pass] slot_effect each [-100, 100]: 3 values in ") != std::string::npos);
  CHECK(r.output.find(" bits (slot 2 reset); computed apart: the same within ") != std::string::npos);
  CHECK(r.output.find("[FAIL] slot_effect sum >= 50: sum ") != std::string::npos);
  CHECK(r.output.find(" bits (slot 3 zeroed); computed apart: the same within ") != std::string::npos);
  CHECK(r.output.find("2 of 3 checks pass") != std::string::npos);
}

TEST_CASE("tours: the slot-effect stop plays in the null-backend GUI - its slot effects computed there, slot 26 selected") {
  if (!test::path_exists(kZoo + "/memformer-general.safetensors")) {
    MNEMO_SKIP("assets/models/memformer-general.safetensors is not in this checkout (the zoo)");
    return;
  }
  Tour tour = load_tour(kNameTour, kZoo);
  ui::NullTextureApi textures;
  test::NullImGui ui(1600.f, 1000.f);
  Worker w;
  Shell shell(&textures, ui.fonts, nullptr, nullptr);
  shell.start_tour(tour);
  shell.tour().go(1);
  const auto t0 = std::chrono::steady_clock::now();
  int settled = 0;
  ViewPtr s;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(240)) {
    s = w.latest();
    ui.frame(shell, s, w);
    REQUIRE(w.take_errors().empty());
    REQUIRE_FALSE(shell.has_popup());
    if (!shell.tour_stop_shown(*s) || w.busy()) {
      settled = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (++settled >= 3) break;
  }
  REQUIRE(s);
  REQUIRE(shell.tour_stop_shown(*s));
  CHECK(shell.view_model().selected_slot() == 26);
  REQUIRE(s->slot_effects);
  CHECK(s->slot_effects->segment == 3);
  const int a = s->slot_effects->ablation("reset");
  REQUIRE(a >= 0);
  CHECK(std::fabs(s->slot_effects->token_bits(static_cast<size_t>(a), 26, 141) - 3.66) < 0.05);  // the caption's `p`
}

#endif  // MNEMO_WITH_GUI

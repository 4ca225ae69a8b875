#include "app/gui/model/tour_check.h"

#include "app/figures/figures.h"
#include "app/figures/memory_reads.h"
#include "core/io/config_fields.h"
#include "core/trace/slot_types.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mnemo::app {

namespace {

// A measured value in a report (4 significant digits); the bounds as the tour file gives them.
std::string num(double v) { return display_number(v); }

std::string bounds(const TourCheck& c) {
  if (c.min > -1e299 && c.max < 1e299) return "[" + number_text(c.min) + ", " + number_text(c.max) + "]";
  if (c.min > -1e299) return ">= " + number_text(c.min);
  return "<= " + number_text(c.max);
}

bool within(const TourCheck& c, double v) { return std::isfinite(v) && v >= c.min && v <= c.max; }

// A list of values: "each" passes when every one lies within bounds (reported: the range and
// the first outside), "mean" when their mean does.
CheckResult judge(const TourCheck& c, const std::vector<double>& values, const std::vector<std::string>& names) {
  CheckResult r;
  r.check = &c;
  if (values.empty()) {
    r.measured = "nothing to measure (no value shown)";
    return r;
  }
  if (c.stat == "mean") {
    double sum = 0;
    for (double v : values) sum += v;
    const double m = sum / static_cast<double>(values.size());
    r.pass = within(c, m);
    r.measured = "mean " + num(m) + " of " + std::to_string(values.size());
    return r;
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  size_t bad = values.size();
  for (size_t i = 0; i < values.size(); ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
    if (bad == values.size() && !within(c, values[i])) bad = i;
  }
  r.pass = bad == values.size();
  r.measured = std::to_string(values.size()) + " values in " + num(lo) + ".." + num(hi);
  if (!r.pass) r.measured += "; " + names[bad] + " is " + num(values[bad]);
  return r;
}

}  // namespace

bool view_shows_stop(const TourStop& stop, const PublishedView& s) {
  return s.info && s.info->doc && s.info->checkpoint == stop.checkpoint && s.info->doc->path == stop.document &&
         s.info->segment_len == stop.segment_len;
}

namespace {

// loss / benefit: the Document panel's values, each token's loss as the step that predicts it
// gave it (token_loss_at), the benefit in bits (reset - with) / ln 2 (app/figures/benefit.h).
CheckResult check_loss(const TourCheck& c, const PublishedView& s) {
  std::vector<double> values;
  std::vector<std::string> names;
  for (int64_t t = c.token_from; t < c.token_to; ++t) {
    const TokenLossAt at = token_loss_at(s.visited, s.info->segment_len, t);
    const double v = c.kind == "loss" ? at.loss : (at.loss_reset - at.loss) / std::log(2.0);
    values.push_back(v);
    names.push_back("token " + std::to_string(t));
  }
  CheckResult r = judge(c, values, names);
  if (c.kind == "loss") r.measured += " nats"; else r.measured += " bits";
  return r;
}

CheckResult check_self_mass(const TourCheck& c, const StepData& st) {
  std::vector<double> values;
  std::vector<std::string> names;
  for (size_t i = 0; i < st.memformer.self_mass.size(); ++i) {
    if (c.slot >= 0 && static_cast<int>(i) != c.slot) continue;
    values.push_back(st.memformer.self_mass[i]);
    names.push_back("slot " + std::to_string(i));
  }
  return judge(c, values, names);
}

// The Slot types panel's rule at its default thresholds (core/trace/slot_types.h).
CheckResult check_slot_types(const TourCheck& c, const StepData& st) {
  CheckResult r;
  r.check = &c;
  std::vector<SlotType> types;
  for (float m : st.memformer.self_mass) types.push_back(classify_mass(m, SlotThresholds{}));
  const SlotTypeCounts n = count_slot_types(types);
  r.pass = !types.empty() && (c.retain < 0 || n.retain == c.retain) && (c.mix < 0 || n.mix == c.mix) &&
           (c.overwrite < 0 || n.overwrite == c.overwrite);
  r.measured = std::to_string(n.retain) + " retain, " + std::to_string(n.mix) + " mix, " + std::to_string(n.overwrite) +
               " overwrite";
  return r;
}

// provenance: *shown is the share the screen prints as a percentage (NaN: none).
CheckResult check_provenance(const TourCheck& c, const PublishedView& s, double* shown) {
  CheckResult r;
  r.check = &c;
  if (!s.provenance || c.slot >= s.provenance->slots) {
    r.measured = "no provenance shown" + (s.provenance_note.empty() ? std::string() : " (" + s.provenance_note + ")");
    return r;
  }
  // The Document panel's provenance tint and the list under the timeline: the shares of the
  // selected entry (core/trace/provenance.h).
  const ProvenanceState& p = *s.provenance;
  const std::string where = " (slot " + std::to_string(c.slot) + ", " +
                            (c.of == "tokens" ? "tokens " + std::to_string(c.token_from) + ".." +
                                                    std::to_string(c.token_to - 1)
                                              : c.of) +
                            ")";
  if (c.of == "tokens" && c.stat != "sum") {
    std::vector<double> values;
    std::vector<std::string> names;
    for (int64_t t = c.token_from; t < c.token_to; ++t) {
      values.push_back(p.at(c.slot, t));
      names.push_back("token " + std::to_string(t));
    }
    r = judge(c, values, names);
    r.measured += where;
    return r;
  }
  double v = 0;
  if (c.of == "initial") {
    v = p.initial[c.slot];
  } else if (c.of == "other") {
    v = p.other.empty() ? 0.0 : p.other[c.slot];
  } else {
    for (int64_t t = c.token_from; t < c.token_to; ++t) v += p.at(c.slot, t);
  }
  r.pass = within(c, v);
  r.measured = "share " + num(v) + where;
  *shown = v;
  return r;
}

CheckResult check_block_mass(const TourCheck& c, const StepData& st) {
  CheckResult r;
  r.check = &c;
  const AttentionData& a = st.attention;
  const auto it = std::find(a.mass_names.begin(), a.mass_names.end(), c.mass);
  if (a.empty() || it == a.mass_names.end()) {
    r.measured = "no '" + c.mass + "' block mass shown";
    return r;
  }
  std::vector<double> values;
  std::vector<std::string> names;
  const int k = static_cast<int>(it - a.mass_names.begin());
  for (size_t li = 0; li < a.layers.size(); ++li) {
    if (c.layer >= 0 && a.layers[li] != c.layer) continue;
    values.push_back(a.mass_at(static_cast<int>(li), -1, k));
    names.push_back("layer " + std::to_string(a.layers[li]));
  }
  return judge(c, values, names);
}

// reads: *shown is the memory share the screen prints as a percentage (NaN: none).
CheckResult check_reads(const TourCheck& c, const PublishedView& s, double* shown) {
  CheckResult r;
  r.check = &c;
  const StepData& st = *s.step;
  // The Document panel's chain for a selected token (app/figures/memory_reads.h): its
  // attention on the memory, the entry it read most, and what an entry held before.
  const MemoryReads m = memory_reads(st, s.visited, c.token, 1 << 20, s.provenance_before.get());
  const std::string who = "token " + std::to_string(c.token);
  auto entry_of = [&](int e) -> const MemoryRead* {
    for (const auto& x : m.top)
      if (x.entry == e) return &x;
    return nullptr;
  };
  double v = std::nan("");
  if (m.empty()) {
    r.measured = who + " read nothing from the memory at this step (not in the shown segment, or no memory read)";
  } else if (c.of == "memory") {
    v = m.memory_share;
    r.measured = who + " put " + num(v) + " of its attention on the memory";
    *shown = v;
  } else if (c.of == "top") {
    v = m.top.front().weight;
    r.measured = who + " read " + m.entry_name + " " + std::to_string(m.top.front().entry) + " most (" + num(v) + ")";
    if (m.top.front().entry != c.slot) {
      r.measured += ", not " + m.entry_name + " " + std::to_string(c.slot);
      v = std::nan("");
    }
  } else if (const MemoryRead* e = entry_of(c.slot); e == nullptr) {
    r.measured = who + " has no " + m.entry_name + " " + std::to_string(c.slot);
  } else if (c.of == "entry") {
    v = e->weight;
    r.measured = who + " read " + m.entry_name + " " + std::to_string(c.slot) + " with weight " + num(v);
  } else if (!m.holds_known) {
    r.measured = "what " + m.entry_name + " " + std::to_string(c.slot) + " held is unknown: " + m.holds_note;
  } else {
    v = 0;
    for (const auto& h : e->holds)
      if (h.token >= c.token_from && h.token < c.token_to) v += h.weight;
    r.measured = m.entry_name + " " + std::to_string(c.slot) + " held " + num(v) + " from tokens " +
                 std::to_string(c.token_from) + ".." + std::to_string(c.token_to - 1) + " (its largest sources)";
  }
  r.pass = within(c, v);
  return r;
}

// The slot effects computed apart (a second path, EntryEffectApart) must agree with the
// worker's `values` (NaN where they are NaN, within 1e-3 bits elsewhere).
void compare_apart(const TourStop& stop, const TourCheck& c, const std::vector<double>& values,
                   const std::vector<std::string>& names, const EntryEffectApart& apart, CheckResult& r) {
  if (!apart) {
    r.measured += "; not computed apart";
    return;
  }
  std::vector<double> other;
  std::string why;
  try {
    other = apart(stop, c);
  } catch (const std::exception& e) {
    why = e.what();
  }
  double worst = 0;
  if (why.empty() && other.size() != values.size())
    why = std::to_string(other.size()) + " values for " + std::to_string(values.size()) + " tokens";
  for (size_t i = 0; why.empty() && i < values.size(); ++i) {
    if (std::isnan(values[i]) != std::isnan(other[i])) why = names[i] + " is " + num(other[i]);
    else if (!std::isnan(values[i])) worst = std::max(worst, std::fabs(values[i] - other[i]));
  }
  // float32 steps on two paths: they agree to about 1e-5 bits.
  if (why.empty() && worst > 1e-3) why = "differs by up to " + num(worst) + " bits";
  if (why.empty()) {
    r.measured += "; computed apart: the same within " + num(worst) + " bits";
  } else {
    r.pass = false;
    r.measured += "; computed apart: " + why;
  }
}

CheckResult check_slot_effect(const TourStop& stop, const TourCheck& c, const PublishedView& s, const EntryEffectApart& apart) {
  CheckResult r;
  r.check = &c;
  const StepData& st = *s.step;
  std::vector<double> values;
  std::vector<std::string> names;
  // The Document panel's slot-effect tint (docs/gui.md#slot-effects): the bits each token
  // the step predicts costs more with entry c.slot removed from the memory carried into
  // it, as the worker computed them for the tint and the Slot effects panel; and the same
  // computed apart, which must agree.
  const SlotEffects* fx =
      s.slot_effects && s.slot_effects->segment == st.segment && !s.slot_effects->empty() ? s.slot_effects.get() : nullptr;
  const int a = fx ? fx->ablation(c.of) : -1;
  if (!fx) {
    r.measured = "no slot effects shown at segment " + std::to_string(st.segment) +
                 " (the worker computes them at a stop with tint slot_effect or a slot_effect check)";
  } else if (a < 0) {
    r.measured = "no '" + c.of + "' ablation shown";
  } else if (c.slot >= fx->entries()) {
    r.measured = "no " + fx->entry_kind + " " + std::to_string(c.slot) + " (" + std::to_string(fx->entries()) + " entries)";
  } else {
    for (int64_t t = c.token_from; t < c.token_to; ++t) {
      values.push_back(fx->token_bits(static_cast<size_t>(a), c.slot, t));
      names.push_back("token " + std::to_string(t));
    }
    const std::string what = " bits (" + fx->labels[static_cast<size_t>(c.slot)] + " " + c.of + ")";
    if (c.stat == "sum") {
      double v = 0;
      for (double x : values) v += x;
      r.pass = within(c, v);
      r.measured = "sum " + num(v) + " of " + std::to_string(values.size()) + what;
    } else {
      r = judge(c, values, names);
      r.measured += what;
    }
    compare_apart(stop, c, values, names, apart, r);
  }
  return r;
}

// A caption's percentage reads as the screen prints the value `shown` (one decimal: "99.9 %"),
// or as its rounding to fewer decimals ("about 99 %" is not "99.9 %" rounded: 100 %).
void check_caption_percent(const TourCheck& c, double shown, CheckResult& r) {
  if (!check_shown_as_percent(c) || !std::isfinite(shown)) return;
  for (const auto& q : caption_claim_numbers(c.says)) {
    if (q.back() != '%') continue;
    std::string digits = q.substr(0, q.size() - 1);
    while (!digits.empty() && digits.back() == ' ') digits.pop_back();
    const size_t dot = digits.find('.');
    const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
    char screen[32], as_quoted[32];
    std::snprintf(screen, sizeof screen, "%.1f %%", 100.0 * shown);
    std::snprintf(as_quoted, sizeof as_quoted, "%.*f", decimals, 100.0 * shown);
    if (decimals > 1 || digits != as_quoted) {
      r.pass = false;
      r.measured += "; the screen shows " + std::string(screen) + ", the caption says " + q;
    }
  }
}

}  // namespace

std::vector<CheckResult> check_stop(const TourStop& stop, const PublishedView& s, const EntryEffectApart& apart) {
  std::vector<CheckResult> out;
  for (const auto& c : stop.checks) {
    CheckResult r;
    r.check = &c;
    if (!s.step || !s.info) {
      r.measured = "no step shown";
      out.push_back(r);
      continue;
    }
    const StepData& st = *s.step;
    double shown = std::nan("");  // a value the screen shows as a percentage (check_shown_as_percent)
    if (c.kind == "loss" || c.kind == "benefit") r = check_loss(c, s);
    else if (c.kind == "self_mass") r = check_self_mass(c, st);
    else if (c.kind == "slot_types") r = check_slot_types(c, st);
    else if (c.kind == "provenance") r = check_provenance(c, s, &shown);
    else if (c.kind == "block_mass") r = check_block_mass(c, st);
    else if (c.kind == "reads") r = check_reads(c, s, &shown);
    else if (c.kind == "slot_effect") r = check_slot_effect(stop, c, s, apart);
    check_caption_percent(c, shown, r);
    r.check = &c;
    out.push_back(r);
  }
  return out;
}

std::string describe_result(const CheckResult& r) {
  const TourCheck& c = *r.check;
  std::string says = c.says;
  std::replace(says.begin(), says.end(), '\n', ' ');
  return std::string(r.pass ? "[pass] " : "[FAIL] ") + c.kind + (c.kind == "slot_types" || c.kind == "reads" ? "" : " " + c.stat) + " " +
         (c.kind == "slot_types" ? std::string() : bounds(c) + ": ") + r.measured + " - says '" + says + "'";
}

}  // namespace mnemo::app

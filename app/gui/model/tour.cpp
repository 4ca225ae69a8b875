#include "app/gui/model/tour.h"

#include "core/io/atomic_file.h"
#include "core/io/json_file.h"
#include "core/io/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <sstream>

namespace mnemo::app {

namespace {

// A path as written: absolute, else relative to the tour file, else to the working directory.
std::string resolve_path(const std::string& p, const std::string& tour_path, const TourSources& src) {
  if (p.empty() || p[0] == '/') return p;
  const std::string beside = io::parent_directory(tour_path) + "/" + p;
  if (src.file_exists(beside)) return beside;
  return p;
}

// Whether `file` (as resolved) lies inside the tour's folder or a trusted root, links
// followed: neither "../" nor an absolute path nor a symbolic link leads a tour out of them.
bool tour_may_read(const std::string& file, const std::string& tour_path, const TourSources& src) {
  if (io::path_within(file, io::parent_directory(tour_path))) return true;
  for (const auto& r : src.trusted_roots)
    if (io::path_within(file, r)) return true;
  return false;
}

std::string outside_message(const std::string& given, const std::string& tour_path) {
  return "'" + given + "' is outside the tour's folder (" + io::parent_directory(tour_path) +
         ") and Mnemoscope's assets: a tour reads only files beside it or shipped with Mnemoscope. Copy the file "
         "beside the tour, or open it yourself: mnemoscope gui --doc PATH";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

const std::vector<std::string>& tour_panel_names() {
  static const std::vector<std::string> k = {"controls", "document", "writer_attention", "slot_types",
                                             "forgetting", "memory", "slot_timeline", "attention",
                                             "hash", "mtn_memory", "slot_effects"};
  return k;
}

std::string tour_panel_title(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"controls", "Controls"},       {"document", "Document"},   {"writer_attention", "Writer attention"},
      {"slot_types", "Slot types"},   {"forgetting", "Forgetting"}, {"memory", "Memory"},
      {"slot_timeline", "Slot timeline"}, {"attention", "Attention"}, {"hash", "Hash buckets"},
      {"mtn_memory", "MTN memory"}, {"slot_effects", "Slot effects"}};
  for (const auto& [n, t] : k)
    if (n == name) return t;
  return {};
}

namespace {

// The caption with every run of white space (line breaks included) as one space.
std::string flat_text(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const bool space = ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

bool word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

// Whether `w` occurs in `s` at `at` as whole words (no letter or digit glued to either end).
bool whole_at(const std::string& s, size_t at, const std::string& w) {
  if (s.compare(at, w.size(), w) != 0) return false;
  if (at > 0 && word_char(s[at - 1])) return false;
  const size_t e = at + w.size();
  return e >= s.size() || !word_char(s[e]);
}

}  // namespace

std::vector<std::string> caption_named_panels(const std::string& caption) {
  const std::string text = flat_text(caption);
  std::vector<std::string> out;
  for (const auto& name : tour_panel_names()) {
    const std::string title = tour_panel_title(name);
    if (title.empty()) continue;
    // Titles of one common word ("Document", "Attention", "Memory", "Forgetting") count only
    // as "<Title> panel"; two-word titles and "Controls" wherever they stand.
    const bool anywhere = title.find(' ') != std::string::npos || name == "controls";
    bool named = false;
    for (size_t p = text.find(title); !named && p != std::string::npos; p = text.find(title, p + 1)) {
      if (!whole_at(text, p, title)) continue;
      if (anywhere || text.compare(p + title.size(), 6, " panel") == 0) named = true;
    }
    if (named) out.push_back(name);
  }
  return out;
}

std::vector<StopReference> caption_stop_references(const std::string& caption) {
  const std::string text = flat_text(caption);
  std::vector<StopReference> out;
  for (size_t p = 0; p < text.size(); ++p) {
    if (!((text[p] == 's' || text[p] == 'S') && text.compare(p + 1, 4, "top ") == 0)) continue;
    if (p > 0 && (word_char(text[p - 1]) || text[p - 1] == '-')) continue;  // "non-stop 3"
    size_t q = p + 5;
    size_t d = q;
    while (d < text.size() && std::isdigit(static_cast<unsigned char>(text[d]))) ++d;
    if (d == q || (d < text.size() && word_char(text[d]))) continue;
    StopReference r;
    r.stop = std::stoi(text.substr(q, d - q));
    r.text = text.substr(p, d - p);
    // The clause around the reference: back to the last clause mark before it, on to the next
    // after it; "(stop 5)" looks at the clause the parenthesis ends.
    auto mark = [](char ch) { return ch == ',' || ch == ':' || ch == ';' || ch == '.' || ch == '!' || ch == '?'; };
    size_t from = p;
    const bool in_paren = p > 0 && text[p - 1] == '(';
    if (in_paren) from = p - 1;
    // A period inside a number or a code span is not a clause mark; count backticks as we go.
    auto is_mark_at = [&](size_t i) {
      if (!mark(text[i])) return false;
      if (text[i] == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) return false;
      return true;
    };
    bool in_code = false;
    size_t start = 0;
    for (size_t i = 0; i < from; ++i) {
      if (text[i] == '`') in_code = !in_code;
      if (!in_code && is_mark_at(i)) start = i + 1;
    }
    size_t end = text.size();
    in_code = false;
    for (size_t i = d; i < text.size(); ++i) {
      if (text[i] == '`') in_code = !in_code;
      if (!in_code && (is_mark_at(i) || (in_paren && text[i] == ')' && i == d))) {
        end = i;
        break;
      }
    }
    // In "(stop 5)" the clause is the text before it; "stop 5 shows ..." the text after it.
    const std::string clause = in_paren ? text.substr(start, p - 1 - start) : text.substr(start, end - start);
    for (const auto& b : parse_caption(clause))
      for (const auto& sp : b.spans) {
        if (!(sp.code || sp.bold)) continue;
        std::string w = sp.text;
        while (!w.empty() && w.back() == ' ') w.pop_back();
        while (!w.empty() && w.front() == ' ') w.erase(w.begin());
        if (!w.empty() && std::find(r.subject.begin(), r.subject.end(), w) == r.subject.end()) r.subject.push_back(w);
      }
    out.push_back(r);
    p = d;
  }
  return out;
}

bool check_shown_as_percent(const TourCheck& c) {
  return (c.kind == "reads" && c.of == "memory") || (c.kind == "provenance" && (c.of == "initial" || c.of == "other"));
}

namespace {

TourCheck parse_check(const nlohmann::json& jc, const TourStop& s, int64_t doc_size, int index,
                      const std::function<void(const std::string&, const std::string&)>& bad) {
  const std::string f = "checks[" + std::to_string(index - 1) + "]";
  if (!jc.is_object()) bad(f, "must be an object with \"check\" and \"says\"");
  static const std::set<std::string> kKinds = {"loss", "benefit", "self_mass", "slot_types", "provenance", "block_mass",
                                               "reads", "slot_effect"};
  static const std::set<std::string> kFields = {"check", "says", "min", "max", "stat", "tokens", "slot",
                                                "of", "mass", "layer", "retain", "mix", "overwrite", "token"};
  for (const auto& [k, v] : jc.items()) {
    (void)v;
    if (!kFields.count(k)) bad(f + "." + k, "unknown field (known: check, says, min, max, stat, tokens, slot, of, mass, layer, "
                                           "retain, mix, overwrite, token)");
  }
  TourCheck c;
  if (!jc.contains("check") || !jc["check"].is_string() || !kKinds.count(jc["check"].get<std::string>()))
    bad(f + ".check", "must be one of loss, benefit, self_mass, slot_types, provenance, block_mass, reads, slot_effect");
  c.kind = jc["check"].get<std::string>();
  if (!jc.contains("says") || !jc["says"].is_string() || jc["says"].get<std::string>().empty())
    bad(f + ".says", "missing: quote the caption's words this check backs");
  c.says = jc["says"].get<std::string>();
  if (s.caption.find(c.says) == std::string::npos) bad(f + ".says", "'" + c.says + "' is not in the caption");
  auto number = [&](const char* k, double* out) {
    if (!jc.contains(k)) return;
    if (!jc[k].is_number()) bad(f + "." + k, "must be a number");
    *out = jc[k].get<double>();
  };
  number("min", &c.min);
  number("max", &c.max);
  if (c.min > c.max) bad(f, "min is above max");
  auto integer = [&](const char* k, int64_t lo, int64_t hi, int64_t* out) {
    if (!jc.contains(k)) return;
    if (!jc[k].is_number_integer() || jc[k].get<int64_t>() < lo || jc[k].get<int64_t>() > hi)
      bad(f + "." + k, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    *out = jc[k].get<int64_t>();
  };
  if (c.kind == "provenance" || c.kind == "reads") c.stat = "sum";
  if (jc.contains("stat")) {
    if (!jc["stat"].is_string() || (jc["stat"] != "each" && jc["stat"] != "mean" && jc["stat"] != "sum"))
      bad(f + ".stat", "must be each, mean or sum");
    c.stat = jc["stat"].get<std::string>();
    if (c.stat == "sum" && c.kind != "provenance" && c.kind != "reads" && c.kind != "slot_effect")
      bad(f + ".stat", "sum is for provenance shares and slot effects; use each or mean");
    if (c.kind == "reads" && c.stat != "sum") bad(f + ".stat", "a reads check measures one value; leave stat out");
  }
  if (jc.contains("tokens")) {
    const auto& t = jc["tokens"];
    if (!t.is_array() || t.size() != 2 || !t[0].is_number_integer() || !t[1].is_number_integer())
      bad(f + ".tokens", "must be [first, end): document token indices");
    c.token_from = t[0].get<int64_t>();
    c.token_to = t[1].get<int64_t>();
    if (c.token_from < 0 || c.token_to <= c.token_from || c.token_to > doc_size)
      bad(f + ".tokens", "[" + std::to_string(c.token_from) + ", " + std::to_string(c.token_to) + ") is not a range of 0.." +
                             std::to_string(doc_size));
  }
  int64_t slot = -1, layer = -1;
  integer("slot", 0, s.cfg.slots - 1, &slot);
  integer("layer", 0, std::max<int64_t>(1, s.cfg.layers) - 1, &layer);
  c.slot = static_cast<int>(slot);
  c.layer = static_cast<int>(layer);
  integer("retain", 0, s.cfg.slots, &c.retain);
  integer("mix", 0, s.cfg.slots, &c.mix);
  integer("overwrite", 0, s.cfg.slots, &c.overwrite);
  integer("token", 0, std::max<int64_t>(1, doc_size) - 1, &c.token);
  if (jc.contains("of")) {
    static const std::set<std::string> kProvenanceOf = {"tokens", "initial", "other"};
    static const std::set<std::string> kReadsOf = {"memory", "top", "entry", "holds"};
    static const std::set<std::string> kEffectOf = {"reset", "zeroed"};
    const auto& known = c.kind == "reads" ? kReadsOf : c.kind == "slot_effect" ? kEffectOf : kProvenanceOf;
    if (!jc["of"].is_string() || !known.count(jc["of"].get<std::string>()))
      bad(f + ".of", c.kind == "reads"         ? "must be memory, top, entry or holds"
                     : c.kind == "slot_effect" ? "must be reset or zeroed (how the entry is removed)"
                                               : "must be tokens, initial or other");
    c.of = jc["of"].get<std::string>();
  }
  if (jc.contains("mass")) {
    if (!jc["mass"].is_string()) bad(f + ".mass", "must be a block mass name (e.g. reading)");
    c.mass = jc["mass"].get<std::string>();
  }
  const bool bounded = jc.contains("min") || jc.contains("max");
  if ((c.kind == "loss" || c.kind == "benefit") && (c.token_from < 0 || !bounded))
    bad(f, c.kind + " needs \"tokens\" and a \"min\" or \"max\"");
  if (c.kind == "self_mass" && !bounded) bad(f, "self_mass needs a \"min\" or \"max\"");
  if (c.kind == "slot_types" && c.retain < 0 && c.mix < 0 && c.overwrite < 0)
    bad(f, "slot_types needs a count: retain, mix or overwrite");
  if (c.kind == "provenance") {
    if (c.slot < 0 || c.of.empty() || !bounded) bad(f, "provenance needs \"slot\", \"of\" and a \"min\" or \"max\"");
    if (c.of == "tokens" && c.token_from < 0) bad(f, "provenance of tokens needs \"tokens\"");
  }
  if (c.kind == "block_mass" && (c.mass.empty() || !bounded)) bad(f, "block_mass needs \"mass\" and a \"min\" or \"max\"");
  if (c.kind == "slot_effect") {
    if (c.slot < 0 || c.token_from < 0 || !bounded)
      bad(f, "slot_effect needs \"slot\" (the memory entry), \"tokens\" and a \"min\" or \"max\"");
    if (c.of.empty()) c.of = "reset";
  }
  if (c.kind == "reads") {
    if (c.token < 0 || c.of.empty() || !bounded) bad(f, "reads needs \"token\", \"of\" and a \"min\" or \"max\"");
    if (c.of != "memory" && c.slot < 0) bad(f, "reads of " + c.of + " needs \"slot\" (the memory entry)");
    if (c.of == "holds" && c.token_from < 0) bad(f, "reads of holds needs \"tokens\" (what the entry held)");
    // A token of the stop's segment, or of the next one (what a Memformer step predicts).
    if (c.token < s.segment * s.segment_len || c.token >= (s.segment + 2) * s.segment_len)
      bad(f + ".token", std::to_string(c.token) + " is neither in the stop's segment " + std::to_string(s.segment) +
                            " (tokens " + std::to_string(s.segment * s.segment_len) + ".." +
                            std::to_string((s.segment + 1) * s.segment_len - 1) + ") nor in the one it predicts");
  }
  return c;
}

}  // namespace

std::vector<std::string> caption_claim_numbers(const std::string& caption) {
  std::vector<std::string> out;
  const size_t n = caption.size();
  auto digit = [&](size_t i) { return i < n && caption[i] >= '0' && caption[i] <= '9'; };
  for (size_t i = 0; i < n;) {
    const bool starts = digit(i) || (caption[i] == '.' && digit(i + 1) && (i == 0 || !digit(i - 1)));
    if (!starts || (i > 0 && (digit(i - 1) || caption[i - 1] == '.' || std::isalpha(static_cast<unsigned char>(caption[i - 1]))))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (digit(j)) ++j;
    bool decimal = false;
    if (j < n && caption[j] == '.' && digit(j + 1)) {
      decimal = true;
      ++j;
      while (digit(j)) ++j;
    }
    size_t k = j;
    while (k < n && caption[k] == ' ') ++k;
    const bool percent = k < n && caption[k] == '%';
    if (decimal || percent) out.push_back(caption.substr(i, (percent ? k + 1 : j) - i));
    i = j;
  }
  return out;
}

namespace {

using StopFail = std::function<void(const std::string&, const std::string&)>;  // (field, what): throws

// The file's own fields (format, version, title, stops); the stops are parsed one by one.
Tour parse_tour_header(const nlohmann::json& j, const std::string& file, const std::string& path) {
  auto fail = [&](const std::string& what) -> void { throw TourError(file + ": " + what); };
  if (!j.is_object()) fail("must be a JSON object with \"format\", \"version\" and \"stops\"");
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != "mnemoscope-tour")
    fail("field 'format' must be \"mnemoscope-tour\" (is this a tour file? see docs/formats.md#tours)");
  if (!j.contains("version") || !j["version"].is_number_integer()) fail("field 'version' must be an integer (1)");
  Tour t;
  t.path = path;
  t.version = j["version"].get<int>();
  if (t.version < 1 || t.version > kTourVersion)
    fail("field 'version' = " + std::to_string(t.version) + ": this Mnemoscope reads tour versions 1.." +
         std::to_string(kTourVersion) + (t.version > kTourVersion ? "; the file was made by a newer version" : ""));
  if (j.contains("title") && !j["title"].is_string()) fail("field 'title' must be a string");
  t.title = j.value("title", std::string("Tour"));
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (k != "format" && k != "version" && k != "title" && k != "stops")
      fail("unknown field '" + k + "' (known: format, version, title, stops)");
  }
  if (!j.contains("stops") || !j["stops"].is_array() || j["stops"].empty())
    fail("field 'stops' must be a non-empty list of stops");
  return t;
}

// A stop's model (a zoo name or a weights file), its checkpoint and config; returns the zoo
// entry (null: a weights file).
const ZooModel* parse_stop_model(const nlohmann::json& js, TourStop& s, const std::string& path, const TourSources& src,
                                 const StopFail& bad) {
  const std::vector<ZooModel>& zoo = src.zoo;
  if (!js.contains("model") || !js["model"].is_string() || js["model"].get<std::string>().empty())
    bad("model", "missing; name a zoo model (" + [&] {
          std::vector<std::string> n;
          for (const auto& z : zoo) n.push_back(z.name);
          return n.empty() ? std::string("the zoo is empty") : join(n);
        }() + ") or a weights file");
  s.model = js["model"].get<std::string>();
  const ZooModel* zm = nullptr;
  for (const auto& z : zoo)
    if (z.name == s.model) zm = &z;
  if (zm) {
    s.checkpoint = zm->path;
  } else {
    s.checkpoint = resolve_path(s.model, path, src);
    if (src.file_exists(s.checkpoint) && !tour_may_read(s.checkpoint, path, src))
      bad("model", outside_message(s.model, path));
    if (!src.file_exists(s.checkpoint)) {
      std::vector<std::string> n;
      for (const auto& z : zoo) n.push_back(z.name);
      bad("model", "'" + s.model + "' is neither a zoo model (" + (n.empty() ? "the zoo is empty" : join(n)) +
                       ") nor a weights file");
    }
  }
  try {
    s.cfg = src.read_model_config(s.checkpoint);
  } catch (const std::exception& e) {
    bad("model", "'" + s.checkpoint + "' " + e.what());
  }
  return zm;
}

// A stop's document: given, else the zoo model's own; loaded.
Document parse_stop_document(const nlohmann::json& js, TourStop& s, const ZooModel* zm, const std::string& path,
                             const TourSources& src, const StopFail& bad) {
  if (js.contains("document")) {
    if (!js["document"].is_string()) bad("document", "must be a path (a string)");
    s.document = resolve_path(js["document"].get<std::string>(), path, src);
    if (!tour_may_read(s.document, path, src)) bad("document", outside_message(js["document"].get<std::string>(), path));
  } else if (zm && !zm->document.empty()) {
    s.document = zm->document;
  } else {
    bad("document", "missing, and model '" + s.model + "' ships no document; give a path");
  }
  Document doc;
  try {
    doc = src.load_document(s.document);
  } catch (const std::exception& e) {
    bad("document", e.what());
  }
  return doc;
}

// A stop's segment_len (as the model was trained, core/models/stepping.h, unless the stop says)
// and segment (0-based, within the document).
void parse_stop_segment(const nlohmann::json& js, TourStop& s, const Document& doc, const TourSources& src,
                        const StopFail& bad) {
  s.trained_segment_len = src.read_trained_segment_len ? src.read_trained_segment_len(s.checkpoint) : 0;
  int64_t requested = 0;
  if (js.contains("segment_len")) {
    if (!js["segment_len"].is_number_integer() || js["segment_len"].get<int64_t>() < 1)
      bad("segment_len", "must be a positive integer (tokens per segment); leave it out to step as the model was trained");
    requested = js["segment_len"].get<int64_t>();
  }
  try {
    s.segment_len = choose_stepping(s.cfg, s.trained_segment_len, requested, "segment_len").segment_len;
  } catch (const ConfigError& e) {
    bad("segment_len", e.what());
  }
  s.num_segments = segment_count(doc.size(), s.segment_len);
  // segment
  if (js.contains("segment")) {
    if (!js["segment"].is_number_integer()) bad("segment", "must be an integer (0-based)");
    s.segment = js["segment"].get<int64_t>();
  }
  if (s.segment < 0 || s.segment >= s.num_segments)
    bad("segment", std::to_string(s.segment) + " is " + (s.segment < 0 ? "negative" : "past the end") + ": '" +
                       s.document + "' has " + std::to_string(s.num_segments) + " segments (0.." +
                       std::to_string(s.num_segments - 1) + ") of " + std::to_string(s.segment_len) +
                       " tokens under " + s.model);
}

// A stop's panels: known names, each once.
void parse_stop_panels(const nlohmann::json& js, TourStop& s, const StopFail& bad) {
  const auto& panels = tour_panel_names();
  if (!js.contains("panels") || !js["panels"].is_array() || js["panels"].empty())
    bad("panels", "must be a non-empty list of panel names (" + join(panels) + ")");
  for (const auto& p : js["panels"]) {
    if (!p.is_string()) bad("panels", "every entry must be a panel name (" + join(panels) + ")");
    const std::string name = p.get<std::string>();
    if (std::find(panels.begin(), panels.end(), name) == panels.end())
      bad("panels", "'" + name + "' is not a panel; panels: " + join(panels));
    if (std::find(s.panels.begin(), s.panels.end(), name) == s.panels.end()) s.panels.push_back(name);
  }
}

// A stop's select: slot, token, head and layer, each within the model and the document.
void parse_stop_select(const nlohmann::json& js, TourStop& s, int64_t doc_size, const StopFail& bad) {
  if (js.contains("select")) {
    const auto& sel = js["select"];
    if (!sel.is_object()) bad("select", "must be an object with slot, token, head, layer");
    for (const auto& [k, v] : sel.items()) {
      if (k != "slot" && k != "token" && k != "head" && k != "layer") bad("select." + k, "unknown (known: slot, token, head, layer)");
      if (!v.is_number_integer()) bad("select." + k, "must be an integer");
    }
    s.select.slot = sel.value("slot", -1);
    s.select.token = sel.value("token", int64_t{-1});
    s.select.head = sel.value("head", -1);
    s.select.layer = sel.value("layer", 0);
    if (s.select.slot < -1 || s.select.slot >= s.cfg.slots)
      bad("select.slot", std::to_string(s.select.slot) + " is out of range 0.." + std::to_string(s.cfg.slots - 1) +
                             " (" + s.model + " has " + std::to_string(s.cfg.slots) + " memory entries)");
    if (s.select.token < -1 || s.select.token >= doc_size)
      bad("select.token", std::to_string(s.select.token) + " is out of range 0.." + std::to_string(doc_size - 1));
    if (s.select.head < -1 || s.select.head >= s.cfg.heads)
      bad("select.head", std::to_string(s.select.head) + " is out of range -1 (mean) .." + std::to_string(s.cfg.heads - 1));
    if (s.select.layer < 0 || s.select.layer >= std::max<int64_t>(1, s.cfg.layers))
      bad("select.layer", std::to_string(s.select.layer) + " is out of range 0.." +
                              std::to_string(std::max<int64_t>(1, s.cfg.layers) - 1));
  }
}

// A stop's tint and caption (a string, or a list of lines).
void parse_stop_tint_and_caption(const nlohmann::json& js, TourStop& s, const StopFail& bad) {
  if (js.contains("tint")) {
    if (!js["tint"].is_string()) bad("tint", "must be visited, loss, provenance, benefit or slot_effect");
    s.tint = js["tint"].get<std::string>();
    if (s.tint != "visited" && s.tint != "loss" && s.tint != "provenance" && s.tint != "benefit" && s.tint != "slot_effect")
      bad("tint", "'" + s.tint + "' is not a tint; use visited, loss, provenance, benefit or slot_effect");
  }
  // caption: a string, or a list of lines
  if (!js.contains("caption")) bad("caption", "missing; every stop says what to look at");
  if (js["caption"].is_string()) {
    s.caption = js["caption"].get<std::string>();
  } else if (js["caption"].is_array()) {
    for (const auto& line : js["caption"]) {
      if (!line.is_string()) bad("caption", "a list of lines must hold strings only");
      s.caption += (s.caption.empty() ? "" : "\n") + line.get<std::string>();
    }
  } else {
    bad("caption", "must be a string or a list of lines");
  }
  if (s.caption.empty()) bad("caption", "is empty; every stop says what to look at");
}

// A stop's checks, and what the caption claims checked against them: every number it states
// backed by a check, percentages quoted as the screen shows them, every panel it names shown.
void parse_stop_checks(const nlohmann::json& js, TourStop& s, int64_t doc_size, const StopFail& bad) {
  if (js.contains("checks")) {
    if (!js["checks"].is_array()) bad("checks", "must be a list of checks (docs/formats.md#tours)");
    int ci = 0;
    for (const auto& jc : js["checks"]) s.checks.push_back(parse_check(jc, s, doc_size, ++ci, bad));
  }
  // A value the screen shows as a percentage is quoted as one (not "0.998" for "99.9 %").
  for (size_t ci = 0; ci < s.checks.size(); ++ci) {
    if (!check_shown_as_percent(s.checks[ci])) continue;
    for (const auto& num : caption_claim_numbers(s.checks[ci].says))
      if (num.back() != '%')
        bad("checks[" + std::to_string(ci) + "].says",
            "quotes '" + num + "', but the screen shows this value as a percentage (the Document panel's \"put 99.9 % of "
            "its attention on memory\", the provenance's \"initial memory 0.4 %\"): quote it as the screen does");
  }
  // A number the caption states is a claim: it needs a check that says it.
  for (const auto& num : caption_claim_numbers(s.caption)) {
    bool covered = false;
    for (const auto& c : s.checks)
      for (size_t p = c.says.find(num); !covered && p != std::string::npos; p = c.says.find(num, p + 1)) covered = true;
    if (!covered)
      bad("caption", "states '" + num + "' but no check backs it: add a check whose \"says\" quotes the words with it");
  }
  // A caption that names a panel shows it.
  for (const auto& name : caption_named_panels(s.caption))
    if (std::find(s.panels.begin(), s.panels.end(), name) == s.panels.end())
      bad("caption", "names the " + tour_panel_title(name) + " panel, which this stop does not show: add \"" + name +
                         "\" to its panels, or leave the panel out of the caption");
}

TourStop parse_stop(const nlohmann::json& js, int number, const std::string& file, const std::string& path,
                    const TourSources& src) {
  static const std::set<std::string> kStopFields = {"model", "document", "segment", "segment_len", "panels",
                                                    "select", "tint", "caption", "checks"};
  TourStop s;
  s.number = number;
  const std::string where = file + ", stop " + std::to_string(number);
  const StopFail bad = [&](const std::string& field, const std::string& what) -> void {
    throw TourError(where + ", field '" + field + "': " + what);
  };
  if (!js.is_object()) throw TourError(where + ": a stop must be a JSON object");
  for (const auto& [k, v] : js.items()) {
    (void)v;
    if (!kStopFields.count(k)) bad(k, "unknown field (known: model, document, segment, segment_len, panels, select, tint, caption, checks)");
  }
  const ZooModel* zm = parse_stop_model(js, s, path, src, bad);
  const Document doc = parse_stop_document(js, s, zm, path, src, bad);
  parse_stop_segment(js, s, doc, src, bad);
  parse_stop_panels(js, s, bad);
  parse_stop_select(js, s, doc.size(), bad);
  parse_stop_tint_and_caption(js, s, bad);
  parse_stop_checks(js, s, doc.size(), bad);
  return s;
}

// A "stop N" in a caption names a stop that shows what the reference says it does.
void check_stop_references(const Tour& t, const std::string& file) {
  for (const auto& s : t.stops) {
    const std::string where = file + ", stop " + std::to_string(s.number) + ", field 'caption': ";
    for (const auto& r : caption_stop_references(s.caption)) {
      const int n = static_cast<int>(t.stops.size());
      if (r.stop < 1 || r.stop > n)
        throw TourError(where + "'" + r.text + "' is not a stop of this tour (it has " + std::to_string(n) + ")");
      if (r.subject.empty())
        throw TourError(where + "'" + r.text + "' says nothing of what that stop shows: put its subject (a `code` or "
                                "**bold** word of stop " + std::to_string(r.stop) + "'s caption) in the same clause");
      const std::string other = flat_text(t.stops[static_cast<size_t>(r.stop - 1)].caption);
      for (const auto& w : r.subject) {
        if (other.find(w) != std::string::npos) continue;
        // The stops that do show it, as a hint.
        std::string have;
        for (const auto& o : t.stops)
          if (o.number != s.number && flat_text(o.caption).find(w) != std::string::npos)
            have += (have.empty() ? "" : ", ") + std::to_string(o.number);
        throw TourError(where + "'" + r.text + "' cites '" + w + "', which stop " + std::to_string(r.stop) +
                        "'s caption does not mention" +
                        (have.empty() ? std::string(" (no other stop does either)") : " (stops that do: " + have + ")"));
      }
    }
  }
}

}  // namespace

Tour parse_tour(const std::string& text, const std::string& path, const TourSources& src) {
  const std::string file = "tour " + path;
  nlohmann::json j;
  try {
    j = mnemo::io::parse_json(text);
  } catch (const std::exception& e) {
    throw TourError(file + ": " + std::string("is not JSON (") + e.what() + "); see docs/formats.md#tours");
  }
  Tour t = parse_tour_header(j, file, path);
  int number = 0;
  for (const auto& js : j["stops"]) t.stops.push_back(parse_stop(js, ++number, file, path, src));
  check_stop_references(t, file);
  return t;
}

std::vector<CaptionBlock> parse_caption(const std::string& text) {
  std::vector<CaptionBlock> out;
  std::stringstream ss(text);
  std::string line;
  bool open_paragraph = false;
  auto spans_of = [](const std::string& s) {
    std::vector<CaptionSpan> spans;
    CaptionSpan cur;
    for (size_t i = 0; i < s.size();) {
      if (s.compare(i, 2, "**") == 0 && !cur.code) {
        if (!cur.text.empty()) spans.push_back(cur);
        cur.text.clear();
        cur.bold = !cur.bold;
        i += 2;
      } else if (s[i] == '`') {
        if (!cur.text.empty()) spans.push_back(cur);
        cur.text.clear();
        cur.code = !cur.code;
        ++i;
      } else {
        cur.text += s[i++];
      }
    }
    if (!cur.text.empty()) spans.push_back(cur);
    return spans;
  };
  while (std::getline(ss, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) {
      open_paragraph = false;
      continue;
    }
    if (line.compare(0, 2, "  ") == 0 && !out.empty() && out.back().kind == CaptionBlock::kBullet && !open_paragraph) {
      // An indented line under a bullet continues it.
      const size_t k = line.find_first_not_of(' ');
      auto more = spans_of(" " + line.substr(k));
      auto& spans = out.back().spans;
      spans.insert(spans.end(), more.begin(), more.end());
    } else if (line.compare(0, 2, "- ") == 0 || line.compare(0, 2, "* ") == 0) {
      out.push_back({CaptionBlock::kBullet, spans_of(line.substr(2))});
      open_paragraph = false;
    } else if (line.compare(0, 2, "# ") == 0) {
      out.push_back({CaptionBlock::kHeading, spans_of(line.substr(2))});
      open_paragraph = false;
    } else if (open_paragraph) {
      auto more = spans_of(" " + line);
      auto& spans = out.back().spans;
      spans.insert(spans.end(), more.begin(), more.end());
    } else {
      out.push_back({CaptionBlock::kParagraph, spans_of(line)});
      open_paragraph = true;
    }
  }
  return out;
}

void TourPlayer::start(Tour tour) {
  tour_ = std::move(tour);
  index_ = -1;
  go(0);
}

void TourPlayer::stop() {
  tour_ = Tour{};
  index_ = -1;
  ++version_;
}

bool TourPlayer::go(int i) {
  if (tour_.stops.empty()) return false;
  const int n = std::max(0, std::min(i, count() - 1));
  if (n == index_) return false;
  index_ = n;
  ++version_;
  return true;
}

}  // namespace mnemo::app

// Config field tables: one declaration per field of a config struct (its JSON name, the
// member it fills, its range or allowed values, the command-line flag that sets it, a line
// of help) gives the reading from JSON (unknown keys and wrong types refused), the checks,
// the writing to JSON and the typing of a `--set` value. The default is the member's
// initialiser in the struct. docs/architecture.md, "Adding a config field", walks through it.
//
// Every message is a ConfigError whose field() is the field's dotted path P ("slots",
// "train.lr", "task.segments"), in one format per kind of fault:
//   config field 'P' is unknown; known fields: a, b, c
//   config field 'P' must be an integer | a non-negative integer | a number | true or false |
//                    a string, got <the JSON value>
//   config field 'P' = V is out of range LO..HI      (integers)
//   config field 'P' = V is out of range (LO, HI]    (reals: [ ] closed, ( ) open; inf = unbounded)
//   config field 'P' = 'V' must be "a", "b" or "c"   (strings with allowed values)
// Checks between fields (dim a multiple of heads, ...) stay in the config's validate(),
// after the table's, with field_error() naming the field.
//
// Plain C++ (no LibTorch): the model config is fuzzed with it (docs/reliability.md#fuzzing).
#pragma once
#include "core/io/json_file.h"
#include "core/errors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

// A number as a user would type it: 0 -> "0", 0.25 -> "0.25", 1e-07 -> "1e-07" (never
// "0.000000"), and "NaN", "Inf", "-Inf".
std::string number_text(double v);

// "a, b, c".
std::string join_names(const std::vector<std::string>& names);

// ConfigError "config field 'FIELD' DETAIL" with field() = FIELD.
ConfigError field_error(const std::string& field, const std::string& detail);

// The same error for a config read inside another one under `prefix` ("model"): field()
// "slots" becomes "model.slots", and so does the message's "config field 'slots'". An error
// with no field passes unchanged.
ConfigError nested_error(const ConfigError& e, const std::string& prefix);

// The same error with `context` in front of the message ("config file 'a.json': "); field() kept.
ConfigError error_in(const std::string& context, const ConfigError& e);

// The range checks (the formats above). A real check fails on NaN and on infinities outside it.
struct RealRange {
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
};
void check_range(const std::string& field, int64_t v, int64_t lo, int64_t hi);
void check_range(const std::string& field, double v, const RealRange& range);
// ConfigError unless `v` is one of `allowed`.
void check_choice(const std::string& field, const std::string& v, const std::vector<std::string>& allowed);
// The ranges as those messages write them: "1..65536"; "(0, 100]" ([ ] closed, ( ) open, inf
// unbounded); "\"dense\" or \"hashed\"".
std::string int_range_text(int64_t lo, int64_t hi);
std::string real_range_text(const RealRange& range);
std::string choice_text(const std::vector<std::string>& allowed);

enum class FieldKind { kInt, kSeed, kReal, kBool, kString, kObject };

// One row of a table. Build rows with the functions below, not by hand.
template <class C>
struct ConfigField {
  std::string name;  // the JSON key
  FieldKind kind = FieldKind::kInt;
  std::string help;  // one line: what the field means
  std::string flag;  // the command-line flag that sets it ("--slots"), "" for none
  int64_t C::*int_member = nullptr;
  uint64_t C::*seed_member = nullptr;
  double C::*real_member = nullptr;
  bool C::*bool_member = nullptr;
  std::string C::*string_member = nullptr;
  int64_t lo = 0, hi = 0;            // kInt
  RealRange range;                   // kReal
  std::vector<std::string> allowed;  // kString; empty = any string
  // to_json writes the field only where this says so (nullptr: always).
  bool (*written)(const C&) = nullptr;
  // kObject, a nested config with a table of its own: reads the JSON value (its messages
  // name the nested fields), and writes it.
  void (*read_object)(C&, const nlohmann::json&) = nullptr;
  nlohmann::json (*write_object)(const C&) = nullptr;

  // This row, written to JSON only where `w` says so.
  ConfigField when(bool (*w)(const C&)) const {
    ConfigField f = *this;
    f.written = w;
    return f;
  }
};

namespace config_detail {
// What every row has: its name, kind, help and flag.
template <class C>
ConfigField<C> row(std::string name, FieldKind kind, std::string help, std::string flag) {
  ConfigField<C> f;
  f.name = std::move(name);
  f.kind = kind;
  f.help = std::move(help);
  f.flag = std::move(flag);
  return f;
}
}  // namespace config_detail

// An integer in lo..hi.
template <class C>
ConfigField<C> int_field(std::string name, int64_t C::*m, int64_t lo, int64_t hi, std::string help, std::string flag = "") {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kInt, std::move(help), std::move(flag));
  f.int_member = m;
  f.lo = lo;
  f.hi = hi;
  return f;
}

// A seed: any non-negative 64-bit integer.
template <class C>
ConfigField<C> seed_field(std::string name, uint64_t C::*m, std::string help) {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kSeed, std::move(help), "");
  f.seed_member = m;
  return f;
}

// A real number in `range` (an integer in the JSON is read as a number).
template <class C>
ConfigField<C> real_field(std::string name, double C::*m, RealRange range, std::string help, std::string flag = "") {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kReal, std::move(help), std::move(flag));
  f.real_member = m;
  f.range = range;
  return f;
}

template <class C>
ConfigField<C> bool_field(std::string name, bool C::*m, std::string help, std::string flag = "") {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kBool, std::move(help), std::move(flag));
  f.bool_member = m;
  return f;
}

// A string, one of `allowed` (empty: any).
template <class C>
ConfigField<C> string_field(std::string name, std::string C::*m, std::vector<std::string> allowed, std::string help,
                            std::string flag = "") {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kString, std::move(help), std::move(flag));
  f.string_member = m;
  f.allowed = std::move(allowed);
  return f;
}

// A nested config read and written by the given functions (which check it themselves).
template <class C>
ConfigField<C> object_field(std::string name, void (*read)(C&, const nlohmann::json&), nlohmann::json (*write)(const C&),
                            std::string help) {
  auto f = config_detail::row<C>(std::move(name), FieldKind::kObject, std::move(help), "");
  f.read_object = read;
  f.write_object = write;
  return f;
}

// A row's range as its messages write it (above); "" for a row without one (a bool, a seed, an
// object, a string of any value).
template <class C>
std::string range_text(const ConfigField<C>& f) {
  switch (f.kind) {
    case FieldKind::kInt: return int_range_text(f.lo, f.hi);
    case FieldKind::kReal: return real_range_text(f.range);
    case FieldKind::kString: return f.allowed.empty() ? std::string() : choice_text(f.allowed);
    default: return std::string();
  }
}

// What a row says to someone about to edit its field (the Model panel's tooltips): its help,
// then its range, e.g. "tokens per segment; range 1..65536", "...; range (0, 100]",
// "...; \"dense\" or \"hashed\""; the help alone for a row without a range.
template <class C>
std::string field_tip(const ConfigField<C>& f) {
  const std::string r = range_text(f);
  if (r.empty()) return f.help;
  return f.help + (f.kind == FieldKind::kString ? "; " : "; range ") + r;
}

namespace config_detail {
// The shared message builders of the table (config_fields.cpp).
[[noreturn]] void throw_unknown(const std::string& path, const std::string& unknown_for, const std::string& known);
[[noreturn]] void throw_type(const std::string& path, FieldKind kind, const nlohmann::json& v);
// The integer of `v` (an integer JSON value), refusing values beyond int64 with the range message.
int64_t int_of(const std::string& path, const nlohmann::json& v, int64_t lo, int64_t hi);
}  // namespace config_detail

// What read() leaves to its caller and how it names the config in messages.
struct ReadOptions {
  std::vector<std::string> skip;  // keys the caller reads (listed first among the known fields)
  std::string unknown_for;        // after "is unknown", e.g. " for task 'copy'"
};

// The table of a config struct C. `prefix` is the dotted path the fields sit under, with its
// dot ("train.", "task.", "" for a model config read on its own).
template <class C>
class ConfigFields {
 public:
  ConfigFields(std::string prefix, std::vector<ConfigField<C>> fields)
      : prefix_(std::move(prefix)), fields_(std::move(fields)) {}

  const std::vector<ConfigField<C>>& fields() const { return fields_; }
  const std::string& prefix() const { return prefix_; }
  std::string path(const std::string& name) const { return prefix_ + name; }
  // The row named `name`, or nullptr.
  const ConfigField<C>* find(const std::string& name) const {
    for (const auto& f : fields_)
      if (f.name == name) return &f;
    return nullptr;
  }
  // The field names in declaration order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& f : fields_) out.push_back(f.name);
    return out;
  }

  // Reads every key of the JSON object `j` into `c` (the others keep their values). Unknown
  // keys and wrong types throw; values are not range-checked here (validate()).
  void read(C& c, const nlohmann::json& j, const ReadOptions& opt = {}) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      bool skipped = false;
      for (const auto& s : opt.skip) skipped = skipped || s == k;
      if (skipped) continue;
      const ConfigField<C>* f = find(k);
      if (!f) {
        std::vector<std::string> known = opt.skip;
        for (const auto& n : names()) known.push_back(n);
        config_detail::throw_unknown(path(k), opt.unknown_for, join_names(known));
      }
      read_value(c, *f, it.value());
    }
  }

  // The checks of every row in declaration order (integers and reals in range, strings
  // among the allowed).
  void validate(const C& c) const {
    for (const auto& f : fields_) {
      switch (f.kind) {
        case FieldKind::kInt: check_range(path(f.name), c.*f.int_member, f.lo, f.hi); break;
        case FieldKind::kReal: check_range(path(f.name), c.*f.real_member, f.range); break;
        case FieldKind::kString:
          if (!f.allowed.empty()) check_choice(path(f.name), c.*f.string_member, f.allowed);
          break;
        default: break;
      }
    }
  }

  // Every row (where its `written` says so) into the object `j`.
  void write(const C& c, nlohmann::json& j) const {
    for (const auto& f : fields_) {
      if (f.written && !f.written(c)) continue;
      switch (f.kind) {
        case FieldKind::kInt: j[f.name] = c.*f.int_member; break;
        case FieldKind::kSeed: j[f.name] = c.*f.seed_member; break;
        case FieldKind::kReal: j[f.name] = c.*f.real_member; break;
        case FieldKind::kBool: j[f.name] = c.*f.bool_member; break;
        case FieldKind::kString: j[f.name] = c.*f.string_member; break;
        case FieldKind::kObject: j[f.name] = f.write_object(c); break;
      }
    }
  }
  nlohmann::json to_json(const C& c) const {
    nlohmann::json j = nlohmann::json::object();
    write(c, j);
    return j;
  }

  // The table as data (docs/formats.md#config-schema): one object per row in declaration order,
  // {"name", "kind" ("int" | "seed" | "real" | "bool" | "string" | "object"), "help", "flag"
  // (absent for none), "default" (the member's value in `defaults`), and "min"/"max" (integers,
  // inclusive), "min"/"max"/"min_open"/"max_open" (reals; null = unbounded) or "allowed"
  // (strings with allowed values)}. What `mnemoscope info --config-schema` prints and the Python
  // package reads (python/mnemoscope/config_schema.json).
  nlohmann::json schema(const C& defaults) const {
    nlohmann::json rows = nlohmann::json::array();
    const auto bound = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    for (const auto& f : fields_) {
      nlohmann::json r = {{"name", f.name}, {"kind", kind_name(f.kind)}, {"help", f.help}};
      if (!f.flag.empty()) r["flag"] = f.flag;
      switch (f.kind) {
        case FieldKind::kInt:
          r["default"] = defaults.*f.int_member;
          r["min"] = f.lo;
          r["max"] = f.hi;
          break;
        case FieldKind::kSeed: r["default"] = defaults.*f.seed_member; break;
        case FieldKind::kReal:
          r["default"] = defaults.*f.real_member;
          r["min"] = bound(f.range.lo);
          r["max"] = bound(f.range.hi);
          r["min_open"] = f.range.lo_open;
          r["max_open"] = f.range.hi_open;
          break;
        case FieldKind::kBool: r["default"] = defaults.*f.bool_member; break;
        case FieldKind::kString:
          r["default"] = defaults.*f.string_member;
          if (!f.allowed.empty()) r["allowed"] = f.allowed;
          break;
        case FieldKind::kObject: r["default"] = f.write_object(defaults); break;
      }
      rows.push_back(std::move(r));
    }
    return rows;
  }
  static const char* kind_name(FieldKind k) {
    switch (k) {
      case FieldKind::kInt: return "int";
      case FieldKind::kSeed: return "seed";
      case FieldKind::kReal: return "real";
      case FieldKind::kBool: return "bool";
      case FieldKind::kString: return "string";
      case FieldKind::kObject: return "object";
    }
    return "?";
  }

  // Sets the field of row `f` from the JSON value `v`, refusing a value of the wrong kind
  // (the type message above; ranges are validate()'s). What a command-line flag of the row
  // uses, with set_value() for its text.
  void set(C& c, const ConfigField<C>& f, const nlohmann::json& v) const { read_value(c, f, v); }

  // The JSON value of the text of a `--set NAME=TEXT`: a string field takes the text as it
  // is (a quoted JSON string is unquoted), any other field the JSON it spells, else the text
  // as a string (which read() then refuses, naming the field). nullptr row: as a non-string.
  static nlohmann::json set_value(const ConfigField<C>* f, const std::string& text) {
    const bool quoted = text.size() >= 2 && text.front() == '"' && text.back() == '"';
    if (f && f->kind == FieldKind::kString && !quoted) return text;
    try {
      return mnemo::io::parse_json(text);
    } catch (const nlohmann::json::exception&) {
      return text;  // a bare word: a string
    }
  }

 private:
  void read_value(C& c, const ConfigField<C>& f, const nlohmann::json& v) const {
    const std::string p = path(f.name);
    switch (f.kind) {
      case FieldKind::kInt:
        if (!v.is_number_integer()) config_detail::throw_type(p, f.kind, v);
        c.*f.int_member = config_detail::int_of(p, v, f.lo, f.hi);
        break;
      case FieldKind::kSeed:
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
          config_detail::throw_type(p, f.kind, v);
        c.*f.seed_member = v.get<uint64_t>();
        break;
      case FieldKind::kReal:
        if (!v.is_number()) config_detail::throw_type(p, f.kind, v);
        c.*f.real_member = v.get<double>();
        break;
      case FieldKind::kBool:
        if (!v.is_boolean()) config_detail::throw_type(p, f.kind, v);
        c.*f.bool_member = v.get<bool>();
        break;
      case FieldKind::kString:
        if (!v.is_string()) config_detail::throw_type(p, f.kind, v);
        c.*f.string_member = v.get<std::string>();
        break;
      case FieldKind::kObject: f.read_object(c, v); break;
    }
  }

  std::string prefix_;
  std::vector<ConfigField<C>> fields_;
};

}  // namespace mnemo

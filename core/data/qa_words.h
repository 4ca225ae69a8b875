// The words and sentence forms of the synthetic QA task (core/data/qa_task.h): the generator
// writes its documents and queries from them, and the options (core/data/qa_options.h) size
// their limits by them (how many facts fit a chunk, whether the longest query fits one).
// Lower-case ASCII; no word is a substring of a query's fixed text and no city is a name
// (so the answer bytes occur exactly once in the query).
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace mnemo::qa {

inline const std::vector<std::string>& names() {
  static const std::vector<std::string> v = {"anna", "ben",  "carl", "dora", "emil", "fay",  "gus",
                                             "hana", "ivan", "jon",  "kim",  "lea",  "max",  "nina",
                                             "otto", "pia",  "quin", "rosa", "sam",  "tara", "uma",
                                             "vic",  "wes",  "yara", "zoe"};
  return v;
}
inline const std::vector<std::string>& cities() {
  static const std::vector<std::string> v = {"oslo", "rome", "lima", "kyiv", "riga", "doha", "baku",
                                             "bern", "cork", "faro", "gent", "graz", "hue",  "ica",
                                             "kobe", "linz", "lodz", "nice", "pisa", "pune", "sfax",
                                             "tula", "ufa",  "vigo", "york"};
  return v;
}
inline const std::vector<std::string>& fillers() {
  static const std::vector<std::string> v = {
      "the sky was grey.",    "a dog barked.",       "rain fell all day.", "the tea was cold.",
      "we sat by the fire.",  "the bus was late.",   "a bird sang.",       "the road was long.",
      "bread was baked.",     "the lamp flickered.", "snow began to fall.", "the clock ticked.",
      "a door creaked.",      "the sea was calm.",   "the wind rose.",     "leaves fell."};
  return v;
}

constexpr const char* kQuestionHead = "where does ";
constexpr const char* kQuestionTail = " live?";

inline std::string fact(const std::string& name, const std::string& city) { return name + " lives in " + city + "."; }

inline size_t max_len(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const auto& s : v) n = std::max(n, s.size());
  return n;
}

}  // namespace mnemo::qa

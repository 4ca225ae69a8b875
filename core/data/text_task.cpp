#include "core/data/text_task.h"

#include "core/data/task_fields.h"

#include <algorithm>

namespace mnemo {

namespace {

// task.<key>, a number in `range`, or `fallback` when absent (ConfigError naming the field).
double read_real(const nlohmann::json& cfg, const std::string& key, double fallback, const RealRange& range) {
  if (!cfg.contains(key)) return fallback;
  const auto& v = cfg[key];
  if (!v.is_number()) config_detail::throw_type("task." + key, FieldKind::kReal, v);
  const double f = v.get<double>();
  check_range("task." + key, f, range);
  return f;
}
constexpr RealRange kFraction{0.0, 0.5, true, false};

// The entry r with prefix[r] <= u < prefix[r + 1] of running totals `prefix` (first entry 0).
size_t range_of(const std::vector<int64_t>& prefix, int64_t u) {
  return static_cast<size_t>(std::upper_bound(prefix.begin(), prefix.end(), u) - prefix.begin() - 1);
}

// The group a training document is drawn in under balance: the genre of a general document
// ("mail" for "general/mail/mail-003"), else the first component of its key ("sotu" for a SOTU
// address, "plays" for "plays/hamlet.txt" found under a directory entry), "" for a key without one.
std::string balance_group(const std::string& key) {
  const std::string genre = corpus_group(key);
  if (!genre.empty()) return genre;
  const size_t slash = key.find('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

}  // namespace

TextTask::TextTask(const nlohmann::json& cfg) {
  read_window_fields(cfg, "text", {"corpus", "valid_fraction", "test_fraction", "split", "recur", "names", "doubled", "balance"});
  valid_fraction_ = read_real(cfg, "valid_fraction", valid_fraction_, kFraction);
  test_fraction_ = read_real(cfg, "test_fraction", test_fraction_, kFraction);
  if (!(cfg.contains("recur") && cfg["recur"].is_null()))  // null: the default (--set task.recur=null)
    recur_ = read_real(cfg, "recur", recur_, RealRange{0.0, 1.0, false, false});
  for (auto [key, value] : {std::pair<const char*, double*>{"names", &names_}, {"doubled", &doubled_}})
    if (!(cfg.contains(key) && cfg[key].is_null())) *value = read_real(cfg, key, *value, RealRange{0.0, 1.0, false, false});
  if (cfg.contains("balance") && !cfg["balance"].is_null()) {
    if (!cfg["balance"].is_boolean()) config_detail::throw_type("task.balance", FieldKind::kBool, cfg["balance"]);
    balance_ = cfg["balance"].get<bool>();
  }
  const int64_t l = segment_len(), need = 2 * recur_min_len() + 2 * l;
  if (recur_ > 0 && window_bytes() < need)
    throw field_error("task.recur", "needs windows of at least " + std::to_string(need) +
                                        " bytes (a passage of L/2 bytes, repeated 2L bytes after it, L = length / segments = " +
                                        std::to_string(l) + "); these hold " + std::to_string(window_bytes()) +
                                        ": raise 'task.segments' (and 'task.length' with it) or set 'task.recur' to 0");
  if (!cfg.contains("corpus"))
    throw field_error("task.corpus", "is missing: give a text file, a directory of text files, a list of "
                      "them or a named corpus (" + named_corpora_text() + "), e.g. \"corpus\": \"books/\" (train --data PATH sets it)");
  corpus_ = std::make_shared<const TextCorpus>(cfg["corpus"], seed_, valid_fraction_, test_fraction_, window_bytes());
  if (cfg.contains("split") && !cfg["split"].is_null()) {
    const nlohmann::json now = corpus_->split_record();
    if (cfg["split"] != now) {
      std::string diff;
      // The record is read as JSON of any shape (a hand-edited or damaged session): a field
      // that is missing or not what this version writes reads as "?" and counts as a change.
      auto field = [](const nlohmann::json& rec, const char* k) {
        return rec.is_object() && rec.contains(k) ? rec[k] : nlohmann::json();
      };
      for (const char* s : {"train", "valid", "test"}) {
        const nlohmann::json was = field(cfg["split"], s), ranges = field(was, "ranges"), hash = field(was, "hash");
        if (hash == now[s]["hash"] && ranges == now[s]["ranges"]) continue;
        diff += std::string(diff.empty() ? "" : "; ") + s + ": recorded " +
                (was.is_object() ? (ranges.is_number_integer() ? ranges.dump() : std::string("?")) + " ranges, hash " +
                                       (hash.is_string() ? hash.get<std::string>() : std::string("?"))
                                 : std::string("nothing")) +
                ", now " + now[s]["ranges"].dump() + " ranges, hash " + now[s]["hash"].get<std::string>();
      }
      if (diff.empty()) diff = "the recorded list differs";
      throw field_error("task.split", "does not match the corpus as it is now (" + diff +
                        "): the corpus is not the one the split was recorded for (another corpus, or its files changed "
                        "since), so held-out text could be trained on; restore it, or drop the record "
                        "(--set task.split=null) to take the new split");
    }
  }
  const int64_t w = window_bytes();
  for (int s = 0; s < 3; ++s) {
    starts_[s] = {0};
    tiles_[s] = {0};
    int64_t longest = 0, bytes = 0;
    for (const auto& r : corpus_->ranges(static_cast<Split>(s))) {
      longest = std::max(longest, r.size());
      bytes += r.size();
      if (r.size() < w) {
        ++short_[s];
        continue;
      }
      usable_[s].push_back(r);
      starts_[s].push_back(starts_[s].back() + r.size() - w + 1);
      tiles_[s].push_back(tiles_[s].back() + (r.size() - l) / length_);
      if (s != 0) continue;
      const std::string group = balance_group(corpus_->document_key(r.doc));
      auto g = std::find_if(groups_.begin(), groups_.end(), [&](const GroupStarts& x) { return x.name == group; });
      if (g == groups_.end()) g = groups_.insert(groups_.end(), GroupStarts{group, {}, {0}});
      g->ranges.push_back(usable_[s].size() - 1);
      g->starts.push_back(g->starts.back() + r.size() - w + 1);
    }
    if (usable_[s].empty()) {
      // The split rule (text_corpus.h) carves held-out blocks from a document of three windows:
      // windows of a third of the longest document make it succeed.
      int64_t longest_doc = 0;
      for (int64_t d = 0; d < corpus_->documents(); ++d) longest_doc = std::max(longest_doc, corpus_->document_size(d));
      const int64_t n = segments();
      const int64_t fit = longest_doc / 3 * n / (n + 1) / n * n;  // length: a multiple of segments
      const std::string advice =
          fit >= 2 * n ? "add text, or use windows that fit three times into the longest document: --set task.length=" +
                             std::to_string(fit) + (recur_ > 0 ? " --set task.recur=0" : "")
                       : "add text: the longest document holds " + std::to_string(longest_doc) +
                             " bytes, too few for a training window and two held-out windows of " +
                             std::to_string(2 * n) + " bytes or more at " + std::to_string(n) + " segments";
      throw ConfigError(std::string("task 'text': the ") + split_name(static_cast<Split>(s)) + " split of task.corpus " +
                        corpus_->resolved().dump() + " has no document or block of at least one window (" +
                        std::to_string(w) + " bytes = length + length / segments): its " +
                        std::to_string(corpus_->ranges(static_cast<Split>(s)).size()) + " ranges hold " +
                        std::to_string(bytes) + " bytes, the longest " + std::to_string(longest) + "; " + advice);
    }
  }
}

nlohmann::json TextTask::to_json() const {
  nlohmann::json j = write_window_fields("text");  // and the fields it reads itself:
  j["corpus"] = corpus_->resolved();
  j["valid_fraction"] = valid_fraction_;
  j["test_fraction"] = test_fraction_;
  j["split"] = corpus_->split_record();
  if (recur_ > 0) j["recur"] = recur_;
  if (balance_) j["balance"] = true;
  if (names_ > 0) j["names"] = names_;
  if (doubled_ > 0) j["doubled"] = doubled_;
  return j;
}

int64_t TextTask::split_size(Split s) const {
  return capped_split_size(s, tiles_[static_cast<int>(s)].back());
}

TextTask::Window TextTask::window(Split s, int64_t index) const {
  const int k = static_cast<int>(s);
  if (s == Split::kTrain) {
    const uint64_t d = draw(s, index);
    if (balance_) {  // one group: d % 1 = 0 and d / 1 = d, the uniform draw below
      const uint64_t n = groups_.size();
      const GroupStarts& g = groups_[d % n];
      const int64_t u = static_cast<int64_t>((d / n) % static_cast<uint64_t>(g.starts.back()));
      const size_t i = range_of(g.starts, u);
      const TextCorpus::Range& r = usable_[k][g.ranges[i]];
      return {r.doc, r.begin + (u - g.starts[i])};
    }
    const int64_t u = static_cast<int64_t>(d % static_cast<uint64_t>(starts_[k].back()));
    const size_t r = range_of(starts_[k], u);
    return {usable_[k][r].doc, usable_[k][r].begin + (u - starts_[k][r])};
  }
  const int64_t n = split_size(s);
  const int64_t t = ((index % n) + n) % n;
  const size_t r = range_of(tiles_[k], t);
  return {usable_[k][r].doc, usable_[k][r].begin + (t - tiles_[k][r]) * length_};
}

std::vector<TextTask::Group> TextTask::balance_groups() const {
  std::vector<Group> out;
  const double total = static_cast<double>(starts_[0].back());
  for (const auto& g : groups_)
    out.push_back({g.name, balance_ ? 1.0 / static_cast<double>(groups_.size()) : static_cast<double>(g.starts.back()) / total});
  return out;
}

TextTask::Recurrence TextTask::recurrence(Split s, int64_t index) const {
  if (recur_ <= 0) return {};
  SplitMix64 rng(draw(s, index) ^ 0x7265637572u);  // its own stream: the window's place is unchanged
  const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
  if (u >= recur_) return {};
  const int64_t l = segment_len(), w = window_bytes(), gap = 2 * l;
  const int64_t lo = recur_min_len(), hi = std::max(lo, std::min<int64_t>(2 * l, (w - gap) / 2));
  Recurrence r;
  r.n = rng.uniform(lo, hi);
  r.from = rng.uniform(0, w - 2 * r.n - gap);
  r.to = rng.uniform(r.from + r.n + gap, w - r.n);
  return r;
}

namespace {
// The streams of the curricula: salts of the window's draw, so its place is unchanged.
constexpr uint64_t kNamesSalt = 0x6E616D6573ull, kDoubledSalt = 0x646F75626C6564ull;

double unit(SplitMix64& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

// A random lower-case word of lo..hi letters.
void random_word(SplitMix64& rng, int64_t lo, int64_t hi, std::vector<int64_t>& out) {
  const int64_t n = rng.uniform(lo, hi);
  for (int64_t k = 0; k < n; ++k) out.push_back('a' + rng.below(26));
}
}  // namespace

bool TextTask::doubled_at(Split s, int64_t index) const {
  if (doubled_ <= 0) return false;
  SplitMix64 rng(draw(s, index) ^ kDoubledSalt);
  return unit(rng) < doubled_;
}

std::vector<TextTask::Name> TextTask::names_at(Split s, int64_t index) const {
  std::vector<Name> names;
  std::vector<int64_t> buf(static_cast<size_t>(window_bytes()));
  fill(s, index, buf.data(), &names);
  return names;
}

void TextTask::fill(Split s, int64_t index, int64_t* out, std::vector<Name>* names) const {
  const int64_t w = window_bytes(), l = segment_len();
  if (doubled_at(s, index)) {
    SplitMix64 rng(draw(s, index) ^ kDoubledSalt);
    rng.next();  // the draw doubled_at used
    std::vector<int64_t> text;
    while (static_cast<int64_t>(text.size()) < w) {
      std::vector<int64_t> passage;
      const int64_t len = rng.uniform(40, 60);
      while (static_cast<int64_t>(passage.size()) < len) {
        random_word(rng, 2, 9, passage);
        passage.push_back(' ');
      }
      text.insert(text.end(), passage.begin(), passage.end());
      text.insert(text.end(), passage.begin(), passage.end());
    }
    std::copy(text.begin(), text.begin() + w, out);
    return;
  }
  const Window win = window(s, index);
  corpus_->read(win.doc, win.begin, w, out);
  const Recurrence r = recurrence(s, index);
  if (r.n > 0) std::copy(out + r.from, out + r.from + r.n, out + r.to);
  if (names_ <= 0) return;
  SplitMix64 rng(draw(s, index) ^ kNamesSalt);
  if (unit(rng) >= names_) return;
  std::vector<int64_t> spaces;
  for (int64_t k = 0; k < w; ++k)
    if (out[k] == ' ') spaces.push_back(k);
  auto next_space = [&](int64_t at) -> int64_t {
    const auto it = std::lower_bound(spaces.begin(), spaces.end(), at);
    return it == spaces.end() ? -1 : *it;
  };
  // Pairs of names: the spaces after which the first and second mention go, and the name. A
  // pair is written only when its second mention ends inside the window (the text after each
  // insertion moves on), so every name written is written twice.
  struct Pair {
    int64_t first, second;
    std::vector<int64_t> word;
  };
  std::vector<Pair> pairs;
  int64_t shift = 0;  // bytes inserted before the pair being placed
  for (int64_t at = 0;;) {
    at += rng.uniform(l, 3 * l);
    const int64_t first = next_space(at);
    if (first < 0) break;
    const int64_t second = next_space(first + rng.uniform(3 * l / 2, 7 * l / 2));
    if (second < 0) break;
    std::vector<int64_t> word = {'A' + rng.below(26)};
    random_word(rng, 7, 13, word);
    const int64_t n = static_cast<int64_t>(word.size());
    if (second + 1 + shift + (n + 1) + n > w) break;
    pairs.push_back({first, second, std::move(word)});
    shift += 2 * (n + 1);
    at = second;
  }
  if (pairs.empty()) return;
  std::vector<int64_t> text(out, out + w), result;
  result.reserve(static_cast<size_t>(w + shift));
  int64_t last = 0;
  for (const auto& p : pairs) {
    Name name;
    name.n = static_cast<int64_t>(p.word.size());
    for (const int64_t space : {p.first, p.second}) {
      result.insert(result.end(), text.begin() + last, text.begin() + space + 1);
      (space == p.first ? name.first : name.second) = static_cast<int64_t>(result.size());
      result.insert(result.end(), p.word.begin(), p.word.end());
      result.push_back(' ');
      last = space + 1;
    }
    if (names) names->push_back(name);
  }
  result.insert(result.end(), text.begin() + last, text.end());
  std::copy(result.begin(), result.begin() + w, out);
}

TaskBatch TextTask::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  return window_batch(indices, device, [&](int64_t index, int64_t* out) { fill(s, index, out, nullptr); });
}

std::vector<std::string> TextTask::warnings() const {
  std::vector<std::string> out = corpus_->warnings();
  for (int s = 0; s < 3; ++s)
    if (short_[s] > 0)
      out.push_back("the " + std::string(split_name(static_cast<Split>(s))) + " split has " + std::to_string(short_[s]) +
                    (short_[s] == 1 ? " document or block" : " documents or blocks") + " shorter than one window (" +
                    std::to_string(window_bytes()) + " bytes): not used");
  return out;
}

}  // namespace mnemo

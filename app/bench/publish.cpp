// `mnemoscope bench publish`: what publishing a view costs during a play-through of n segments
// (docs/architecture.md#data-flow). The worker publishes an immutable view after every step, and
// each view carries the records of every visited segment. Contender: the publisher as it is
// (VisitedSegments shares its blocks of records, so a view copies one pointer per 64 segments).
// Baseline: the same publisher plus a copy of a std::map of the same records per publication,
// which is what a view cost before the records were shared (one map node per visited segment;
// the baseline also pays the contender's small copy, so its ratio is a slight overstatement).
// Both interleaved in one process, per publication, medians over the passes.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/view/publisher.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

namespace mnemo::app {

namespace {

struct BenchPublishOptions {
  std::vector<int64_t> segments{1000, 4000, 16000};
  int64_t repeats = 5;
};

// One pass: n steps, each remembered and published; returns µs per publication (the view only,
// not the record's making, which both sides share).
double play_through(int64_t n, bool with_map_copy, const std::vector<std::shared_ptr<const SegmentRecord>>& records) {
  ViewPublisher pub;
  pub.open(nullptr, false);
  std::map<int64_t, std::shared_ptr<const SegmentRecord>> old_style;
  double us = 0.0;
  size_t keep = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto& rec = records[static_cast<size_t>(i)];
    const auto t0 = std::chrono::steady_clock::now();
    pub.remember(i, rec);
    ViewPtr v = pub.view(i, "", "");
    if (with_map_copy) {
      old_style[i] = rec;
      auto copy = std::make_shared<const std::map<int64_t, std::shared_ptr<const SegmentRecord>>>(old_style);
      keep += copy->size();
    }
    keep += v->visited.size();
    us += 1000.0 * bench::ms_since(t0);
  }
  // The views are used (and a pass whose views held nothing measured nothing).
  if (keep == 0) throw std::runtime_error("bench publish: the published views held no segment");
  return us / static_cast<double>(n);
}

int run_bench_publish(const BenchPublishOptions& o, std::ostream& out) {
  if (o.repeats < 1) throw UsageError("--repeats must be >= 1");
  int64_t most = 0;
  for (int64_t n : o.segments) {
    if (n < 1 || n > 1000000) throw UsageError("--segments: each count must be in 1..1000000, not " + std::to_string(n));
    most = std::max(most, n);
  }
  std::vector<std::shared_ptr<const SegmentRecord>> records;
  for (int64_t i = 0; i < most; ++i) {
    auto r = std::make_shared<SegmentRecord>();
    r->self_mass.assign(16, 0.5f);
    records.push_back(std::move(r));
  }
  out << "bench publish: a play-through of n segments, one view published after each step (each view holds every\n"
      << "  visited segment's record); contender: the records shared in blocks of " << VisitedSegments::kBlock
      << " segments;\n  baseline: plus a copy of a std::map of the records per view (the earlier way), " << o.repeats
      << " passes each, interleaved\n";
  char line[256];
  std::snprintf(line, sizeof line, "%10s %16s %16s %8s %14s %14s\n", "segments", "shared µs/view", "map copy µs/view",
                "ratio", "shared total s", "map total s");
  out << line;
  for (int64_t n : o.segments) {
    std::vector<double> shared, copied;
    for (int64_t r = 0; r < o.repeats; ++r) {
      const bool copy_first = r % 2 == 1;
      if (copy_first) copied.push_back(play_through(n, true, records));
      shared.push_back(play_through(n, false, records));
      if (!copy_first) copied.push_back(play_through(n, true, records));
    }
    const double a = bench::median(shared), b = bench::median(copied);
    std::snprintf(line, sizeof line, "%10lld %16.2f %16.2f %8.1f %14.3f %14.3f\n", static_cast<long long>(n), a, b, b / a,
                  a * static_cast<double>(n) / 1e6, b * static_cast<double>(n) / 1e6);
    out << line;
  }
  out << bench::machine_line() << "\n";
  return 0;
}

class BenchPublish : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("publish", "a view's publication cost over a play-through (records shared vs copied)");
    c->add_option("--segments", o_.segments, "play-through lengths (default 1000 4000 16000)");
    c->add_option("--repeats", o_.repeats, "passes per side and length (median reported; default 5)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_publish(o_, out); }

 private:
  BenchPublishOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_publish() { return std::make_unique<BenchPublish>(); }

}  // namespace mnemo::app

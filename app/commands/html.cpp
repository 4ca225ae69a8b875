// `mnemoscope html`: steps a model through a document, as the app does, and writes one
// self-contained HTML file (app/figures/html_viewer.h, docs/gui.md#html-export) that shows it
// without Mnemoscope, offline.
#include "app/commands/commands.h"
#include "app/figures/html_viewer.h"
#include "app/view/publisher.h"
#include "app/view/trace_keys.h"

#include "app/cli/assets.h"
#include "app/cli/flags.h"
#include "core/data/segmenter.h"
#include "core/engine/engine.h"
#include "core/io/atomic_file.h"
#include "core/platform/memory.h"

#include <sys/stat.h>

#include <cstdio>
#include <optional>

namespace mnemo::app {

namespace {

struct HtmlOptions {
  std::string doc, out, zoo;
  int64_t from = 0;
  std::optional<int64_t> to;
  bool force = false;
  bool mean_only = false;
};

bool exists(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0;
}

std::string base_name(const std::string& p) {
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

int run_html(const ModelFlags& given, const HtmlOptions& ho, std::ostream& log) {
  if (ho.out.size() < 5 || (ho.out.substr(ho.out.size() - 5) != ".html" && ho.out.substr(ho.out.size() - 4) != ".htm"))
    throw UsageError("--out '" + ho.out + "' must name an .html file (e.g. --out doc.html)");
  if (exists(ho.out) && !ho.force)
    throw UsageError("--out '" + ho.out + "' exists; give another name, or --force to replace it");
  if (exists(ho.out)) {
    struct stat st{};
    ::stat(ho.out.c_str(), &st);
    if (!S_ISREG(st.st_mode)) throw UsageError("--out '" + ho.out + "' is not a regular file; --force replaces only a file");
  }
  const std::string folder = io::parent_directory(ho.out);
  struct stat fst{};
  if (::stat(folder.c_str(), &fst) != 0 || !S_ISDIR(fst.st_mode))
    throw UsageError("--out '" + ho.out + "': the folder '" + folder + "' does not exist; create it first");
  io::check_output_dir(folder, "--out's folder");
  Document doc = load_doc_flag(ho.doc);
  ModelFlags mf = given;
  if (!ho.zoo.empty()) {
    if (!mf.checkpoint.empty()) throw UsageError("give --zoo NAME or --checkpoint FILE, not both");
    try {
      mf.checkpoint = find_asset("models/" + ho.zoo + ".safetensors");
    } catch (const std::exception&) {
      throw UsageError("--zoo '" + ho.zoo + "': no assets/models/" + ho.zoo +
                       ".safetensors (the zoo's models are listed by `mnemoscope zoo list`)");
    }
  }
  mf.apply_default_text_model(log);
  ModelConfig cfg = mf.resolve();
  const Stepping stepping = mf.stepping(cfg);
  const int64_t L = stepping.segment_len;
  Segmenter seg(&doc, L);
  const int64_t n = seg.num_segments();
  if (ho.from < 0 || ho.from >= n)
    throw UsageError("--from " + std::to_string(ho.from) + " is out of range 0.." + std::to_string(n - 1) +
                     " (the document has " + std::to_string(n) + " segments of " + std::to_string(L) + " tokens)");
  const int64_t to = ho.to ? *ho.to : std::min(n - 1, ho.from + 99);
  if (to < ho.from || to >= n)
    throw UsageError("--to " + std::to_string(to) + " is out of range " + std::to_string(ho.from) + ".." +
                     std::to_string(n - 1));
  MemoryModel model = mf.build(cfg, log);
  if (!stepping.as_trained())
    log << "warning: " << stepping.warning() << "; leave out --segment-len to step it as trained\n";

  // As the app steps (app/gui/model/worker.cpp): its trace keys, the memory benefit, and a
  // publisher whose provenance chain sees every step, so the numbers are the app's.
  auto shared_doc = std::make_shared<const Document>(std::move(doc));
  Engine engine(model, *shared_doc, L, TraceSpec::of(gui_trace_keys()));
  engine.set_memory_benefit(true);
  ViewPublisher publisher;
  auto info = std::make_shared<ViewSource>();
  info->doc = shared_doc;
  info->cfg = cfg;
  info->seed = mf.seed;
  info->checkpoint = mf.checkpoint;
  info->random_weights = mf.checkpoint.empty();
  info->segment_len = L;
  info->stepping = stepping;
  info->num_segments = n;
  publisher.open(info);
  if (auto keys = publisher.observed_keys(); !keys.empty())
    engine.set_step_observer(std::move(keys), [&](int64_t i, const Trace& tr) { publisher.observe(i, tr); });

  ViewerInput vin;
  vin.title = base_name(ho.doc);
  vin.model = cfg.model;
  vin.model_note = mf.checkpoint.empty() ? "randomly initialised (seed " + std::to_string(mf.seed) + ")"
                                         : "weights from " + base_name(mf.checkpoint);
  vin.program_version = MNEMO_VERSION;
  vin.segment_len = L;
  vin.num_segments = n;
  vin.heads = !ho.mean_only;
  log << "stepping segments " << ho.from << ".." << to << " of " << n << " (" << stepping.describe() << ")\n";
  platform::MemoryActivity activity("stepping '" + ho.doc + "' for the HTML viewer");
  for (int64_t i = ho.from; i <= to; ++i) {
    SnapshotPtr snap = engine.jump(i);
    const PublishedStep& pub = publisher.show(*snap);
    vin.steps.push_back({pub.step, pub.provenance, pub.provenance_before});
  }
  vin.visited = publisher.view(to, vin.model_note)->visited;
  const ViewerData data = pack_viewer_data(vin, *shared_doc);
  const std::string page = viewer_html(data, vin.title + " - " + cfg.model + " - Mnemoscope");
  io::write_file_atomic(ho.out, page);
  char line[256];
  std::snprintf(line, sizeof line, "wrote %s: %lld segments, %.2f MB (data %.2f MB, deflated to %.2f MB)\n",
                ho.out.c_str(), static_cast<long long>(to - ho.from + 1), page.size() / 1e6, data.raw_bytes / 1e6,
                data.packed_bytes / 1e6);
  log << line << "open it in any browser (no network needed): it is the whole viewer\n";
  return 0;
}

class HtmlCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "html", "step a model through a document and write one self-contained HTML file that shows it in any browser");
    c->add_option("--doc", ho_.doc, "document to step through (any file)")->required();
    c->add_option("--out", ho_.out, "the HTML file to write (refused when it exists, unless --force)")->required();
    mf_.add_to(c);
    c->add_option("--zoo", ho_.zoo, "a zoo model by name (assets/models/NAME.safetensors), instead of --checkpoint");
    c->add_option("--from", ho_.from, "first segment (default 0)");
    o_to_ = c->add_option("--to", to_, "last segment (default from+99, clamped to the document)");
    c->add_flag("--force", ho_.force, "replace --out when it exists");
    c->add_flag("--mean-only", ho_.mean_only,
                "keep only the mean over heads of every attention map (a smaller page: about a fifth for RMT)");
    return c;
  }
  int run(std::ostream& out) override {
    HtmlOptions ho = ho_;
    if (o_to_->count()) ho.to = to_;
    return run_html(mf_, ho, out);
  }

 private:
  ModelFlags mf_;
  HtmlOptions ho_;
  int64_t to_ = -1;
  CLI::Option* o_to_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_html_command() { return std::make_unique<HtmlCommand>(); }

}  // namespace mnemo::app

// The C++ reader's view of a session, a safetensors file or a framed log, as JSON on stdout:
// the reference the Python package's tests compare against (python/tests/test_cross_language.py).
// Everything is read with the project's own readers (core/io/session.h, core/io/safetensors.h,
// core/io/framed_log.h, core/train/recorder.h), so the two languages are compared on exactly
// what the app and `mnemoscope export` see.
//
//   session_dump session DIR          manifest, metrics records, recordings, checkpoints
//   session_dump safetensors FILE...  metadata and tensors (dtype, shape, raw bytes as hex); a list
//                                     when several files are given
//   session_dump log FILE...          framed-log records (hex), their offsets, the gaps skipped and
//                                     where/why reading stopped, one
//                                     JSON object per file (a list when several files are given)
//   session_dump log-from FILE OFFSET the same, reading from byte OFFSET (following a log)
//   session_dump model-config FILE... each file's JSON read by ModelConfig::from_json: {"config":
//                                     its to_json} or {"error": the message, "field": its path}
//                                     (python/tests/test_config_schema.py), a list
//   session_dump serve                one request per line on stdin, a JSON array of the arguments
//                                     above (["session", DIR]), answered with one line of JSON on
//                                     stdout, until stdin ends: one process (one LibTorch start-up,
//                                     ~0.8 CPU s) for a test file's many requests (harness.Dump)
//
// A file the reader rejects is reported as {"error": "<the reader's message>"}; the exit
// status is 0 whenever the JSON was written.
#include "core/io/framed_log.h"
#include "core/io/safetensors.h"
#include "core/io/json_file.h"
#include "core/io/session.h"
#include "core/models/config.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using nlohmann::json;
using namespace mnemo;

namespace {

std::string hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(digits[p[i] >> 4]);
    s.push_back(digits[p[i] & 15]);
  }
  return s;
}

json tensors_json(const io::NamedTensors& tensors) {
  json out = json::array();
  for (const auto& [name, t] : tensors) {
    auto c = t.contiguous();
    out.push_back({{"name", name},
                   {"dtype", io::dtype_name(c.scalar_type())},
                   {"shape", c.sizes().vec()},
                   {"hex", hex(c.data_ptr(), static_cast<size_t>(c.nbytes()))}});
  }
  return out;
}

json safetensors_json(const std::string& path) {
  try {
    std::map<std::string, std::string> meta;
    auto t = io::load_safetensors(path, &meta);
    return {{"metadata", meta}, {"tensors", tensors_json(t)}};
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

json log_json(const io::LogReadResult& r) {
  json recs = json::array();
  for (const auto& rec : r.records) recs.push_back(hex(rec.data(), rec.size()));
  json gaps = json::array();
  for (const auto& g : r.gaps) gaps.push_back({{"begin", g.begin}, {"end", g.end}, {"reason", g.reason}});
  return {{"records_hex", recs},     {"offsets", r.offsets},         {"gaps", gaps},
          {"good_bytes", r.good_bytes}, {"file_bytes", r.file_bytes}, {"clean", r.clean},
          {"stop_reason", r.stop_reason}, {"shrunk", r.shrunk}};
}

json session_json(const std::string& dir) {
  json out;
  std::optional<io::Session> s;
  try {
    s.emplace(io::Session::open(dir, 3, io::SessionAccess::kReadOnly));
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
  out["manifest"] = s->manifest();
  io::LogReadResult read;
  auto records = s->read_metrics(&read);
  json metrics = log_json(read);
  metrics.erase("records_hex");
  metrics["records"] = records;
  json described = json::array();
  for (const auto& g : parse_run_log(records, read).gaps) described.push_back(describe_gap(g));
  metrics["gaps_described"] = described;
  out["metrics"] = metrics;
  json traces = json::array();
  for (int64_t step : s->trace_steps()) {
    const std::string path = s->trace_path(step);
    json t = safetensors_json(path);
    t["step"] = step;
    t["path"] = path;
    if (!t.contains("error")) {
      try {
        std::map<std::string, std::string> meta;
        auto rec = read_recording(io::load_safetensors(path, &meta), meta, path);
        t["recording"] = {{"train_step", rec.train_step},
                          {"segment_len", rec.segment_len},
                          {"segments", rec.segments.size()},
                          {"document_bytes", rec.doc.bytes.size()}};
      } catch (const std::exception& e) {
        t["recording"] = {{"error", e.what()}};
      }
    }
    traces.push_back(t);
  }
  out["traces"] = traces;
  json ckpt = {{"steps", s->checkpoint_steps()}};
  try {
    auto l = s->load_latest();
    if (l) {
      ckpt["latest"] = {{"step", l->step},
                        {"path", l->path},
                        {"skipped", l->skipped},
                        {"metadata", l->metadata},
                        {"tensors", tensors_json(l->tensors)}};
    } else {
      ckpt["latest"] = nullptr;
    }
  } catch (const std::exception& e) {
    ckpt["latest"] = {{"error", e.what()}};
  }
  out["checkpoints"] = ckpt;
  return out;
}

// One request: the JSON it answers, or false (a usage error, written to stderr).
bool answer(const std::vector<std::string>& args, json& out) {
  const std::string mode = !args.empty() ? args[0] : "";
  const size_t argc = args.size() + 1;  // as main's: argv[i] = args[i - 1]
  auto argv = [&](size_t i) { return args[i - 1]; };
  if (mode == "session" && argc == 3) {
    out = session_json(argv(2));
  } else if (mode == "safetensors" && argc == 3) {
    out = safetensors_json(argv(2));
  } else if (mode == "safetensors" && argc > 3) {
    out = json::array();
    for (size_t i = 2; i < argc; ++i) out.push_back(safetensors_json(argv(i)));
  } else if (mode == "log" && argc >= 3) {
    auto one = [](const std::string& path, uint64_t offset) -> json {
      try {
        return log_json(io::read_framed_log(path, offset));
      } catch (const std::exception& e) {
        return {{"error", e.what()}};
      }
    };
    if (argc == 3) {
      out = one(argv(2), 0);
    } else {
      out = json::array();
      for (size_t i = 2; i < argc; ++i) out.push_back(one(argv(i), 0));
    }
  } else if (mode == "log-from" && argc == 4) {
    try {
      out = log_json(io::read_framed_log(argv(2), std::strtoull(argv(3).c_str(), nullptr, 10)));
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
  } else if (mode == "model-config" && argc >= 3) {
    out = json::array();
    for (size_t i = 2; i < argc; ++i) {
      try {
        out.push_back({{"config", ModelConfig::from_json(io::read_json_config(argv(i))).to_json()}});
      } catch (const ConfigError& e) {
        out.push_back({{"error", e.what()}, {"field", e.field()}});
      }
    }
  } else {
    std::cerr << "usage: session_dump session DIR | safetensors FILE... | log FILE... | log-from FILE OFFSET | "
                 "model-config FILE... | serve\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "serve") {
    // Each line a request; a line that is not an array of strings, or a usage error, ends the
    // process with exit 2 (the client reads the end of stdout as the failure).
    std::string line;
    while (std::getline(std::cin, line)) {
      const json req = json::parse(line, nullptr, false);
      std::vector<std::string> r;
      if (req.is_array())
        for (const auto& a : req)
          if (a.is_string()) r.push_back(a.get<std::string>());
      if (!req.is_array() || r.empty() || r.size() != req.size() || r[0] == "serve") {
        std::cerr << "session_dump serve: a request is a JSON array of arguments, e.g. [\"session\", \"DIR\"]; got "
                  << line << "\n";
        return 2;
      }
      json out;
      if (!answer(r, out)) return 2;
      std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
    }
    return 0;
  }
  json out;
  if (!answer(args, out)) return 2;
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}

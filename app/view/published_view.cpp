#include "app/view/published_view.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

float PublishedView::token_loss(int64_t t) const {
  return info ? app::token_loss(visited, info->segment_len, t) : NAN;
}

std::string position_text(int64_t segment, int64_t num_segments) {
  return "segment " + std::to_string(segment) + " of " + std::to_string(num_segments) + " (0.." +
         std::to_string(std::max<int64_t>(0, num_segments - 1)) + ")";
}

std::string window_title(const PublishedView& s) {
  std::string t = "Mnemoscope";
  if (!s.session_dir.empty()) {
    std::string dir = s.session_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    t += " \xE2\x80\x94 session " + dir + " (replay)";
    if (s.info) t += " \xE2\x80\x94 " + s.info->cfg.model;
    return t;
  }
  if (s.info && s.info->doc) {
    const std::string& p = s.info->doc->path;
    const auto slash = p.find_last_of('/');
    t += " \xE2\x80\x94 " + (slash == std::string::npos ? p : p.substr(slash + 1)) + " \xE2\x80\x94 " + s.info->cfg.model;
    if (s.info->checkpoint.empty()) t += " (random weights)";  // never mistaken for a trained model
  }
  return t;
}

std::string status_text(const PublishedView& s) {
  if (!s.info || !s.info->doc) return "";
  auto base = [](std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const auto slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
  };
  std::string t;
  if (!s.session_dir.empty())
    t = "session " + base(s.session_dir) + ", probe " + s.info->checkpoint;  // "recorded at training step N"
  else
    t = base(s.info->doc->path);
  t += s.position >= 0 ? "  |  " + position_text(s.position, s.info->num_segments) : "  |  not stepped yet";
  return t;
}

static_assert(kMaxDocumentBytes <= UINT32_MAX, "line starts are stored in 32 bits");

std::vector<uint32_t> line_starts_of(const Document& doc) {
  // One token per byte (core/data/document.h): a line starts after each '\n' but the last byte.
  // Chunk by chunk, so a mapped document does not stay resident after the pass.
  const int64_t n = doc.size();
  std::vector<uint32_t> starts{0};
  doc.scan([&](std::string_view chunk, int64_t first) {
    for (size_t i = chunk.find('\n'); i != std::string_view::npos; i = chunk.find('\n', i + 1))
      if (first + static_cast<int64_t>(i) + 1 < n) starts.push_back(static_cast<uint32_t>(first + static_cast<int64_t>(i) + 1));
  });
  return starts;
}

}  // namespace mnemo::app

#include "app/gui/model/session.h"

#include <algorithm>
#include <cmath>

namespace mnemo::app {

float SessionView::token_loss(int64_t t) const {
  return info ? app::token_loss(visited, info->segment_len, t) : NAN;
}

std::string position_text(int64_t segment, int64_t num_segments) {
  return "segment " + std::to_string(segment) + " of " + std::to_string(num_segments) + " (0.." +
         std::to_string(std::max<int64_t>(0, num_segments - 1)) + ")";
}

std::string window_title(const SessionView& s) {
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
  }
  return t;
}

std::vector<int64_t> line_starts_of(const Document& doc) {
  std::vector<int64_t> starts{0};
  const int64_t n = doc.size();
  for (int64_t t = 0; t + 1 < n; ++t) {
    const auto& [b, e] = doc.offset(t);
    if (e - b == 1 && doc.bytes[static_cast<size_t>(b)] == '\n') starts.push_back(t + 1);
  }
  return starts;
}

}  // namespace mnemo::app

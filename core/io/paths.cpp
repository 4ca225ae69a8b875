#include "core/io/paths.h"

#include <filesystem>
#include <system_error>

namespace mnemo::io {

bool path_within(const std::string& path, const std::string& folder) {
  namespace fs = std::filesystem;
  if (path.empty() || folder.empty()) return false;
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return false;
  const fs::path f = fs::weakly_canonical(fs::absolute(folder, ec), ec);
  if (ec || f.empty()) return false;
  const fs::path rel = p.lexically_relative(f);
  return !rel.empty() && *rel.begin() != ".." && rel.is_relative();
}

}  // namespace mnemo::io

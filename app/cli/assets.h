// The one lookup of what Mnemoscope ships: assets/ (sample documents, fonts, the model zoo)
// and sessions/ (training configs). $MNEMO_ASSETS (the assets/ directory) first, then
// ./assets, then the source tree the program was built from; sessions/ sits beside assets/.
#pragma once
#include <string>

namespace mnemo::app {

// assets/<rel>, as an absolute path. InputError naming MNEMO_ASSETS when it is not found.
std::string find_asset(const std::string& rel);
// sessions/<name> (a shipped training or model config, e.g. "demo-memformer.json").
std::string find_session_config(const std::string& name);

}  // namespace mnemo::app

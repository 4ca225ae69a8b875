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

// The demo's model: the zoo Memformer kDemoModel (assets/models/NAME.safetensors) and the
// document it ships (assets/models/NAME.txt), on which its memory visibly works. False when
// either is missing (a checkout without the zoo): the demo then shows a random Memformer on
// assets/sample.txt and says so.
inline constexpr const char* kDemoModel = "memformer-two-facts-ft";
bool find_demo_model(std::string* checkpoint, std::string* document);

// The model `step`, `gui` and `eval --doc` open when no model flag is given, and the one
// `train --data PATH` fine-tunes: the zoo's Memformer language model trained on the general
// corpus (docs/zoo/memformer-general.md: six genres of English text with real line breaks),
// whose slots read a name back two segments after its first mention. find_text_model(): its
// path, or "" when the zoo is not there.
inline constexpr const char* kTextModel = "memformer-general";
// What it is, in the words `step`, `gui` and `eval --doc` print when they open it.
inline constexpr const char* kTextModelWhat =
    "a Memformer trained on six genres of English text with line breaks, whose slots read a name back from two "
    "segments earlier";
std::string find_text_model();

}  // namespace mnemo::app

#!/usr/bin/env bash
# Enforces the include directions of docs/architecture.md ("Layers"): nothing includes a
# layer above it. core -> kernels; core/data knows no model (core/data/segment.h is shared); viz -> core/trace types and core/errors.h only;
# app/figures -> viz, core; app/view -> app/figures, core; app/gui/model -> app/view, app/figures, core (headers without LibTorch);
# app/gui/panels -> model, widgets; app/gui/shell -> panels, model, platform;
# app/cli knows no command; only the command line (cli/, commands/, bench/) throws UsageError.
# Also: core prints nothing to stdout. A new upward include fails this test (ctest include_directions).
set -u
root="${1:-.}"
cd "$root" || exit 2
fail=0
# check DIR REGEX WHY [GREP_EXCLUDE_ARGS...]; $allow (a regex) lifts single lines.
allow='^$'
check() {
  local dir="$1" re="$2" why="$3" hits
  shift 3
  hits=$(grep -rnHE --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' "$@" "$re" "$dir" 2>/dev/null | grep -vE "$allow")
  if [[ -n "$hits" ]]; then echo "include direction violated ($why):"; echo "$hits"; fail=1; fi
}
inc='#include\s*[<"]'

check core    "$inc(app|viz|families/[^/]+/view)/" "core must not include app/, viz/ or a family's view part"
check core    "$inc(imgui|GLFW|GL/)" "core knows no screen"
check core    '(std::cout|\bprintf\(|\bputs\()' "core prints nothing to stdout"
check core/data "$inc"'core/(models|nn|train|engine)/' "core/data knows no model: tasks hand models SegmentInput and TaskHead (core/data/segment.h)"
check kernels "$inc(core|app|viz|torch|ATen|c10)/" "kernels know no LibTorch module nor core"
check viz     "$inc(app/|imgui|GLFW|GL/|torch/|ATen/)" "viz knows no window and no LibTorch"
check viz     "$inc"'core/(data|nn|models|train|engine|io)/' "viz may include core/trace types and core/errors.h only"

# app/figures: no ImGui, no command line, no GUI; LibTorch only in extract.*
check app/figures "$inc(imgui|GLFW|GL/|app/cli|app/commands|app/bench|app/gui)" "figures know no window, command line or GUI"
figure_heavy='(torch/|ATen/|c10/|core/engine/|core/nn/|core/models/(model|factory|memformer|rmt|transformer_xl|decoder_lm)\.h|families/[^/]+/core/model\.h|core/trace/(tracer|analysis|hash_stats)\.h|app/figures/trace_read\.h)'
check app/figures "$inc$figure_heavy" \
  "figure builders take StepData, not tensors (only app/figures/extract.* reads a Snapshot)" --exclude='extract.*' --exclude='trace_read.h'

# A model family in a folder of its own (families/<name>/, docs/architecture.md#adding-a-model):
# its core/ part (model, trace keys, core entry) obeys core's rules; its view/ part (view entry,
# StepData part, figures, extractor) those of app/figures, LibTorch only in its extract.cpp.
for d in families/*/core; do
  [[ -d "$d" ]] || continue
  check "$d" "$inc(app|viz|families/[^/]+/view)/" "a family's core part must not include app/, viz/ or a view part"
  check "$d" "$inc(imgui|GLFW|GL/)" "a family's core part knows no screen"
  check "$d" '(std::cout|\bprintf\(|\bputs\(|UsageError)' "a family's core part prints nothing to stdout and throws no UsageError"
  for f in "$d/family.h" "$d/keys.h"; do
    check "$f" "$inc"'(torch/|ATen/|c10/|core/engine/|core/nn/|core/train/|core/models/model\.h)' \
      "a family's entry and keys are plain C++ (the fuzzed config parser includes them)"
  done
done
for d in families/*/view; do
  [[ -d "$d" ]] || continue
  check "$d" "$inc(imgui|GLFW|GL/|app/cli|app/commands|app/bench|app/gui|app/view)" "a family's view part knows no window, command line, GUI or publisher"
  check "$d" "$inc$figure_heavy" "a family's figures take StepData, not tensors (only its extract.cpp reads a Snapshot)" --exclude='extract.cpp'
  check "$d" 'throw UsageError' "UsageError belongs to the command line"
done

# app/gui/model: no ImGui; its headers compile without LibTorch; it knows no panel, shell or platform.
check app/gui/model "$inc(imgui|GLFW|GL/|app/gui/(panels|shell|platform)/|app/cli|app/commands|app/bench)" \
  "the GUI's model layer knows no ImGui, panel, shell, platform or command line"
heavy='(torch/|ATen/|c10/|core/engine/|core/nn/(attention|hashed_linear|linear|torch_compat)\.h|core/io/(session|safetensors)\.h|core/models/(model|factory|memformer|rmt|transformer_xl|decoder_lm)\.h|families/[^/]+/core/model\.h|app/figures/trace_read\.h|core/trace/(tracer|analysis|hash_stats)\.h|core/train/(trainer|training_run|recorder|checkpoint|rollout|optim|metrics|memory_stats|hash_probe|lm_metrics|schedule)\.h|app/figures/extract\.h)'
check app/gui/model "$inc$heavy" "the GUI's model headers compile without LibTorch" --include='*.h' --exclude='*.cpp'
# app/view: a step's way to the screen, shared by the app and the headless commands: no ImGui, no
# GUI, no command line; its headers compile without LibTorch.
check app/view "$inc(imgui|GLFW|GL/|app/gui/|app/cli|app/commands|app/bench)" "the step-to-view layer knows no GUI or command line"
check app/view "$inc$heavy" "the view layer's headers compile without LibTorch" --include='*.h' --exclude='*.cpp'
# The commands draw a step through app/view; only the command that opens the app includes app/gui.
check app/commands "$inc"'app/gui/' "a command includes nothing of app/gui (but gui.cpp / gui.h, which open the app)" \
  --exclude='gui.cpp' --exclude='gui.h'
# Panels, widgets, shell, platform and the app's entry compile without LibTorch (CMake target mnemo_gui_ui).
for d in app/gui/panels app/gui/shell app/gui/platform app/gui/app.cpp app/gui/app.h; do
  check "$d" "$inc$heavy" "the desktop app's UI compiles without LibTorch"
done
check app/gui/panels   "$inc(app/gui/(shell|platform)/|app/cli|app/commands|app/bench)" "panels know no shell, platform or command line"
check app/gui/shell    "$inc(app/cli|app/commands|app/bench)" "the shell knows no command line"
# (It implements the panels' texture interface, widgets/texture.h, for OpenGL.)
allow='#include "app/gui/panels/widgets/texture.h"'
check app/gui/platform "$inc(app/gui/(model|shell|panels)/|app/figures|app/cli|app/commands|app/bench|core/)" \
  "the platform layer knows nothing of the app above it (but the texture interface it implements)"
allow='^$'
check app/cli          "$inc(app/commands|app/bench|app/gui)" "app/cli knows no command"
check app/figures      'throw UsageError' "UsageError belongs to the command line"
check app/gui          'throw UsageError' "UsageError belongs to the command line"
check core             'UsageError' "UsageError belongs to the command line"
# The loaders' plain layers are built with clang's sanitizers for fuzzing (fuzz/CMakeLists.txt):
# they and what they include compile without LibTorch.
plain_heavy='(torch/|ATen/|c10/|core/engine/|core/train/checkpoint\.h|core/nn/(attention|hashed_linear|linear|torch_compat)\.h|core/io/(session|safetensors)\.h|core/data/(segmenter|tasks)\.h|core/train/(trainer|recorder)\.h)'
for f in core/io/atomic_file core/io/config_fields core/io/framed_log core/io/read_file core/models/capabilities core/models/family core/io/json_file core/io/safetensors_header core/io/session_manifest core/models/config \
         core/data/document core/data/tokenizer core/train/recording_layout core/platform/memory \
         app/gui/model/tour; do
  check "$f.h" "$inc$plain_heavy" "fuzzed plain layers compile without LibTorch (docs/reliability.md#fuzzing)"
  check "$f.cpp" "$inc$plain_heavy" "fuzzed plain layers compile without LibTorch (docs/reliability.md#fuzzing)"
done
check app/gui/model/zoo_catalog.h "$inc$plain_heavy" "fuzzed plain layers compile without LibTorch (docs/reliability.md#fuzzing)"
# One path from a step to the screen (docs/architecture.md#data-flow): only the publisher turns a
# Snapshot into StepData; live stepping, replay, the gallery and the commands call publish_step.
check app 'make_step_data\(' "only app/view/publisher.cpp builds StepData (call publish_step)" \
  --exclude='extract.cpp' --exclude='extract.h' --exclude='publisher.cpp'
# Models say what they can do (core/models/capabilities.h): only the factory, config parsing and
# the family registry (core/models/family.cpp) name model kinds in comparisons.
check app '[!=]= *"(memformer|rmt|rmt-write-only|trxl|trxl-rmt|transformer|mtn|mtn-naive|no-memory)"' \
  "compare capabilities (core/models/capabilities.h), not model-kind strings"
check families '[!=]= *"(memformer|rmt|rmt-write-only|trxl|trxl-rmt|transformer|mtn|mtn-naive|no-memory)"' \
  "compare capabilities (core/models/capabilities.h), not model-kind strings"
check core '[!=]= *"(memformer|rmt|rmt-write-only|trxl|trxl-rmt|transformer|mtn|mtn-naive|no-memory)"' \
  "compare capabilities (core/models/capabilities.h), not model-kind strings" \
  --exclude='factory.cpp' --exclude='config.cpp' --exclude='config.h' --exclude='family.cpp'
if ((fail)); then exit 1; fi
echo "include directions OK"

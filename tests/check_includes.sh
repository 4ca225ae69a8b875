#!/usr/bin/env bash
# Enforces DESIGN §1 include directions: app -> viz, core; viz -> core/trace (types only);
# core -> kernels; kernels -> CUDA runtime only. Also: core prints nothing to stdout.
set -u
root="${1:-.}"
cd "$root" || exit 2
fail=0
check() {  # check DIR REGEX WHY [EXCLUDE_DIR]
  local hits
  hits=$(grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' "$2" "$1" ${4:+--exclude-dir="$4"} 2>/dev/null)
  if [[ -n "$hits" ]]; then echo "include direction violated ($3):"; echo "$hits"; fail=1; fi
}
check core    '#include\s*[<"](app|viz)/' "core must not include app/ or viz/"
check core    '#include\s*[<"](imgui|GLFW|GL/)' "core knows no screen"
check core    '(std::cout|\bprintf\(|\bputs\()' "core prints nothing to stdout"
check kernels '#include\s*[<"](core|app|viz|torch|ATen|c10)/' "kernels know no LibTorch module nor core"
check viz     '#include\s*[<"](app/|imgui|GLFW|GL/|torch/|ATen/)' "viz knows no window and no LibTorch" ui
check viz     '#include\s*[<"]core/(data|nn|models|train|engine|io)/' "viz may include core/trace types only" ui
check viz/ui  '#include\s*[<"](app/|GLFW)' "viz/ui draws with ImGui but knows no window"
if ((fail)); then exit 1; fi
echo "include directions OK"

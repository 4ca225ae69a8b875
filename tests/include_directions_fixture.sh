#!/usr/bin/env bash
# Checks the include check's rules for a family in a folder of its own (families/<name>/,
# docs/architecture.md#adding-a-model) on a fixture tree: a clean family passes, and each
# upward include fails naming its file. Usage: include_directions_fixture.sh CHECK_INCLUDES.SH
set -u
check="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
mk() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" >> "$tmp/$1"; }
run() { out=$(bash "$check" "$tmp" 2>&1); rc=$?; }

# A clean family: its core part includes core, its view part app/figures and its own core.
mk core/models/family.cpp '#include "families/FAM/core/family.h"'
mk families/FAM/core/family.h '#include "core/models/family.h"'
mk families/FAM/core/keys.h '#pragma once'
mk families/FAM/core/model.h '#include "core/nn/attention.h"'
mk families/FAM/view/entry.h '#include "app/figures/families.h"'
mk families/FAM/view/figures.h '#include "families/FAM/view/step_data.h"'
mk families/FAM/view/extract.cpp '#include "core/engine/engine.h"'
run
if ((rc != 0)); then echo "a clean family fails the check (rc $rc):"; echo "$out"; fail=1; fi

# Each violation alone: FILE LINE EXPECTED-MESSAGE-FRAGMENT
while IFS='|' read -r file line want; do
  cp -r "$tmp" "$tmp.bak"
  mk "$file" "$line"
  run
  if ((rc == 0)) || ! grep -qF "$want" <<<"$out" || ! grep -qF "$file" <<<"$out"; then
    echo "not caught: $file: $line (rc $rc, want '$want'):"; echo "$out"; fail=1
  fi
  rm -rf "$tmp"; mv "$tmp.bak" "$tmp"
done <<'CASES'
families/FAM/core/model.h|#include "app/figures/step_data.h"|a family's core part must not include app/
families/FAM/core/model.cpp|#include "families/FAM/view/entry.h"|a family's core part must not include app/
families/FAM/core/family.h|#include "core/nn/linear.h"|a family's entry and keys are plain C++
families/FAM/core/keys.h|#include <torch/torch.h>|a family's entry and keys are plain C++
families/FAM/view/figures.h|#include "core/engine/engine.h"|a family's figures take StepData, not tensors
families/FAM/view/entry.h|#include "app/gui/panels/panels.h"|a family's view part knows no window
families/FAM/view/figures.cpp|#include "app/view/publisher.h"|a family's view part knows no window
core/models/family.cpp|#include "families/FAM/view/entry.h"|core must not include app/, viz/ or a family's view part
app/figures/figures.cpp|#include "families/FAM/core/model.h"|figure builders take StepData, not tensors
families/FAM/view/entry.h|if (kind == "mtn") {}|compare capabilities
CASES
if ((fail)); then exit 1; fi
echo "include_directions_fixture: the families' rules hold on the fixture"

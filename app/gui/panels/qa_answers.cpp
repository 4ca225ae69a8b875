// The QA answers of an mtn-qa step (docs/gui.md#mtn-qa), a section of the MTN memory panel:
// the question the chunk asks and its candidates ranked by mean P(answer) over their bytes
// (app/figures/qa.h; what `mtn-qa` and eval's choice accuracy pick by), each with its share of
// the candidates' sum. Hover a candidate for the exact values and each byte's P(answer).
#include "app/gui/panels/panels.h"

#include "app/figures/figures.h"
#include "app/gui/panels/widgets/widgets.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace mnemo::app {

namespace {

constexpr size_t kShownAnswers = 5;  // the top answers; the tooltip of the last row names the rest

void candidate_tooltip(const QaAnswers& a, size_t c, const StepData& st, const Document& doc) {
  const QaCandidate& k = a.candidates[c];
  ImGui::BeginTooltip();
  ImGui::Text("'%s' (tokens %lld..%lld), listed %zu of %zu", k.text.c_str(), static_cast<long long>(k.first),
              static_cast<long long>(k.end - 1), c + 1, a.candidates.size());
  ImGui::Text("mean P(answer) %.6f over its %lld bytes", k.mean_prob, static_cast<long long>(k.end - k.first));
  ImGui::Text("share of the candidates' sum %.6f", k.share);
  for (int64_t t = k.first; t < k.end; ++t)
    ImGui::Text("  '%s'  P(answer) %.6f", token_text(doc, t).c_str(),
                st.mtn.qa_answer_prob[static_cast<size_t>(t - st.first_token)]);
  ImGui::TextDisabled(static_cast<int64_t>(c) == a.picked ? "the model's answer (largest mean)" : "not the model's answer");
  ImGui::EndTooltip();
}

}  // namespace

void draw_qa_answers(const QaAnswers& a, const StepData& st, const Document& doc) {
  if (st.mtn.qa_answer_prob.empty()) return;
  if (!a.question) {
    ImGui::TextDisabled("QA head: no question ('where does <name> live? <cities>') in this chunk");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("This model tags answer bytes (trained on the qa task). A chunk that asks the task's question\n"
                        "shows its cities ranked by mean P(answer); hover a chunk token in the document for its own.");
    return;
  }
  const QaCandidate& best = a.candidates[static_cast<size_t>(a.picked)];
  ImGui::Text("where does %s live?  answer: %s", a.name.c_str(), best.text.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("(mean P(answer) of each city's bytes; share = of their sum)");
  const float h = ImGui::GetTextLineHeight();
  const float name_w = ImGui::GetFontSize() * 6.f;
  const size_t shown = std::min(kShownAnswers, a.ranked.size());
  for (size_t r = 0; r < shown; ++r) {
    const size_t c = a.ranked[r];
    const QaCandidate& k = a.candidates[c];
    ImGui::PushID(static_cast<int>(c));
    ImGui::BeginGroup();
    ImGui::TextUnformatted(k.text.c_str());
    ImGui::SameLine(name_w);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f   share %.3f", k.mean_prob, k.share);
    ui::inline_bar(static_cast<float>(k.mean_prob),
                   static_cast<int64_t>(c) == a.picked ? IM_COL32(214, 39, 140, 220) : IM_COL32(150, 150, 150, 200), h, buf);
    ImGui::EndGroup();
    if (ImGui::IsItemHovered()) candidate_tooltip(a, c, st, doc);
    ImGui::PopID();
  }
  if (a.ranked.size() > shown)
    ImGui::TextDisabled("%zu more candidate%s, each below %.3f", a.ranked.size() - shown,
                        a.ranked.size() - shown == 1 ? "" : "s", a.candidates[a.ranked[shown - 1]].mean_prob);
}

}  // namespace mnemo::app

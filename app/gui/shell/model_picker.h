// File > Open model...: the model zoo (assets/models, docs/zoo/README.md) as a list of
// trained models with each card's one-line summary. Opening one rebuilds the model from the
// file's own config and weights (Controller::apply_model) and, when the model ships a
// document (assets/models/NAME.txt), opens it too, unless "Keep the open document" is ticked.
// Any other weights file (a `train` checkpoint, export-weights) can be typed in as a path.
#pragma once
#include "app/gui/model/controller.h"
#include "app/gui/model/zoo_catalog.h"

#include <string>
#include <vector>

namespace mnemo::app {

class ModelPicker {
 public:
  void set_zoo(std::vector<ZooModel> zoo, std::string dir) {
    zoo_ = std::move(zoo);
    dir_ = std::move(dir);
  }
  const std::vector<ZooModel>& zoo() const { return zoo_; }
  // Draws the popup's contents; call between BeginPopupModal/EndPopup. Returns true when the
  // popup should close (a model was opened, or Cancel/Escape).
  // current: the model now shown (used for a weights file that carries no config); may be null.
  // open_doc: the path of the document now open ("" none): a zoo model's episode replaces it
  // unless the user ticks "Keep the open document".
  bool draw(Controller& control, float width, const ModelConfig* current, const std::string& open_doc = "");
  void reset() { selected_ = zoo_.empty() ? -1 : 0; path_.clear(); }
  // What the Open button does: the typed path if any, else the selected zoo model (with its
  // document). False when there is nothing to open.
  bool open_selected(Controller& control);
  void select(int index) { selected_ = index; }
  void set_path(const std::string& path) { path_ = path; }
  // Keep the open document when a zoo model with an episode of its own is opened (the
  // checkbox); off by default: a model's episode is what its card describes.
  void set_keep_document(bool keep) { keep_document_ = keep; }
  bool keep_document() const { return keep_document_; }

 private:
  void open(const std::string& checkpoint, const std::string& document, Controller& control);
  std::vector<ZooModel> zoo_;
  std::string dir_;
  int selected_ = -1;
  std::string path_;
  ModelConfig current_;
  bool keep_document_ = false;
};

}  // namespace mnemo::app

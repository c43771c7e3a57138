// SPDX-License-Identifier: BSD-3-Clause
// finecast-export of the full build: the module, and for ICON checkpoints the grid tables a caller
// needs to apply it without finecast (plugin/export/grid_tables.hpp, docs/export.md).
#include <string>

#include "plugin/export/grid_tables.hpp"
#include "trainer/export/export_command.hpp"

namespace {

/// --grid, --geometry and --no-grid; the grid tables as the submodule grid_tables.
class GridTablesExtension : public finecast::trainer::ExportExtension {
 public:
  void add_flags(CLI::App& app) override {
    app.add_option("--grid", options_.grid,
                   "ICON: the fine grid file for the grid tables (default: the checkpoint's grid.file)");
    app.add_option("--geometry", options_.geometry,
                   "ICON: the cells' coordinates, file | uniform (default: the checkpoint's grid.geometry)")
        ->check(CLI::IsMember({"file", "uniform"}));
    app.add_flag("--no-grid", options_.none, "write the module alone, without the grid tables");
  }
  std::string extend(const std::string& path, const finecast::trainer::Downscaler& model,
                     finecast::trainer::ExportOptions& options) override {
    std::string note;
    if (auto tables = finecast::plugin::grid_tables(path, model.model_options(), options_, note))
      options.submodules.push_back(std::move(*tables));
    return note;
  }

 private:
  finecast::plugin::GridTableOptions options_;
};

}  // namespace

int main(int argc, char** argv) {
  GridTablesExtension tables;
  return finecast::trainer::export_main(argc, argv, &tables);
}

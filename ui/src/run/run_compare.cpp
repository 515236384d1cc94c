// The run panel's comparison: a second run from the history drawn over the shown one.
#include <algorithm>
#include <fstream>

#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run/run_panel_text.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

bool RunPanel::overlayRun(const fs::path& folder, QString* error) {
    if (folder == shownFolder()) {
        if (error) *error = "that is the run already shown; choose another one to compare";
        return false;
    }
    auto l = loadRun(folder, error);
    if (!l) return false;
    overlay_ = std::move(l);
    refresh(true);
    return true;
}

void RunPanel::clearOverlay() {
    overlay_.reset();
    refresh(true);
}

}  // namespace wingspan::ui

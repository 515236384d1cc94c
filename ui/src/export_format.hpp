#pragma once
// One place that turns "paint this into a file" into a PNG, SVG or PDF, chosen by the file's
// suffix, with the export's size, DPI and background checked the same way everywhere. The
// run panel's chart exports use it; the planner's export_chart (export.cpp) can too.
// Private to ui/src.
#include <functional>

#include <QColor>
#include <QRectF>
#include <QString>

#include "wingspan/ui/export.hpp"

class QPaintDevice;

namespace wingspan::ui {

// Paints onto `device`, filling `target` (device pixels). False when it could not paint.
using PaintInto = std::function<bool(QPaintDevice* device, const QRectF& target)>;

// Writes `path` in the format its suffix names (.png, .svg, .pdf) at options' pixel size and
// DPI: PNG filled with `background` first, SVG and PDF as vectors titled `title`. False with
// a message for a bad size/DPI, an unknown suffix or a file that cannot be written.
bool paint_to_image_file(const QString& path, const ImageOptions& options, const QString& title,
                         const QColor& background, const PaintInto& paint, QString* error = nullptr);

}  // namespace wingspan::ui

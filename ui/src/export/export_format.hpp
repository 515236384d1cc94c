#pragma once
// One place that turns "paint this into a file" into a PNG, SVG or PDF, chosen by the file's
// suffix, with the export's size, DPI and background checked the same way everywhere. The
// run panel's chart exports use it; the planner's export_chart (export.cpp) can too.
// Private to ui/src.
#include <functional>

#include <QByteArray>
#include <QColor>
#include <QRectF>
#include <QString>

class QPaintDevice;

namespace wingspan::ui {

struct ImageOptions;   // export.hpp's; not included, since export.cpp includes this file

// Paints onto `device`, filling `target` (device pixels). False when it could not paint.
using PaintInto = std::function<bool(QPaintDevice* device, const QRectF& target)>;

// Encodes what `paint` draws as the format `suffix` names (png, svg, pdf) in memory; false with
// a message when it could not paint or the suffix is unknown.
bool encode_image(const QString& suffix, const ImageOptions& options, const QString& title, const QColor& background,
                  const std::function<bool(QPaintDevice*, const QRectF&)>& paint, QByteArray* bytes,
                  QString* error = nullptr);

// Writes `path` in the format its suffix names (.png, .svg, .pdf) at options' pixel size and
// DPI: PNG filled with `background` first, SVG and PDF as vectors titled `title`. False with
// a message for a bad size/DPI, an unknown suffix or a file that cannot be written (the
// image is encoded in memory, then written by write_export_file).
bool paint_to_image_file(const QString& path, const ImageOptions& options, const QString& title,
                         const QColor& background, const PaintInto& paint, QString* error = nullptr);

}  // namespace wingspan::ui

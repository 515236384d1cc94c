// The format dispatch of every image export (see export_format.hpp).
#include "export_format.hpp"

#include <cmath>

#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

namespace wingspan::ui {

bool paint_to_image_file(const QString& path, const ImageOptions& o, const QString& title, const QColor& background,
                         const PaintInto& paint, QString* error) {
    auto fail = [&](const QString& m) {
        if (error) *error = m;
        return false;
    };
    if (o.width < 16 || o.height < 16 || o.width > 20000 || o.height > 20000 || o.dpi < 24 || o.dpi > 1200)
        return fail("image size must be 16–20000 pixels and DPI 24–1200");
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == "png") {
        QImage img(o.width, o.height, QImage::Format_ARGB32_Premultiplied);
        const int dpm = int(std::lround(o.dpi / 0.0254));
        img.setDotsPerMeterX(dpm);
        img.setDotsPerMeterY(dpm);
        img.fill(background);
        if (!paint(&img, QRectF(0, 0, o.width, o.height)) || !img.save(path, "PNG")) return fail("cannot write " + path);
        return true;
    }
    if (suffix == "svg") {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(QSize(o.width, o.height));
        gen.setViewBox(QRect(0, 0, o.width, o.height));
        gen.setResolution(int(std::lround(o.dpi)));
        gen.setTitle(title);
        if (!paint(&gen, QRectF(0, 0, o.width, o.height))) return fail("cannot write " + path);
        return QFileInfo::exists(path) || fail("cannot write " + path);
    }
    if (suffix == "pdf") {
        QPdfWriter pdf(path);
        pdf.setTitle(title);
        pdf.setCreator("Wingspan");
        pdf.setResolution(int(std::lround(o.dpi)));
        pdf.setPageSize(QPageSize(QSizeF(o.width * 72.0 / o.dpi, o.height * 72.0 / o.dpi), QPageSize::Point, QString(),
                                  QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        if (!paint(&pdf, QRectF(0, 0, pdf.width(), pdf.height()))) return fail("cannot write " + path);
        return true;
    }
    return fail("unknown chart format '" + suffix + "' (use .png, .svg or .pdf)");
}

}  // namespace wingspan::ui

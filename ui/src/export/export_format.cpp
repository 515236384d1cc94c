// The format dispatch of every image export, and the one writer of every export file (see
// export_format.hpp).
#include "export/export_format.hpp"

#include <cmath>

#include <QBuffer>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

#include "wingspan/errors.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/ui/export.hpp"

namespace wingspan::ui {

bool write_export_file(const QString& path, const QByteArray& bytes, QString* error) {
    try {
        write_file_atomically(path.toStdString(), std::string_view(bytes.constData(), size_t(bytes.size())));
    } catch (const std::exception& e) {   // IoError: the disk is full, the folder is read-only, ...
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

bool encode_image(const QString& suffix, const ImageOptions& o, const QString& title, const QColor& background,
                  const std::function<bool(QPaintDevice*, const QRectF&)>& paint, QByteArray* bytes, QString* error) {
    auto fail = [&](const QString& m) {
        if (error) *error = m;
        return false;
    };
    bytes->clear();
    QBuffer buffer(bytes);
    buffer.open(QIODevice::WriteOnly);
    if (suffix == "png") {
        QImage img(o.width, o.height, QImage::Format_ARGB32_Premultiplied);
        const int dpm = int(std::lround(o.dpi / 0.0254));
        img.setDotsPerMeterX(dpm);
        img.setDotsPerMeterY(dpm);
        img.fill(background);
        if (!paint(&img, QRectF(0, 0, o.width, o.height)) || !img.save(&buffer, "PNG")) return fail("cannot draw the PNG");
        return true;
    }
    if (suffix == "svg") {
        QSvgGenerator gen;
        gen.setOutputDevice(&buffer);
        gen.setSize(QSize(o.width, o.height));
        gen.setViewBox(QRect(0, 0, o.width, o.height));
        gen.setResolution(int(std::lround(o.dpi)));
        gen.setTitle(title);
        if (!paint(&gen, QRectF(0, 0, o.width, o.height))) return fail("cannot draw the SVG");
        return true;   // the generator has written everything once its painter ended
    }
    if (suffix == "pdf") {
        {
            QPdfWriter pdf(&buffer);
            pdf.setTitle(title);
            pdf.setCreator("Wingspan");
            pdf.setResolution(int(std::lround(o.dpi)));
            pdf.setPageSize(QPageSize(QSizeF(o.width * 72.0 / o.dpi, o.height * 72.0 / o.dpi), QPageSize::Point,
                                      QString(), QPageSize::ExactMatch));
            pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
            if (!paint(&pdf, QRectF(0, 0, pdf.width(), pdf.height()))) return fail("cannot draw the PDF");
        }
        return !bytes->isEmpty() || fail("cannot draw the PDF");
    }
    return fail("unknown chart format '" + suffix + "' (use .png, .svg or .pdf)");
}

bool paint_to_image_file(const QString& path, const ImageOptions& o, const QString& title, const QColor& background,
                         const PaintInto& paint, QString* error) {
    if (o.width < 16 || o.height < 16 || o.width > 20000 || o.height > 20000 || o.dpi < 24 || o.dpi > 1200) {
        if (error) *error = "image size must be 16–20000 pixels and DPI 24–1200";
        return false;
    }
    QByteArray bytes;
    QString why;
    if (!encode_image(QFileInfo(path).suffix().toLower(), o, title, background, paint, &bytes, &why)) {
        if (error) *error = why.startsWith("unknown") ? why : "cannot write " + path + ": " + why;
        return false;
    }
    return write_export_file(path, bytes, error);
}

}  // namespace wingspan::ui

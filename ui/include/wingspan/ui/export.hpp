#pragma once
// Exports for course material: charts to PNG/SVG/PDF, tables to CSV/Markdown, the lessons'
// "course pack", and the headless `wingspan export` command. The same Qt Charts chart
// (MemoryQChart) draws the window and every file.
#include <QByteArray>
#include <QImage>
#include <QString>
#include <QStringList>

#include "wingspan/ui/chart.hpp"
#include "wingspan/plan.hpp"

class QTextStream;
class QWidget;

namespace wingspan::ui {

// Machine-readable output (CSV, JSON, YAML and Python recipes, Markdown numbers, run records)
// is always written in the C locale; only labels on screen follow the user's (through QLocale,
// which reads the environment itself). Qt sets the process's C locale from the environment
// when the application object is made (setlocale(LC_ALL, "")), which would turn every
// printf-style number core writes into "0,0002" under a comma-decimal locale: called right
// after the QApplication is constructed, this puts numbers back to the C locale.
void use_c_locale_for_numbers();

struct ImageOptions {
    int width = 1600;     // pixels (PDF: points at `dpi`)
    int height = 900;
    double dpi = 144;     // text and lines scale with dpi / 96
    bool dark = false;
};

// Every export's file goes through here: core's atomic writer (a temporary in the same folder,
// every write and the close checked, then a rename), so a full disk leaves the old file whole
// and answers false with the reason.
bool write_export_file(const QString& path, const QByteArray& bytes, QString* error = nullptr);

// Renders into an image of exactly width × height pixels.
QImage render_chart(const ChartData& data, const ImageOptions& options);
// What render_chart would cut (elide) at these options; empty when every text shows whole.
QStringList chart_cut_texts(const ChartData& data, const ImageOptions& options);
// The texts such an image draws over each other, as "a | b" pairs: none on a slide.
QStringList chart_overlapping_texts(const ChartData& data, const ImageOptions& options);
// Format from the suffix: .png, .svg, .pdf. Returns false with a message on failure.
bool export_chart(const ChartData& data, const QString& path, const ImageOptions& options, QString* error = nullptr);
// A widget as drawn on screen (the which-machine grid) to .png, .svg or .pdf; PNG at
// options' size is the widget scaled to fit, SVG and PDF keep text and lines as vectors.
bool export_widget(QWidget* widget, const QString& path, const ImageOptions& options, QString* error = nullptr);
// Format from the suffix: .csv (exact numbers), .md / .markdown (rounded, as in the lessons).
bool export_table(const Table& table, const QString& path, QString* error = nullptr);

// The chart's series as a table: one row per bar, bytes per component (exact), the total,
// the ceiling, the margin and the verdict.
Table chart_table(const ChartData& data);

struct ExportResult {
    QStringList files;
    QStringList errors;
    bool ok() const { return errors.isEmpty(); }
};

// formats: any of png, svg, pdf (charts) and csv, md (tables).
ExportResult export_plan(const ProfileLibrary& lib, const Plan& plan, const QString& dir, const QStringList& formats,
                         const ImageOptions& options, ByteUnit unit, const QString& prefix = "plan");
ExportResult export_scenario(const ProfileLibrary& lib, const std::string& scenario_id, const QString& dir,
                             const QStringList& formats, const ImageOptions& options, ByteUnit unit);
// Every lesson scenario (ids starting "lesson-"), the plan's charts and tables, and an
// index.md listing what was written.
ExportResult export_course_pack(const ProfileLibrary& lib, const Plan& plan, const QString& dir,
                                const QStringList& formats, const ImageOptions& options, ByteUnit unit);

// Charts a scenario draws (verdict grids and machine winners: a machine chart per case;
// size tables: one grouped chart). Empty for table-only kinds.
std::vector<std::pair<QString, ChartData>> scenario_charts(const ProfileLibrary& lib, const nlohmann::json& scenario,
                                                           ByteUnit unit);

// `wingspan export --scenario ID|--plan FILE|--course-pack --out DIR --format png,svg,pdf,csv`
// Needs a QGuiApplication (offscreen is fine). Exit codes as the CLI: 0, 2 bad input, 1 failure.
int run_export_command(const QStringList& args, QTextStream& out, QTextStream& err, const QString& executable);

}  // namespace wingspan::ui

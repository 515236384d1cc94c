#include "wingspan/ui/export.hpp"

#include <clocale>
#include <locale>

#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QPixmap>
#include <QTextStream>
#include <QWidget>

#include "wingspan/errors.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/ui/memory_qchart.hpp"
#include "export/export_format.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

void set_error(QString* error, const QString& message) {
    if (error) *error = message;
}

ChartStyle style_for(const ImageOptions& o) {
    ChartStyle st = o.dark ? ChartStyle::dark() : ChartStyle::light();
    st.font_family = "DejaVu Sans";
    return st;
}

// Paints at a logical size of (width, height) × 96 / dpi, scaled up to the device.
void paint_scaled(QPainter& p, const ChartData& d, const ImageOptions& o, double device_w, double device_h) {
    const double s = o.dpi / 96.0;
    render_memory_chart(p, QRectF(0, 0, device_w, device_h), QSizeF(device_w / s, device_h / s), d, style_for(o));
}

QString slug(const QString& text) {
    QString out;
    for (QChar c : text.toLower()) {
        if (c.isLetterOrNumber()) out += c;
        else if (!out.endsWith('-')) out += '-';
    }
    while (out.endsWith('-')) out.chop(1);
    return out.left(48);
}

bool write_text(const QString& path, const QString& text, QString* error) {
    return write_export_file(path, text.toUtf8(), error);
}

// Writes the chart in every chart format asked for, the table in every table format.
void write_outputs(ExportResult& r, const QString& dir, const QString& base, const ChartData* chart, const Table* table,
                   const QStringList& formats, const ImageOptions& o) {
    for (const QString& f : formats) {
        const bool chart_format = f == "png" || f == "svg" || f == "pdf";
        const bool table_format = f == "csv" || f == "md";
        QString error;
        if (chart_format && chart) {
            const QString path = QDir(dir).filePath(base + "." + f);
            if (export_chart(*chart, path, o, &error)) r.files << path;
            else r.errors << error;
        } else if (table_format && table) {
            const QString path = QDir(dir).filePath(base + "." + f);
            if (export_table(*table, path, &error)) r.files << path;
            else r.errors << error;
        }
    }
}

nlohmann::json merged_setup(const nlohmann::json& scenario, const nlohmann::json& item) {
    nlohmann::json merged = scenario.value("defaults", nlohmann::json::object());
    if (item.contains("setup") && item["setup"].is_object())
        for (auto& [k, v] : item["setup"].items()) merged[k] = v;
    return merged;
}

Plan scenario_plan(const nlohmann::json& scenario, const nlohmann::json& item) {
    Plan p;
    p.model.model_id = item.at("model").get<std::string>();
    p.setup = TrainingSetup::from_json(merged_setup(scenario, item));
    p.machines.clear();
    for (const auto& m : scenario.value("machines", nlohmann::json::array())) p.machines.push_back(m.get<std::string>());
    p.framework = scenario.value("framework", std::string());
    return p;
}

}  // namespace

void use_c_locale_for_numbers() {
    std::setlocale(LC_NUMERIC, "C");
    std::locale::global(std::locale::classic());   // streams too, whatever a library set before
}

QStringList chart_cut_texts(const ChartData& d, const ImageOptions& o) {
    const double s = o.dpi / 96.0;
    return cut_chart_texts(QSizeF(std::max(1, o.width) / s, std::max(1, o.height) / s), d, style_for(o));
}

QStringList chart_overlapping_texts(const ChartData& d, const ImageOptions& o) {
    const double s = o.dpi / 96.0;
    return overlapping_chart_texts(QSizeF(std::max(1, o.width) / s, std::max(1, o.height) / s), d, style_for(o));
}

QImage render_chart(const ChartData& d, const ImageOptions& o) {
    QImage img(std::max(1, o.width), std::max(1, o.height), QImage::Format_ARGB32_Premultiplied);
    const int dpm = int(std::lround(o.dpi / 0.0254));
    img.setDotsPerMeterX(dpm);
    img.setDotsPerMeterY(dpm);
    img.fill(style_for(o).background);
    QPainter p(&img);
    paint_scaled(p, d, o, img.width(), img.height());
    p.end();
    return img;
}

bool export_chart(const ChartData& d, const QString& path, const ImageOptions& o, QString* error) {
    // The format dispatch (PNG, SVG, PDF by suffix; size and DPI checks) is export_format.cpp's.
    return paint_to_image_file(
        path, o, d.title, style_for(o).background,
        [&](QPaintDevice* device, const QRectF& target) {
            QPainter p;
            if (!p.begin(device)) return false;
            paint_scaled(p, d, o, int(target.width()), int(target.height()));
            p.end();
            return true;
        },
        error);
}

bool export_widget(QWidget* w, const QString& path, const ImageOptions& o, QString* error) {
    if (!w) {
        set_error(error, "nothing to export");
        return false;
    }
    const QString suffix = QFileInfo(path).suffix().toLower();
    QByteArray bytes;
    QString why;
    bool ok = false;
    if (suffix == "png") {
        // The widget as on screen, scaled to the asked size.
        const QImage img = w->grab().toImage().scaled(o.width, o.height, Qt::KeepAspectRatio, Qt::SmoothTransformation);
        QBuffer buffer(&bytes);
        ok = buffer.open(QIODevice::WriteOnly) && img.save(&buffer, "PNG");
        if (!ok) why = "cannot draw the PNG";
    } else {
        // Vectors at the widget's own size (96 DPI: a pixel is 0.75 pt).
        ImageOptions at_size = o;
        at_size.width = w->width();
        at_size.height = w->height();
        at_size.dpi = 96;
        ok = encode_image(
            suffix, at_size, "Which machine trains what", Qt::transparent,
            [w](QPaintDevice* device, const QRectF&) {
                QPainter p;
                if (!p.begin(device)) return false;
                w->render(&p);
                p.end();
                return true;
            },
            &bytes, &why);
    }
    if (!ok) {
        set_error(error, why.startsWith("unknown") ? why : "cannot write " + path + ": " + why);
        return false;
    }
    return write_export_file(path, bytes, error);
}

bool export_table(const Table& t, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == "csv") return write_text(path, qs(t.to_csv(true)), error);
    if (suffix == "md" || suffix == "markdown") return write_text(path, qs(t.to_markdown()), error);
    set_error(error, "unknown table format '" + suffix + "' (use .csv or .md)");
    return false;
}

Table chart_table(const ChartData& d) {
    Table t;
    t.title = d.title.toStdString();
    t.caption = d.subtitle.toStdString();
    const auto legend = d.legend();
    bool grouped = false, offload = false, ceilings = false;
    for (const auto& b : d.bars) {
        grouped |= !b.group.isEmpty();
        ceilings |= b.ceiling.has_value();
        for (const auto& s : b.segments) offload |= !s.component;
    }
    const std::string unit = unit_name(d.unit);
    if (grouped) t.headers.push_back("Group");
    t.headers.push_back("Bar");
    for (Component c : legend) t.headers.push_back(std::string(component_label(c)) + " (bytes)");
    if (offload) t.headers.push_back("Offloaded, same pool (bytes)");
    t.headers.push_back("Total (bytes)");
    if (ceilings) {
        t.headers.push_back("Usable (bytes)");
        t.headers.push_back("Margin (bytes)");
        t.headers.push_back("Verdict");
    }
    for (const auto& b : d.bars) {
        std::vector<TableCell> row;
        if (grouped) row.push_back({b.group.toStdString(), {}, {}});
        row.push_back({b.label.toStdString(), {}, {}});
        auto cell = [&](double bytes) { return TableCell{format_bytes(bytes, d.unit, 2), bytes, {}}; };
        for (Component c : legend) {
            double bytes = 0;
            for (const auto& s : b.segments)
                if (s.component == c) bytes += double(s.bytes);
            row.push_back(cell(bytes));
        }
        if (offload) {
            double bytes = 0;
            for (const auto& s : b.segments)
                if (!s.component) bytes += double(s.bytes);
            row.push_back(cell(bytes));
        }
        row.push_back(cell(double(b.total)));
        if (ceilings) {
            row.push_back(b.ceiling ? cell(double(*b.ceiling)) : TableCell{"", {}, {}});
            row.push_back(b.ceiling ? cell(double(b.margin)) : TableCell{"", {}, {}});
            row.push_back({b.fit ? to_string(*b.fit) : "", {}, b.fit});
        }
        t.rows.push_back(std::move(row));
    }
    return t;
}

std::vector<std::pair<QString, ChartData>> scenario_charts(const ProfileLibrary& lib, const nlohmann::json& s, ByteUnit unit) {
    std::vector<std::pair<QString, ChartData>> out;
    const std::string kind = s.value("kind", std::string());
    auto machines_of = [&]() {
        std::vector<const MachineProfile*> ms;
        for (const auto& id : s.value("machines", nlohmann::json::array())) ms.push_back(&lib.machine(id.get<std::string>()));
        if (ms.empty())
            for (const char* id : {"rtx-4090", "mac-studio-m3-ultra-96gb"})
                for (const auto& m : lib.machines())
                    if (m.id == id) ms.push_back(&m);
        return ms;
    };
    const QString scenario_title = qs(s.value("title", s.value("id", std::string())));
    auto case_chart = [&](const nlohmann::json& item, const QString& label) {
        const Plan plan = scenario_plan(s, item);
        const Evaluation eval = evaluate_plan(lib, plan);
        ChartData c = machines_chart(eval, unit);
        if (eval.ok()) {
            c.title = scenario_title + (label.isEmpty() ? QString() : ": " + label);
            c.subtitle = qs(eval.model.name) + " · " + c.subtitle;
        }
        return c;
    };
    if (kind == "size_table") {
        out.emplace_back("", size_chart(lib, s, machines_of(), unit));
    } else if (kind == "verdict_grid") {
        int n = 0;
        for (const auto& r : s.at("rows")) {
            const QString label = qs(r.value("label", std::string()));
            out.emplace_back(QString::number(++n) + "-" + slug(label), case_chart(r, label));
        }
    } else if (kind == "machine_winners") {
        int n = 0;
        for (const auto& r : s.at("rows")) {
            if (!r.contains("cases")) continue;
            const QString label = qs(r.value("label", std::string()));
            int k = 0;
            for (const auto& c : r["cases"]) {
                ++k;
                out.emplace_back(QString::number(n + 1) + "-" + slug(label) + (r["cases"].size() > 1 ? "-" + QString::number(k) : ""),
                                 case_chart(c, label));
            }
            ++n;
        }
    }
    return out;
}

ExportResult export_plan(const ProfileLibrary& lib, const Plan& plan, const QString& dir, const QStringList& formats,
                         const ImageOptions& o, ByteUnit unit, const QString& prefix) {
    ExportResult r;
    if (!QDir().mkpath(dir)) {
        r.errors << "cannot create folder " + dir;
        return r;
    }
    const Evaluation eval = evaluate_plan(lib, plan);
    const ChartData machines = machines_chart(eval, unit);
    if (!eval.ok()) {
        r.errors << "the plan cannot be computed: " + qs(eval.error);
        return r;
    }
    const Table machine_t = machine_table(lib, plan, eval, unit);
    write_outputs(r, dir, prefix + "-machines", &machines, &machine_t, formats, o);
    const Table memory_t = chart_table(machines);
    write_outputs(r, dir, prefix + "-memory", nullptr, &memory_t, formats, o);
    const ChartData methods = methods_chart(lib, plan, eval, unit);
    const Table method_t = method_table(lib, plan, eval, unit);
    write_outputs(r, dir, prefix + "-methods", &methods, &method_t, formats, o);
    try {
        const nlohmann::json sizes_s = size_scenario(lib, plan);
        std::vector<const MachineProfile*> ms;
        for (const auto& v : eval.verdicts) ms.push_back(v.machine);
        const ChartData sizes = size_chart(lib, sizes_s, ms, unit);
        const Table size_t_ = build_table(lib, sizes_s, unit);
        write_outputs(r, dir, prefix + "-sizes", &sizes, &size_t_, formats, o);
    } catch (const std::exception& e) {
        r.errors << "sizes: " + qs(e.what());
    }
    return r;
}

ExportResult export_scenario(const ProfileLibrary& lib, const std::string& id, const QString& dir, const QStringList& formats,
                             const ImageOptions& o, ByteUnit unit) {
    ExportResult r;
    if (!QDir().mkpath(dir)) {
        r.errors << "cannot create folder " + dir;
        return r;
    }
    try {
        const nlohmann::json& s = lib.scenario(id);
        const Table t = build_table(lib, s, unit);
        write_outputs(r, dir, qs(id), nullptr, &t, formats, o);
        for (const auto& [suffix, chart] : scenario_charts(lib, s, unit))
            write_outputs(r, dir, suffix.isEmpty() ? qs(id) : qs(id) + "-" + suffix, &chart, nullptr, formats, o);
    } catch (const std::exception& e) {
        r.errors << qs(id) + ": " + qs(e.what());
    }
    return r;
}

ExportResult export_course_pack(const ProfileLibrary& lib, const Plan& plan, const QString& dir, const QStringList& formats,
                                const ImageOptions& o, ByteUnit unit) {
    ExportResult r;
    QString index = "# Wingspan course pack\n\nCharts and tables computed by Wingspan's memory model. " +
                    QString(unit == ByteUnit::GiB ? "GiB = 2^30 bytes." : "GB = 10^9 bytes.") + "\n\n";
    for (const auto& [id, s] : lib.scenarios()) {
        if (id.rfind("lesson-", 0) != 0) continue;
        ExportResult one = export_scenario(lib, id, dir, formats, o, unit);
        index += "## " + qs(s.value("title", id)) + "\n\n";
        for (const auto& f : one.files) index += "- [" + QFileInfo(f).fileName() + "](" + QFileInfo(f).fileName() + ")\n";
        index += "\n";
        r.files << one.files;
        r.errors << one.errors;
    }
    ExportResult mine = export_plan(lib, plan, dir, formats, o, unit, "plan");
    index += "## This plan\n\n";
    for (const auto& f : mine.files) index += "- [" + QFileInfo(f).fileName() + "](" + QFileInfo(f).fileName() + ")\n";
    r.files << mine.files;
    r.errors << mine.errors;
    const QString index_path = QDir(dir).filePath("index.md");
    QString error;
    if (write_text(index_path, index, &error)) r.files << index_path;
    else r.errors << error;
    return r;
}

// ------------------------------------------------------------------------ command ----

int run_export_command(const QStringList& args, QTextStream& out, QTextStream& err, const QString& executable) {
    static const char* kUsage =
        "usage: wingspan export (--scenario ID [--scenario ID ...] | --plan FILE | --course-pack) --out DIR\n"
        "                       [--format png,svg,pdf,csv,md] [--width PX] [--height PX] [--dpi N]\n"
        "                       [--unit GB|GiB] [--dark] [--profiles DIR]\n"
        "  --scenario all      every bundled scenario; `wingspan scenarios` lists them\n"
        "  --course-pack       the lessons' charts and tables, this plan's (--plan, else the lessons' example), index.md\n";
    QStringList scenarios, formats{"png", "svg", "pdf", "csv", "md"};
    QString plan_file, out_dir, profiles;
    bool course_pack = false;
    ImageOptions o;
    ByteUnit unit = ByteUnit::GB;
    auto fail = [&](const QString& message) {
        err << "wingspan export: " << message << "\n" << kUsage;
        err.flush();
        return 2;
    };
    for (int i = 0; i < args.size(); ++i) {
        QString a = args[i];
        QString value;
        const bool takes_value = a != "--course-pack" && a != "--dark" && a != "--help" && a != "-h";
        if (a.startsWith("--") && a.contains('=')) {
            value = a.section('=', 1);
            a = a.section('=', 0, 0);
        } else if (takes_value && a.startsWith("--")) {
            if (i + 1 >= args.size()) return fail("option " + a + " needs a value");
            value = args[++i];
        }
        bool ok = true;
        if (a == "--help" || a == "-h") {
            out << kUsage;
            return 0;
        } else if (a == "--scenario") scenarios << value.split(',', Qt::SkipEmptyParts);
        else if (a == "--plan") plan_file = value;
        else if (a == "--out") out_dir = value;
        else if (a == "--course-pack") course_pack = true;
        else if (a == "--dark") o.dark = true;
        else if (a == "--profiles") profiles = value;
        else if (a == "--format") formats = value.toLower().split(',', Qt::SkipEmptyParts);
        else if (a == "--width") o.width = value.toInt(&ok);
        else if (a == "--height") o.height = value.toInt(&ok);
        else if (a == "--dpi") o.dpi = value.toDouble(&ok);
        else if (a == "--unit") {
            if (value.compare("GB", Qt::CaseInsensitive) == 0) unit = ByteUnit::GB;
            else if (value.compare("GiB", Qt::CaseInsensitive) == 0) unit = ByteUnit::GiB;
            else return fail("--unit expects GB (10^9 bytes) or GiB (2^30 bytes), got '" + value + "'");
        } else return fail("unknown option '" + a + "'");
        if (!ok) return fail(a + " expects a number, got '" + value + "'");
    }
    for (auto& f : formats) {
        f = f.trimmed();
        if (f == "markdown") f = "md";
        if (f != "png" && f != "svg" && f != "pdf" && f != "csv" && f != "md")
            return fail("unknown format '" + f + "' (png, svg, pdf, csv, md)");
    }
    if (out_dir.isEmpty()) return fail("--out DIR is required");
    if (scenarios.isEmpty() && plan_file.isEmpty() && !course_pack) return fail("give --scenario ID, --plan FILE or --course-pack");
    if (o.width < 16 || o.height < 16 || o.width > 20000 || o.height > 20000 || o.dpi < 24 || o.dpi > 1200)
        return fail("--width/--height must be 16–20000 pixels and --dpi 24–1200");

    try {
        ProfileLibrary lib = ProfileLibrary::load(
            profiles.isEmpty() ? ProfileLibrary::default_dir(executable.toStdString())
                               : std::filesystem::path(profiles.toStdString()));
        lib.add_machine(detect_this_machine());
        try {
            lib.load_user_profiles(ProfileLibrary::user_dir());
        } catch (const std::exception& e) {
            err << "wingspan export: warning: your own profiles were skipped: " << e.what() << "\n";
        }
        ExportResult all;
        std::optional<Plan> plan;
        if (!plan_file.isEmpty()) plan = read_plan_file(plan_file.toStdString());
        if (scenarios.contains("all")) {
            scenarios.clear();
            for (const auto& [id, s] : lib.scenarios()) scenarios << qs(id);
        }
        for (const auto& id : scenarios) {
            lib.scenario(id.toStdString());   // unknown ids: InputError with the closest names
            ExportResult r = export_scenario(lib, id.toStdString(), out_dir, formats, o, unit);
            all.files << r.files;
            all.errors << r.errors;
        }
        if (course_pack) {
            ExportResult r = export_course_pack(lib, plan.value_or(Plan::lesson_default()), out_dir, formats, o, unit);
            all.files << r.files;
            all.errors << r.errors;
        } else if (plan) {
            ExportResult r = export_plan(lib, *plan, out_dir, formats, o, unit,
                                         QFileInfo(plan_file).fileName().section('.', 0, 0));
            all.files << r.files;
            all.errors << r.errors;
        }
        for (const auto& f : all.files) out << f << "\n";
        out.flush();
        for (const auto& e : all.errors) err << "wingspan export: " << e << "\n";
        err.flush();
        return all.ok() ? 0 : 1;
    } catch (const InputError& e) {
        err << "wingspan export: " << e.what() << "\n";
        err.flush();
        return 2;
    } catch (const std::exception& e) {
        err << "wingspan export: internal error: " << e.what() << "\n";
        err.flush();
        return 1;
    }
}

}  // namespace wingspan::ui

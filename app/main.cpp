// wingspan: the planner window; `wingspan export ...` renders charts without a display;
// `wingspan plan|fit|table|...` are the command line of app/cli and never start Qt.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <QApplication>
#include <QGuiApplication>
#include <QTextStream>
#include <QTimer>

#include "cli.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/version.hpp"
#include "wingspan/ui/export.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/screenshot.hpp"
#include "wingspan/ui/widgets.hpp"

namespace {

// The real path of this program, so profiles next to it are found when it was started
// from $PATH or through a symlink.
std::string executable_path(const char* argv0) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(argv0) : self.string();
}

bool has_env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
}

void set_identity() {
    QCoreApplication::setOrganizationName("Wingspan");
    QCoreApplication::setApplicationName("Wingspan");
    QCoreApplication::setApplicationVersion(wingspan::kVersion);
    QGuiApplication::setDesktopFileName("io.wingspan.Wingspan");
}

// Qt holds file names as Unicode text, so an argument that is not UTF-8 (a file name is bytes) would
// reach it as U+FFFD: `export --out $'e\xff'` wrote into a folder named "e�" and said so. The
// commands that go through Qt (export, the window) refuse such an argument instead, showing its bytes.
bool refuse_non_utf8(const std::vector<std::string>& args, const char* who) {
    for (const std::string& a : args)
        if (!wingspan::quoting::is_utf8(a)) {
            std::cerr << who << ": the argument " << wingspan::quoting::shell_word(a)
                      << " is not UTF-8; this command handles file names as Unicode text and would write or read "
                         "another path. Rename it, or use a UTF-8 path.\n";
            return true;
        }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string exe = executable_path(argv[0]);
    const std::vector<std::string> args(argv + 1, argv + argc);
    const bool through_qt = args.empty() || !wingspan::cli::is_cli_command(args[0]);
    if (through_qt && refuse_non_utf8(args, args.empty() || args[0] != "export" ? "wingspan" : "wingspan export"))
        return wingspan::cli::kExitBadInput;

    if (!args.empty() && args[0] == "export") {
        // Headless: no window is ever shown, so never depend on a display.
        if (!has_env("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
        // A QApplication: the charts are Qt Charts (graphics items), drawn offscreen.
        QApplication app(argc, argv);
        wingspan::ui::use_c_locale_for_numbers();   // files: CSV, Markdown, SVG numbers
        set_identity();
        QStringList rest;
        for (size_t i = 1; i < args.size(); ++i) rest << QString::fromStdString(args[i]);
        QTextStream out(stdout), err(stderr);
        return wingspan::ui::run_export_command(rest, out, err, QString::fromStdString(exe));
    }
    if (!args.empty() && wingspan::cli::is_cli_command(args[0]))
        return wingspan::cli::run(args, std::cout, std::cerr, exe);
    // A word that is neither a command nor a file is a mistyped command: say so, never try to
    // open a window for it.
    if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
        std::error_code ec;
        if (!std::filesystem::exists(args[0], ec)) {
            std::cerr << "wingspan: unknown command '" << args[0]
                      << "' (and no plan file by that name); `wingspan --help` lists the commands\n";
            return wingspan::cli::kExitBadInput;
        }
    }

    if (!has_env("DISPLAY") && !has_env("WAYLAND_DISPLAY") && !has_env("QT_QPA_PLATFORM")) {
#ifdef __linux__
        std::cerr << "wingspan: no display (DISPLAY and WAYLAND_DISPLAY are unset). Start it from a desktop session, "
                     "or use the command line: `wingspan --help`.\n";
        return wingspan::cli::kExitFailure;
#endif
    }

    QApplication app(argc, argv);
    wingspan::ui::use_c_locale_for_numbers();   // recipes, plans, exports and run records the window writes
    set_identity();
    wingspan::ui::init_resources();
    wingspan::ui::apply_theme(wingspan::ui::Theme::System);

    // What is left after Qt took its own options: a plan file to open, or --screenshot.
    QString plan_file, screenshot, screenshot_dialog;
    int tab = 0;
    bool train = false;   // --train: start a run of the plan right away (as "Train ▶" does)
    const QStringList qargs = app.arguments();
    for (int i = 1; i < qargs.size(); ++i) {
        const QString& a = qargs[i];
        if (a == "--screenshot" && i + 1 < qargs.size()) {
            screenshot = qargs[++i];
        } else if (a == "--screenshot-dialog" && i + 2 < qargs.size()) {
            screenshot_dialog = qargs[++i];   // a menu item or button, as dialog_trigger_name spells it
            screenshot = qargs[++i];
        } else if (a == "--tab" && i + 1 < qargs.size()) {
            tab = qargs[++i].toInt();
        } else if (a == "--train") {
            train = true;
        } else if (!a.startsWith('-')) {
            plan_file = a;
        } else {
            std::cerr << "wingspan: unknown option '" << a.toStdString() << "'; `wingspan --help` lists the commands\n";
            return wingspan::cli::kExitBadInput;
        }
    }

    wingspan::ui::MainWindow window(QString::fromStdString(exe));
    if (!plan_file.isEmpty()) {
        QString error;
        if (!window.hasLibrary() || !window.openPlan(plan_file, &error))
            std::cerr << "wingspan: cannot open " << plan_file.toStdString() << ": " << error.toStdString() << "\n";
    }
    // The run panel: a "Run" tab that "Train ▶" opens; closing during a run asks first.
    wingspan::ui::install_run_panel(window, QString::fromStdString(exe));
    if (window.tabs() && tab > 0) window.tabs()->setCurrentIndex(tab);
    window.show();
    if (train) QTimer::singleShot(300, &window, [&window] { window.requestTrain(); });

    if (!screenshot.isEmpty()) wingspan::ui::screenshot_later(window, screenshot, screenshot_dialog);
    return app.exec();
}

#pragma once
// Shared pieces of the run panel's end-to-end tests.
#include <QtTest>

#include <QApplication>
#include <QImage>
#include <QTemporaryDir>

#include <chrono>
#include <filesystem>
#include <functional>

#include "wingspan/ui/run_panel.hpp"

#include <QTabWidget>

namespace e2e {

// Spins the event loop until `pred` holds or `ms` pass; true when it held.
inline bool wait_until(const std::function<bool()>& pred, int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > end) return false;
        QTest::qWait(20);
    }
    return true;
}

// Starts `panel`'s run and waits `ms` for it to finish; false (with a warning) when it did not start.
inline bool run_to_end(wingspan::ui::RunPanel& panel, int ms = 30000) {
    QSignalSpy finished(&panel, &wingspan::ui::RunPanel::runFinished);
    QString error;
    if (!panel.start(&error)) {
        qWarning() << "start failed:" << error;
        return false;
    }
    return wait_until([&] { return finished.count() == 1; }, ms);
}

// The tab page that holds `w` (the window may wrap a tab's widget, e.g. in a scroll area).
inline QWidget* tab_page_of(QTabWidget* tabs, QWidget* w) {
    for (QWidget* p = w; p; p = p->parentWidget())
        if (tabs->indexOf(p) >= 0) return p;
    return nullptr;
}

inline QString wingspan_exe() { return QString(WINGSPAN_TEST_BIN_DIR) + "/wingspan"; }

// The library the window would load (machines for the ceiling, architectures).
inline const wingspan::ProfileLibrary& library() {
    static const wingspan::ProfileLibrary lib = [] {
        auto l = wingspan::ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        l.add_machine(wingspan::detect_this_machine());   // as the window does
        return l;
    }();
    return lib;
}

// The built-in model at a small LoRA setup that runs in seconds (`threads` per process).
inline wingspan::ui::RunOptions small_builtin_run(wingspan::ui::RunOptions o, int steps, int threads = 2) {
    o.model_source = wingspan::ui::RunOptions::ModelSource::BuiltIn;
    o.method = wingspan::Method::Lora;
    o.rank = 8;
    o.alpha = 16;
    o.precision = wingspan::Precision::Fp32;
    o.precision_auto = false;   // fp32 asked for: the checks count 4 bytes per weight on every CPU
    o.seq = 64;
    o.batch = 2;
    o.grad_accum = 1;
    o.grad_checkpointing = false;
    o.steps = steps;
    o.threads = threads;
    return o;
}

inline bool png_is(const QString& path, int w, int h) {
    QImage img(path);
    return !img.isNull() && img.width() == w && img.height() == h;
}

inline std::int64_t file_size(const QString& path) { return QFileInfo(path).size(); }

}  // namespace e2e

#pragma once
// Shared by the window tests of issue 32: a QApplication on an offscreen screen of a given size
// (the offscreen platform's configfile option), so a window meets the screen the issue was found
// on (1280×720); settings kept apart from the user's; a named child or a fatal error.
#include <QApplication>
#include <QGuiApplication>
#include <QScreen>
#include <QStandardPaths>
#include <QWidget>
#include <QDir>
#include <QFile>
#include <QSize>

#include <functional>

namespace ui_test {

template <typename T>
T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(name);
    if (!c) qFatal("no child %s", name);
    return c;
}

// Test-mode settings under the application name given; true when the screen is `size`.
inline bool start_window_test(const char* application, QSize size) {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("WingspanTests");
    QCoreApplication::setApplicationName(application);
    return QGuiApplication::primaryScreen()->geometry().size() == size;
}

// Writes the screen's configuration, runs `run` inside a QApplication on it, removes the file.
inline int exec_on_screen(int argc, char** argv, QSize size, const std::function<int()>& run) {
    const QString config = QDir::temp().filePath(
        QString("wingspan-screen-%1x%2-%3.json").arg(size.width()).arg(size.height()).arg(QCoreApplication::applicationPid()));
    {
        QFile f(config);
        if (!f.open(QIODevice::WriteOnly)) return 2;
        f.write(QString(R"({"synchronousWindowSystemEvents": false, "windowFrameMargins": false,
                    "screens": [{"name": "laptop", "x": 0, "y": 0, "width": %1, "height": %2,
                                 "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})")
                    .arg(size.width())
                    .arg(size.height())
                    .toUtf8());
    }
    qputenv("QT_QPA_PLATFORM", ("offscreen:configfile=" + config).toUtf8());
    int rc = 0;
    {
        QApplication app(argc, argv);
        rc = run();
    }
    QFile::remove(config);
    return rc;
}

}  // namespace ui_test

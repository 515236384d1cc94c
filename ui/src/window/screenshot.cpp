// The window's and its dialogs' screenshots (see screenshot.hpp).
#include "wingspan/ui/screenshot.hpp"

#include <iostream>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QBuffer>
#include <QDialog>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QScreen>
#include <QTimer>

#include "wingspan/ui/export.hpp"

namespace wingspan::ui {

namespace {

// Menus' actions (submenus included) and the window's buttons, each with its text.
template <typename F>
void for_each_trigger(QWidget& window, F&& f) {
    for (QMenu* menu : window.findChildren<QMenu*>())
        for (QAction* a : menu->actions())
            if (!a->isSeparator() && !a->menu() && !a->text().isEmpty()) f(a->text(), [a] { a->trigger(); });
    for (QAbstractButton* b : window.findChildren<QAbstractButton*>())
        if (!b->text().isEmpty()) f(b->text(), [b] { b->click(); });
}

bool write_png(QWidget* w, const QString& file, QString* error) {
    QByteArray png;
    QBuffer buffer(&png);
    return buffer.open(QIODevice::WriteOnly) && w->grab().save(&buffer, "PNG") && write_export_file(file, png, error);
}

void finish(bool ok, const QString& file, const QString& error) {
    std::cerr << (ok ? "wrote " : "cannot write ") << file.toStdString() << (error.isEmpty() ? "" : ": " + error.toStdString())
              << "\n";
    QApplication::exit(ok ? 0 : 1);   // ends a dialog's own event loop too
}

}  // namespace

QString dialog_trigger_name(const QString& text) {
    QString s = text.toLower();
    s.remove('&');
    s.replace(QRegularExpression("[^a-z0-9]+"), "-");
    return s.remove(QRegularExpression("^-+|-+$"));
}

QStringList dialog_trigger_names(QWidget& window) {
    QStringList names;
    for_each_trigger(window, [&](const QString& text, auto) {
        const QString n = dialog_trigger_name(text);
        if (!n.isEmpty() && !names.contains(n)) names << n;
    });
    return names;
}

bool press_named_trigger(QWidget& window, const QString& name) {
    bool pressed = false;
    for_each_trigger(window, [&](const QString& text, auto press) {
        if (pressed || dialog_trigger_name(text) != name) return;
        pressed = true;
        press();
    });
    return pressed;
}

QWidget* open_dialog(QWidget& window) {
    if (QWidget* modal = QApplication::activeModalWidget(); modal && modal != &window) return modal;
    for (QWidget* w : QApplication::topLevelWidgets())
        if (w != &window && w->isVisible() && qobject_cast<QDialog*>(w)) return w;
    return nullptr;
}

void screenshot_later(QWidget& window, const QString& file, const QString& dialog) {
    QWidget* win = &window;
    // Once the window has been laid out and painted.
    QTimer::singleShot(1200, win, [win, file, dialog] {
        QString error;
        if (dialog.isEmpty()) {
            const bool ok = write_png(win, file, &error);
            finish(ok, file, error);
            return;
        }
        // The dialog is looked for after the press: a modal one runs its own event loop, which
        // these timers run in.
        auto* poll = new QTimer(win);
        poll->setInterval(100);
        auto waited = std::make_shared<int>(0);
        QObject::connect(poll, &QTimer::timeout, win, [win, file, dialog, poll, waited] {
            QWidget* d = open_dialog(*win);
            *waited += 100;
            if (!d && *waited < 10000) return;
            if (d && *waited < 800) return;   // its text laid out and painted (a Hub answer is not waited for)
            poll->stop();
            if (!d) return finish(false, file, "'" + dialog + "' opened no dialog");
            const QRect screen = d->screen()->availableGeometry();
            if (d->frameGeometry().width() > screen.width() || d->frameGeometry().height() > screen.height())
                std::cerr << "wingspan: the dialog is " << d->width() << "×" << d->height() << " on a " << screen.width() << "×"
                          << screen.height() << " screen\n";
            QString error;
            const bool ok = write_png(d, file, &error);
            finish(ok, file, error);
        });
        poll->start();
        if (!press_named_trigger(*win, dialog)) {
            poll->stop();
            finish(false, file, "no menu item or button is named '" + dialog + "'; these are: " +
                                    dialog_trigger_names(*win).join(", "));
        }
    });
}

}  // namespace wingspan::ui

#pragma once
// `wingspan --screenshot FILE` and `--screenshot-dialog NAME FILE`: the window photographs itself,
// or opens one of its dialogs the way a person does (the menu item or button named NAME) and
// photographs that dialog, then the program exits. For docs/ and for looking at the window on
// a given screen (xvfb-run -s "-screen 0 1280x720x24").
#include <QString>
#include <QStringList>

class QWidget;

namespace wingspan::ui {

// "Add model from the &Hub…" -> "add-model-from-the-hub": the name --screenshot-dialog takes.
QString dialog_trigger_name(const QString& text);
// The names of every menu item and button of `window` that --screenshot-dialog can press.
QStringList dialog_trigger_names(QWidget& window);
// Presses the menu item or button of `window` named `name` (dialog_trigger_name); false if none.
bool press_named_trigger(QWidget& window, const QString& name);
// The dialog open now over `window` (the modal one when several), or nullptr.
QWidget* open_dialog(QWidget& window);

// After the window has been laid out: writes FILE (the window, or the dialog that `dialog` opens)
// and exits the application with 0, or 1 with a message on stderr.
void screenshot_later(QWidget& window, const QString& file, const QString& dialog = QString());

}  // namespace wingspan::ui

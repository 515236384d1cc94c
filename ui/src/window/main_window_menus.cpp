// The window's menus and the page shown when the profiles cannot be loaded.
#include "wingspan/ui/main_window.hpp"
#include "wingspan/version.hpp"
#include "wingspan/ui/data_dialog.hpp"
#include "wingspan/ui/gguf_export_dialog.hpp"
#include "wingspan/ui/recipe_dialog.hpp"
#include "wingspan/run_record.hpp"

#include <QAction>
#include <QCoreApplication>
#include <QActionGroup>
#include <QDockWidget>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace wingspan::ui {

void MainWindow::buildErrorPage() {
    setWindowTitle("Wingspan — profiles not found");
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(48, 40, 48, 40);
    auto* icon = new QLabel;
    icon->setPixmap(app_icon().pixmap(72, 72));
    auto* title = new QLabel("<h2>Wingspan cannot find its profiles</h2>");
    auto* text = new QLabel(
        "The models, machines and frameworks Wingspan computes with live in a <tt>profiles</tt> folder that ships "
        "with the program. It could not be loaded:<br><br><b>" +
        load_error_.toHtmlEscaped() +
        "</b><br><br>Wingspan looks in <tt>$WINGSPAN_PROFILES</tt>, then <tt>../share/wingspan/profiles</tt> next to "
        "the program, then the source tree it was built from. Reinstall the package, or set "
        "<tt>WINGSPAN_PROFILES</tt> to the folder and start Wingspan again.");
    text->setObjectName("loadError");
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* quit = new QPushButton("&Quit");
    connect(quit, &QPushButton::clicked, this, &QWidget::close);
    layout->addWidget(icon);
    layout->addWidget(title);
    layout->addWidget(text);
    layout->addStretch();
    layout->addWidget(quit, 0, Qt::AlignRight);
    setCentralWidget(page);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu("&File");
    auto add = [this](QMenu* menu, const QString& text, const QKeySequence& key, auto slot) {
        QAction* a = menu->addAction(text);
        if (!key.isEmpty()) a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    add(file, "&New plan (the lessons' example)", QKeySequence::New, [this] {
        plan_path_.clear();
        setPlan(Plan::lesson_default());
    });
    add(file, "&Open plan…", QKeySequence::Open, &MainWindow::openPlanDialog);
    add(file, "Open &training config (axolotl, LLaMA-Factory, torchtune, TRL, mlx-lm)…", QKeySequence("Ctrl+Shift+O"),
        &MainWindow::openTrainingConfigDialog);
    setAcceptDrops(true);   // a plan or a training config dropped on the window opens it
    add(file, "&Save plan", QKeySequence::Save, &MainWindow::savePlanDialog);
    add(file, "Save plan &as…", QKeySequence::SaveAs, &MainWindow::savePlanAsDialog);
    file->addSeparator();
    add(file, "&Import model config.json…", QKeySequence(), &MainWindow::importConfigDialog);
    add(file, "Add model from the &Hub…", QKeySequence("Ctrl+Shift+H"), &MainWindow::importFromHubDialog);
    add(file, "Add model from a &folder…", QKeySequence(), &MainWindow::importFromFolderDialog);
    file->addSeparator();
    add(file, "Export &chart…", QKeySequence("Ctrl+E"), &MainWindow::exportChartDialog);
    add(file, "Export &table…", QKeySequence("Ctrl+Shift+E"), &MainWindow::exportTableDialog);
    add(file, "Export course &pack…", QKeySequence("Ctrl+Shift+P"), &MainWindow::exportCoursePackDialog);
    add(file, "Export &recipe…", QKeySequence(), [this] {
        if (lib_) RecipeDialog(*lib_, plan_, recipe::default_dir(QCoreApplication::applicationFilePath().toStdString()), this).exec();
    });
    add(file, "R&un a recipe…", QKeySequence(), [this] { RunRecipeDialog(RunStore::default_root(), this).exec(); });
    add(file, "Export &GGUF (llama.cpp, Ollama)…", QKeySequence(), [this] { GgufExportDialog(this).exec(); });
    file->addSeparator();
    add(file, "&Quit", QKeySequence::Quit, &QWidget::close);

    QMenu* view = menuBar()->addMenu("&View");
    unit_group_ = new QActionGroup(this);
    QAction* gb = view->addAction("Units: &GB (10⁹ bytes)");
    QAction* gib = view->addAction("Units: G&iB (2³⁰ bytes)");
    for (QAction* a : {gb, gib}) {
        a->setCheckable(true);
        unit_group_->addAction(a);
    }
    gb->setData("GB");
    gib->setData("GiB");
    gb->setChecked(true);
    connect(unit_group_, &QActionGroup::triggered, this,
            [this](QAction* a) { setUnit(a->data().toString() == "GiB" ? ByteUnit::GiB : ByteUnit::GB); });
    view->addSeparator();
    theme_group_ = new QActionGroup(this);
    for (Theme t : {Theme::System, Theme::Light, Theme::Dark}) {
        QAction* a = view->addAction(t == Theme::System ? "&System colours" : t == Theme::Light ? "&Light" : "&Dark");
        a->setCheckable(true);
        a->setData(theme_id(t));
        theme_group_->addAction(a);
    }
    theme_group_->actions().first()->setChecked(true);
    connect(theme_group_, &QActionGroup::triggered, this, [this](QAction* a) { setTheme(parse_theme(a->data().toString())); });
    view->addSeparator();
    // The side panels fold away (small screens) and come back from here.
    QAction* show_inputs = inputs_dock_->toggleViewAction();
    show_inputs->setText("&Plan inputs panel");
    show_inputs->setShortcut(QKeySequence("Ctrl+Shift+I"));
    view->addAction(show_inputs);
    QAction* show_machines = machines_dock_->toggleViewAction();
    show_machines->setText("Mac&hines panel");
    show_machines->setShortcut(QKeySequence("Ctrl+Shift+M"));
    view->addAction(show_machines);
    view->addSeparator();
    const char* tab_names[] = {"&Machines chart", "M&ethods", "&Sizes", "&Which machine trains what"};
    for (int i = 0; i < 4; ++i) {
        QAction* a = view->addAction(tab_names[i]);
        a->setShortcut(QKeySequence(QString("Ctrl+%1").arg(i + 1)));
        connect(a, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
    }
    // The Run tab comes with the run panel (install_run_panel), after the planner's four.
    QAction* run_tab = view->addAction("&Run");
    run_tab->setObjectName("showRunTab");
    run_tab->setShortcut(QKeySequence("Ctrl+5"));
    connect(run_tab, &QAction::triggered, this, [this] {
        if (tabs_->count() > 4) tabs_->setCurrentIndex(4);
    });
    QAction* find = view->addAction("&Find model");
    find->setShortcut(QKeySequence::Find);
    connect(find, &QAction::triggered, this, [this] {
        inputs_dock_->show();
        inputs_->focusModelSearch();
    });

    QMenu* machines = menuBar()->addMenu("M&achines");
    add(machines, "&Add your machine…", QKeySequence("Ctrl+M"), &MainWindow::addMachineDialog);
    add(machines, "&Edit selected machine…", QKeySequence(), &MainWindow::editMachineDialog);
    add(machines, "&Remove selected machine", QKeySequence(), &MainWindow::removeUserMachine);
    machines->addSeparator();
    add(machines, "&Calibrate from my runs…", QKeySequence(), &MainWindow::calibrateDialog);
    add(machines, "E&xplain an out-of-memory message…", QKeySequence(), &MainWindow::explainOomDialog);
    add(machines, "Plan from a &data file…", QKeySequence(), [this] { DataDialog(plan(), this).exec(); });

    QMenu* help = menuBar()->addMenu("&Help");
    // Read from the menus themselves, so the list cannot drift from what the keys do.
    add(help, "&Keyboard shortcuts", QKeySequence::HelpContents, [this] {
        QString rows;
        for (QAction* top : menuBar()->actions()) {
            if (!top->menu()) continue;
            for (QAction* a : top->menu()->actions())
                if (!a->shortcut().isEmpty())
                    rows += "<tr><td><b>" + a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped() +
                            "</b></td><td>" + a->text().remove('&').toHtmlEscaped() + "</td></tr>";
        }
        QMessageBox box(QMessageBox::NoIcon, "Keyboard shortcuts", "<table cellspacing=4>" + rows + "</table>",
                        QMessageBox::Close, this);
        box.setObjectName("shortcutsDialog");
        box.exec();
    });
    add(help, "&Units and verdicts", QKeySequence(), [this] {
        QMessageBox::information(this, "Units and verdicts",
                                 "<p><b>GB</b> = 10⁹ bytes, <b>GiB</b> = 2³⁰ bytes (View ▸ Units: GB or GiB).</p><p><b>✓ fits</b>: "
                                 "the peak is under the machine's usable ceiling with more than 10 % to spare; "
                                 "<b>! tight</b>: within 10 % of it; <b>✗ short</b>: over it, by the amount shown.</p>"
                                 "<p>The usable ceiling is the memory a training process can use with the machine's "
                                 "framework (a Mac's GPU gets 75 % of unified memory by default). Each machine runs "
                                 "its framework's defaults for what the plan leaves open, as <tt>wingspan plan</tt> "
                                 "does; the bar's caption and tooltip say which.</p>");
    });
    add(help, "&About Wingspan", QKeySequence(), [this] {
        QMessageBox::about(this, "About Wingspan",
                           "<h3>Wingspan " WINGSPAN_VERSION_STRING "</h3><p>A planner for fine-tuning memory: what a training "
                           "run needs, component by component, and where it fits.</p><p>Every number comes from "
                           "Wingspan's memory model; hover a bar segment to see its formula. GB = 10⁹ bytes, "
                           "GiB = 2³⁰ bytes.</p>");
    });
}

// ---------------------------------------------------------------------- population ----

}  // namespace wingspan::ui

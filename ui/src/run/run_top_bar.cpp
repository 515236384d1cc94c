// The run panel's top: banner, run header and the bar of buttons (run_top_bar.hpp).
#include "run/run_top_bar.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

namespace wingspan::ui {

RunTopBar::RunTopBar(QWidget* parent) : QWidget(parent) {
    // The panel's own spacing between the three rows, so the rows sit where they did in its layout.
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(0, 0, 0, 0);
    root->setSpacing(5);

    banner_ = new QLabel;
    banner_->setObjectName("trainerBanner");
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    banner_->setStyleSheet("QLabel { background: #fff4e5; color: #5a2d00; border: 1px solid #f0b36b; border-radius: 4px; padding: 6px; }");
    root->addWidget(banner_);

    // What trains, in plain view: "Planner: X → this run: Y" whenever they differ.
    auto* header_row = new QHBoxLayout;
    run_header_ = new QLabel;
    run_header_->setObjectName("runHeader");
    run_header_->setAccessibleName("What this run trains");
    run_header_->setWordWrap(true);
    run_header_->setTextFormat(Qt::RichText);
    run_header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    run_header_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    follow_ = new QPushButton("Follow the planner");
    follow_->setObjectName("runFollowPlanner");
    follow_->setToolTip("Fill the settings from the planner again (they stopped following it when you edited one)");
    follow_->hide();
    connect(follow_, &QPushButton::clicked, this, &RunTopBar::followClicked);
    header_row->addWidget(run_header_, 1);
    header_row->addWidget(follow_, 0, Qt::AlignTop);
    root->addLayout(header_row);

    // The bar: the settings (folded while a run is shown), the buttons.
    auto* bar = new QHBoxLayout;
    settings_toggle_ = new QToolButton;
    settings_toggle_->setObjectName("runSettingsToggle");
    settings_toggle_->setAutoRaise(true);
    settings_toggle_->setCheckable(true);
    settings_toggle_->setChecked(true);
    settings_toggle_->setArrowType(Qt::DownArrow);
    settings_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    settings_toggle_->setText("Settings");
    settings_toggle_->setToolTip("Show or hide the launch settings");
    settings_summary_ = new QLabel;
    settings_summary_->setObjectName("runSettingsSummary");
    settings_summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    settings_summary_->setTextFormat(Qt::PlainText);
    connect(settings_toggle_, &QToolButton::toggled, this, &RunTopBar::settingsToggled);
    start_ = new QPushButton("Start ▶");
    start_->setObjectName("runStart");
    start_->setDefault(true);
    QFont bf = start_->font();
    bf.setBold(true);
    start_->setFont(bf);
    connect(start_, &QPushButton::clicked, this, &RunTopBar::startClicked);
    stop_ = new QPushButton("Stop ■");
    stop_->setObjectName("runStop");
    stop_->setToolTip("SIGTERM: the trainer finishes its step, saves a checkpoint and exits; it is killed if it takes too long");
    connect(stop_, &QPushButton::clicked, this, &RunTopBar::stopClicked);
    auto* export_button = new QToolButton;
    export_button->setObjectName("runExport");
    export_button->setText("Export");
    export_button->setPopupMode(QToolButton::InstantPopup);
    export_button->setToolTip("Export the shown run's charts (PNG, SVG, PDF) and its summary table (CSV, Markdown)");
    auto* menu = new QMenu(export_button);
    const char* items[] = {"&Memory chart…", "&Loss chart…", "&Throughput chart…", "&Predicted vs measured chart…",
                           "&Summary table…"};
    for (int i = MemoryChart; i <= SummaryTable; ++i) menu->addAction(items[i], this, [this, i] { emit exportChosen(i); });
    menu->addSeparator();
    menu->addAction("&Everything to a folder…", this, &RunTopBar::exportAllChosen);
    export_button->setMenu(menu);
    bar->addWidget(settings_toggle_);
    bar->addWidget(settings_summary_, 1);
    bar->addWidget(start_);
    bar->addWidget(stop_);
    bar->addWidget(export_button);
    root->addLayout(bar);
}

void RunTopBar::showTrainer(const TrainerLocation& trainer) {
    if (trainer.ok()) {
        banner_->hide();
        start_->setToolTip("Launch wingspan-train (" + trainer.path + ") with these settings");
    } else {
        banner_->setText("<b>Training is not available: the trainer is missing.</b> " + trainer.problem.toHtmlEscaped());
        banner_->show();
        start_->setToolTip(trainer.problem);
    }
}

void RunTopBar::showRunHeader(const QString& html, bool offer_follow) {
    run_header_->setText(html);
    follow_->setVisible(offer_follow);
}

QString RunTopBar::runHeaderText() const { return run_header_->text(); }

void RunTopBar::showSettingsOpen(bool open, const QString& summary) {
    settings_toggle_->blockSignals(true);
    settings_toggle_->setChecked(open);
    settings_toggle_->blockSignals(false);
    settings_toggle_->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
    settings_summary_->setText(open ? QString() : summary);
}

void RunTopBar::showRunState(bool active, bool stopping) {
    start_->setEnabled(!active);
    stop_->setEnabled(active);
    stop_->setText(stopping ? "Kill now" : "Stop ■");
}

}  // namespace wingspan::ui

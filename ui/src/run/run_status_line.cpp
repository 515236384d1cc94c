// The run panel's status line (run_status_line.hpp).
#include "run/run_status_line.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace wingspan::ui {

RunStatusLine::RunStatusLine(QWidget* parent) : QWidget(parent) {
    // The panel's own spacing between the two rows, so they sit where they did in its layout.
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(0, 0, 0, 0);
    root->setSpacing(5);

    auto* status_row = new QHBoxLayout;
    status_ = new QLabel;
    status_->setObjectName("runStatus");
    status_->setAccessibleName("Run status");
    status_->setTextFormat(Qt::RichText);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
    connect(status_, &QLabel::linkActivated, this, &RunStatusLine::linkActivated);
    progress_ = new QProgressBar;
    progress_->setObjectName("runProgress");
    progress_->setAccessibleName("Training progress");
    progress_->setMinimumWidth(160);
    progress_->setMaximumWidth(300);
    progress_->setTextVisible(true);
    whole_process_ = new QCheckBox("Scale to the whole process");
    whole_process_->setObjectName("runWholeProcess");
    whole_process_->setToolTip("Off: the memory chart's axis fits the tensors (the planner's components) and the process RSS\n"
                               "is listed above it when it is larger. On: the axis also fits the RSS and the predicted process total.");
    connect(whole_process_, &QCheckBox::toggled, this, &RunStatusLine::wholeProcessToggled);
    status_row->addWidget(status_, 1);
    status_row->addWidget(whole_process_, 0, Qt::AlignTop);
    status_row->addWidget(progress_, 0, Qt::AlignTop);
    root->addLayout(status_row);

    auto* view_row = new QHBoxLayout;
    view_banner_ = new QLabel;
    view_banner_->setObjectName("viewBanner");
    view_banner_->setWordWrap(true);
    back_live_ = new QPushButton("Back to the live run");
    connect(back_live_, &QPushButton::clicked, this, &RunStatusLine::backClicked);
    view_row->addWidget(view_banner_, 1);
    view_row->addWidget(back_live_);
    root->addLayout(view_row);
}

void RunStatusLine::setStatus(const QString& html) { status_->setText(html); }

QString RunStatusLine::statusText() const { return status_->text(); }

void RunStatusLine::setProgress(const RunProgress& p) {
    progress_->setTextVisible(true);
    progress_->setRange(p.minimum, p.maximum);
    progress_->setValue(p.value);
    if (p.maximum > 0) progress_->setFormat(p.format);   // a busy bar keeps its format
}

bool RunStatusLine::wholeProcess() const { return whole_process_->isChecked(); }

void RunStatusLine::showViewBanner(const QString& html, const QString& back) {
    view_banner_->setVisible(!html.isEmpty());
    if (!html.isEmpty()) view_banner_->setText(html);
    back_live_->setVisible(!back.isEmpty());
    if (!back.isEmpty()) back_live_->setText(back);
}

}  // namespace wingspan::ui

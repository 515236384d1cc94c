#pragma once
// A text label on the memory chart that lays its glyphs out once (one QTextLayout), not on
// every paint: the chart repaints on every slider step. It can break a long text into a few
// lines (at spaces, the last line elided) so a bar's caption shows in full where one line has
// no room, with the full text as tooltip when something was cut.
#include <vector>

#include <QFont>
#include <QGraphicsItem>
#include <QTextLayout>

namespace wingspan::ui {

class ChartText : public QGraphicsItem {
public:
    ChartText(const QString& text, const QFont& font, const QColor& colour, QGraphicsItem* parent);

    // '\n' separates lines.
    void setText(const QString& text);
    QString text() const { return text_; }
    // Shows `full` in at most `max_lines` lines no wider than `width`. Remembers the last
    // answer, so a repeated layout costs no text shaping.
    void setFitted(const QString& full, double width, int max_lines = 1);
    // Lines centred on each other (captions under a bar) instead of left-aligned.
    void setCentred(bool on) { centred_ = on; }
    int lineCount() const { return int(widths_.size()); }
    double lineHeight() const { return line_height_; }
    void setBrush(const QColor& c);
    // Filled behind the text: a dashed line under a ceiling's name does not strike it through.
    void setBackground(const QColor& c) { background_ = c; }
    QFont font() const { return font_; }

    QRectF boundingRect() const override { return QRectF(QPointF(0, 0), size_); }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override;

private:
    QString text_;
    QTextLayout layout_;           // every line, shaped once per text
    std::vector<double> widths_;   // per line
    bool laid_out_ = false;
    QFont font_;
    QColor colour_;
    QColor background_;   // invalid: none
    QSizeF size_;
    double line_height_ = 0;
    bool centred_ = false;
    QString fitted_full_;
    double fitted_width_ = -1;
    int fitted_lines_ = 0;
};

}  // namespace wingspan::ui

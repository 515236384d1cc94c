#include "chart_text.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QPainter>

namespace wingspan::ui {

ChartText::ChartText(const QString& text, const QFont& font, const QColor& colour, QGraphicsItem* parent)
    : QGraphicsItem(parent), font_(font), colour_(colour), line_height_(QFontMetricsF(font).height()) {
    setText(text);
}

void ChartText::setText(const QString& t) {
    if (t == text_ && !lines_.empty()) return;
    prepareGeometryChange();
    text_ = t;
    lines_.clear();
    const QFontMetricsF fm(font_);
    double widest = 0;
    for (const QString& part : t.split('\n')) {
        Line line;
        line.text.setTextFormat(Qt::PlainText);
        line.text.setPerformanceHint(QStaticText::AggressiveCaching);
        line.text.setText(part);
        line.text.prepare(QTransform(), font_);
        line.width = fm.horizontalAdvance(part);
        widest = std::max(widest, line.width);
        lines_.push_back(std::move(line));
    }
    size_ = QSizeF(widest, line_height_ * double(lines_.size()));
}

void ChartText::setFitted(const QString& full, double width, int max_lines) {
    width = std::max(8.0, std::floor(width));
    max_lines = std::max(1, max_lines);
    if (full == fitted_full_ && width == fitted_width_ && max_lines == fitted_lines_) return;
    fitted_full_ = full;
    fitted_width_ = width;
    fitted_lines_ = max_lines;
    const QFontMetricsF fm(font_);
    QStringList lines;
    const QStringList words = full.split(' ', Qt::SkipEmptyParts);
    // Two lines: the break that makes the longer line shortest ("Mac Studio" / "M3 Ultra", not
    // "Mac Studio M3" / "Ultra").
    int best = -1;
    double best_width = INFINITY;
    if (max_lines >= 2 && fm.horizontalAdvance(full) > width)
        for (int k = 1; k < words.size(); ++k) {
            const double w = std::max(fm.horizontalAdvance(QStringList(words.mid(0, k)).join(' ')),
                                      fm.horizontalAdvance(QStringList(words.mid(k)).join(' ')));
            if (w <= width && w < best_width) {
                best = k;
                best_width = w;
            }
        }
    if (max_lines == 1 || fm.horizontalAdvance(full) <= width) {
        lines << fm.elidedText(full, Qt::ElideRight, width);
    } else if (best > 0) {
        lines << QStringList(words.mid(0, best)).join(' ') << QStringList(words.mid(best)).join(' ');
    } else {
        // Greedy at spaces; what does not fit in the last line is elided there.
        QString current;
        int w = 0;
        for (; w < words.size() && lines.size() < max_lines - 1; ++w) {
            const QString candidate = current.isEmpty() ? words[w] : current + ' ' + words[w];
            if (current.isEmpty() || fm.horizontalAdvance(candidate) <= width) {
                current = candidate;
                continue;
            }
            lines << fm.elidedText(current, Qt::ElideRight, width);
            current = words[w];
        }
        const QString rest = QStringList(words.mid(w)).join(' ');
        current = current.isEmpty() ? rest : rest.isEmpty() ? current : current + ' ' + rest;
        if (!current.isEmpty()) lines << fm.elidedText(current, Qt::ElideRight, width);
    }
    const QString shown = lines.join('\n');
    setText(shown);
    QString joined = shown;
    joined.replace('\n', ' ');
    setToolTip(joined == full.simplified() ? QString() : full);
}

void ChartText::setBrush(const QColor& c) {
    if (c == colour_) return;
    colour_ = c;
    update();
}

void ChartText::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
    p->setFont(font_);
    p->setPen(colour_);
    double y = 0;
    for (const Line& line : lines_) {
        const double x = centred_ ? (size_.width() - line.width) / 2 : 0;
        p->drawStaticText(QPointF(x, y), line.text);
        y += line_height_;
    }
}

}  // namespace wingspan::ui

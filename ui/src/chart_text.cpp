#include "chart_text.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QPainter>
#include <QTextLayout>

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
    double widest = 0;
    for (const QString& part : t.split('\n')) {
        Line line;
        line.text.setTextFormat(Qt::PlainText);
        line.text.setPerformanceHint(QStaticText::AggressiveCaching);
        line.text.setText(part);
        line.text.prepare(QTransform(), font_);
        // prepare() has laid the line out already: its natural width is the advance, without
        // shaping the text a second time.
        line.width = line.text.size().width();
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
    // The text is shaped once; the width of the words before and after each space is read off
    // that one layout, not measured again per candidate break.
    QTextLayout shaped(full, font_);
    shaped.beginLayout();
    QTextLine one = shaped.createLine();
    if (one.isValid()) one.setNumColumns(int(full.size()) + 1);
    shaped.endLayout();
    const double full_width = one.isValid() ? one.naturalTextWidth() : 0.0;
    const bool fits = full_width <= width;
    // Two lines: the break that makes the longer line shortest ("Mac Studio" / "M3 Ultra", not
    // "Mac Studio M3" / "Ultra").
    int best = -1;
    double best_width = INFINITY;
    if (max_lines >= 2 && !fits) {
        int words_before = 0;
        for (qsizetype at = 0; at < full.size();) {
            if (full[at] != ' ') {
                ++at;
                continue;
            }
            qsizetype end = at;
            while (end < full.size() && full[end] == ' ') ++end;
            if (at > 0) ++words_before;   // a word ends where this run of spaces starts
            if (words_before >= 1 && end < full.size()) {
                const double w = std::max(one.cursorToX(int(at)), full_width - one.cursorToX(int(end)));
                if (w <= width && w < best_width) {
                    best = words_before;
                    best_width = w;
                }
            }
            at = end;
        }
    }
    if (fits) {
        lines << full;
    } else if (max_lines == 1) {
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

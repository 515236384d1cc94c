#include "charts/chart_text.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QPainter>
#include <QTextLayout>

namespace wingspan::ui {

ChartText::ChartText(const QString& text, const QFont& font, const QColor& colour, QGraphicsItem* parent)
    : QGraphicsItem(parent), font_(font), colour_(colour), line_height_(QFontMetricsF(font).height()) {
    layout_.setFont(font_);
    // Lines end where setNumColumns says (never at a width): at the texts' own line breaks, or
    // at the space setFitted chose.
    QTextOption breaks;
    breaks.setWrapMode(QTextOption::WordWrap);
    layout_.setTextOption(breaks);
    layout_.setCacheEnabled(true);
    setText(text);
}

void ChartText::setText(const QString& t) {
    if (t == text_ && laid_out_) return;
    prepareGeometryChange();
    text_ = t;
    // All lines in one layout, shaped once: the text changes with every slider step (totals,
    // verdicts), and the glyphs shaped here are the ones painted.
    QString shown = t;
    shown.replace('\n', QChar::LineSeparator);
    layout_.setText(shown);
    layout_.beginLayout();
    widths_.clear();
    double widest = 0;
    for (QTextLine line = layout_.createLine(); line.isValid(); line = layout_.createLine()) {
        line.setNumColumns(int(shown.size()) + 1);
        line.setPosition(QPointF(0, line_height_ * double(widths_.size())));
        widths_.push_back(line.naturalTextWidth());
        widest = std::max(widest, widths_.back());
    }
    layout_.endLayout();
    if (widths_.empty()) widths_.push_back(0);
    laid_out_ = true;
    size_ = QSizeF(widest, line_height_ * double(widths_.size()));
    // prepareGeometryChange() repaints the area but keeps a cached pixmap (labels that stay
    // put are DeviceCoordinateCache'd): without this, a new text of the same size kept
    // showing the old one (the subtitle's "seq 8,192" at seq 128).
    update();
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
    // The text is shaped once, in the label's own layout: the width of the words before and
    // after each space is read off it, and where the text shows as it is (whole, or broken at
    // one space) these shaped glyphs are the ones painted.
    prepareGeometryChange();
    laid_out_ = false;
    layout_.setText(full);
    layout_.beginLayout();
    QTextLine one = layout_.createLine();
    if (one.isValid()) one.setNumColumns(int(full.size()) + 1);
    layout_.endLayout();
    const double full_width = one.isValid() ? one.naturalTextWidth() : 0.0;
    const bool fits = full_width <= width;
    // Two lines: the break that makes the longer line shortest ("Mac Studio" / "M3 Ultra", not
    // "Mac Studio M3" / "Ultra").
    int best = -1;
    qsizetype best_at = 0, best_end = 0;   // the run of spaces it breaks at
    double best_width = INFINITY, best_left = 0, best_right = 0;
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
                const double left = one.cursorToX(int(at)), right = full_width - one.cursorToX(int(end));
                const double w = std::max(left, right);
                if (w <= width && w < best_width) {
                    best = words_before;
                    best_width = w;
                    best_at = at;
                    best_end = end;
                    best_left = left;
                    best_right = right;
                }
            }
            at = end;
        }
    }
    // Shown as it is (single spaces, no line breaks of its own): keep the shaped layout, its
    // lines' widths those measured above (a line's natural width would count the space it
    // ends with).
    if ((fits || best > 0) && one.isValid() && !full.contains('\n') && full == full.simplified()) {
        bool shown = true;
        if (fits) {
            text_ = full;
            widths_ = {full_width};
        } else {
            text_ = full.left(best_at) + '\n' + full.mid(best_end);
            widths_ = {best_left, best_right};
            layout_.beginLayout();
            layout_.createLine().setNumColumns(int(best_end));
            QTextLine second = layout_.createLine();
            shown = second.isValid();
            if (shown) {
                second.setNumColumns(int(full.size() - best_end) + 1);
                second.setPosition(QPointF(0, line_height_));
            }
            layout_.endLayout();
            shown = shown && layout_.lineCount() == 2;
        }
        if (shown) {
            laid_out_ = true;
            size_ = QSizeF(std::max(widths_.front(), widths_.back()), line_height_ * double(widths_.size()));
            setToolTip(QString());   // nothing was cut
            update();                // the cached pixmap too (see setText)
            return;
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
    // Both simplified: an unbreakable "96 GB" (U+00A0) is whitespace to simplified(), so the
    // full text compared as it is would read as cut and carry a needless tooltip.
    setToolTip(joined.simplified() == full.simplified() ? QString() : full);
}

void ChartText::setBrush(const QColor& c) {
    if (c == colour_) return;
    colour_ = c;
    update();
}

void ChartText::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
    if (background_.isValid()) p->fillRect(boundingRect(), background_);
    p->setPen(colour_);
    for (int i = 0; i < layout_.lineCount() && i < int(widths_.size()); ++i) {
        const double x = centred_ ? (size_.width() - widths_[size_t(i)]) / 2 : 0;
        layout_.lineAt(i).draw(p, QPointF(x, 0));
    }
}

}  // namespace wingspan::ui

#pragma once
// A form of "label field" pairs that reflows to the width it gets: four pairs a row where they
// fit, else two, else one. The Run tab's settings were a fixed 4-pair grid 831 px wide, so at
// 1280×720 (578 px for the tab) the tab needed a horizontal scrollbar (issue 32, item 8). Its
// minimum width is the narrowest arrangement's, so a scroll area can give it less than the
// widest one needs and it reflows instead of overflowing.
#include <vector>

#include <QWidget>

class QGridLayout;
class QLabel;

namespace wingspan::ui {

class PairGrid : public QWidget {
public:
    explicit PairGrid(QWidget* parent = nullptr);

    // A field with its label (nullptr: the field takes the label's column too), `span` pairs
    // wide (at most a row), or a whole row when `whole_row`.
    void addPair(QLabel* label, QWidget* field, int span = 1);
    void addWholeRow(QLabel* label, QWidget* field);
    // The next pair starts a new row (where the widest arrangement would continue this one).
    void endRow();

    int pairsPerRow() const { return per_row_; }
    QSize minimumSizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* e) override;
    void showEvent(QShowEvent* e) override;

private:
    struct Cell {
        QLabel* label = nullptr;
        QWidget* field = nullptr;
        int span = 1;       // pairs; 0: the whole row
        bool row_end = false;
    };
    void arrange(int per_row);
    int widthFor(int per_row);   // the minimum width of that arrangement
    void reflow();

    std::vector<Cell> cells_;
    QGridLayout* grid_;
    int per_row_ = 0;
    std::vector<int> min_width_;   // per arrangement (index: pairs per row), measured once
    bool reflowing_ = false;
};

}  // namespace wingspan::ui

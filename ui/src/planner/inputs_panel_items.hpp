#pragma once
// The inputs panel's combo boxes list enum values by their core names (to_string), as the CLI
// spells them.
#include <initializer_list>
#include <utility>

#include <QComboBox>
#include <QString>

namespace wingspan::ui {

template <typename E>
void add_enum_items(QComboBox* combo, std::initializer_list<std::pair<E, const char*>> items) {
    for (const auto& [value, label] : items) combo->addItem(label, QString(to_string(value)));
}

template <typename E>
void select_enum(QComboBox* combo, E value) {
    const int i = combo->findData(QString(to_string(value)));
    if (i >= 0) combo->setCurrentIndex(i);
}

}  // namespace wingspan::ui

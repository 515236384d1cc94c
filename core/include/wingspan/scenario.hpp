#pragma once
// The lessons' tables, computed: a scenario file in profiles/scenarios/ says which models,
// setups and machines; the numbers all come from the memory model.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiles.hpp"
#include "units.hpp"
#include "verdict.hpp"

namespace wingspan {

struct TableCell {
    std::string text;                  // what a reader sees: "~18 GB", "fits", "RTX 4090"
    std::optional<double> value;       // the exact number behind it (bytes, ratio, ...)
    std::optional<Fit> fit;            // for verdict cells
};

struct Table {
    std::string id;
    std::string title;
    std::string caption;               // the setup the numbers assume
    std::vector<std::string> headers;
    std::vector<std::vector<TableCell>> rows;

    std::string to_markdown() const;
    std::string to_csv(bool exact = true) const;   // exact: raw numbers where a cell has one
};

// Builds a scenario's table. Kinds: "size_table", "bytes_per_param", "per_billion",
// "verdict_grid", "machine_winners". Throws ProfileError for a malformed scenario.
Table build_table(const ProfileLibrary& library, const nlohmann::json& scenario,
                  ByteUnit unit = ByteUnit::GB);

// A cell value rounded the way the lessons write sizes: "~18 GB", "~1.2 TB", "~1.5 GB".
std::string approx_bytes(double bytes, ByteUnit unit = ByteUnit::GB);

}  // namespace wingspan

#include "wingspan/scenario.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"

namespace wingspan {

using nlohmann::json;

std::string approx_bytes(double bytes, ByteUnit unit) {
    const double giga = unit == ByteUnit::GiB ? kGiB : kGB;
    const char* g = unit == ByteUnit::GiB ? "GiB" : "GB";
    const char* t = unit == ByteUnit::GiB ? "TiB" : "TB";
    const double gb = bytes / giga;
    char buf[48];
    if (gb >= 1000)
        std::snprintf(buf, sizeof buf, "~%.1f %s", gb / (unit == ByteUnit::GiB ? 1024 : 1000), t);
    else if (gb >= 10)
        std::snprintf(buf, sizeof buf, "~%.0f %s", gb, g);
    else
        std::snprintf(buf, sizeof buf, "~%.1f %s", gb, g);
    return buf;
}

namespace {

std::string escape_csv(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string num(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// A cell's value as a CSV number: integers as integers while a double holds them exactly (|v| ≤ 2^53),
// larger or fractional magnitudes in a form that cannot overflow or be cut (an int64 cast of 1e50 seconds
// wrote -9223372036854775808, and "%.3f" of it does not fit a small buffer); no number for a non-finite value.
std::string exact_number(double v) {
    if (!std::isfinite(v)) return "";
    constexpr double kExactInteger = 9007199254740992.0;   // 2^53
    char buf[64];
    if (std::fabs(v) <= kExactInteger && std::fabs(v - std::round(v)) < 1e-9)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(v)));
    else   // to_chars: the C locale's '.', whatever the process's LC_NUMERIC
        return std::string(buf, std::to_chars(buf, buf + sizeof buf, v,
                                              std::fabs(v) >= 1e15 ? std::chars_format::scientific
                                                                   : std::chars_format::fixed,
                                              std::fabs(v) >= 1e15 ? 6 : 3)
                                    .ptr);
    return buf;
}

class ScenarioReader {
public:
    ScenarioReader(const ProfileLibrary& lib, const json& s, ByteUnit unit)
        : lib_(lib), s_(s), unit_(unit), file_("scenario '" + s.value("id", std::string("?")) + "'") {}

    const json& field(const json& j, const char* k) const {
        if (!j.contains(k)) throw ProfileError(file_, k, "is required");
        return j.at(k);
    }
    std::string str(const json& j, const char* k) const {
        const json& v = field(j, k);
        if (!v.is_string()) throw ProfileError(file_, k, "expected a string");
        return v.get<std::string>();
    }
    const json& array(const json& j, const char* k) const {
        const json& v = field(j, k);
        if (!v.is_array() || v.empty()) throw ProfileError(file_, k, "expected a non-empty array");
        return v;
    }
    // Scenario defaults, then the case's own fields.
    TrainingSetup setup(const json& j) const {
        json merged = s_.value("defaults", json::object());
        if (j.contains("setup")) {
            if (!j["setup"].is_object()) throw ProfileError(file_, "setup", "expected an object");
            for (auto& [k, v] : j["setup"].items()) merged[k] = v;
        }
        try {
            return TrainingSetup::from_json(merged);
        } catch (const InputError& e) {
            throw ProfileError(file_, "setup", e.what());
        }
    }
    // Which case of a row a note is about: "QLoRA", "full fine-tune", "served in 4-bit".
    static std::string case_words(const TrainingSetup& st) {
        switch (st.method) {
            case Method::Full: return "full fine-tune";
            case Method::Lora: return "LoRA";
            case Method::Qlora: return "QLoRA";
            case Method::Serve: return st.effective_quantization() == Quantization::None ? "served" : "served quantized";
        }
        return "";
    }
    // What a case sets (the scenario's defaults or its own setup); the rest follows each
    // machine's framework, as `wingspan plan` leaves to it what its flags do not set.
    ChosenFields chosen(const json& j) const {
        json merged = s_.value("defaults", json::object());
        if (j.contains("setup") && j["setup"].is_object())
            for (auto& [k, v] : j["setup"].items()) merged[k] = v;
        ChosenFields c;
        c.precision = merged.contains("precision") && merged["precision"] != "auto";
        c.quantization = merged.contains("quantization");
        c.grad_checkpointing = merged.contains("grad_checkpointing");
        c.lora_layers = merged.contains("lora_layers");
        return c;
    }
    // A case on a machine: its framework's defaults for what the case leaves open.
    MachineVerdict verdict(const Architecture& arch, const json& c, const TrainingSetup& st, const MachineProfile& m) const {
        const FrameworkProfile& fw = framework_for(m);
        return evaluate(arch, apply_framework_defaults(st, fw, chosen(c)), m, fw);
    }
    const FrameworkProfile* framework() const {
        if (!s_.contains("framework")) return nullptr;
        return &lib_.framework(str(s_, "framework"));
    }
    const FrameworkProfile& framework_for(const MachineProfile& m) const {
        const FrameworkProfile* f = framework();
        return f ? *f : lib_.framework_for(m);
    }
    MemoryEstimate estimate(const ModelProfile& model, const TrainingSetup& st) const {
        const FrameworkProfile* f = framework();
        return estimate_memory(model.arch, st, f ? *f : lib_.framework("hf-transformers"));
    }

    Table size_table() const {
        Table t = header();
        t.headers.push_back(s_.value("row_header", std::string("Model size")));
        const json& columns = array(s_, "columns");
        for (const auto& c : columns) t.headers.push_back(str(c, "label"));
        for (const auto& r : array(s_, "rows")) {
            const ModelProfile& model = lib_.model(str(r, "model"));
            std::vector<TableCell> row{{str(r, "label") + " (" + model.name + ")", {}, {}}};
            for (const auto& c : columns) {
                const MemoryEstimate e = estimate(model, setup(c));
                row.push_back({approx_bytes(double(e.total_bytes), unit_), double(e.total_bytes), {}});
            }
            t.rows.push_back(std::move(row));
        }
        return t;
    }

    Table bytes_per_param() const {
        Table t = header();
        const ModelProfile& model = lib_.model(str(s_, "model"));
        const TrainingSetup st = setup(s_);
        // The lesson teaches the precision's textbook split (bf16 weights and gradients, an fp32
        // master, fp32 moments); a framework's own dtypes (HF: fp32 weights under autocast, the
        // same 16 B in total) would show another split of the same sum.
        const FrameworkProfile* f = framework();
        FrameworkProfile textbook = f ? *f : lib_.framework("hf-transformers");
        textbook.dtypes.clear();
        const MemoryEstimate e = estimate_memory(model.arch, st, textbook);
        const double params = double(e.params.total);
        t.headers = {"Component", "Bytes per parameter", "For " + model.name};
        double sum = 0;
        for (Component c : {Component::TrainableWeights, Component::Gradients, Component::MasterWeights,
                            Component::OptimizerState}) {
            double bytes = 0;
            for (const auto& term : e.terms)
                if (term.component == c && term.formula.find("temporaries") == std::string::npos)
                    bytes += double(term.bytes);
            if (bytes == 0) continue;
            sum += bytes;
            t.rows.push_back({{std::string(component_label(c)), {}, {}},
                              {num(bytes / params, 0), bytes / params, {}},
                              {approx_bytes(bytes, unit_), bytes, {}}});
        }
        t.rows.push_back({{"Total", {}, {}}, {num(sum / params, 0), sum / params, {}}, {approx_bytes(sum, unit_), sum, {}}});
        return t;
    }

    Table per_billion() const {
        Table t = header();
        t.headers = {"Method", "GB per 1B parameters", "Models"};
        std::vector<const ModelProfile*> models;
        for (const auto& id : array(s_, "models")) models.push_back(&lib_.model(id.get<std::string>()));
        for (const auto& c : array(s_, "columns")) {
            double lo = INFINITY, hi = 0;
            for (const auto* m : models) {
                const MemoryEstimate e = estimate(*m, setup(c));
                const double per = double(e.total_bytes) / kGB / (double(e.params.total) / 1e9);
                lo = std::min(lo, per);
                hi = std::max(hi, per);
            }
            std::string names;
            for (const auto* m : models) names += (names.empty() ? "" : ", ") + m->name;
            t.rows.push_back({{str(c, "label"), {}, {}}, {num(lo, 1) + "–" + num(hi, 1) + " GB", hi, {}}, {names, {}, {}}});
        }
        return t;
    }

    std::vector<const MachineProfile*> machines() const {
        std::vector<const MachineProfile*> out;
        for (const auto& id : array(s_, "machines")) out.push_back(&lib_.machine(id.get<std::string>()));
        return out;
    }

    TableCell verdict_cell(const MachineVerdict& v) const {
        const double margin = double(v.margin_bytes);
        std::string text = v.fit == Fit::No ? "does not fit (short " + format_bytes(-margin, unit_) + ")"
                                            : std::string(to_string(v.fit)) + " (" +
                                                  format_bytes(margin, unit_) + " free)";
        return {text, margin, v.fit};
    }

    Table verdict_grid() const {
        Table t = header();
        const auto ms = machines();
        t.headers.push_back("Case");
        for (const auto* m : ms) t.headers.push_back(m->name);
        for (const auto& r : array(s_, "rows")) {
            const ModelProfile& model = lib_.model(str(r, "model"));
            const TrainingSetup st = setup(r);
            std::vector<TableCell> row{{str(r, "label"), {}, {}}};
            for (const auto* m : ms) row.push_back(verdict_cell(verdict(model.arch, r, st, *m)));
            t.rows.push_back(std::move(row));
        }
        return t;
    }

    Table machine_winners() const {
        Table t = header();
        t.headers = {"Scenario", "Winner", "Why"};
        const auto ms = machines();
        for (const auto& r : array(s_, "rows")) {
            const std::string criterion = r.value("criterion", std::string("speed"));
            if (criterion == "technique") {
                const MachineProfile* best = nullptr;
                for (const auto* m : ms)
                    if (!best || framework_for(*m).technique_lead > framework_for(*best).technique_lead) best = m;
                t.rows.push_back({{str(r, "label"), {}, {}},
                                  {best->name, {}, {}},
                                  {framework_for(*best).name + " gets new training techniques first", {}, {}}});
                continue;
            }
            std::vector<const MachineProfile*> winners;
            double min_ratio = INFINITY, max_ratio = 0;
            bool others_always_fit = true, winner_only = false;
            double spare = INFINITY;
            std::string loser_note;
            for (const auto& c : array(r, "cases")) {
                const ModelProfile& model = lib_.model(str(c, "model"));
                const TrainingSetup st = setup(c);
                std::vector<MachineVerdict> vs;
                for (const auto* m : ms) vs.push_back(verdict(model.arch, c, st, *m));
                // Comfortably fitting machines first; among those the fastest wins.
                const MachineVerdict* best = nullptr;
                for (Fit level : {Fit::Fits, Fit::Tight}) {
                    for (const auto& v : vs)
                        if (v.fit == level && (!best || v.speed.tokens_per_s > best->speed.tokens_per_s)) best = &v;
                    if (best) break;
                }
                if (!best) {
                    winners.push_back(nullptr);
                    continue;
                }
                winners.push_back(best->machine);
                spare = std::min(spare, double(best->margin_bytes));
                int fitting_others = 0;
                for (const auto& v : vs) {
                    if (&v == best) continue;
                    if (v.fit == Fit::Fits) {
                        ++fitting_others;
                        const double ratio = best->speed.tokens_per_s / v.speed.tokens_per_s;
                        min_ratio = std::min(min_ratio, ratio);
                        max_ratio = std::max(max_ratio, ratio);
                    } else {
                        others_always_fit = false;
                        loser_note = v.machine->name + (v.fit == Fit::No
                                                            ? " is short by " + format_bytes(-double(v.margin_bytes), unit_)
                                                            : " is within 10 % of its ceiling") +
                                     " at " + model.name + " " + case_words(st);
                    }
                }
                if (fitting_others == 0 && loser_note.find("short") != std::string::npos) winner_only = true;
            }
            const bool same = std::all_of(winners.begin(), winners.end(),
                                          [&](const MachineProfile* w) { return w && w == winners.front(); });
            std::string winner, why;
            if (!same) {
                winner = "Tie";
                std::vector<std::string> parts;
                for (const auto* m : ms) {
                    if (std::find(winners.begin(), winners.end(), m) != winners.end()) parts.push_back(m->name);
                }
                why = parts.size() >= 2 ? parts[0] + " wins some cases, " + parts[1] + " the others"
                                        : "no machine wins every case";
                why += "";
            } else {
                winner = winners.front()->name;
                if (others_always_fit && max_ratio > 0)
                    why = num(min_ratio, 1) + "–" + num(max_ratio, 1) + "× faster; everything fits on both";
                else if (winner_only)
                    why = "only machine with the memory (" + loser_note + ")";
                else
                    why = "fits with at least " + format_bytes(spare, unit_) + " to spare; " + loser_note;
            }
            t.rows.push_back({{str(r, "label"), {}, {}}, {winner, {}, {}}, {why, {}, {}}});
        }
        return t;
    }

    Table header() const {
        Table t;
        t.id = s_.value("id", std::string());
        t.title = s_.value("title", t.id);
        t.caption = s_.value("caption", std::string());
        return t;
    }

private:
    const ProfileLibrary& lib_;
    const json& s_;
    ByteUnit unit_;
    std::string file_;
};

}  // namespace

Table build_table(const ProfileLibrary& library, const json& scenario, ByteUnit unit) {
    ScenarioReader r(library, scenario, unit);
    const std::string kind = r.str(scenario, "kind");
    if (kind == "size_table") return r.size_table();
    if (kind == "bytes_per_param") return r.bytes_per_param();
    if (kind == "per_billion") return r.per_billion();
    if (kind == "verdict_grid") return r.verdict_grid();
    if (kind == "machine_winners") return r.machine_winners();
    throw ProfileError("scenario '" + scenario.value("id", std::string("?")) + "'", "kind",
                       "expected size_table, bytes_per_param, per_billion, verdict_grid or machine_winners");
}

std::string Table::to_markdown() const {
    std::string out;
    if (!title.empty()) out += "### " + title + "\n\n";
    auto line = [&](const std::vector<std::string>& cells) {
        out += "|";
        for (const auto& c : cells) out += " " + c + " |";
        out += "\n";
    };
    line(headers);
    out += "|";
    for (size_t i = 0; i < headers.size(); ++i) out += "---|";
    out += "\n";
    for (const auto& r : rows) {
        std::vector<std::string> cells;
        for (const auto& c : r) cells.push_back(c.text);
        line(cells);
    }
    if (!caption.empty()) out += "\n" + caption + "\n";
    return out;
}

std::string Table::to_csv(bool exact) const {
    std::string out;
    for (size_t i = 0; i < headers.size(); ++i) out += (i ? "," : "") + escape_csv(headers[i]);
    out += "\n";
    for (const auto& r : rows) {
        for (size_t i = 0; i < r.size(); ++i) {
            std::string cell = r[i].text;
            if (exact && r[i].value && !r[i].fit) cell = exact_number(*r[i].value);
            out += (i ? "," : "") + escape_csv(cell);
        }
        out += "\n";
    }
    return out;
}

}  // namespace wingspan

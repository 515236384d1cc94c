#include "wingspan/ui/machine_grid.hpp"
#include "wingspan/plan_lookup.hpp"
#include "wingspan/speed_model.hpp"

#include <algorithm>
#include <cmath>

namespace wingspan::ui {

namespace {

std::string ratio_text(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", r);
    return buf;
}

const MachineProfile* find_machine(const ProfileLibrary& lib, const std::string& id) {
    for (const auto& m : lib.machines())
        if (m.id == id) return &m;
    return nullptr;
}

std::vector<std::pair<std::string, TrainingSetup>> grid_columns(const TrainingSetup& base) {
    auto cols = method_variants(base);
    cols[0].first = "Full fine-tune";
    cols[1].first = "LoRA";
    cols[2].first = "QLoRA";
    TrainingSetup serve = base;
    serve.method = Method::Serve;
    serve.quantization = Quantization::None;
    serve.serve_batch = base.trains() ? base.micro_batch : base.serve_batch;
    cols.emplace_back("Serve (16-bit)", serve);
    return cols;
}

std::string label_of(const GridCell& c, const MachineProfile* m) {
    for (const auto& k : c.contenders)
        if (k.machine == m) return k.label;
    return short_machine_name(*m);
}

// Who wins and by how much, in the cell's words (`c.verdict`) and the tooltip's (`c.why`).
void name_the_winner(GridCell& c, const MachineVerdict& best, const MachineVerdict* runner_up, ByteUnit unit) {
    const std::string name = label_of(c, best.machine);
    if (!runner_up || runner_up->speed.tokens_per_s <= 0 || best.speed.tokens_per_s <= 0) {
        c.verdict = name + " only";
        c.why = std::string(best.fit == Fit::Tight ? "only fit, tight: " : "only fit: ") +
                format_bytes(double(best.margin_bytes), unit) + " free";
        return;
    }
    const std::string other = short_machine_name(*runner_up->machine);
    const double r = best.speed.tokens_per_s / runner_up->speed.tokens_per_s;
    if (r >= 1.05) {
        c.verdict = name + " " + ratio_text(r) + "× faster";
        c.why = ratio_text(r) + "× faster than " + other;
    } else if (r >= 1.0 / 1.05) {
        c.verdict = name + ", as fast";
        c.why = "as fast as " + other + " (within 5 %)" + (best.fit != runner_up->fit ? ", with more room" : "");
    } else {
        // The roomier machine wins though the other is faster: say so, never "0.3× faster".
        c.verdict = name + ", " + label_of(c, runner_up->machine) + " tight";
        c.why = "fits with room; " + other + " is " + ratio_text(1.0 / r) + "× faster but tight";
    }
}

GridCell evaluate_cell(const ProfileLibrary& lib, const Plan& plan, const std::vector<const MachineProfile*>& compared,
                       const ModelProfile& model, const TrainingSetup& setup, ByteUnit unit) {
    GridCell c;
    c.model_id = model.id;
    c.setup = setup;
    try {
        setup.validate(model.arch);
    } catch (const std::exception& e) {
        c.error = e.what();
        c.why = "cannot be computed: " + c.error;
        return c;
    }
    std::vector<MachineVerdict> vs;
    for (const MachineProfile* m : compared) {
        const FrameworkProfile& fw = framework_for(lib, plan, *m);
        vs.push_back(evaluate(model.arch, setup_on(setup, fw, plan), *m, fw));
    }
    const std::vector<std::string> labels = grid_machine_labels(compared);
    for (size_t i = 0; i < vs.size(); ++i) {
        const MachineVerdict& v = vs[i];
        const double seconds = setup.trains() && v.speed.tokens_per_s > 0
                                   ? estimate_run(v.speed, *v.machine, plan.dataset.tokens()).seconds
                                   : 0.0;
        c.contenders.push_back(
            {v.machine, labels[i], v.fit, v.margin_bytes, v.speed.tokens_per_s, seconds, describe_setup(v.setup)});
        c.fitting += v.fit != Fit::No;
    }
    // The lesson's rule: fits with room beats tight; among equals the fastest wins.
    const MachineVerdict* best = nullptr;
    for (Fit level : {Fit::Fits, Fit::Tight}) {
        for (const auto& v : vs)
            if (v.fit == level && (!best || v.speed.tokens_per_s > best->speed.tokens_per_s)) best = &v;
        if (best) break;
    }
    if (!best) {
        // Say how far the closest machine is.
        const MachineVerdict* closest = nullptr;
        for (const auto& v : vs)
            if (!closest || v.margin_bytes > closest->margin_bytes) closest = &v;
        c.verdict = "none fits";
        c.why = closest ? "closest: " + short_machine_name(*closest->machine) + ", short " +
                              format_bytes(-double(closest->margin_bytes), unit)
                        : "no machine compared";
        if (closest && closest->margin_bytes < 0)
            c.closest = label_of(c, closest->machine) + " short " + format_bytes(-double(closest->margin_bytes), unit);
        return c;
    }
    c.winner = best->machine;
    c.fit = best->fit;
    c.margin_bytes = best->margin_bytes;
    const MachineVerdict* runner_up = nullptr;
    for (const auto& v : vs)
        if (&v != best && v.fit != Fit::No && (!runner_up || v.speed.tokens_per_s > runner_up->speed.tokens_per_s))
            runner_up = &v;
    name_the_winner(c, *best, runner_up, unit);
    if (setup.trains() && best->speed.tokens_per_s > 0)
        c.why += " · " + likely_range(estimate_run(best->speed, *best->machine, plan.dataset.tokens()).seconds);
    const FrameworkProfile& fw = framework_for(lib, plan, *best->machine);
    c.max_batch = solve(SolveFor::Batch, model.arch, setup_on(setup, fw, plan), *best->machine, fw).value;
    c.max_seq = solve(SolveFor::Seq, model.arch, setup_on(setup, fw, plan), *best->machine, fw).value;
    return c;
}

std::string fit_symbol(Fit f) { return f == Fit::Fits ? "✓" : f == Fit::Tight ? "!" : "✗"; }

std::string tokens_per_s_text(double t) {
    return format_count(std::int64_t(std::llround(t))) + " tokens/s";
}

}  // namespace

std::vector<std::string> grid_machine_labels(const std::vector<const MachineProfile*>& machines) {
    std::vector<std::string> full, two;
    for (const MachineProfile* m : machines) {
        full.push_back(short_machine_name(*m));
        const std::string& n = full.back();
        const auto first = n.find(' ');
        const auto second = first == std::string::npos ? std::string::npos : n.find(' ', first + 1);
        two.push_back(second == std::string::npos ? n : n.substr(0, second));
    }
    for (size_t i = 0; i < two.size(); ++i)
        if (std::count(two.begin(), two.end(), two[i]) > 1) return full;
    return two;
}

const std::vector<std::string>& lesson_compared_machines() {
    static const std::vector<std::string> ids = {"rtx-4090", "mac-studio-m3-ultra-96gb"};
    return ids;
}

std::string grid_cell_text(const GridCell& c, ByteUnit unit) {
    (void)unit;
    if (!c.error.empty()) return "—";
    if (!c.winner) return "✗ none fits" + (c.closest.empty() ? std::string() : " · " + c.closest);
    std::string s = fit_symbol(c.fit) + " " + c.verdict;
    for (const auto& k : c.contenders)
        if (k.machine == c.winner)
            s += " · " + (c.setup.trains() ? format_duration(k.run_seconds) : tokens_per_s_text(k.tokens_per_s));
    return s;
}

std::string grid_cell_details(const GridCell& c, ByteUnit unit) {
    if (!c.error.empty()) return c.why;
    std::string s = describe_setup(c.setup);
    for (const auto& k : c.contenders) {
        s += "\n" + fit_symbol(k.fit) + " " + short_machine_name(*k.machine) + ": ";
        if (k.fit == Fit::No)
            s += k.margin_bytes < 0 ? "short " + format_bytes(-double(k.margin_bytes), unit) : "host RAM short";
        else
            s += std::string(k.fit == Fit::Tight ? "tight, " : "fits, ") + format_bytes(double(k.margin_bytes), unit) + " free";
        if (k.tokens_per_s > 0) s += " · " + tokens_per_s_text(k.tokens_per_s);
        if (k.run_seconds > 0) s += " · " + likely_range(k.run_seconds);
        if (k.setup != describe_setup(c.setup)) s += "\n    runs as " + k.setup;
    }
    if (c.winner) {
        const bool serve = c.setup.method == Method::Serve;
        s += "\nWinner: " + short_machine_name(*c.winner) + " — " + c.why;
        s += "\nOn it: " + std::string(serve ? "≤ " : "batch ≤ ") + format_count(c.max_batch) +
             (serve ? " sequences" : "") + " · seq ≤ " + format_count(c.max_seq) + " (everything else as the plan)";
    } else {
        s += "\nNo compared machine fits (" + c.why + ")";
    }
    return s;
}

Table MachineGrid::to_table(ByteUnit unit) const {
    Table t;
    t.id = "which-machine-grid";
    t.title = "Which machine trains what";
    t.caption = caption;
    t.headers.push_back("Model size");
    for (const auto& c : column_labels) t.headers.push_back(c);
    for (size_t r = 0; r < cells.size(); ++r) {
        std::vector<TableCell> row{{row_labels[r], {}, {}}};
        for (const auto& cell : cells[r]) {
            TableCell tc{grid_cell_text(cell, unit), {}, {}};
            if (cell.winner) {
                tc.value = double(cell.margin_bytes);
                tc.fit = cell.fit;
            } else if (cell.error.empty()) {
                tc.fit = Fit::No;
            }
            row.push_back(tc);
        }
        t.rows.push_back(std::move(row));
    }
    return t;
}

MachineGrid machine_grid(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit, const std::vector<std::string>& compared) {
    MachineGrid g;
    std::vector<const ModelProfile*> models;
    const ResolvedModel current = try_resolve_model(lib, plan.model).value_or(ResolvedModel{});
    if (plan.model.config.is_null() && !current.family.empty()) models = family_range(lib, current.family).members;
    if (models.empty()) {
        for (const auto& m : lib.models())
            if (m.id == plan.model.model_id) models.push_back(&m);
    }
    const auto columns = grid_columns(plan.setup);
    std::vector<const MachineProfile*> machines_compared;
    for (const auto& id : compared)
        if (const MachineProfile* m = find_machine(lib, id);
            m && std::find(machines_compared.begin(), machines_compared.end(), m) == machines_compared.end())
            machines_compared.push_back(m);
    for (const auto& [label, setup] : columns) g.column_labels.push_back(label);
    std::string machines;
    for (const MachineProfile* m : machines_compared) machines += (machines.empty() ? "" : " vs ") + short_machine_name(*m);
    g.caption = describe_setup(plan.setup) + " · " + (machines.empty() ? "no machine compared" : machines) +
                ". ✓ fits with room, ! tight, ✗ none fits; room beats tight, then the faster wins. Time: the data "
                "set on the winner. Hover a cell for each machine's figures.";
    for (const ModelProfile* m : models) {
        g.row_labels.push_back(format_params_short(m->arch.parameter_count()) + " (" + m->name + ")");
        std::vector<GridCell> row;
        for (const auto& [label, setup] : columns) row.push_back(evaluate_cell(lib, plan, machines_compared, *m, setup, unit));
        g.cells.push_back(std::move(row));
    }
    return g;
}

Plan plan_for_cell(const Plan& plan, const GridCell& cell) {
    Plan p = plan;
    p.model = ModelChoice{};
    p.model.model_id = cell.model_id;
    p.setup = cell.setup;
    return p;
}

}  // namespace wingspan::ui

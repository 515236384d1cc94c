#include "wingspan/ui/machine_grid.hpp"
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

GridCell evaluate_cell(const ProfileLibrary& lib, const Plan& plan, const ModelProfile& model, const TrainingSetup& setup,
                       ByteUnit unit) {
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
    for (const auto& id : plan.machines) {
        const MachineProfile* m = find_machine(lib, id);
        if (m) vs.push_back(evaluate(model.arch, setup, *m, framework_for(lib, plan, *m)));
    }
    // The lesson's rule: fits with room beats tight; among equals the fastest wins.
    const MachineVerdict* best = nullptr;
    for (Fit level : {Fit::Fits, Fit::Tight}) {
        for (const auto& v : vs)
            if (v.fit == level && (!best || v.speed.tokens_per_s > best->speed.tokens_per_s)) best = &v;
        if (best) break;
    }
    for (const auto& v : vs) c.fitting += v.fit != Fit::No;
    if (!best) {
        // Say how far the closest machine is.
        const MachineVerdict* closest = nullptr;
        for (const auto& v : vs)
            if (!closest || v.margin_bytes > closest->margin_bytes) closest = &v;
        c.why = closest ? "closest: " + short_machine_name(*closest->machine) + ", short " +
                              format_bytes(-double(closest->margin_bytes), unit)
                        : "no machine ticked";
        return c;
    }
    c.winner = best->machine;
    c.fit = best->fit;
    c.margin_bytes = best->margin_bytes;
    const MachineVerdict* runner_up = nullptr;
    for (const auto& v : vs)
        if (&v != best && v.fit != Fit::No && (!runner_up || v.speed.tokens_per_s > runner_up->speed.tokens_per_s))
            runner_up = &v;
    if (runner_up && runner_up->speed.tokens_per_s > 0)
        c.why = ratio_text(best->speed.tokens_per_s / runner_up->speed.tokens_per_s) + "× faster than " +
                short_machine_name(*runner_up->machine);
    else
        c.why = std::string(best->fit == Fit::Tight ? "only fit, tight: " : "only fit: ") +
                format_bytes(double(best->margin_bytes), unit) + " free";
    if (setup.trains() && best->speed.tokens_per_s > 0)
        c.why += " · " + likely_range(estimate_run(best->speed, *best->machine, plan.dataset.tokens()).seconds);
    const FrameworkProfile& fw = framework_for(lib, plan, *best->machine);
    c.max_batch = solve(SolveFor::Batch, model.arch, setup, *best->machine, fw).value;
    c.max_seq = solve(SolveFor::Seq, model.arch, setup, *best->machine, fw).value;
    return c;
}

}  // namespace

std::string grid_cell_text(const GridCell& c, ByteUnit unit) {
    (void)unit;
    if (!c.error.empty()) return "—";
    if (!c.winner) return "none fits — " + c.why;
    std::string s = short_machine_name(*c.winner) + " — " + c.why;
    const bool serve = c.setup.method == Method::Serve;
    s += " · " + std::string(serve ? "≤ " : "batch ≤ ") + format_count(c.max_batch) + (serve ? " sequences" : "") +
         " · seq ≤ " + format_count(c.max_seq);
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

MachineGrid machine_grid(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit) {
    MachineGrid g;
    std::vector<const ModelProfile*> models;
    ResolvedModel current;
    try {
        current = resolve_model(lib, plan.model);
    } catch (const std::exception&) {
    }
    if (plan.model.config.is_null() && !current.family.empty()) models = family_range(lib, current.family).members;
    if (models.empty()) {
        for (const auto& m : lib.models())
            if (m.id == plan.model.model_id) models.push_back(&m);
    }
    const auto columns = grid_columns(plan.setup);
    for (const auto& [label, setup] : columns) g.column_labels.push_back(label);
    std::string machines;
    for (const auto& id : plan.machines)
        if (const MachineProfile* m = find_machine(lib, id)) machines += (machines.empty() ? "" : ", ") + short_machine_name(*m);
    g.caption = describe_setup(plan.setup) + " · among: " + (machines.empty() ? "no machine ticked" : machines) +
                ". A machine where it fits with room beats a tight one; among those the fastest wins. Max batch and "
                "sequence: on the winner, everything else as the plan.";
    for (const ModelProfile* m : models) {
        g.row_labels.push_back(format_params_short(m->arch.parameter_count()) + " (" + m->name + ")");
        std::vector<GridCell> row;
        for (const auto& [label, setup] : columns) row.push_back(evaluate_cell(lib, plan, *m, setup, unit));
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

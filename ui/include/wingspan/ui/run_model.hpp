#pragma once
// What "Train ▶" trains: the plan's model from a local folder or the Hugging Face cache, and
// the plain-words comparison of the plan with the run ("Planner: X → this run: Y").
#include <cstdint>

#include <QString>
#include <QStringList>

#include "wingspan/plan.hpp"

namespace wingspan::ui {

struct RunOptions;

// The Hugging Face hub cache, as core finds it (hub::default_hf_hub_cache).
QString hf_hub_cache_dir();
// The snapshot folder of `repo` ("OWNER/NAME") in that cache with a config.json: the one
// refs/main names, else the newest. Empty when there is none.
QString hf_cache_snapshot(const QString& repo, const QString& cache_dir = hf_hub_cache_dir());

// The model a plan shows, and where its weights are on this machine.
struct PlannedModel {
    QString name;              // "Llama 3.1 8B"
    QString repo;              // "meta-llama/Llama-3.1-8B" (empty when the profile has none)
    QString folder;            // a folder with config.json, when found
    std::int64_t params = 0;
    bool ok() const { return !folder.isEmpty(); }
    // Why it cannot train from pretrained weights here, and what to do about it.
    QString missingText() const;
};
PlannedModel find_planned_model(const ProfileLibrary& lib, const Plan& plan);

// Empty when the plan can be trained; otherwise why not (Serve plans do not train).
QString cannot_train_reason(const Plan& plan);

// "Planner: Llama 3.1 8B · LoRA r16 · seq 1,024 × 1 → this run: built-in demo model (random
// weights) · LoRA r16 · seq 128 × 4 · on cpu" (HTML, differences in bold), or "This run
// trains the plan: …" when they agree. `weights` names the weights the run trains from.
struct PlanRunComparison {
    bool differs = false;
    QString html;
    QStringList differences;   // "model", "weights", "method", "rank", "sequence", "batch", "precision", "device", "processes"
};
PlanRunComparison compare_plan_and_run(const ProfileLibrary* lib, const Plan& plan, const RunOptions& run,
                                       const QString& run_device_label);

}  // namespace wingspan::ui

#pragma once
// The planner's serve mode, served by llama.cpp (issue 30): the plan's model in a GGUF weight
// format (q4_k_m, q8_0, ...) or a GGUF file, with llama.cpp's options (context, KV cache type,
// GPU layers, flash attention). Shows what `wingspan plan --method serve --gguf FILE` / `--quant`
// prints: frozen_weights, kv_cache and compute_buffer, each split between the GPU and host RAM,
// the layers on the GPU, and per machine the verdict, the most GPU layers and the longest
// context that fit. Every number comes from core's llama_cpp terms and machine_fit, as the CLI's.
#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "wingspan/llama_cpp_fit.hpp"
#include "wingspan/llama_cpp_terms.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/units.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace wingspan::ui {

class ServeGgufPanel : public QWidget {
    Q_OBJECT
public:
    explicit ServeGgufPanel(QWidget* parent = nullptr);

    // The plan's model, machines and context (its sequence length); recomputes.
    void setContext(const Architecture& arch, const std::string& model_name, std::vector<const MachineProfile*> machines,
                    std::int64_t n_ctx, ByteUnit unit);
    // A GGUF file instead of the plan's model in a chosen format (empty: back to the format).
    bool setGgufFile(const QString& path, QString* error = nullptr);

    // The plan's llama.cpp settings shown in the controls (no edited() signal); a GGUF file
    // that cannot be read leaves the format and says why in the summary.
    void setChoice(const LlamaCppChoice& choice);
    LlamaCppChoice choice() const;
    std::int64_t context() const;

    // What the chart above answers for each machine: it serves the plan's model with that
    // machine's framework (PyTorch's transformers, MLX, ...) in `weights`, not with llama.cpp. The
    // panel says so above its table and names each machine where the two verdicts differ
    // (issue 32: "T4 ✗ short 4.0 GB" beside "T4 ✓ fits" read as a contradiction).
    struct ChartAnswer {
        const MachineProfile* machine = nullptr;
        QString engine;   // the framework's short name
        bool fits = false;
    };
    void setChartAnswers(const QString& weights, std::vector<ChartAnswer> answers);
    QString enginesText() const;

    llama_cpp::ServeOptions options() const;
    const std::optional<llama_cpp::ServePlan>& servePlan() const { return plan_; }
    const std::vector<llama_cpp::MachineFit>& machineFits() const { return fits_; }
    QString errorText() const;

signals:
    void changed();
    // The user changed a setting (the plan keeps it: saved plans and File ▸ Save reopen it).
    void edited();

private:
    void recompute();
    void writeEnginesText();
    void chooseFile();

    std::optional<Architecture> arch_;
    std::string model_name_;
    std::vector<const MachineProfile*> machines_;
    ByteUnit unit_ = ByteUnit::GB;
    std::optional<llama_cpp::ServeModel> file_model_;
    QString file_;
    std::optional<llama_cpp::ServePlan> plan_;
    std::vector<llama_cpp::MachineFit> fits_;
    QString chart_weights_;
    std::vector<ChartAnswer> chart_answers_;

    QComboBox* quant_ = nullptr;
    QLabel* file_label_ = nullptr;
    QSpinBox* ctx_ = nullptr;
    QComboBox* kv_type_ = nullptr;
    QSpinBox* gpu_layers_ = nullptr;
    QSpinBox* parallel_ = nullptr;
    QSpinBox* ubatch_ = nullptr;
    QCheckBox* flash_attn_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* engines_ = nullptr;
    QTableWidget* components_ = nullptr;
    QTableWidget* machines_table_ = nullptr;
};

}  // namespace wingspan::ui

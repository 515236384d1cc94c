// The inputs panel's advanced settings: precision, optimizer, attention, loss chunking,
// devices and sharding, and the memory techniques (offload, the step in backward, compile).
#include "wingspan/ui/inputs_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QSpinBox>
#include <QToolButton>

#include "planner/inputs_panel_items.hpp"

namespace wingspan::ui {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

QWidget* InputsPanel::buildAdvancedBox() {
    advanced_toggle_ = new QToolButton;
    advanced_toggle_->setObjectName("advancedToggle");
    advanced_toggle_->setText("Precision, optimizer, memory techniques, devices…");
    advanced_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    advanced_toggle_->setArrowType(Qt::RightArrow);
    advanced_toggle_->setCheckable(true);
    advanced_toggle_->setAutoRaise(true);
    advanced_box_ = new QGroupBox;
    auto* af = new QFormLayout(advanced_box_);
    precision_ = new QComboBox;
    precision_->setObjectName("precision");
    precision_->addItem("auto (each machine's fastest exact one)", QString("auto"));
    add_enum_items<Precision>(precision_, {{Precision::Bf16Mixed, "bf16 mixed (fp32 master weights)"},
                                           {Precision::Fp16Mixed, "fp16 mixed (for GPUs without bf16)"},
                                           {Precision::Bf16, "pure bf16"},
                                           {Precision::Fp32, "fp32"}});
    precision_->setToolTip("Bytes per weight and activation. Mixed precision keeps 16-bit weights plus an fp32 master copy\n"
                           "of what trains (4 more bytes per trainable parameter); fp32 doubles weights and activations.\n"
                           "Machines without bf16 (T4, P100) run fp16 mixed instead.\n"
                           "auto: bf16 mixed where a machine computes in bf16, fp16 mixed on GPUs without it, fp32 on\n"
                           "CPUs and Macs without it (as wingspan-train's --precision auto), bf16 mixed where only it fits.");
    af->addRow("&Precision:", precision_);
    optimizer_ = new QComboBox;
    optimizer_->setObjectName("optimizer");
    add_enum_items<Optimizer>(optimizer_, {{Optimizer::AdamW, "AdamW (two fp32 moments, 8 B/param)"},
                                           {Optimizer::AdamW8bit, "8-bit AdamW (2 B/param)"},
                                           {Optimizer::PagedAdamW8bit, "Paged 8-bit AdamW"},
                                           {Optimizer::PagedAdamW, "Paged AdamW (fp32 moments, paged to host RAM)"},
                                           {Optimizer::Sgd, "SGD with momentum (4 B/param)"},
                                           {Optimizer::Adafactor, "Adafactor (factored, tiny)"}});
    optimizer_->setToolTip("Optimizer state per trainable parameter: AdamW keeps two fp32 moments (8 bytes), 8-bit AdamW\n"
                           "2 bytes, SGD with momentum 4 bytes, Adafactor a few bytes per row and column.");
    af->addRow("&Optimizer:", optimizer_);
    attention_ = new QComboBox;
    attention_->setObjectName("attention");
    add_enum_items<Attention>(attention_, {{Attention::Sdpa, "SDPA (memory-efficient)"},
                                           {Attention::Flash, "FlashAttention"},
                                           {Attention::Eager, "Eager (materialises scores)"}});
    attention_->setToolTip("Eager attention stores the heads × seq × seq score matrix per layer for the backward pass;\n"
                           "SDPA and FlashAttention never materialise it, so activations stay linear in the sequence.");
    af->addRow("A&ttention:", attention_);
    loss_chunk_ = new QSpinBox;
    loss_chunk_->setObjectName("lossChunk");
    loss_chunk_->setRange(0, 1 << 20);
    loss_chunk_->setSingleStep(256);
    loss_chunk_->setSpecialValueText("off (whole batch)");
    loss_chunk_->setToolTip("Compute the cross-entropy over this many tokens at a time: the fp32 logits buffer\n"
                            "(tokens × vocabulary × 4 bytes) shrinks to one chunk.");
    af->addRow("&Loss chunk:", loss_chunk_);
    train_embeddings_ = new QCheckBox("Train embeddings and head too");
    train_embeddings_->setObjectName("trainEmbeddings");
    train_embeddings_->setToolTip("LoRA/QLoRA: the embedding and output head train fully (new tokens, chat templates):\n"
                                  "their gradients, master copy and optimizer state are added.");
    af->addRow(train_embeddings_);
    devices_ = new QSpinBox;
    devices_->setObjectName("devices");
    devices_->setRange(1, 1024);
    devices_->setToolTip("GPUs training together. With DDP every device holds everything; ZeRO and FSDP split\n"
                         "optimizer state (1), gradients (2) and weights (3/FSDP) across them.");
    af->addRow("&Devices:", devices_);
    sharding_ = new QComboBox;
    sharding_->setObjectName("sharding");
    add_enum_items<Sharding>(sharding_, {{Sharding::None, "None (one device)"},
                                         {Sharding::Ddp, "DDP (replicate)"},
                                         {Sharding::Zero1, "ZeRO-1 (shard optimizer)"},
                                         {Sharding::Zero2, "ZeRO-2 (+ gradients)"},
                                         {Sharding::Zero3, "ZeRO-3 (+ weights)"},
                                         {Sharding::Fsdp, "FSDP (full shard)"}});
    sharding_->setToolTip(devices_->toolTip());
    af->addRow("S&harding:", sharding_);
    offload_ = new QCheckBox("Offload optimizer to host RAM");
    offload_->setObjectName("offload");
    offload_->setToolTip("Optimizer state and fp32 master weights move to system RAM: the GPU holds less, the step\n"
                         "is slower. On unified memory it is the same pool, so nothing is saved.");
    af->addRow(offload_);
    // Issue 25's memory techniques, as `wingspan plan` takes them; a combination the planner
    // refuses (e.g. the step in backward with gradient accumulation) shows the CLI's message.
    optimizer_in_backward_ = new QCheckBox("Optimizer step in backward");
    optimizer_in_backward_->setObjectName("optimizerInBackward");
    optimizer_in_backward_->setToolTip("--optimizer-in-backward: each parameter's optimizer step runs as soon as its gradient\n"
                                       "is ready and the gradient is freed at once, so the gradients of the whole model are never\n"
                                       "held together (torchtune optimizer_in_bwd). No gradient accumulation, one device.");
    af->addRow(optimizer_in_backward_);
    activation_offload_ = new QCheckBox("Offload checkpointed activations to host RAM");
    activation_offload_->setObjectName("activationOffload");
    activation_offload_->setToolTip("--activation-offload: the checkpointed layer inputs live in host RAM and are streamed back\n"
                                    "for backward (torchtune enable_activation_offloading; Unsloth's\n"
                                    "use_gradient_checkpointing=\"unsloth\"). Needs gradient checkpointing. The device holds less,\n"
                                    "the host more: both are shown, the host part against the machine's RAM.");
    af->addRow(activation_offload_);
    compile_ = new QCheckBox("torch.compile");
    compile_->setObjectName("compile");
    compile_->setToolTip("--compile: what the framework's fused kernels no longer keep, where its profile says so.");
    af->addRow(compile_);
    framework_ = new QComboBox;
    framework_->setObjectName("framework");
    framework_->addItem("Each machine's own", QString());
    for (const auto& f : lib_->frameworks()) framework_->addItem(qs(f.name), qs(f.id));
    framework_->setToolTip("The framework's fixed costs: runtime context, kernel workspaces and allocator slack (the\n"
                           "hatched segment), and its speed. By default each machine uses its own (CUDA, MLX, CPU).");
    af->addRow("&Framework:", framework_);
    advanced_box_->setVisible(false);
    connect(advanced_toggle_, &QToolButton::toggled, this, [this](bool on) {
        advanced_box_->setVisible(on);
        advanced_toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
    for (QComboBox* c : {precision_, optimizer_, attention_, sharding_, framework_})
        connect(c, &QComboBox::currentIndexChanged, this, &InputsPanel::edited);
    for (QSpinBox* s : {loss_chunk_, devices_}) connect(s, &QSpinBox::valueChanged, this, &InputsPanel::edited);
    for (QCheckBox* c : {offload_, optimizer_in_backward_, activation_offload_, compile_, train_embeddings_}) connect(c, &QCheckBox::toggled, this, &InputsPanel::edited);

    return advanced_box_;
}

}  // namespace wingspan::ui

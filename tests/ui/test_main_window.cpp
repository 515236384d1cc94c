// The planner window: every control changes the chart's series to exactly what core computes,
// the ceilings and verdicts, the tables, the which-machine grid and each machine's framework.
// Files, settings, the train hook, keyboard use, screen sizes and the machine dialog are
// test_main_window_use.cpp's. Runs offscreen.
#include "main_window_fixture.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using namespace wingspan::ui::window_test;

class MainWindowTest : public QObject, public MainWindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { startCase(); }
    void init() { openWindow(); }
    void cleanup() { w.reset(); }

    void opensOnTheLessonsExample() {
        QCOMPARE(w->plan().model.model_id, std::string("llama-3.1-8b"));
        QCOMPARE(w->evaluation().reference.params.total, std::int64_t(8'030'261'248));
        const auto& bars = w->machineChart().bars;
        QCOMPARE(int(bars.size()), 6);
        const QStringList ids{"rtx-4090", "mac-studio-m3-ultra-96gb", "t4", "a100-80gb", "cpu-laptop-8gb", "this-machine"};
        for (int i = 0; i < 6; ++i) QCOMPARE(bars[size_t(i)].id, ids[i]);
        QCOMPARE(w->plan().setup.seq_len, std::int64_t(1024));
        QVERIFY(w->plan().setup.grad_checkpointing);
        checkChartIsCore(llama8b());
        // Segments sum to what the device holds.
        for (const auto& b : bars) {
            std::int64_t sum = 0;
            for (const auto& s : b.segments) sum += s.bytes;
            QCOMPARE(sum, b.total);
        }
    }

    void seqSliderAndSpin() {
        auto* slider = child<QSlider>(w.get(), "seqSlider");
        slider->setValue(slider->value() + 2);   // 1024 -> 2048
        expected.seq_len = 2048;
        checkChartIsCore(llama8b());
        auto* spin = child<QSpinBox>(w.get(), "seqSpin");
        spin->setFocus();
        spin->selectAll();
        QTest::keyClicks(spin, "3000");
        QTest::keyClick(spin, Qt::Key_Enter);
        expected.seq_len = 3000;
        checkChartIsCore(llama8b());
        QCOMPARE(slider->value(), 9);   // nearest step: 3072
    }

    void batchAccumAndCheckpointing() {
        auto* batch = child<QSpinBox>(w.get(), "batchSpin");
        batch->setFocus();
        QTest::keyClick(batch, Qt::Key_Up);
        QTest::keyClick(batch, Qt::Key_Up);
        expected.micro_batch = 3;
        expected.serve_batch = 3;
        checkChartIsCore(llama8b());
        child<QSpinBox>(w.get(), "gradAccumSpin")->setValue(8);
        expected.grad_accum = 8;
        checkChartIsCore(llama8b());
        auto* ckpt = child<QCheckBox>(w.get(), "gradCheckpointing");
        click(ckpt);
        expected.grad_checkpointing = false;
        checkChartIsCore(llama8b());
    }

    void methods() {
        click(child<QRadioButton>(w.get(), "methodFull"));
        expected.method = Method::Full;
        checkChartIsCore(llama8b());
        QVERIFY(!child<QSlider>(w.get(), "rankSlider")->isEnabled());
        click(child<QRadioButton>(w.get(), "methodQlora"));
        expected.method = Method::Qlora;
        expected.quantization = Quantization::Nf4DoubleQuant;
        checkChartIsCore(llama8b());
        QVERIFY(bar_components(bar_of(*w, "t4")).count(Component::QuantConstants));
        auto* quant = child<QComboBox>(w.get(), "quantization");
        quant->setCurrentIndex(quant->findData("nf4"));
        expected.quantization = Quantization::Nf4;
        checkChartIsCore(llama8b());
        click(child<QRadioButton>(w.get(), "methodServe"));
        expected.method = Method::Serve;
        checkChartIsCore(llama8b());
        QVERIFY(bar_components(bar_of(*w, "rtx-4090")).count(Component::KvCache));
        // A pre-quantized checkpoint served as stored (issue 30 item 3), then back to NF4. The CUDA
        // machine's framework loads it: its bar is core's estimate of the AWQ checkpoint.
        quant->setCurrentIndex(quant->findData("awq"));
        expected.quantization = Quantization::Awq;
        QCOMPARE(w->plan().setup.to_json().dump(), expected.to_json().dump());
        QVERIFY(bar_components(bar_of(*w, "rtx-4090")) ==
                core_components(w->library(), llama8b(), expected, chosen_fields(w->plan()), "rtx-4090"));
        quant->setCurrentIndex(quant->findData("nf4"));
        expected.quantization = Quantization::Nf4;
        checkChartIsCore(llama8b());
    }

    void loraRankAndTargets() {
        child<QSlider>(w.get(), "rankSlider")->setValue(6);   // 64
        expected.lora_rank = 64;
        expected.lora_alpha = 128;
        checkChartIsCore(llama8b());
        click(child<QCheckBox>(w.get(), "target_gate"));
        click(child<QCheckBox>(w.get(), "target_up"));
        expected.lora_targets.erase(LinearRole::Gate);
        expected.lora_targets.erase(LinearRole::Up);
        checkChartIsCore(llama8b());
        child<QCheckBox>(w.get(), "trainEmbeddings")->setChecked(true);
        expected.train_embeddings = true;
        checkChartIsCore(llama8b());
    }

    void advancedControls() {
        auto* precision = child<QComboBox>(w.get(), "precision");
        precision->setCurrentIndex(precision->findData("fp32"));
        set_precision(expected, "fp32");
        checkChartIsCore(llama8b());
        auto* optimizer = child<QComboBox>(w.get(), "optimizer");
        optimizer->setCurrentIndex(optimizer->findData("adamw8bit"));
        expected.optimizer = Optimizer::AdamW8bit;
        checkChartIsCore(llama8b());
        auto* attention = child<QComboBox>(w.get(), "attention");
        attention->setCurrentIndex(attention->findData("eager"));
        expected.attention = Attention::Eager;
        checkChartIsCore(llama8b());
        child<QSpinBox>(w.get(), "lossChunk")->setValue(1024);
        expected.loss_chunk_tokens = 1024;
        checkChartIsCore(llama8b());
        child<QSpinBox>(w.get(), "devices")->setValue(4);   // several devices pick DDP
        expected.devices = 4;
        expected.sharding = Sharding::Ddp;
        checkChartIsCore(llama8b());
        auto* sharding = child<QComboBox>(w.get(), "sharding");
        sharding->setCurrentIndex(sharding->findData("zero3"));
        expected.sharding = Sharding::Zero3;
        checkChartIsCore(llama8b());
        child<QCheckBox>(w.get(), "offload")->setChecked(true);
        expected.offload = true;
        checkChartIsCore(llama8b());
        // Unified memory counts offloaded state in the same pool: the bar grows by it.
        const auto& mac = bar_of(*w, "mac-studio-m3-ultra-96gb");
        const auto& verdict = w->evaluation().verdicts[1];
        QCOMPARE(mac.total, verdict.needed_bytes);
    }

    void frameworkOverride() {
        auto* fw = child<QComboBox>(w.get(), "framework");
        fw->setCurrentIndex(fw->findData("unsloth"));
        QCOMPARE(w->plan().framework, std::string("unsloth"));
        const auto& lib = w->library();
        const MachineProfile& m = lib.machine("rtx-4090");
        const auto want = estimate_memory(llama8b(), adapt_setup(expected, m), lib.framework("unsloth")).components;
        std::map<Component, std::int64_t> nonzero;
        for (const auto& [c, b] : want)
            if (b > 0) nonzero[c] = b;
        QVERIFY(bar_components(bar_of(*w, "rtx-4090")) == nonzero);
    }

    void modelSearchAndSizeSlider() {
        auto* model = child<QComboBox>(w.get(), "modelSearch");
        const int i = model->findData("qwen2.5-7b");
        QVERIFY(i >= 0);
        model->setCurrentIndex(i);
        emit model->activated(i);
        QCOMPARE(w->evaluation().reference.params.total, std::int64_t(7'615'616'512));
        checkChartIsCore(w->library().model("qwen2.5-7b").arch);

        // The slider walks Qwen2.5 with interpolated architectures between real members.
        auto* size = child<QSlider>(w.get(), "sizeSlider");
        QVERIFY(size->isEnabled());
        size->setValue(size->value() + 60);
        const Plan& p = w->plan();
        QCOMPARE(p.model.family, std::string("qwen2.5"));
        QVERIFY(p.model.target_params > 7'615'616'512);
        std::vector<Architecture> family;
        for (const auto* m : w->library().family("qwen2.5")) family.push_back(m->arch);
        const Architecture arch = interpolate_family(family, p.model.target_params);
        QVERIFY(w->evaluation().model.interpolated);
        QCOMPARE(w->evaluation().reference.params.total, arch.parameter_count());
        QVERIFY(arch.parameter_count() < 14'770'033'664);
        checkChartIsCore(arch);
        QVERIFY(child<QLabel>(w.get(), "sizeLabel")->text().contains("interpolated"));
        // The ends land on real models.
        size->setValue(size->maximum());
        QCOMPARE(w->plan().model.model_id, std::string("qwen2.5-72b"));
        QCOMPARE(w->evaluation().reference.params.total, std::int64_t(72'706'203'648));
        // 72B LoRA does not fit a 4090.
        QCOMPARE(*bar_of(*w, "rtx-4090").fit, Fit::No);
    }

    void ceilingsAndVerdicts() {
        const auto& lib = w->library();
        for (const auto& b : w->machineChart().bars) {
            const MachineProfile& m = lib.machine(b.id.toStdString());
            const MachineVerdict v = evaluate(llama8b(), on_machine(expected, m), m, lib.framework_for(m));
            QVERIFY(b.ceiling.has_value());
            QCOMPARE(*b.ceiling, usable_bytes(m, lib.framework_for(m)));
            QCOMPARE(*b.fit, v.fit);
            QCOMPARE(b.margin, v.margin_bytes);
            QCOMPARE(b.verdict.toStdString(), verdict_text(v, ByteUnit::GB));
        }
        // The lessons: a 7-8B LoRA fits a 24 GB card, not a 16 GB T4.
        QCOMPARE(*bar_of(*w, "rtx-4090").fit, Fit::Fits);
        QCOMPARE(*bar_of(*w, "t4").fit, Fit::No);
        QVERIFY(bar_of(*w, "t4").verdict.contains("short"));
        // The machine list says the same beside each ticked machine.
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        const auto t4 = list->findItems("T4", Qt::MatchExactly, 0);
        QCOMPARE(t4.size(), 1);
        QVERIFY(t4.front()->text(1).startsWith("✗ short"));
        // QLoRA fits the T4.
        click(child<QRadioButton>(w.get(), "methodQlora"));
        QCOMPARE(*bar_of(*w, "t4").fit, Fit::Fits);
        QVERIFY(t4.front()->text(1).startsWith("✓"));
        // Qt Charts drew every bar, and each bar's dashed ceiling answers as the ceiling.
        auto* view = w->machineChartWidget();
        for (int i = 0; i < int(w->machineChart().bars.size()); ++i) {
            const QRectF bar = view->barRect(i);
            QVERIFY(bar.isValid() && bar.height() > 2);
        }
    }

    void unitSetting() {
        w->setUnit(ByteUnit::GiB);
        QCOMPARE(w->machineChart().unit, ByteUnit::GiB);
        QVERIFY(bar_of(*w, "rtx-4090").verdict.contains("GiB"));
        QVERIFY(w->machineTable().caption.find("GiB") != std::string::npos);
        // Exact bytes do not change with the unit.
        checkChartIsCore(llama8b());
    }

    void machineSelectionAndEmptyState() {
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        auto items = list->findItems("H100", Qt::MatchExactly, 0);
        QCOMPARE(items.size(), 1);
        items.front()->setCheckState(0, Qt::Checked);
        QCOMPARE(w->plan().machines.back(), std::string("h100"));
        QCOMPARE(int(w->machineChart().bars.size()), 7);
        for (int i = 0; i < list->topLevelItemCount(); ++i) list->topLevelItem(i)->setCheckState(0, Qt::Unchecked);
        QVERIFY(w->machineChart().bars.empty());
        QVERIFY(!w->machineChart().is_error);
        QVERIFY(w->machineChart().empty_message.contains("Tick machines"));
        w->machineChartWidget()->repaint();   // the empty state draws
    }

    void errorState() {
        // Every LoRA target unticked: core refuses the plan, the chart says why.
        for (const char* t : {"target_q", "target_k", "target_v", "target_o", "target_gate", "target_up", "target_down"})
            child<QCheckBox>(w.get(), t)->setChecked(false);
        QVERIFY(!w->evaluation().ok());
        QVERIFY(w->machineChart().is_error);
        QVERIFY(w->machineChart().empty_message.contains("target"));
        QVERIFY(child<QLabel>(w.get(), "summary")->text().contains("cannot be computed"));
        w->machineChartWidget()->repaint();
        child<QCheckBox>(w.get(), "target_q")->setChecked(true);
        QVERIFY(w->evaluation().ok());
        QCOMPARE(int(w->machineChart().bars.size()), 6);
        // The LM head is a target of its own ("all" leaves it out): ticking it plans its adapter.
        QVERIFY(!w->plan().setup.lora_targets.count(LinearRole::Head));
        child<QCheckBox>(w.get(), "target_head")->setChecked(true);
        QVERIFY(w->plan().setup.lora_targets.count(LinearRole::Head));
        QVERIFY(w->evaluation().ok());
        child<QCheckBox>(w.get(), "target_head")->setChecked(false);
    }

    void tables() {
        const auto& lib = w->library();
        const Table& mt = w->machineTable();
        QCOMPARE(int(mt.rows.size()), 6);
        const Plan& plan = w->plan();
        for (size_t i = 0; i < mt.rows.size(); ++i) {
            const MachineVerdict& v = w->evaluation().verdicts[i];
            const TrainingSetup there = on_machine(expected, *v.machine);
            const Solution batch = solve(SolveFor::Batch, llama8b(), there, *v.machine, *v.framework, &lib, "llama-3");
            const Solution seq = solve(SolveFor::Seq, llama8b(), there, *v.machine, *v.framework, &lib, "llama-3");
            QCOMPARE(*mt.rows[i][6].value, double(batch.value));
            QCOMPARE(*mt.rows[i][7].value, double(seq.value));
            QCOMPARE(*mt.rows[i][4].fit, v.fit);
            const RunCost cost = estimate_run(v.speed, *v.machine, plan.dataset.tokens());
            if (std::isfinite(cost.seconds)) QCOMPARE(*mt.rows[i][9].value, cost.seconds);
            if (cost.dollars) QCOMPARE(*mt.rows[i][10].value, *cost.dollars);
        }
        // The data set changes time, never memory.
        const double before = *w->machineTable().rows[0][9].value;
        child<QSpinBox>(w.get(), "epochs")->setValue(3);
        QCOMPARE(*w->machineTable().rows[0][9].value, 3 * before);
        checkChartIsCore(llama8b());

        const Table& methods = w->methodTable();
        QCOMPARE(int(methods.rows.size()), 3);
        const auto variants = method_variants(expected);
        const std::string total_header = "Total";
        const size_t total_col = size_t(std::find(methods.headers.begin(), methods.headers.end(), total_header) - methods.headers.begin());
        for (size_t i = 0; i < 3; ++i) {
            const auto est = estimate_memory(llama8b(), variants[i].second, lib.framework("pytorch-cuda"));
            QCOMPARE(*methods.rows[i][total_col].value, double(est.total_bytes));
        }
        const ChartData mc = w->methodsChart();
        QCOMPARE(int(mc.bars.size()), 3);
        QCOMPARE(int(mc.lines.size()), 6);

        const Table& sizes = w->sizeTable();
        const Table want = build_table(lib, size_scenario(lib, w->plan()), ByteUnit::GB);
        QCOMPARE(sizes.to_csv(), want.to_csv());
        QCOMPARE(int(sizes.rows.size()), 6);
        // Live: a longer sequence changes the size table.
        child<QSpinBox>(w.get(), "seqSpin")->setValue(4096);
        QVERIFY(w->sizeTable().to_csv() != want.to_csv());
    }

    void whichMachineGridReproducesTheLesson() {
        // The lessons' example on the lesson's two machines: the grid's winners are the ones
        // core's machine_winners table gives for the same cases.
        Plan plan = Plan::lesson_default();
        plan.machines = {"rtx-4090", "mac-studio-m3-ultra-96gb"};
        w->setPlan(plan);
        const auto& lib = w->library();
        const Table lesson = build_table(lib, lib.scenario("lesson-machines"));
        const std::string course_winner = lesson.rows[0][1].text;   // LoRA/QLoRA on 1B–8B
        const std::string big_winner = lesson.rows[2][1].text;      // anything touching 70B
        QCOMPARE(course_winner, lib.machine("rtx-4090").name);
        QCOMPARE(big_winner, lib.machine("mac-studio-m3-ultra-96gb").name);

        const MachineGrid& g = w->machineGrid();
        QCOMPARE(g.column_labels.size(), size_t(4));   // full, LoRA, QLoRA, serve
        QVERIFY(g.cells.size() >= 4);                  // Llama 3.2 1B, 3B, 3.1 8B, 70B
        auto cell = [&](const std::string& model, int column) -> const GridCell& {
            for (const auto& row : g.cells)
                if (row[size_t(column)].model_id == model) return row[size_t(column)];
            qFatal("no row for %s", model.c_str());
        };
        enum { Full = 0, Lora = 1, Qlora = 2, Serve = 3 };
        for (auto [model, column] : {std::pair{"llama-3.2-1b", int(Lora)}, {"llama-3.2-3b", int(Lora)},
                                     {"llama-3.1-8b", int(Qlora)}, {"llama-3.2-3b", int(Qlora)}}) {
            const GridCell& c = cell(model, column);
            QVERIFY2(c.winner, model);
            QCOMPARE(c.winner->name, course_winner);
            QVERIFY(c.why.find("faster") != std::string::npos);   // both fit: speed decides
            // The largest batch that fits the winner is core's solver's answer.
            const auto& m = lib.model(model);
            QCOMPARE(c.max_batch, solve(SolveFor::Batch, m.arch, c.setup, *c.winner, lib.framework_for(*c.winner)).value);
            QVERIFY(c.max_seq >= c.setup.seq_len);
        }
        const GridCell& qlora70 = cell("llama-3.1-70b", Qlora);
        QVERIFY(qlora70.winner);
        QCOMPARE(qlora70.winner->name, big_winner);
        QCOMPARE(qlora70.fitting, 1);   // the RTX 4090 is short
        // A 70B full fine-tune fits neither machine.
        QVERIFY(!cell("llama-3.1-70b", Full).winner);
        QVERIFY(grid_cell_text(cell("llama-3.1-70b", Full), ByteUnit::GB).rfind("✗ none fits", 0) == 0);
        // The table and its exports carry the same answer.
        const Table t = g.to_table(ByteUnit::GB);
        QCOMPARE(t.rows.size(), g.cells.size());
        QVERIFY(t.to_markdown().find(big_winner.substr(0, 10)) != std::string::npos ||
                t.to_markdown().find("Mac Studio") != std::string::npos);

        // Clicking a cell loads its plan and shows its chart.
        int row70 = -1;
        for (int r = 0; r < int(g.cells.size()); ++r)
            if (g.cells[size_t(r)][0].model_id == "llama-3.1-70b") row70 = r;
        w->tabs()->setCurrentIndex(3);
        auto* grid = child<QTableWidget>(w.get(), "machineGrid");
        QTRY_COMPARE(grid->rowCount(), int(g.cells.size()));
        const QRect cell_rect = grid->visualItemRect(grid->item(row70, Qlora));
        QTest::mouseClick(grid->viewport(), Qt::LeftButton, {}, cell_rect.center());
        QCOMPARE(w->plan().model.model_id, std::string("llama-3.1-70b"));
        QCOMPARE(w->plan().setup.method, Method::Qlora);
        QCOMPARE(w->tabs()->currentIndex(), 0);
        QCOMPARE(*bar_of(*w, "rtx-4090").fit, Fit::No);
    }

    void perMachineFramework() {
        // The RTX 4090 with Unsloth instead of its usual PyTorch + CUDA; the others unchanged.
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        list->setCurrentItem(list->findItems("RTX 4090", Qt::MatchExactly, 0).front());
        auto* combo = child<QComboBox>(w.get(), "machineFramework");
        QVERIFY(combo->isEnabled());
        // Its usual one first, named briefly in the box and in full in its tooltip.
        const QString usual = QString::fromStdString(w->library().framework_for(w->library().machine("rtx-4090")).name);
        QVERIFY(combo->itemText(0).startsWith("Usual: "));
        QVERIFY(usual.startsWith(combo->itemText(0).mid(QString("Usual: ").size())));
        QCOMPARE(combo->itemData(0, Qt::ToolTipRole).toString(), usual);
        const int unsloth = combo->findData("unsloth");
        QVERIFY(unsloth > 0);
        combo->setCurrentIndex(unsloth);
        emit combo->activated(unsloth);
        QCOMPARE(w->plan().machine_frameworks.at("rtx-4090"), std::string("unsloth"));
        const auto& lib = w->library();
        for (const auto& v : w->evaluation().verdicts) {
            const std::string want = v.machine->id == "rtx-4090" ? "unsloth" : lib.framework_for(*v.machine).id;
            QCOMPARE(v.framework->id, want);
        }
        const MachineVerdict core = evaluate(llama8b(), w->plan().setup, lib.machine("rtx-4090"), lib.framework("unsloth"));
        QCOMPARE(bar_of(*w, "rtx-4090").total, core.estimate.total_bytes);
        QVERIFY(bar_of(*w, "rtx-4090").details.contains(QString::fromStdString(lib.framework("unsloth").name).toHtmlEscaped()));
        // Saved with the plan, read back.
        const Plan back = Plan::from_json(w->plan().to_json());
        QCOMPARE(back.machine_frameworks, w->plan().machine_frameworks);
        // Back to its usual one.
        combo->setCurrentIndex(0);
        emit combo->activated(0);
        QVERIFY(w->plan().machine_frameworks.empty());
    }
};

QTEST_MAIN(MainWindowTest)
#include "test_main_window.moc"

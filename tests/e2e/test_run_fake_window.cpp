// The run panel's plan → run mapping and its place in the window, against the fake trainer: the
// trainer's arguments from a plan, the planned model found in the Hugging Face cache, the form
// following the planner, serve plans and untrained objectives refused, and closing the window
// during a run (it asks, then stops the trainer cleanly). The misbehaving trainer is test_run_fake.cpp's.
#include "e2e_support.hpp"

#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>

#include <fstream>

#include "wingspan/ui/main_window.hpp"

using namespace wingspan;
using namespace wingspan::ui;

class TestRunFakeWindow : public QObject {
    Q_OBJECT

    QTemporaryDir store_;

private slots:
    void initTestCase() {
        QVERIFY(store_.isValid());
        QApplication::setQuitOnLastWindowClosed(false);
    }

    void argumentsFromPlan() {
        Plan plan = Plan::lesson_default();
        plan.setup.method = Method::Serve;
        set_precision(plan.setup, "fp16-mixed");
        plan.setup.seq_len = 256;
        plan.setup.serve_batch = 3;
        plan.setup.lora_rank = 4;
        RunOptions o = run_options_for(plan, &e2e::library());
        QCOMPARE(o.method, Method::Lora);            // serving does not train: LoRA instead
        QCOMPARE(o.precision, Precision::Bf16Mixed); // the trainer has no fp16: bf16 mixed is the same layout
        QCOMPARE(o.seq, std::int64_t(256));
        QCOMPARE(o.batch, std::int64_t(3));
        QCOMPARE(o.machine_id, QString("this-machine"));
        QVERIFY(o.machine_ceiling > 0);
        o.steps = 7;
        o.memory_limit = 123456789;
        o.grad_checkpointing = true;
        const QStringList a = trainer_arguments(o, {}, "/d/chat.jsonl", "/out");
        const QString line = a.join(' ');
        QVERIFY2(line.contains("--method lora --rank 4"), qPrintable(line));
        QVERIFY(line.contains("--precision bf16-mixed"));
        // The lesson plan's precision is auto: the trainer chooses for the CPU it runs on.
        const RunOptions lesson = run_options_for(Plan::lesson_default(), &e2e::library());
        QVERIFY(lesson.precision_auto);
        QVERIFY(trainer_arguments(lesson, {}, "/d/chat.jsonl", "/out").join(' ').contains("--precision auto"));
        QVERIFY(line.contains("--seq 256 --batch 3"));
        QVERIFY(line.contains("--steps 7"));
        QVERIFY(line.contains("--grad-checkpointing"));
        QVERIFY(line.contains("--data /d/chat.jsonl"));
        QVERIFY(line.contains("--out /out"));
        QVERIFY(line.contains("--memory-limit 123456789"));
        QVERIFY(!line.contains("--model"));
        const RunOptions back = RunOptions::from_json(o.to_json());
        QCOMPARE(trainer_arguments(back, {}, "/d/chat.jsonl", "/out"), a);
        // The sample data is found like the trainer finds it.
        const QString sample = find_sample_data(e2e::wingspan_exe());
        QVERIFY2(sample.endsWith("sample-data/chat.jsonl") && QFileInfo::exists(sample), qPrintable(sample));
    }

    void plannedModelFromTheHubCache() {
        QTemporaryDir hf;
        const QString snap = hf.filePath("hub/models--HuggingFaceTB--SmolLM2-135M/snapshots/abc123");
        QVERIFY(QDir().mkpath(snap));
        std::ofstream((snap + "/config.json").toStdString()) << "{}";
        std::ofstream(hf.filePath("hub/models--HuggingFaceTB--SmolLM2-135M/refs/main").toStdString()) << "abc123\n";
        qputenv("HF_HOME", hf.path().toUtf8());
        qputenv("FAKE_TRAINER_MODE", "ok");
        RunPanel panel(e2e::wingspan_exe(), &e2e::library());
        panel.setTrainerPath(FAKE_TRAINER);
        panel.setStoreRoot(store_.path().toStdString());
        QVERIFY(e2e::wait_until([&] { return !panel.devicesPending(); }, 15000));
        Plan plan = Plan::lesson_default();
        plan.model.model_id = "smollm2-135m";
        panel.setPlan(plan);
        QVERIFY(panel.plannedModel().ok());
        QCOMPARE(panel.plannedModel().folder, QDir(snap).absolutePath());
        RunOptions o = panel.options();
        QCOMPARE(o.model_source, RunOptions::ModelSource::Planned);   // the default: the plan's own model
        QCOMPARE(o.model_dir, QDir(snap).absolutePath());
        o.device = "cpu";
        o.steps = 3;
        panel.setOptions(o);
        const PlanRunComparison same = panel.planComparison();
        QVERIFY2(!same.differences.contains("model") && !same.differences.contains("weights"),
                 qPrintable(same.differences.join(",")));
        QVERIFY(panel.runHeaderText().contains("pretrained weights from " + QDir(snap).absolutePath()));
        QVERIFY(e2e::run_to_end(panel));
        const QStringList args = panel.session()->arguments();
        QCOMPARE(args.value(args.indexOf("--model") + 1), QDir(snap).absolutePath());

        // Not in the cache: nothing starts, and the header and the error say how to get it.
        qputenv("HF_HOME", (hf.path() + "/empty").toUtf8());
        panel.setPlan(plan);
        QVERIFY(!panel.plannedModel().ok());
        QCOMPARE(panel.options().model_source, RunOptions::ModelSource::Planned);
        QVERIFY(panel.runHeaderText().contains("not on this machine"));
        QVERIFY(panel.runHeaderText().contains("wingspan download HuggingFaceTB/SmolLM2-135M"));
        QString error;
        QVERIFY(!panel.start(&error));
        QVERIFY2(error.contains("not on this machine"), qPrintable(error));
        // Random weights only when chosen, and then the header says so.
        o = panel.options();
        o.model_source = RunOptions::ModelSource::PlanArchitecture;
        panel.setOptions(o);
        const PlanRunComparison c = panel.planComparison();
        QVERIFY(c.differs && c.differences.contains("weights"));
        QVERIFY2(panel.runHeaderText().startsWith("Planner: ") && panel.runHeaderText().contains("random weights"),
                 qPrintable(panel.runHeaderText()));
        qunsetenv("HF_HOME");
    }

    void formFollowsThePlanner() {
        MainWindow window(e2e::wingspan_exe(), MainWindow::Options{false, false});
        RunPanel* panel = install_run_panel(window, e2e::wingspan_exe());
        QVERIFY(panel);
        window.show();
        window.tabs()->setCurrentIndex(0);
        Plan plan = window.plan();
        plan.setup.seq_len = 384;
        plan.setup.micro_batch = 3;
        plan.setup.method = Method::Qlora;
        window.setPlan(plan);
        window.tabs()->setCurrentWidget(e2e::tab_page_of(window.tabs(), panel));   // applied when the run tab shows
        QTRY_COMPARE(panel->options().seq, std::int64_t(384));
        QCOMPARE(panel->options().batch, std::int64_t(3));
        QCOMPARE(panel->options().method, Method::Qlora);
        QVERIFY(panel->followsPlanner());
        // The user edits the sequence here: the form stops following, the header says how the
        // run differs, and a new plan leaves the edit alone.
        panel->findChild<QSpinBox*>("runSeq")->setValue(200);
        QVERIFY(!panel->followsPlanner());
        auto* follow = panel->findChild<QPushButton*>("runFollowPlanner");
        QVERIFY(follow && follow->isVisible());
        plan.setup.seq_len = 512;
        window.setPlan(plan);
        window.tabs()->setCurrentIndex(0);
        window.tabs()->setCurrentWidget(e2e::tab_page_of(window.tabs(), panel));
        QTRY_VERIFY(panel->runHeaderText().contains("seq 512"));
        QCOMPARE(panel->options().seq, std::int64_t(200));
        const QString header = panel->runHeaderText();
        QVERIFY2(header.startsWith("Planner: ") && header.contains("→ this run:") && header.contains("seq 200"),
                 qPrintable(header));
        QVERIFY(panel->planComparison().differences.contains("sequence"));
        // "Follow the planner" takes the plan's settings again.
        QTest::mouseClick(follow, Qt::LeftButton);
        QVERIFY(panel->followsPlanner());
        QCOMPARE(panel->options().seq, std::int64_t(512));
        QVERIFY(!follow->isVisible());
        window.close();
    }

    void servePlansDoNotTrain() {
        MainWindow window(e2e::wingspan_exe(), MainWindow::Options{false, false});
        RunPanel* panel = install_run_panel(window, e2e::wingspan_exe());
        panel->setTrainerPath(FAKE_TRAINER);
        panel->setStoreRoot(store_.path().toStdString());
        window.show();
        auto* train = window.findChild<QPushButton*>("trainButton");
        QVERIFY(train && train->isEnabled());
        Plan plan = window.plan();
        plan.setup.method = Method::Serve;
        window.setPlan(plan);
        QVERIFY(!train->isEnabled());
        QVERIFY2(train->toolTip().contains("serves the model"), qPrintable(train->toolTip()));
        QSignalSpy started(panel, &RunPanel::runStarted);
        panel->trainPlan(plan);   // as if the signal came anyway
        QVERIFY(!panel->isRunning());
        QCOMPARE(started.count(), 0);
        QVERIFY(panel->statusText().contains("Not started"));
        QVERIFY(!panel->trainBlockedReason().isEmpty());
        plan.setup.method = Method::Lora;
        window.setPlan(plan);
        QVERIFY(train->isEnabled());
        // DPO and ORPO train (issue 31) with --objective; another objective is planned, never
        // trained as SFT under its name.
        plan.setup.objective.kind = Objective::Dpo;
        window.setPlan(plan);
        QVERIFY(train->isEnabled());
        const QStringList args = trainer_arguments(run_options_for(plan, nullptr), {}, {}, {});
        QVERIFY2(args.join(' ').contains("--objective dpo"), qPrintable(args.join(' ')));
        plan.setup.objective.kind = Objective::Kto;
        window.setPlan(plan);
        QVERIFY(!train->isEnabled());
        QVERIFY2(train->toolTip().contains("KTO") && train->toolTip().contains("SFT, DPO and ORPO"), qPrintable(train->toolTip()));
        panel->trainPlan(plan);
        QVERIFY(!panel->isRunning());
        QCOMPARE(started.count(), 0);
        plan.setup.objective.kind = Objective::Sft;
        window.setPlan(plan);
        QVERIFY(train->isEnabled());
        window.close();
    }

    void closingWindowAsksThenStops() {
        qputenv("FAKE_TRAINER_MODE", "slow");
        MainWindow window(e2e::wingspan_exe(), MainWindow::Options{false, false});
        QVERIFY(window.hasLibrary());
        RunPanel* panel = install_run_panel(window, e2e::wingspan_exe());
        QVERIFY(panel);
        panel->setTrainerPath(FAKE_TRAINER);
        panel->setStoreRoot(store_.path().toStdString());
        // The user chose the built-in demo model (the plan's 8B is not on this machine).
        RunOptions o = panel->options();
        o.model_source = RunOptions::ModelSource::BuiltIn;
        panel->setOptions(o);
        window.show();
        // "Train ▶" in the planner opens the run tab and starts.
        auto* train = window.findChild<QPushButton*>("trainButton");
        QVERIFY(train && train->isVisible());
        QTest::mouseClick(train, Qt::LeftButton);
        QCOMPARE(window.tabs()->currentWidget(), e2e::tab_page_of(window.tabs(), panel));
        QVERIFY(panel->isRunning());
        QVERIFY(e2e::wait_until([&] { return panel->shownRecord()->steps().size() >= 1; }, 20000));

        // First close: answer "Keep running".
        auto answer = [](const QString& button) {
            QTimer::singleShot(100, [button] {
                auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
                if (!box) return;
                for (QAbstractButton* b : box->buttons())
                    if (b->text() == button) b->click();
            });
        };
        answer("Keep running");
        QVERIFY(!window.close());
        QVERIFY(window.isVisible());
        QVERIFY(panel->isRunning());

        // Second close: "Stop and close" stops the trainer cleanly, then the window closes.
        answer("Stop and close");
        QVERIFY(!window.close());
        QVERIFY(e2e::wait_until([&] { return !window.isVisible(); }, 20000));
        QVERIFY(!panel->isRunning());
        QCOMPARE(panel->session()->stopOutcome(), RunSession::StopOutcome::Saved);
        QCOMPARE(panel->shownRecord()->status(), RunStatus::Interrupted);
    }
};

QTEST_MAIN(TestRunFakeWindow)
#include "test_run_fake_window.moc"

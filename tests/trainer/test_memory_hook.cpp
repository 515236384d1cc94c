// c10's allocator reporting hook (device_memory.hpp), which measures GPU runs, against the
// counting allocator that measures CPU runs: on the CPU both watch the same allocations, so a
// real training step (model, LoRA/NF4, loss, backward, AdamW) must give the same bytes per
// component, the same live total and the same peaks, to the byte.
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "memory/device_memory.hpp"
#include "kernels/device_ops.hpp"
#include "memory/memory.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"
#include "wingspan/nf4.hpp"

using namespace wingspan;
using namespace wingspan::train;

namespace {

nlohmann::json small_config() {
    nlohmann::json c = default_model_config(96);
    c["hidden_size"] = 64;
    c["intermediate_size"] = 96;
    c["num_hidden_layers"] = 2;
    c["num_attention_heads"] = 4;
    c["num_key_value_heads"] = 2;
    c["head_dim"] = 16;
    return c;
}

// The tracker saw exactly what the counting allocator counted since `base`.
void expect_same(const mem::Snapshot& base, mem::DeviceTracker& tracker, const char* where) {
    const mem::Snapshot c = mem::counting_snapshot();
    const mem::Snapshot t = tracker.snapshot();
    const QByteArray w(where);
    QVERIFY2(t.allocated == c.allocated - base.allocated,
             w + ": allocated " + QByteArray::number(qint64(t.allocated)) + " vs " +
                 QByteArray::number(qint64(c.allocated - base.allocated)));
    QVERIFY2(t.peak == c.peak - base.allocated, w + ": peak");
    QVERIFY2(t.allocations == c.allocations - base.allocations, w + ": allocation count");
    QCOMPARE(t.reserved, t.allocated);   // the CPU holds what it allocated
    for (const auto& [component, bytes] : c.components) {
        const std::int64_t since = bytes - base.components.at(component);
        QVERIFY2(t.components.at(component) == since,
                 w + ": " + QByteArray(component_name(component).data(), int(component_name(component).size())) + " " + QByteArray::number(qint64(t.components.at(component))) +
                     " vs " + QByteArray::number(qint64(since)));
        QVERIFY2(t.component_peaks.at(component) == c.component_peaks.at(component) - base.components.at(component),
                 w + ": peak of " + QByteArray(component_name(component).data(), int(component_name(component).size())));
    }
}

}  // namespace

class MemoryHookTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { mem::install(); }

    void hookEqualsCountingAllocator_data() {
        QTest::addColumn<int>("method");
        QTest::addColumn<int>("precision");
        QTest::addColumn<bool>("checkpointing");
        QTest::newRow("lora fp32") << int(Method::Lora) << int(Precision::Fp32) << false;
        QTest::newRow("qlora bf16-mixed checkpointing") << int(Method::Qlora) << int(Precision::Bf16Mixed) << true;
        QTest::newRow("full fp16-mixed") << int(Method::Full) << int(Precision::Fp16Mixed) << false;
    }
    void hookEqualsCountingAllocator() {
        QFETCH(int, method);
        QFETCH(int, precision);
        QFETCH(bool, checkpointing);
        mem::DeviceTracking tracking(c10::Device(c10::kCPU));
        mem::reset_peak();
        mem::reset_component_peaks();
        const mem::Snapshot base = mem::counting_snapshot();
        {
            ModelOptions mo;
            mo.method = static_cast<Method>(method);
            mo.precision = static_cast<Precision>(precision);
            mo.rank = 4;
            mo.targets = {LinearRole::Q, LinearRole::V, LinearRole::Down};
            Model model(ModelConfig::from_hf(small_config()), mo);
            model.build({}, 7);
            expect_same(base, tracking.tracker(), "after build");
            QVERIFY(tracking.tracker().snapshot().allocated > 0);

            std::vector<ParamState> states;
            for (auto& nt : model.trainable()) {
                ParamState s;
                s.param = nt.tensor;
                if (mo.precision != Precision::Fp32) {
                    mem::Scope scope(Component::MasterWeights);
                    s.master = nt.tensor.detach().to(at::kFloat, false, true);
                }
                mem::Scope scope(Component::OptimizerState);
                s.m = at::zeros(nt.tensor.sizes(), at::kFloat);
                s.v = at::zeros(nt.tensor.sizes(), at::kFloat);
                states.push_back(s);
            }
            at::Tensor ids = at::randint(0, 96, {2, 24}, at::kLong);
            at::Tensor labels = ids.clone();
            labels.index_put_({at::indexing::Slice(), at::indexing::Slice(0, 4)}, -100);
            at::Tensor loss = model.loss(ids, labels, checkpointing);
            expect_same(base, tracking.tracker(), "after forward");
            torch::autograd::backward({loss});
            loss.reset();
            expect_same(base, tracking.tracker(), "after backward");
            for (auto& s : states) {
                at::Tensor g = s.param.grad();
                QVERIFY(g.defined());
                retag(g, Component::Gradients);
                adamw_step(s, g, 1, 1e-3, 0.0, 1.0);
                s.param.mutable_grad() = at::Tensor();
            }
            expect_same(base, tracking.tracker(), "after the optimizer step");
            QVERIFY(tracking.tracker().snapshot().component_peaks.at(Component::Gradients) > 0);
            QVERIFY(tracking.tracker().snapshot().component_peaks.at(Component::Activations) > 0);
        }
        expect_same(base, tracking.tracker(), "after everything is freed");
        QCOMPARE(tracking.tracker().snapshot().allocated, std::int64_t(0));
    }

    // The tensor-op paths that GPUs use, checked here against the CPU kernels.
    void nf4TensorOpsMatchTheCpuKernel() {
        at::manual_seed(3);
        const at::Tensor w = at::randn({70, 33}) * 0.05;   // a last block shorter than 64
        const Nf4Weight q = Nf4Weight::quantize(w);
        const at::Tensor absmax = ops::nf4_absmax(q.block_codes, q.group_scales, q.mean);
        QVERIFY(at::equal(absmax, q.absmax()));
        for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
            const at::Tensor kernel = q.dequantize(dtype);
            const at::Tensor tensor_ops = ops::nf4_dequantize(q.codes, absmax, q.numel, q.shape, dtype);
            QCOMPARE(tensor_ops.sizes().vec(), kernel.sizes().vec());
            QVERIFY(at::equal(tensor_ops, kernel));
        }
    }

    void adamwTensorOpsMatchTheCpuKernel() {
        at::manual_seed(4);
        for (bool mixed : {false, true}) {
            ParamState a, b;
            const at::Tensor start = at::randn({300});
            a.param = mixed ? start.to(at::kBFloat16) : start.clone();
            b.param = a.param.clone();
            if (mixed) {
                a.master = a.param.to(at::kFloat);
                b.master = a.master.clone();
            }
            a.m = at::randn({300}) * 0.01;
            a.v = at::rand({300}) * 0.01;
            b.m = a.m.clone();
            b.v = a.v.clone();
            const at::Tensor g = (at::randn({300}) * 0.1).to(a.param.scalar_type());
            adamw_step(a, g, 3, 1e-2, 0.01, 0.5);   // the CPU kernel
            ops::adamw(b.param, b.master, g, b.m, b.v, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f,
                       1.0f - std::pow(0.9f, 3.0f), std::sqrt(1.0f - std::pow(0.999f, 3.0f)), 0.5f);
            QVERIFY(at::allclose(a.m, b.m, 1e-6, 1e-9));
            QVERIFY(at::allclose(a.v, b.v, 1e-6, 1e-9));
            const at::Tensor wa = mixed ? a.master : a.param, wb = mixed ? b.master : b.param;
            QVERIFY(at::allclose(wa, wb, 1e-5, 1e-7));
            QVERIFY(!at::equal(wa, start));   // it moved
        }
    }
};

QTEST_GUILESS_MAIN(MemoryHookTest)
#include "test_memory_hook.moc"

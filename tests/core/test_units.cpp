#include <QtTest>

#include "wingspan/components.hpp"
#include "wingspan/units.hpp"

using namespace wingspan;

class UnitsTest : public QObject {
    Q_OBJECT
private slots:
    void formatting() {
        QCOMPARE(format_bytes(24e9), std::string("24.0 GB"));
        QCOMPARE(format_bytes(24.0 * kGiB, ByteUnit::GiB), std::string("24.0 GiB"));
        QCOMPARE(format_bytes(24.0 * kGiB, ByteUnit::GB), std::string("25.8 GB"));
        QCOMPARE(format_bytes(5e6), std::string("5.0 MB"));
        QCOMPARE(format_bytes(1.2e12), std::string("1.2 TB"));
        QCOMPARE(format_bytes(-2.1e9), std::string("-2.1 GB"));
        QCOMPARE(format_count(8030261248), std::string("8,030,261,248"));
        QCOMPARE(format_count(-1000), std::string("-1,000"));
        QCOMPARE(format_params_short(134515008), std::string("134.5M"));
        QCOMPARE(format_params_short(8030261248), std::string("8.03B"));
    }
    void parsing() {
        QCOMPARE(parse_param_count("8b"), std::int64_t(8'000'000'000));
        QCOMPARE(parse_param_count("135M"), std::int64_t(135'000'000));
        QCOMPARE(parse_param_count("1.5B"), std::int64_t(1'500'000'000));
        QCOMPARE(parse_bytes("16GB"), std::int64_t(16'000'000'000));
        QCOMPARE(parse_bytes("24GiB"), std::int64_t(24) << 30);
        QCOMPARE(parse_bytes("512 MiB"), std::int64_t(512) << 20);
        QCOMPARE(parse_bytes("1000"), std::int64_t(1000));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_bytes("lots"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_bytes("5 parsecs"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_param_count("-3b"));
    }
    void componentNamesAndColours() {
        for (Component c : kAllComponents) {
            QCOMPARE(component_from_name(component_name(c)), std::optional<Component>(c));
            QCOMPARE(component_color(c).size(), size_t(7));
        }
        QCOMPARE(component_color(Component::FrozenWeights), std::string_view("#0072B2"));
        QCOMPARE(component_color(Component::OptimizerState), std::string_view("#D55E00"));
        QVERIFY(!component_from_name("dark_matter"));
    }
};

QTEST_APPLESS_MAIN(UnitsTest)
#include "test_units.moc"

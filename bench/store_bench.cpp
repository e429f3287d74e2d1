// SPDX-License-Identifier: GPL-3.0-or-later
// Run store benchmark: is "logging metrics does not slow training" true, as a ratio?
// Producer side: ns per RunStore::logMetric call beside ns per plain vector push_back of the same
// row (the floor for any in-memory queue), and the single-call latency tail of both (a call that
// waited for the disk would be a millisecond outlier in logMetric only; scheduler preemption on a
// busy machine shows in both). Writer side: sustained rows/s from the first logMetric to flush()
// returning (every row committed with synchronous=FULL) beside the same rows written directly
// with one transaction per row (what a naive logger does) and with one transaction in total (the
// ceiling). Usage: wafer_store_bench [rows]   (default 1,000,000)
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "engine/store/run_store.h"

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// What a training step logs: a few short keys and one longer one (a heap-allocated string).
const std::string kKeys[] = {"loss", "lr", "grad_norm", "tokens_per_s", "grad_norm/layer_11"};
constexpr int kKeyCount = 5;

struct PlainRow {
    int64_t run, step;
    std::string key;
    double value, wallTime;
};

double pushBackNs(int64_t rows) {
    std::vector<PlainRow> sink;
    const auto start = Clock::now();
    for (int64_t i = 0; i < rows; ++i) {
        sink.push_back({1, i / kKeyCount, kKeys[i % kKeyCount], 0.5 * double(i), double(i)});
    }
    const double seconds = secondsSince(start);
    if (sink.size() != size_t(rows)) std::abort();  // keeps the loop from being optimised away
    return seconds * 1e9 / double(rows);
}

// Sorted per-call latencies (ns, clock overhead included) of `count` calls of `call(i)`.
template <typename F>
std::vector<double> callLatencies(int64_t count, F call) {
    std::vector<double> ns;
    ns.reserve(size_t(count));
    for (int64_t i = 0; i < count; ++i) {
        const auto t0 = Clock::now();
        call(i);
        ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
    std::sort(ns.begin(), ns.end());
    return ns;
}

std::string tail(const std::vector<double>& sortedNs) {
    auto at = [&](double p) {
        return sortedNs[std::min(sortedNs.size() - 1, size_t(p * double(sortedNs.size())))];
    };
    return fmt::format("p50 {:.0f} ns, p99 {:.0f} ns, p99.99 {:.0f} ns, max {:.1f} us", at(0.5),
                       at(0.99), at(0.9999), sortedNs.back() / 1e3);
}

// Rows written straight into the store's schema; `perRow` commits each row on its own.
double directRowsPerSecond(const fs::path& db, int64_t run, int64_t rows, bool perRow) {
    SQLite::Database conn(db.string(), SQLite::OPEN_READWRITE, 5000);
    conn.exec("PRAGMA journal_mode = WAL");
    conn.exec("PRAGMA synchronous = FULL");  // the same durability as the store's writer
    SQLite::Statement insert(conn,
                             "INSERT INTO metrics(run, step, key, value, special, wall_time) "
                             "VALUES (?, ?, ?, ?, NULL, ?)");
    const auto start = Clock::now();
    std::optional<SQLite::Transaction> all;
    if (!perRow) all.emplace(conn);
    for (int64_t i = 0; i < rows; ++i) {
        insert.bind(1, run);
        insert.bind(2, i / kKeyCount);
        insert.bind(3, kKeys[i % kKeyCount]);
        insert.bind(4, 0.5 * double(i));
        insert.bind(5, double(i));
        insert.exec();
        insert.reset();
    }
    if (all) all->commit();
    return double(rows) / secondsSince(start);
}
}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    const int64_t rows = argc > 1 ? std::max<int64_t>(1000, std::atoll(argv[1])) : 1'000'000;
    const int64_t sampled = std::min<int64_t>(rows, 200'000);
    const fs::path dir = fs::temp_directory_path() / fmt::format("wafer_store_bench_{}", getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path dbPath = dir / "runs.sqlite";
    fmt::print("run store benchmark: {} metric rows, database in {}\n\n", rows, dir.string());

    const double plainNs = pushBackNs(rows);
    std::vector<PlainRow> sink;
    const auto plainLatencyNs = callLatencies(sampled, [&](int64_t i) {
        sink.push_back({1, i, "loss", 1.0, 0.0});
    });

    double logNs = 0, pipelineSeconds = 0, flushSeconds = 0;
    std::vector<double> logLatencyNs;
    int64_t run = 0;
    {
        auto opened = ws::store::RunStore::open(dbPath);
        if (!opened.ok()) {
            fmt::print(stderr, "{}\n", opened.error().message);
            return 1;
        }
        auto& store = *opened.value();
        ws::store::NewRun spec;
        spec.name = "bench";
        run = *store.createRun(spec);

        const auto start = Clock::now();
        for (int64_t i = 0; i < rows; ++i) {
            store.logMetric(run, i / kKeyCount, kKeys[i % kKeyCount], 0.5 * double(i), double(i));
        }
        logNs = secondsSince(start) * 1e9 / double(rows);
        const auto flushStart = Clock::now();
        store.flush();
        flushSeconds = secondsSince(flushStart);
        pipelineSeconds = secondsSince(start);

        // Single calls while the writer thread commits the earlier ones.
        logLatencyNs = callLatencies(
            sampled, [&](int64_t i) { store.logMetric(run, rows + i, "loss", 1.0, 0.0); });
        store.flush();
        if (!store.asyncWriteStatus().ok()) {
            fmt::print(stderr, "{}\n", store.asyncWriteStatus().error().message);
            return 1;
        }
    }

    const int64_t perRowRows = std::min<int64_t>(rows, 2000);
    const double perRowRate = directRowsPerSecond(dbPath, run, perRowRows, true);
    const double oneTxRate = directRowsPerSecond(dbPath, run, rows, false);
    const double storeRate = double(rows) / pipelineSeconds;

    fmt::print("producer side (the training thread)\n");
    fmt::print("  RunStore::logMetric            {:8.1f} ns/metric\n", logNs);
    fmt::print(
        "  reference: vector::push_back   {:8.1f} ns/row   -> logMetric costs {:.1f}x a "
        "push_back\n",
        plainNs, logNs / plainNs);
    fmt::print("  single-call latency, logMetric: {}\n", tail(logLatencyNs));
    fmt::print("  single-call latency, push_back: {}\n", tail(plainLatencyNs));
    fmt::print("  e.g. 10 metrics per training step cost {:.2f} us of that step\n\n",
               10 * logNs / 1e3);
    fmt::print("writer side (its own thread, synchronous=FULL, batches of <= 50 ms)\n");
    fmt::print(
        "  RunStore sustained             {:10.0f} rows/s  (first logMetric to flush() "
        "returning; flush waited {:.0f} ms)\n",
        storeRate, flushSeconds * 1e3);
    fmt::print(
        "  reference: 1 transaction/row   {:10.0f} rows/s  ({} rows) -> RunStore is "
        "{:.0f}x faster\n",
        perRowRate, perRowRows, storeRate / perRowRate);
    fmt::print(
        "  reference: 1 transaction total {:10.0f} rows/s  (ceiling) -> RunStore reaches "
        "{:.0f}% of it\n",
        oneTxRate, 100 * storeRate / oneTxRate);
    fs::remove_all(dir);
    return 0;
}

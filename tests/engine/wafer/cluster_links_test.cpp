// SPDX-License-Identifier: GPL-3.0-or-later
// The contention model (cluster_links.h): the lockstep factor from the tree's links, one system
// left as it was, the loss coming from the links (huge links or no jitter: near-ideal), the
// waits placed on the timeline and in the time split, and each link's load.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "engine/wafer/cluster_links.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {
namespace {

WaferSpec preset(const std::string& name) {
    auto s = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/" + name + ".yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

// Cerebras-GPT 111M on a CS-2 as the planner runs it (micro-batches of 60), N systems.
StepInput gpt111m(int systems) {
    StepInput in;
    in.shape.vocab = 50257;
    in.shape.channels = 768;
    in.shape.layers = 10;
    in.shape.heads = 12;
    in.shape.ffn = 3072;
    in.shape.maxPositions = 2048;
    in.batchPerSystem = 120;
    in.seqLen = 2048;
    in.microBatch = 60;
    in.updatesAfterNorm = true;
    in.numSystems = systems;
    return in;
}

double efficiency(const WaferSpec& spec, int systems) {
    auto one = predictStep(spec, gpt111m(1), {.frames = false});
    auto many = predictStep(spec, gpt111m(systems), {.frames = false});
    EXPECT_TRUE(one.ok() && many.ok());
    return many->tokensPerS / (one->tokensPerS * systems);
}

TEST(ClusterLinks, TheTreeLinksAndTheLockstepFactor) {
    const WaferSpec spec = preset("wse2");
    EXPECT_EQ(spec.cluster.treeLinks(1), 1);  // straight to MemoryX
    EXPECT_EQ(spec.cluster.treeLinks(2), 3);  // 2 systems' links + the root's to MemoryX
    EXPECT_EQ(spec.cluster.treeLinks(4), 5);
    EXPECT_EQ(spec.cluster.treeLinks(16), 21);  // 16 + 4 leaf uplinks + 1
    EXPECT_EQ(spec.cluster.treeLinks(17), 17 + 5 + 2 + 1);
    EXPECT_NEAR(harmonicNumber(3), 1 + 0.5 + 1.0 / 3, 1e-15);
    const ClusterRates one = clusterRates(spec, 1);
    EXPECT_EQ(one.lockstep, 1.0);
    EXPECT_EQ(one.swarmxBytesPerS, spec.ioBytesPerS());  // 12 x 100 Gb/s = 150 GB/s
    EXPECT_EQ(one.waitFraction, 0.0);
    EXPECT_EQ(one.binding, "wafer I/O");
    const ClusterRates sixteen = clusterRates(spec, 16);
    EXPECT_DOUBLE_EQ(sixteen.lockstep, 1 + 0.2 * (harmonicNumber(21) - 1));
    EXPECT_DOUBLE_EQ(sixteen.swarmxBytesPerS, 150e9 / sixteen.lockstep);
    EXPECT_EQ(sixteen.binding, "SwarmX lockstep");
    double last = one.swarmxBytesPerS;
    for (int n : {2, 3, 4, 8, 16, 64, 192}) {
        const double r = clusterRates(spec, n).swarmxBytesPerS;
        EXPECT_LE(r, last) << n;
        last = r;
    }
}

// One system is wired straight to MemoryX: nothing of the model applies, whatever its figures.
TEST(ClusterLinks, OneSystemIsUnchangedByTheContentionModel) {
    const WaferSpec shipped = preset("wse2");
    WaferSpec ideal = shipped;
    ideal.cluster.swarmxPortJitter = 0;
    ideal.cluster.linkGbitPerS = 1e6;
    ideal.cluster.aggregateTbitPerS = 1e9;
    ideal.cluster.memoryxGbPerS = 1e6;
    ideal.cluster.hostInputGbPerS = 1e6;
    auto a = predictStep(shipped, gpt111m(1), {.frames = false});
    auto b = predictStep(ideal, gpt111m(1), {.frames = false});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->stepS, b->stepS);
    EXPECT_EQ(a->split.queueing, 0.0);
    for (const auto& s : a->spans) EXPECT_EQ(s.waitS, 0.0);
}

// The loss comes from the links: the shipped CS-2 loses 1-9% at 16 systems; links with room
// over the wafer's I/O, or ports without jitter, scale near-ideally.
TEST(ClusterLinks, HugeLinksOrNoJitterRecoverNearIdealScaling) {
    const WaferSpec shipped = preset("wse2");
    const double lossy = efficiency(shipped, 16);
    EXPECT_LT(lossy, 0.99);
    EXPECT_GT(lossy, 0.91);
    WaferSpec wide = shipped;
    wide.cluster.linkGbitPerS = 1e5;
    EXPECT_GT(efficiency(wide, 16), 0.999);
    WaferSpec steady = shipped;
    steady.cluster.swarmxPortJitter = 0;
    EXPECT_GT(efficiency(steady, 16), 0.999);
    // And the loss grows with the system count.
    double last = 1;
    for (int n : {2, 4, 8, 16}) {
        const double e = efficiency(shipped, n);
        EXPECT_LT(e, 1.0) << n;
        EXPECT_LE(e, last + 1e-12) << n;
        last = e;
    }
}

// The waits are on the timeline (each transfer's waitS) and in the split (queueing, not
// compute); the parts still add up; every kind of link reports its load.
TEST(ClusterLinks, WaitsAreOnTheTimelineAndTheLinksCarryTheirLoad) {
    const WaferSpec spec = preset("wse2");
    auto one = predictStep(spec, gpt111m(1), {.frames = false});
    auto p = predictStep(spec, gpt111m(16), {.frames = false});
    ASSERT_TRUE(one.ok() && p.ok());
    const TimeSplit& s = p->split;
    EXPECT_GT(s.queueing, 0.0);
    EXPECT_NEAR(s.compute + s.streaming + s.fabric + s.reduce + s.bubble + s.queueing, p->stepS,
                1e-9 * p->stepS);
    EXPECT_NEAR(s.compute, one->split.compute, 1e-9 * one->stepS);  // compute is compute
    double waits = 0;
    for (const auto& sp : p->spans) {
        EXPECT_LE(sp.waitS, sp.endS - sp.startS + 1e-12);
        if (sp.system <= 0 && sp.kind != streaming::SpanKind::Reduce) waits += sp.waitS;
    }
    EXPECT_GT(waits, 0.0);
    ASSERT_GE(p->links.size(), 5u);
    EXPECT_EQ(p->links[0].name, "system links");
    EXPECT_EQ(p->links[0].count, 16 * 12);
    EXPECT_EQ(p->links[1].name, "SwarmX level 1 uplinks");  // 4 leaf nodes into the root
    EXPECT_EQ(p->links[1].count, 4 * 12);
    EXPECT_EQ(p->links[2].name, "MemoryX link");  // the root's, per lane
    EXPECT_EQ(p->links[2].count, 12);
    for (const auto& l : p->links) {
        EXPECT_GT(l.capacityBytesPerS, 0) << l.name;
        EXPECT_GE(l.utilization, 0) << l.name;
        EXPECT_LE(l.utilization, 1.0 + 1e-9) << l.name;
    }
    // One system's weights: the same bytes on its links whatever the system count.
    EXPECT_DOUBLE_EQ(p->links[0].bytesDown, one->links[0].bytesDown);
    EXPECT_GT(p->links[0].utilization, 0.05);
    EXPECT_GT(p->links[0].waitS, 0.0);
    EXPECT_EQ(one->links[0].waitS, 0.0);
    // One system whose wafer I/O is raised alone (presets/teaching-sparsity.yaml's way): its
    // path is that I/O, so no link reads as busier than it can be.
    WaferSpec fast = spec;
    fast.ioGbPerS *= 100;
    auto quick = predictStep(fast, gpt111m(1), {.frames = false});
    ASSERT_TRUE(quick.ok());
    for (const auto& l : quick->links) EXPECT_LE(l.utilization, 1.0 + 1e-9) << l.name;
}

// Bad figures of the model are errors naming the key and what is allowed.
TEST(ClusterLinks, BadFiguresNameTheKey) {
    WaferSpec spec = preset("wse2");
    for (const char* bad :
         {"cluster.swarmx_port_jitter=1.5", "cluster.swarmx_port_jitter=-0.1",
          "cluster.links_per_system=0", "cluster.link_gbit_per_s=0", "cluster.memoryx_gb_per_s=-1",
          "cluster.host_input_gb_per_s=0", "cluster.fabric_aggregate_tbit_per_s=0",
          "cluster.links_per_system=2.5"}) {
        Status st = overrideField(spec, bad);
        ASSERT_FALSE(st.ok()) << bad;
        const std::string key(bad + 8, std::string_view(bad).find('=') - 8);
        EXPECT_NE(st.error().message.find(key), std::string::npos) << st.error().message;
    }
    EXPECT_TRUE(overrideField(spec, "cluster.swarmx_port_jitter=0").ok());
    EXPECT_EQ(spec.cluster.swarmxPortJitter, 0.0);
}

// A spec file must state the model's figures: a missing one, or a jitter out of [0, 1], is an
// error naming the file and the key.
TEST(ClusterLinks, ASpecFileMustStateTheLinks) {
    const std::string path = WAFER_PRESETS_DIR "/wafers/wse2.yaml";
    std::ifstream file(path);
    std::stringstream buffer;
    buffer << file.rdbuf();
    const std::string text = buffer.str();
    const std::string line = "  swarmx_port_jitter: 0.2";
    const size_t at = text.find(line);
    ASSERT_NE(at, std::string::npos);
    std::string missing = text;
    missing.erase(at, line.size());
    auto noJitter = parseWaferSpec(missing, "wse2.yaml");
    ASSERT_FALSE(noJitter.ok());
    EXPECT_NE(noJitter.error().message.find("cluster.swarmx_port_jitter: missing"),
              std::string::npos)
        << noJitter.error().message;
    std::string tooBig = text;
    tooBig.replace(at, line.size(), "  swarmx_port_jitter: 1.5");
    auto big = parseWaferSpec(tooBig, "wse2.yaml");
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().message.find("wse2.yaml"), std::string::npos);
    EXPECT_NE(big.error().message.find("cluster.swarmx_port_jitter is 1.5; it must be in [0, 1]"),
              std::string::npos)
        << big.error().message;
}

}  // namespace
}  // namespace ws::wafer

// SPDX-License-Identifier: GPL-3.0-or-later
// The emulated hardware's figures: one wafer (core grid, clock, FMACs, SRAM, fabric, system I/O)
// and the cluster around it (SwarmX tree, MemoryX optimizer). Specs live as YAML in
// presets/wafers/<name>.yaml, every figure with its public source (or its stated assumption) in
// a comment; the cycle model (cycle_model.h) reads nothing else.
//
// File layout: two sections, `wafer:` and `cluster:`, whose keys are the `key` names of the
// fields below (units in the key: *_ghz, *_bytes, *_gb_per_s, *_us). Every key is required, so
// a spec file says all its figures; unknown keys are errors.
//
// Thread-safety: plain values and pure functions. Failure contract: bad files and bad values
// come back as Result/Status errors "file:line:col: wafer.key: what was found, what is allowed".
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::wafer {

struct ClusterSpec {
    int maxSystems = 1;                   // largest num_csx the SwarmX fabric of this spec connects
    int swarmxFanOut = 4;                 // children per SwarmX node (broadcast / reduce tree)
    double swarmxHopLatencyUs = 1.0;      // per tree level, each way (assumed)
    double memoryxUpdateGparamsPerS = 1;  // AdamW updates MemoryX applies per second (assumed)
    double memoryxBytes = 0;              // weight + optimizer capacity of MemoryX
    // The links (cluster_links.h uses them; the contention model is stated there).
    double linkGbitPerS = 100;        // one SwarmX port / system link, each direction
    int linksPerSystem = 12;          // a system's links into SwarmX (its I/O lanes)
    double aggregateTbitPerS = 1000;  // the whole fabric of a max_systems cluster, all links
    double memoryxGbPerS = 150;       // MemoryX servers' network bandwidth, each direction
    double hostInputGbPerS = 12.5;    // input servers -> all systems (tokens), shared
    // The one assumed constant of the contention model: the coefficient of variation of one
    // chunk's time through a SwarmX port (cluster_links.h). 0 = lockstep costs nothing.
    double swarmxPortJitter = 0.2;

    // ⌈log_fanOut N⌉: levels of the reduce tree between N systems and MemoryX (0 for one).
    int treeDepth(int systems) const;
    // Links of one SwarmX lane's tree for N systems: each system's, each node's uplink and the
    // root's link to MemoryX (1 for one system, wired straight to MemoryX).
    int treeLinks(int systems) const;
    // One system's links, bytes per second each direction (links x rate).
    double systemLinkBytesPerS() const { return linksPerSystem * linkGbitPerS * 1e9 / 8; }
};

struct WaferSpec {
    std::string name;
    int gridRows = 0;              // usable core grid (R)
    int gridCols = 0;              // (C)
    double clockGhz = 0;           // core clock
    int fmacsPerCycle = 0;         // fp16 fused multiply-adds per core per cycle
    int64_t sramBytesPerCore = 0;  // core-local SRAM
    int fabricBytesPerCycle = 0;   // per link per direction per cycle (one wavelet = 4 bytes)
    int hopLatencyCycles = 1;      // fabric router latency per hop
    double ioGbPerS = 0;           // system I/O to and from MemoryX/SwarmX, each direction
    int streamBytesPerValue = 2;   // bytes per streamed weight / gradient (16-bit)
    double computeEfficiency = 1;  // achieved fraction of FMAC peak; calibrated once, then fixed
    ClusterSpec cluster;

    int64_t cores() const { return int64_t(gridRows) * gridCols; }
    double clockHz() const { return clockGhz * 1e9; }
    double ioBytesPerS() const { return ioGbPerS * 1e9; }
    // Dense fp16 peak: cores x FMACs x 2 FLOPs x clock.
    double peakFlopsPerS() const { return double(cores()) * fmacsPerCycle * 2.0 * clockHz(); }

    // Every size positive, efficiency in (0, 1], fan-out >= 2. Names the key to fix.
    Status validate() const;
    // Checks num_csx against the SwarmX limit of this spec, before any work.
    Status checkSystems(int numSystems) const;
};

// Reads a spec file (see the layout above). Errors carry file:line:col.
Result<WaferSpec> loadWaferSpecFile(const std::filesystem::path& path);
// The same for text in memory; `sourceName` prefixes messages.
Result<WaferSpec> parseWaferSpec(std::string_view yamlText, std::string_view sourceName);
// A name ("wse2") finds appDataDir()/presets/wafers/<name>.yaml; anything with a '/' or ending
// in .yaml is a path. The error lists the specs that exist, with a "did you mean" for a typo.
Result<WaferSpec> loadWaferSpec(std::string_view nameOrPath);
// The names loadWaferSpec() finds (appDataDir()/presets/wafers/*.yaml), sorted: the choices of
// wafer.spec. Empty if the folder is missing.
std::vector<std::string> knownSpecNames();

// One override "wafer.grid_rows=64" / "cluster.max_systems=4" (the config's wafer:/cluster:
// sections use these keys). The value is a number; the result is validated again.
Status overrideField(WaferSpec& spec, std::string_view keyEqualsValue);

// The spec a config trains on: wafer.spec, then wafer.overrides and cluster.overrides (keys
// without their section, "grid_rows=64"), validated, and runconfig.num_csx checked against it.
// Errors name the config key to fix.
Result<WaferSpec> specForConfig(const config::Config& cfg);

}  // namespace ws::wafer

// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for Hugging Face config.json (engine/modelio/hf_config: parseHfConfig): any
// byte string must map to a model config or come back as an Error, never crash, hang or hit
// undefined behaviour (ASan + UBSan). A config that maps and is exportable must survive the
// export: hfConfigJson() of it parses back to the same model config.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/modelio/hf_config.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto parsed = ws::modelio::parseHfConfig(ws::fuzz::asText(data, size), "config.json");
    if (!parsed.ok()) {
        ws::fuzz::note("refused: " + parsed.error().message);
        return 0;
    }
    ws::fuzz::note("parsed");
    if (!ws::modelio::checkHfExportable(parsed->model).ok()) return 0;
    const std::string exported = ws::modelio::hfConfigJson(parsed->model, 50256);
    auto again = ws::modelio::parseHfConfig(exported, "exported-config.json");
    if (!again.ok()) {
        std::fprintf(stderr, "hf_config_fuzz: the export does not parse: %s\n%s\n",
                     again.error().message.c_str(), exported.c_str());
        std::abort();
    }
    if (!(again->model == parsed->model)) {
        std::fprintf(stderr, "hf_config_fuzz: the export parses to another model\n%s\n",
                     exported.c_str());
        std::abort();
    }
    return 0;
}

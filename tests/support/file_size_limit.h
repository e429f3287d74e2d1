// SPDX-License-Identifier: GPL-3.0-or-later
// FileSizeLimit: simulates a full disk for one scope by lowering RLIMIT_FSIZE, with SIGXFSZ
// ignored so writes fail with EFBIG instead of killing the test; restores both however the
// scope exits.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace ws::testing {

class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &m_saved);
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = m_saved;
        limit.rlim_cur = bytes;
        setrlimit(RLIMIT_FSIZE, &limit);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &m_saved);
        std::signal(SIGXFSZ, m_oldHandler);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit m_saved{};
    void (*m_oldHandler)(int) = SIG_DFL;
};

}  // namespace ws::testing

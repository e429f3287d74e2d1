// SPDX-License-Identifier: GPL-3.0-or-later
// ReadOnlyFolder: makes a folder read-only for one scope, in the way that holds for the user
// running the test. Root ignores permission bits, so as root the folder becomes a read-only bind
// mount of itself (undone when the scope ends); where root may not mount (a container), ok() is
// false and the test should GTEST_SKIP with reason(). Other users get the permission bits.
// Not thread-safe; one per folder.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ws::testing {

class ReadOnlyFolder {
public:
    explicit ReadOnlyFolder(std::filesystem::path folder) : m_folder(std::move(folder)) {
        if (::geteuid() != 0) {
            std::filesystem::permissions(
                m_folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec,
                m_error);
            m_ok = !m_error;
            m_chmod = m_ok;
            return;
        }
        if (::mount(m_folder.c_str(), m_folder.c_str(), nullptr, MS_BIND, nullptr) != 0) {
            m_reason = "root without permission to mount: a read-only folder cannot be made";
            return;
        }
        m_mounted = true;
        if (::mount(nullptr, m_folder.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY,
                    nullptr) != 0) {
            m_reason = "root without permission to remount read-only";
            return;
        }
        m_ok = true;
    }
    ~ReadOnlyFolder() {
        if (m_mounted) ::umount2(m_folder.c_str(), MNT_DETACH);
        if (m_chmod)
            std::filesystem::permissions(m_folder, std::filesystem::perms::owner_all,
                                         std::filesystem::perm_options::add, m_error);
    }
    ReadOnlyFolder(const ReadOnlyFolder&) = delete;
    ReadOnlyFolder& operator=(const ReadOnlyFolder&) = delete;

    bool ok() const { return m_ok; }
    const std::string& reason() const { return m_reason; }

private:
    std::filesystem::path m_folder;
    bool m_ok = false, m_mounted = false, m_chmod = false;
    std::error_code m_error;
    std::string m_reason = "cannot make the folder read-only";
};

}  // namespace ws::testing

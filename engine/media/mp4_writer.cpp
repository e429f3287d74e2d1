// SPDX-License-Identifier: GPL-3.0-or-later
// The MP4 writer (see animation_writer.h): raw RGBA frames piped into Debian's ffmpeg, which
// encodes H.264 (libx264, yuv420p, +faststart) into a hidden temp file in the target's folder;
// finish() waits for ffmpeg and renames the file into place. Frames go through a socket pair
// rather than a pipe so that a dead ffmpeg is an EPIPE error from send(MSG_NOSIGNAL), never a
// SIGPIPE that would kill the studio. ffmpeg's stderr goes to an unnamed temp file; its last
// lines are quoted in the error when ffmpeg fails.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/media/media_internal.h"

extern char** environ;

namespace ws::media::detail {

namespace {

std::string stderrTail(FILE* file) {
    if (!file) return {};
    std::fflush(file);
    const int fd = ::fileno(file);
    const off_t size = ::lseek(fd, 0, SEEK_END);
    if (size <= 0) return {};
    const off_t from = std::max<off_t>(0, size - 4000);
    std::string text(size_t(size - from), '\0');
    const ssize_t got = ::pread(fd, text.data(), text.size(), from);
    text.resize(got > 0 ? size_t(got) : 0);
    // The last 8 lines, without the trailing newline.
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    size_t start = text.size();
    for (int lines = 0; lines < 8 && start != std::string::npos && start > 0; ++lines)
        start = text.rfind('\n', start - 1);
    return start == std::string::npos || start >= text.size() ? text : text.substr(start + 1);
}

class Mp4Writer final : public AnimationWriter {
public:
    Mp4Writer(std::filesystem::path path, AnimationSpec spec)
        : m_path(std::move(path)), m_spec(std::move(spec)) {}

    ~Mp4Writer() override {
        stopFfmpeg(true);
        if (!m_tempPath.empty()) {
            std::error_code ec;
            std::filesystem::remove(m_tempPath, ec);
        }
        if (m_stderr) std::fclose(m_stderr);
    }

    AnimationFormat format() const override { return AnimationFormat::Mp4; }

    Status start(const std::filesystem::path& ffmpeg) {
        const std::filesystem::path folder =
            m_path.parent_path().empty() ? std::filesystem::path(".") : m_path.parent_path();
        std::string pattern =
            (folder / fmt::format(".{}.tmp-XXXXXX.mp4", m_path.filename().string())).string();
        const int tempFd = ::mkostemps(pattern.data(), 4, O_CLOEXEC);
        if (tempFd < 0) {
            return Error{
                fmt::format("cannot write {}: creating a temp file in {} failed: {} (does "
                            "the folder exist and is it writable?)",
                            m_path.string(), folder.string(), std::strerror(errno))};
        }
        (void)::fchmod(tempFd, 0644);  // an ordinary user file, as ffmpeg keeps the mode
        ::close(tempFd);
        m_tempPath = pattern;
        m_stderr = std::tmpfile();
        int sockets[2];
        if (!m_stderr || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
            return Error{
                fmt::format("cannot export {}: {}", m_path.string(), std::strerror(errno))};
        }
        const std::string size = fmt::format("{}x{}", m_spec.width, m_spec.height);
        const std::string fps = std::to_string(m_spec.fps);
        const std::string program = ffmpeg.string();
        std::vector<std::string> args = {
            program, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "rawvideo",
            "-pix_fmt", "rgba", "-s", size, "-r", fps, "-i", "pipe:0",
            // H.264 in yuv420p needs even sides: pad by one pixel
            "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-movflags", "+faststart", "-f", "mp4", m_tempPath.string()};
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, sockets[1], 0);
        posix_spawn_file_actions_adddup2(&actions, ::fileno(m_stderr), 2);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid = 0;
        const int spawned =
            ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        ::close(sockets[1]);
        if (spawned != 0) {
            ::close(sockets[0]);
            return Error{fmt::format("cannot export {}: starting {} failed: {}", m_path.string(),
                                     program, std::strerror(spawned))};
        }
        m_pid = pid;
        m_socket = sockets[0];
        return Status::success();
    }

    Status addFrame(const FrameView& frame, int delayMs) override {
        if (m_usedUp()) return m_usedUp.why();
        if (Status s = checkFrame(m_path, m_spec, frame, delayMs, m_added); !s)
            return m_usedUp.fail(s);
        ++m_added;
        // This frame covers [m_elapsedMs, m_elapsedMs + delayMs): the video frames whose start,
        // rounded, falls in it (the first frame always gets one).
        m_elapsedMs += delayMs;
        const int64_t until = std::llround(double(m_elapsedMs) * m_spec.fps / 1000.0);
        int64_t repeats = until - m_videoFrames;
        if (m_videoFrames == 0) repeats = std::max<int64_t>(repeats, 1);
        if (repeats <= 0) return Status::success();
        copyPacked(frame, m_packed);
        for (int64_t i = 0; i < repeats; ++i) {
            if (Status s = sendAll(m_packed.data(), m_packed.size() * 4); !s)
                return m_usedUp.fail(s);
            ++m_videoFrames;
        }
        return Status::success();
    }

    Status finish() override {
        if (m_usedUp()) return m_usedUp.why();
        if (m_added == 0) {
            return m_usedUp.fail(
                Error{fmt::format("cannot export {}: no frames were added", m_path.string())});
        }
        m_usedUp.set();  // used up
        ::close(m_socket);
        m_socket = -1;
        const int status = stopFfmpeg(false);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return ffmpegFailed(status);
        std::error_code ec;
        std::filesystem::rename(m_tempPath, m_path, ec);
        if (ec) {
            return Error{
                fmt::format("cannot write {}: renaming the encoded video into place "
                            "failed: {}",
                            m_path.string(), ec.message())};
        }
        m_tempPath.clear();
        return Status::success();
    }

private:
    Status sendAll(const void* data, size_t size) {
        const char* at = static_cast<const char*>(data);
        while (size > 0) {
            const ssize_t sent = ::send(m_socket, at, size, MSG_NOSIGNAL);
            if (sent < 0 && errno == EINTR) continue;
            if (sent < 0) {
                ::close(m_socket);
                m_socket = -1;
                return ffmpegFailed(stopFfmpeg(false));
            }
            at += sent;
            size -= size_t(sent);
        }
        return Status::success();
    }

    Status ffmpegFailed(int status) {
        const std::string how =
            WIFEXITED(status)     ? fmt::format("exited with status {}", WEXITSTATUS(status))
            : WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                  : std::string("stopped");
        const std::string tail = stderrTail(m_stderr);
        return Error{fmt::format("cannot export {}: ffmpeg {}{}{}", m_path.string(), how,
                                 tail.empty() ? "" : "; it said:\n", tail)};
    }

    // Waits for ffmpeg (killing it first when `kill`); returns its wait status.
    int stopFfmpeg(bool kill) {
        if (m_socket >= 0) {
            ::close(m_socket);
            m_socket = -1;
        }
        if (m_pid <= 0) return 0;
        if (kill) ::kill(m_pid, SIGKILL);
        int status = 0;
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_pid = -1;
        return status;
    }

    std::filesystem::path m_path;
    AnimationSpec m_spec;
    std::filesystem::path m_tempPath;
    FILE* m_stderr = nullptr;
    pid_t m_pid = -1;
    int m_socket = -1;
    std::vector<uint32_t> m_packed;
    int64_t m_elapsedMs = 0;
    int64_t m_videoFrames = 0;
    int m_added = 0;
    UsedUp m_usedUp{m_path};
};

}  // namespace

Result<std::unique_ptr<AnimationWriter>> createMp4Writer(const std::filesystem::path& path,
                                                         const AnimationSpec& spec) {
    std::filesystem::path ffmpeg = spec.ffmpeg;
    if (ffmpeg.empty()) {
        auto found = findFfmpeg();
        if (!found) {
            return Error{
                fmt::format("cannot export {} as MP4: ffmpeg is not installed (not found "
                            "on PATH); install it with `apt-get install ffmpeg` (as "
                            "root), or export an animated PNG (.png) or a GIF (.gif)",
                            path.string())};
        }
        ffmpeg = *found;
    }
    auto writer = std::make_unique<Mp4Writer>(path, spec);
    if (Status s = writer->start(ffmpeg); !s) return s.error();
    return std::unique_ptr<AnimationWriter>(std::move(writer));
}

}  // namespace ws::media::detail

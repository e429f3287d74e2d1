// SPDX-License-Identifier: GPL-3.0-or-later
// Result<T>: the engine's expected-style return type for anything that can fail on bad input
// (files, configs, checkpoints). It carries either a value or an Error with a readable message
// that names the problem and the fix. The engine never exits or aborts on bad input; asserts
// guard programmer errors only.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ws {

struct Error {
    std::string message;
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_state(std::move(value)) {}
    Result(Error error) : m_state(std::move(error)) {}

    bool ok() const { return std::holds_alternative<T>(m_state); }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<T>(m_state);
    }
    const T& value() const& {
        assert(ok());
        return std::get<T>(m_state);
    }
    T&& value() && {
        assert(ok());
        return std::get<T>(std::move(m_state));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const {
        assert(!ok());
        return std::get<Error>(m_state);
    }

private:
    std::variant<T, Error> m_state;
};

// Status: a Result with no value.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error) : m_error(std::move(error.message)), m_failed(true) {}
    static Status success() { return {}; }

    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    Error error() const { return Error{m_error}; }

private:
    std::string m_error;
    bool m_failed = false;
};

}  // namespace ws

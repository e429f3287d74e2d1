// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigDocument: the config being edited in the studio, held both as YAML text and as the last
// Config that parsed. The form and the YAML view edit it through setField()/setYaml(); both read
// it back, so they stay in sync. Problems (parse errors, rejected field values, validate() rules,
// and the wafer checks a run makes before training: wafer.spec, num_csx, the fit of a step) are
// kept with the key path and YAML line they belong to, for inline display; canRun() is false
// while there is any. A form edit patches the YAML text in place (engine/config/yaml_patch.h), so
// the user's comments and key order stay. While the text does not parse, the form has nothing to
// edit: setField() refuses (it would rewrite the text from another config and drop its
// comments) and fieldValue() reads the values the text itself holds, never an earlier file's.
// A document is either a file or untitled (a preset's copy, a fine-tune's config, a run's
// config): an untitled one has no file to save over.
// Thread-safety: GUI thread only. Never throws: bad input becomes a Problem.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <map>
#include <vector>

#include "engine/config/config_yaml.h"

namespace ws::ui {

struct ConfigProblem {
    QString path;     // dotted key path it concerns ("model.num_heads"); empty if unknown
    int line = 0;     // 1-based line in the YAML text; 0 if unknown
    QString message;  // the engine's message, naming the problem and the fix
};

class ConfigDocument : public QObject {
    Q_OBJECT
public:
    explicit ConfigDocument(QObject* parent = nullptr);

    // Loads a YAML file; on failure the document keeps the file's text and shows its problems.
    bool loadFile(const QString& path);
    // Loads a file's text as an untitled document named `name` ("gpt-nano (preset)"): saving
    // asks for a file; relative paths in it still resolve against the file's folder.
    bool loadUntitledCopy(const QString& path, const QString& name);
    // Replaces the document with `yaml` as an untitled document named `name`; relative paths
    // resolve against `baseDir` (empty: left as written). Not modified until edited.
    void setUntitled(const QString& yaml, const QString& name, const QString& baseDir = {});
    // Writes the YAML text; saved into another folder, its relative paths are first made
    // absolute so they still name the same files. False + problem on error.
    bool saveFile(const QString& path);
    // Replaces the text (YAML view edits, drops); re-parses and re-validates.
    void setYaml(const QString& yaml);
    // Applies "path=value" (value in YAML syntax). A rejected value is kept as a field problem
    // (and Run is disabled) until the field is edited again; an accepted one rewrites the YAML.
    // Refused (false, nothing changed, a note) while the text does not parse.
    bool setField(const QString& path, const QString& yamlValue);

    const QString& yaml() const { return m_yaml; }
    // The text parses into a config: the form edits it. False while it has parse errors
    // (config() is then the last text of this document that parsed, or the defaults).
    bool isParsed() const { return m_parsed; }
    const config::Config& config() const { return m_config; }
    config::LoadedConfig loadedConfig() const;
    QString filePath() const { return m_filePath; }  // empty while untitled
    bool isUntitled() const { return m_filePath.isEmpty(); }
    // "gpt-nano.yaml", or "gpt-nano (preset) — untitled" for an untitled document.
    QString displayName() const;
    // The name an untitled document was given ("lesson: ..."); empty for a file.
    QString untitledName() const { return isUntitled() ? m_untitledName : QString(); }
    // A file name to offer when an untitled document is first saved ("gpt-nano.yaml").
    QString suggestedFileName() const;
    bool isModified() const { return m_modified; }
    void setModified(bool modified);

    const std::vector<ConfigProblem>& problems() const { return m_problems; }
    bool canRun() const { return m_problems.empty() && m_parsed; }
    // The value of `path` in the current config as YAML text ("128", "[0.9, 0.95]", "gelu").
    // While the text does not parse: the value the text holds at `path`, if it is readable YAML
    // and sets it, else empty.
    QString fieldValue(const QString& path) const;
    // The 1-based line of `path`'s key in the text (its deepest enclosing key found; 0: none).
    int lineOfPath(const QString& path) const;

    // Every field path the form knows, longest first (for finding the path a message names).
    static const QStringList& knownPaths();
    // The name the form gives a field: "runconfig.max_steps" -> "Max steps".
    static QString fieldLabel(const QString& path);

signals:
    void changed();                     // text, config or problems changed
    void fileChanged();                 // path or modified flag changed
    void note(const QString& message);  // something the user should read in the log

private:
    void reparse();
    // After a new text (a file, an untitled document): when it does not parse, config() must not
    // keep the previous document's values (a later text of this one that parses replaces it).
    void forgetOtherConfig();
    void revalidate();
    void checkWafer();
    QString rejectedValueMessage(const QString& path, const QString& yamlValue,
                                 const QString& engineMessage) const;
    ConfigProblem problemFromMessage(const QString& message) const;

    QString m_yaml;
    QString m_filePath;
    QString m_untitledName;  // shown while m_filePath is empty
    std::filesystem::path m_baseDir;
    config::Config m_config;
    std::vector<std::string> m_warnings;
    bool m_parsed = true;
    bool m_modified = false;
    std::vector<ConfigProblem> m_problems;
    std::map<QString, QString> m_fieldProblems;   // path -> message of a rejected form value
    mutable std::map<QString, QString> m_values;  // fieldValue() cache, keyed by m_valuesOf
    mutable std::string m_valuesOf;
    mutable bool m_valuesOfText = false;  // m_values were read from the text, not a config
};

}  // namespace ws::ui

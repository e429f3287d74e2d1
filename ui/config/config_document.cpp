// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigDocument: YAML text <-> Config, with problems located at key paths and lines.
#include "ui/config/config_document.h"

#include <yaml-cpp/yaml.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>
#include <algorithm>
#include <cmath>

#include "engine/wafer/run_fit.h"
#include "engine/wafer/spec.h"

#include "engine/config/yaml_patch.h"

namespace ws::ui {
namespace {

QString fromStd(const std::string& s) {
    return QString::fromStdString(s);
}

// Walks a plain-saved config and records every leaf (and list) as YAML text by dotted path.
void collectValues(const YAML::Node& node, const std::string& prefix,
                   std::map<QString, QString>& out) {
    if (node.IsMap()) {
        for (const auto& kv : node) {
            const std::string key = kv.first.as<std::string>();
            const std::string path = prefix.empty() ? key : prefix + "." + key;
            collectValues(kv.second, path, out);
        }
        return;
    }
    if (node.IsScalar()) {
        out[fromStd(prefix)] = fromStd(node.Scalar());
        return;
    }
    YAML::Emitter emitter;
    emitter << YAML::Flow << node;
    out[fromStd(prefix)] = fromStd(emitter.c_str());
}

// The declared type of every field path ("int", "double", ...), for the wording of rejected values.
QString fieldType(const QString& path) {
    static const std::map<QString, QString> types = [] {
        std::map<QString, QString> map;
        for (const auto& f : config::describeFields()) map[fromStd(f.path)] = fromStd(f.type);
        return map;
    }();
    const auto it = types.find(path);
    return it == types.end() ? QString() : it->second;
}

}  // namespace

QString ConfigDocument::fieldLabel(const QString& path) {
    // Words of the key with the abbreviations people say aloud spelled out.
    static const std::map<QString, QString> words = {
        {"num", "number of"}, {"csx", "CSX"},         {"mup", "μP"},     {"fp16", "FP16"},
        {"sram", "SRAM"},     {"bpe", "BPE"},         {"lr", "LR"},      {"qk", "QK"},
        {"ffn", "FFN"},       {"memoryx", "MemoryX"}, {"dir", "folder"}, {"id", "ID"}};
    QStringList parts = path.section('.', -1).split('_', Qt::SkipEmptyParts);
    for (QString& part : parts) {
        const auto it = words.find(part);
        if (it != words.end()) part = it->second;
    }
    QString label = parts.join(' ');
    if (!label.isEmpty() && label[0].isLower()) label[0] = label[0].toUpper();
    return label;
}

ConfigDocument::ConfigDocument(QObject* parent) : QObject(parent) {
    m_yaml = fromStd(config::saveConfigYaml(m_config));
    reparse();
}

const QStringList& ConfigDocument::knownPaths() {
    static const QStringList paths = [] {
        QStringList list;
        for (const auto& f : config::describeFields()) {
            list << fromStd(f.path).replace(QStringLiteral("[N]"), QString());
        }
        std::sort(list.begin(), list.end(),
                  [](const QString& a, const QString& b) { return a.size() > b.size(); });
        return list;
    }();
    return paths;
}

bool ConfigDocument::loadFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        m_problems = {{QString(), 0,
                       tr("cannot open %1: %2 (check the path and its permissions)")
                           .arg(path, file.errorString())}};
        emit changed();
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    m_untitledName.clear();
    m_baseDir = QFileInfo(path).absolutePath().toStdString();
    m_fieldProblems.clear();
    m_yaml = QString::fromUtf8(file.readAll());
    reparse();
    forgetOtherConfig();
    m_modified = false;
    emit fileChanged();
    emit changed();
    return m_parsed;
}

bool ConfigDocument::loadUntitledCopy(const QString& path, const QString& name) {
    if (!loadFile(path)) {
        if (m_filePath != QFileInfo(path).absoluteFilePath()) return false;  // unreadable
        m_filePath.clear();  // its problems are shown, but it is still not the file to save
        m_untitledName = name;
        emit fileChanged();
        return false;
    }
    m_filePath.clear();
    m_untitledName = name;
    emit fileChanged();
    return true;
}

void ConfigDocument::setUntitled(const QString& yaml, const QString& name, const QString& baseDir) {
    m_filePath.clear();
    m_untitledName = name;
    m_baseDir = baseDir.toStdString();
    m_fieldProblems.clear();
    m_yaml = yaml;
    reparse();
    forgetOtherConfig();
    m_modified = false;
    emit fileChanged();
    emit changed();
}

QString ConfigDocument::displayName() const {
    if (!m_filePath.isEmpty()) return QFileInfo(m_filePath).fileName();
    return (m_untitledName.isEmpty() ? tr("config") : m_untitledName) + tr(" — untitled");
}

QString ConfigDocument::suggestedFileName() const {
    if (!m_filePath.isEmpty()) return QFileInfo(m_filePath).fileName();
    QString name = QString::fromStdString(m_config.model.name);
    name.replace(QRegularExpression(QStringLiteral(R"([^\w.-]+)")), QStringLiteral("-"));
    return (name.isEmpty() ? QStringLiteral("config") : name) + QStringLiteral(".yaml");
}

bool ConfigDocument::saveFile(const QString& path) {
    const QString folder = QFileInfo(path).absolutePath();
    if (!m_baseDir.empty() && QDir(QString::fromStdString(m_baseDir.string())) != QDir(folder)) {
        // "data_dir: ../resources/corpus" written next to a preset means nothing elsewhere.
        const QString moved =
            fromStd(config::absolutizeConfigPaths(m_yaml.toStdString(), m_baseDir));
        if (moved != m_yaml) {
            m_yaml = moved;
            emit note(tr("relative paths were written as absolute paths, so that %1 names the "
                         "same files from its new folder")
                          .arg(QFileInfo(path).fileName()));
            emit changed();
        }
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text) || file.write(m_yaml.toUtf8()) < 0 ||
        !file.commit()) {
        m_problems.push_back(
            {QString(), 0, tr("cannot save %1: %2").arg(path, file.errorString())});
        emit changed();
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    m_untitledName.clear();
    m_baseDir = folder.toStdString();
    m_modified = false;
    emit fileChanged();
    return true;
}

void ConfigDocument::setModified(bool modified) {
    if (m_modified == modified) return;
    m_modified = modified;
    emit fileChanged();
}

void ConfigDocument::setYaml(const QString& yaml) {
    if (yaml == m_yaml) return;
    m_yaml = yaml;
    m_fieldProblems.clear();
    reparse();
    setModified(true);
    emit changed();
}

bool ConfigDocument::setField(const QString& path, const QString& yamlValue) {
    if (!m_parsed) {
        // The form edits a config; there is none while the text has errors, and patching the
        // last one that parsed would rewrite this text from it (dropping its comments).
        emit note(tr("%1 was not changed: the YAML has errors (listed under it); fix them in the "
                     "YAML view first")
                      .arg(path));
        return false;
    }
    m_fieldProblems.erase(path);
    config::Config edited = m_config;
    const Status status = config::applyOverride(edited, (path + "=" + yamlValue).toStdString());
    if (!status.ok()) {
        m_fieldProblems[path] =
            rejectedValueMessage(path, yamlValue, fromStd(status.error().message));
        revalidate();
        emit changed();
        return false;
    }
    if (!(edited == m_config)) {
        // Only the changed values are rewritten: the user's comments and key order stay.
        const config::YamlPatch patch =
            config::patchConfigYaml(m_yaml.toStdString(), m_config, edited, m_baseDir);
        if (patch.regenerated) emit note(tr("%1: %2").arg(path, fromStd(patch.note)));
        m_config = edited;
        m_yaml = fromStd(patch.text);
        m_parsed = true;
        setModified(true);
    }
    revalidate();
    emit changed();
    return true;
}

config::LoadedConfig ConfigDocument::loadedConfig() const {
    config::LoadedConfig loaded;
    loaded.config = m_config;
    loaded.warnings = m_warnings;
    if (!m_filePath.isEmpty()) loaded.sourceFile = m_filePath.toStdString();
    return loaded;
}

QString ConfigDocument::fieldValue(const QString& path) const {
    // Parsed: the config's values, defaults included. Not parsed: what the text itself says, so
    // the form never shows another file's values (or a discarded edit) as this file's.
    const std::string source = m_parsed ? config::saveConfigYaml(m_config, config::YamlStyle::Plain)
                                        : m_yaml.toStdString();
    if (source != m_valuesOf || m_valuesOfText == m_parsed) {
        m_values.clear();
        try {
            collectValues(YAML::Load(source), {}, m_values);
        } catch (const YAML::Exception&) {
            // saveConfigYaml output always parses; a text that is not YAML blanks the form.
        }
        m_valuesOf = source;
        m_valuesOfText = !m_parsed;
    }
    const auto it = m_values.find(path);
    return it == m_values.end() ? QString() : it->second;
}

void ConfigDocument::reparse() {
    const QString name =
        m_filePath.isEmpty() ? QStringLiteral("config") : QFileInfo(m_filePath).fileName();
    auto parsed = config::parseConfig(m_yaml.toStdString(), name.toStdString(), m_baseDir);
    m_problems.clear();
    if (!parsed.ok()) {
        m_parsed = false;
        const QStringList lines =
            fromStd(parsed.error().message).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        for (const QString& line : lines) m_problems.push_back(problemFromMessage(line.trimmed()));
        return;
    }
    m_parsed = true;
    m_config = parsed->config;
    m_warnings = parsed->warnings;
    revalidate();
}

void ConfigDocument::forgetOtherConfig() {
    if (m_parsed) return;
    m_config = config::Config{};
    m_warnings.clear();
}

void ConfigDocument::revalidate() {
    if (!m_parsed) return;
    m_problems.clear();
    for (const auto& [path, message] : m_fieldProblems) {
        m_problems.push_back({path, lineOfPath(path), message});
    }
    for (const auto& message : config::validate(m_config)) {
        m_problems.push_back(problemFromMessage(fromStd(message)));
    }
    checkWafer();
}

void ConfigDocument::checkWafer() {
    // The engine's own pre-training checks, so Run is disabled by the message the run would fail
    // with. The fit only means something for a consistent config; the spec always does.
    Status status = Status::success();
    if (m_problems.empty()) {
        if (auto fit = wafer::fitOnWafer(m_config); !fit.ok()) status = fit.error();
    } else if (auto spec = wafer::specForConfig(m_config); !spec.ok()) {
        status = spec.error();
    }
    if (status.ok()) return;
    const QString message = fromStd(status.error().message);
    ConfigProblem problem = problemFromMessage(message);
    // Messages about one key start with it ("wafer.spec: ...", "runconfig.num_csx: ..."); the
    // fit's message is about the wafer as a whole: the SRAM override if set, else the spec.
    if (problem.path.isEmpty() || !message.startsWith(problem.path)) {
        problem.path = m_config.wafer.sramBytes > 0 ? QStringLiteral("wafer.sram_bytes")
                                                    : QStringLiteral("wafer.spec");
        problem.line = lineOfPath(problem.path);
    }
    m_problems.push_back(problem);
}

QString ConfigDocument::rejectedValueMessage(const QString& path, const QString& yamlValue,
                                             const QString& engineMessage) const {
    // Said the way the form names the field: the GUI has no --set, so the override's wording
    // ("--set runconfig.max_steps=2OO: runconfig.max_steps: ...") would only confuse.
    const QString subject = tr("%1 (%2): ").arg(fieldLabel(path), path);
    const QString type = fieldType(path);
    const QString typed =
        yamlValue.trimmed() == QLatin1String("\"\"") ? QString() : yamlValue.trimmed();
    const bool integer = type == QLatin1String("int") || type == QLatin1String("int64");
    if (integer || type == QLatin1String("double")) {
        if (typed.isEmpty())
            return subject + (integer ? tr("needs a value: a whole number")
                                      : tr("needs a value: a number (e.g. 0.5, 3e-4)"));
        bool number = false;
        const double value = typed.toDouble(&number);
        // Numbers that parse (and whole ones, for integers: "1e3" is fine) keep the engine's
        // message below, which gives the range.
        if (integer && (!number || value != std::floor(value)))
            return subject + tr("'%1' is not a whole number").arg(typed);
        if (!number) return subject + tr("'%1' is not a number (e.g. 0.5, 3e-4)").arg(typed);
    }
    const QString overridePrefix = QStringLiteral("--set %1=%2: ").arg(path, yamlValue);
    QStringList details;
    for (QString line : engineMessage.split('\n', Qt::SkipEmptyParts)) {
        if (line.startsWith(overridePrefix)) line.remove(0, overridePrefix.size());
        if (line.startsWith(path + QStringLiteral(": "))) line.remove(0, path.size() + 2);
        details << line;
    }
    return subject + details.join(QStringLiteral("\n") + subject);
}

ConfigProblem ConfigDocument::problemFromMessage(const QString& message) const {
    ConfigProblem problem;
    problem.message = message;
    // Parse errors read "file:line:col: key.path: ..."; validate() messages start with the path.
    static const QRegularExpression located(QStringLiteral(R"(:(\d+):(\d+):\s)"));
    const auto match = located.match(message);
    if (match.hasMatch()) problem.line = match.captured(1).toInt();
    for (const QString& path : knownPaths()) {
        if (path.isEmpty()) continue;
        const qsizetype at = message.indexOf(path);
        if (at < 0) continue;
        const qsizetype end = at + path.size();
        // Whole key only: "model.name" must not match inside "model.name_x".
        if (end < message.size() && (message[end].isLetterOrNumber() || message[end] == '_')) {
            continue;
        }
        problem.path = path;
        break;
    }
    if (problem.line == 0 && !problem.path.isEmpty()) problem.line = lineOfPath(problem.path);
    return problem;
}

int ConfigDocument::lineOfPath(const QString& path) const {
    // Indentation-based walk: the dotted path of every "key:" line; exact match wins, else the
    // deepest enclosing key that was found.
    const QStringList lines = m_yaml.split(QLatin1Char('\n'));
    std::vector<std::pair<int, QString>> stack;  // (indent, key)
    int best = 0;
    qsizetype bestLength = 0;
    static const QRegularExpression keyLine(
        QStringLiteral(R"(^(\s*)(?:-\s+)?([A-Za-z_][\w]*)\s*:)"));
    for (int i = 0; i < lines.size(); ++i) {
        const auto match = keyLine.match(lines[i]);
        if (!match.hasMatch()) continue;
        const int indent = int(match.capturedLength(1));
        while (!stack.empty() && stack.back().first >= indent) stack.pop_back();
        stack.emplace_back(indent, match.captured(2));
        QString full;
        for (const auto& [unused, key] : stack) full += (full.isEmpty() ? "" : ".") + key;
        if (full == path) return i + 1;
        if (path.startsWith(full + ".") && full.size() > bestLength) {
            best = i + 1;
            bestLength = full.size();
        }
    }
    return best;
}

}  // namespace ws::ui

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's licence against the source tree (issue 36): COPYING holds the GNU GPL version 3,
the README says the licence, every source file (C++, shell, Python, JavaScript, CMake under the
code folders, and the top-level scripts) carries `SPDX-License-Identifier: GPL-3.0-or-later` in
its first three lines, and installer/copyright (Debian's machine-readable format, installed as the
package's copyright) owns every file: each Files pattern matches a file of the tree, each licence
it names has its text, and each third-party file (a tokenizer, vocabulary, chat template or the
corpus) has a stanza of its own, not only the project's `Files: *`. Prints each problem with the
fix; exits 1 if there is any.
Usage: check_licence.py SOURCE_DIR | --self-test (the checker fails on planted errors)."""
import fnmatch
import os
import sys
import tempfile

LINE = "SPDX-License-Identifier: GPL-3.0-or-later"
CODE_DIRS = ["engine", "ui", "app", "tests", "bench", "scripts", "installer", "cmake", "resources"]
TOP_FILES = ["CMakeLists.txt", "run.sh", "test.sh", ".ci/run"]
EXTENSIONS = (".cpp", ".h", ".hpp", ".cc", ".c", ".inc", ".sh", ".py", ".mjs", ".js", ".cmake")


def is_code(name):
    return name.endswith(EXTENSIONS) or name == "CMakeLists.txt"


def source_files(root):
    for top in TOP_FILES:
        if os.path.isfile(os.path.join(root, top)):
            yield top
    for folder in CODE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("node_modules", "__pycache__"))
            for name in sorted(filenames):
                if is_code(name):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


# Files that come from elsewhere wherever they are committed: they need a stanza of their own.
THIRD_PARTY_NAMES = ["tokenizer.json", "tokenizer.json.gz", "tokenizer_config.json", "vocab.json",
                     "merges.txt", "*.jinja", "resources/corpus/*.txt"]
# ... except the project's own: the base model's BPE files were learned here, on the corpus.
OWN_FILES = ["resources/base-model/*"]


def tree_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if not (rel == "." and (d.startswith("build") or d in (".git", "Testing")))
                             and d not in ("node_modules", "__pycache__"))
        for name in sorted(filenames):
            yield os.path.normpath(os.path.join(rel, name))


def copyright_paragraphs(text):
    paragraphs, current, key = [], {}, None
    for line in text.split("\n") + [""]:
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            current[key] = value.strip()
    return paragraphs


def copyright_problems(root):
    path = os.path.join(root, "installer/copyright")
    if not os.path.isfile(path):
        return ["installer/copyright is missing: write the package's machine-readable copyright"]
    paragraphs = copyright_paragraphs(open(path, encoding="utf-8").read())
    files = list(tree_files(root))
    found = []
    stanzas = [p for p in paragraphs if "Files" in p]
    texts = {p["License"].split("\n")[0] for p in paragraphs if "Files" not in p and "License" in p
             and "\n" in p["License"]}
    if not any(p["Files"].split() == ["*"] and p.get("License", "").startswith("GPL-3+")
               for p in stanzas):
        found.append("installer/copyright has no `Files: *` stanza under GPL-3+")
    for p in stanzas:
        name = p.get("License", "").split("\n")[0]
        if not name or ("\n" not in p.get("License", "") and name not in texts):
            found.append(f"installer/copyright: the licence `{name}` of `Files: {p['Files']}` has "
                         "no text: add a standalone `License: {name}` paragraph")
        for pattern in p["Files"].split():
            if pattern != "*" and not any(fnmatch.fnmatch(f, pattern) for f in files):
                found.append(f"installer/copyright: `Files: {pattern}` matches no file: fix the "
                             "path (relative to the source tree) or drop the stanza")
    owned = [pattern for p in stanzas for pattern in p["Files"].split() if pattern != "*"]
    for f in files:
        third_party = any(fnmatch.fnmatch(os.path.basename(f), n) or fnmatch.fnmatch(f, n)
                          for n in THIRD_PARTY_NAMES)
        third_party = third_party and not any(fnmatch.fnmatch(f, n) for n in OWN_FILES)
        if third_party and not any(fnmatch.fnmatch(f, pattern) for pattern in owned):
            found.append(f"{f}: a third-party file with no stanza of its own in installer/copyright; "
                         "add a Files stanza naming its copyright holder and licence")
    return found


def problems(root):
    found = copyright_problems(root)
    copying = os.path.join(root, "COPYING")
    text = open(copying, encoding="utf-8").read() if os.path.isfile(copying) else ""
    if "GNU GENERAL PUBLIC LICENSE" not in text or "Version 3, 29 June 2007" not in text:
        found.append("COPYING does not hold the GNU GPL version 3: copy "
                     "/usr/share/common-licenses/GPL-3 to COPYING")
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme) or "GPL-3.0-or-later" not in open(readme, encoding="utf-8").read():
        found.append("README.md does not say the licence (GPL-3.0-or-later)")
    count = 0
    for path in source_files(root):
        count += 1
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            head = [f.readline() for _ in range(3)]
        if not any(LINE in line for line in head):
            comment = "//" if path.endswith((".cpp", ".h", ".hpp", ".cc", ".c", ".inc", ".mjs", ".js")) else "#"
            found.append(f"{path}: no SPDX licence line; add `{comment} {LINE}` as its first line "
                         "(after the #! line of a script)")
    if count == 0:
        found.append(f"no source files found under {root}: is it the source folder?")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "engine/core"))
        with open(os.path.join(root, "COPYING"), "w") as f:
            f.write("GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("Licence: GPL-3.0-or-later\n")
        with open(os.path.join(root, "engine/core/good.h"), "w") as f:
            f.write(f"// {LINE}\n#pragma once\n")
        with open(os.path.join(root, "run.sh"), "w") as f:
            f.write(f"#!/bin/sh\n# {LINE}\necho hi\n")
        os.makedirs(os.path.join(root, "installer"))
        copyright_path = os.path.join(root, "installer/copyright")
        with open(copyright_path, "w") as f:
            f.write("Format: x\n\nFiles: *\nCopyright: us\nLicense: GPL-3+\n\n"
                    "License: GPL-3+\n text\n")
        assert problems(root) == [], problems(root)
        # A tokenizer file committed without a stanza of its own, then with one of the wrong path.
        os.makedirs(os.path.join(root, "tests/fixtures/m"))
        open(os.path.join(root, "tests/fixtures/m/tokenizer.json"), "w").close()
        found = problems(root)
        assert len(found) == 1 and found[0].startswith("tests/fixtures/m/tokenizer.json: a "
                                                       "third-party file"), found
        with open(copyright_path, "a") as f:
            f.write("\nFiles: tests/fixtures/n/*\nCopyright: them\nLicense: Apache-2.0\n")
        found = problems(root)
        assert any("`Files: tests/fixtures/n/*` matches no file" in p for p in found) and \
            any("the licence `Apache-2.0`" in p for p in found), found
        os.remove(os.path.join(root, "tests/fixtures/m/tokenizer.json"))
        with open(copyright_path, "w") as f:
            f.write("Format: x\n\nFiles: *\nCopyright: us\nLicense: GPL-3+\n\n"
                    "License: GPL-3+\n text\n")
        with open(os.path.join(root, "engine/core/bad.cpp"), "w") as f:
            f.write("// no licence here\nint x;\n")
        with open(os.path.join(root, "engine/core/late.h"), "w") as f:
            f.write(f"// a\n// b\n// c\n// {LINE}\n")  # past the first three lines
        found = problems(root)
        assert len(found) == 2 and "engine/core/bad.cpp: no SPDX" in found[0] \
            and "`// SPDX-License-Identifier: GPL-3.0-or-later`" in found[0] \
            and "engine/core/late.h" in found[1], found
        os.remove(os.path.join(root, "COPYING"))
        assert any(p.startswith("COPYING does not hold") for p in problems(root))
    print("self-test: the checker finds a missing licence line, a late one, a missing COPYING, "
          "an unowned tokenizer file, a stanza matching nothing and a licence without its text")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = problems(sys.argv[1])
    for problem in found:
        print(problem)
    if not found:
        print(f"every source file carries {LINE}; COPYING holds the GPL 3; installer/copyright "
              "owns every file")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

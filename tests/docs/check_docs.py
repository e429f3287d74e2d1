#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks the documentation against the source tree (ctest label docs).

  check_docs.py ROOT         every relative link in ROOT's README.md, HACKING.md, CHANGELOG.md and
                             docs/*.md names a file that exists (and, for `file.md#anchor`, a
                             heading of that file), and every `path:function` entry in HACKING.md
                             names a file that exists and contains that name
  check_docs.py --self-test  the checker on a planted tree: each planted error is reported, and
                             the same tree without them passes

A stale entry fails with the Markdown file and line, so a rename shows where HACKING.md must follow.
Links and entries inside fenced code blocks are not checked; a `path:function` entry inside
inline code is (that is how HACKING.md writes them).
"""
import pathlib
import re
import sys
import tempfile

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")
ENTRY = re.compile(r"`([\w./-]+\.(?:cpp|h|hpp|py|sh|txt|cmake|yaml)):([A-Za-z_~][\w:~]*)`")
# At least this many entries: a HACKING.md whose map was lost (or written in another form that
# this checker would silently skip) must fail, not pass with nothing checked.
MIN_ENTRIES = 20


def slug(heading):
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def lines_outside_code(text):
    """(line number, line) of every line outside ``` fences."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(path):
    seen = {}
    result = set()
    for _, line in lines_outside_code(path.read_text(encoding="utf-8")):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def doc_files(root):
    files = [root / name for name in ("README.md", "HACKING.md", "CHANGELOG.md")]
    files += sorted((root / "docs").glob("*.md"))
    return [f for f in files if f.is_file()]


def text_outside_code(text):
    """The text with fenced blocks blanked and inline code spans replaced by spaces, line for line,
    so that a link that wraps onto the next line is still found and numbered."""
    kept = [""] * (text.count("\n") + 1)
    for number, line in lines_outside_code(text):
        kept[number - 1] = line
    joined = "\n".join(kept)
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), joined)


def check_links(root, doc):
    problems = []
    where = doc.relative_to(root)
    text = text_outside_code(doc.read_text(encoding="utf-8"))
    for m in LINK.finditer(text):
        number = text.count("\n", 0, m.start()) + 1
        target = m.group(1)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # https:, mailto: ...
        path_text, _, fragment = target.partition("#")
        path = (doc.parent / path_text).resolve() if path_text else doc
        if not path.exists():
            problems.append(f"{where}:{number}: the link {target} names no file "
                            f"({path_text} from {where.parent.as_posix() or '.'})")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            problems.append(f"{where}:{number}: the link {target}: "
                            f"{path.name} has no heading with the anchor #{fragment}")
    return problems


def check_entries(root):
    problems = []
    hacking = root / "HACKING.md"
    if not hacking.is_file():
        return ["HACKING.md is missing"], 0
    count = 0
    for number, line in lines_outside_code(hacking.read_text(encoding="utf-8")):
        for m in ENTRY.finditer(line):
            count += 1
            file_text, name = m.group(1), m.group(2)
            path = root / file_text
            if not path.is_file():
                problems.append(f"HACKING.md:{number}: `{file_text}:{name}`: "
                                f"{file_text} does not exist")
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            if "::" in name:
                found = name in source
            else:
                found = re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", source)
            if not found:
                problems.append(f"HACKING.md:{number}: `{file_text}:{name}`: "
                                f"{file_text} does not contain {name}")
    if count < MIN_ENTRIES:
        problems.append(f"HACKING.md has {count} `path:function` entries; expected at least "
                        f"{MIN_ENTRIES} (its \"where is X\" map)")
    return problems, count


def check(root):
    problems = []
    for doc in doc_files(root):
        problems += check_links(root, doc)
    entry_problems, count = check_entries(root)
    return problems + entry_problems, count


def self_test():
    entries = "\n".join(f"| f{i} | `src/a.cpp:Thing::run` |" for i in range(MIN_ENTRIES))
    good = {
        "README.md": "# T\n\nSee [the guide](docs/guide.md#quick-start-as-root) and "
                     "![pic](img/p.png), `[code](nope.md)`.\n\n```sh\n[not a link](nowhere.md)\n```\n",
        "docs/guide.md": "# Guide\n\n## Quick start (as root)\n\nBack to [README](../README.md), "
                         "[out](https://example.invalid/x), [here](#guide).\n",
        "HACKING.md": f"# H\n\n| what | where |\n|---|---|\n{entries}\n"
                      "| free | `src/a.cpp:helper` |\n",
        "CHANGELOG.md": "# C\n",
        "src/a.cpp": "int helper() { return 1; }\nvoid Thing::run() {}\n",
        "img/p.png": "",
    }
    planted = {
        "README.md": good["README.md"] + "Also [gone](docs/missing.md) and [a wrapped\n"
                                         "bad anchor](docs/guide.md#no-such-heading).\n",
        "HACKING.md": good["HACKING.md"] + "| gone | `src/b.cpp:run` |\n"
                                           "| renamed | `src/a.cpp:Thing::walk` |\n",
    }
    expected = ["docs/missing.md names no file", "has no heading with the anchor #no-such-heading",
                "src/b.cpp does not exist", "src/a.cpp does not contain Thing::walk"]

    def write(root, files):
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        write(root, good)
        problems, _ = check(root)
        if problems:
            print("self-test: the good tree failed:\n  " + "\n  ".join(problems))
            ok = False
        write(root, planted)
        problems, _ = check(root)
        for e in expected:
            if not any(e in p for p in problems):
                print(f"self-test: the planted error '{e}' was not reported; got:\n  " +
                      "\n  ".join(problems))
                ok = False
        if len(problems) != len(expected):
            print("self-test: expected exactly the planted errors, got:\n  " + "\n  ".join(problems))
            ok = False
        (root / "HACKING.md").write_text("# H\n\nNo map.\n", encoding="utf-8")
        problems, _ = check(root)
        if not any("expected at least" in p for p in problems):
            print("self-test: a HACKING.md without entries passed")
            ok = False
    print("self-test: " + ("every planted error found" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    problems, count = check(root)
    for p in problems:
        print(p)
    files = len(doc_files(root))
    print(f"{files} Markdown files, {count} `path:function` entries: "
          + ("all current" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

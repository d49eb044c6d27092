"""Lists every repository path that README, docs/ or a source comment names but that does not
exist: "core/model/model.h", "tests/launcher/{chaos_test,security_test}.sh", a Bazel target
such as "tests/core/conv_math_test". Placeholders in capitals (RUN_DIR, configs/STUDY.yaml)
and bench/RESULTS.md (a record of past measurements) are left alone.

    doc_paths.py ROOT    prints FILE:LINE: PATH per missing path; exits 1 when any is missing
"""
import glob
import os
import re
import sys

TOP = r"(?:core|server|worker|launcher|tests|tools|bench|docs|configs|examples|python|proto|\.ci)"
PATH = re.compile(r"(?<![\w./$-])(" + TOP + r"/(?:[\w.*-]|\{[\w.,*-]*\}|/)*[\w*}])")
CPP = (".h", ".cc", ".cu", ".proto")
HASH = (".sh", ".py", ".bzl", ".yaml")


def names_target(directory, name):
    build = os.path.join(directory, "BUILD")
    return os.path.exists(build) and f'"{name}"' in open(build).read()


def exists(root, path):
    if any(part.isupper() or part.split(".")[0].isupper() for part in path.split("/")):
        return True  # a placeholder
    full = os.path.join(root, path)
    if "*" in path or "{" in path:
        alternatives = [full]
        while any("{" in a for a in alternatives):
            a = next(a for a in alternatives if "{" in a)
            alternatives.remove(a)
            head, rest = a.split("{", 1)
            options, tail = rest.split("}", 1)
            alternatives += [head + o + tail for o in options.split(",")]
        return all(glob.glob(a) or names_target(*os.path.split(a)) for a in alternatives)
    return os.path.exists(full) or names_target(*os.path.split(full))


def commented(path, line):
    """The part of `line` that the file's kind reads as prose."""
    if path.endswith(".md"):
        return line
    if not (path.endswith(CPP + HASH) or os.path.basename(path) in ("BUILD", "WORKSPACE", "run")):
        return ""
    # A shell, Python or Starlark comment starts a word ("${f##*x}" is no comment).
    match = re.search(r"//" if path.endswith(CPP) else r"(?:^|\s)#", line)
    return line[match.start():] if match else ""


def main(root):
    missing = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith((".", "bazel-")) or d == ".ci"]
        if os.path.relpath(directory, root).startswith("third_party"):
            continue
        for name in files:
            path = os.path.relpath(os.path.join(directory, name), root)
            if path == os.path.join("bench", "RESULTS.md"):
                continue
            try:
                lines = open(os.path.join(root, path), encoding="utf-8").readlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, 1):
                for match in PATH.finditer(commented(path, line)):
                    if not exists(root, match.group(1)):
                        missing.append(f"{path}:{number}: {match.group(1)}")
    print("\n".join(missing))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

#!/usr/bin/env bash
# Malformed YAML from a mutation loop: every shipped config, mutated at random (lines dropped,
# duplicated or re-indented, values replaced by junk, bytes inserted, files cut short), goes
# through `monsoon validate`. Each must be accepted (exit 0) or refused with exit 2 and one
# line naming what is wrong; never a crash, a hang or a multi-line dump.
source tests/launcher/test_lib.sh

python3 - "$MONSOON" "$WORK" "${MONSOON_MUTATIONS:-400}" <<'PY'
import glob, os, random, subprocess, sys
monsoon, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(20261121)
configs = [c for c in sorted(glob.glob("configs/*.yaml") + glob.glob("configs/slurm/*.yaml"))
           if "compare" not in c]
junk = ["abc", "-1", "0", "1e999", "nan", "-inf", "[", "{", "]", "''", "~", "[1, [2]]", "{a: 1}",
        "99999999999999999999", "true", "\"\\x00\"", "&anchor", "*alias", "!!binary aGk=", "- x"]
def mutate(text):
    lines = text.split("\n")
    kind = rng.randrange(7)
    i = rng.randrange(len(lines))
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[i])
    elif kind == 2 and ":" in lines[i]:
        key = lines[i].split(":")[0]
        lines[i] = key + ": " + rng.choice(junk)
    elif kind == 3:
        lines[i] = " " * rng.randrange(1, 5) + lines[i]
    elif kind == 4:
        pos = rng.randrange(len(text) + 1)
        return text[:pos] + "".join(chr(rng.randrange(1, 256)) for _ in range(rng.randrange(1, 6))) + text[pos:]
    elif kind == 5:
        return text[: rng.randrange(len(text) + 1)]
    else:
        lines[i] = lines[i].replace(":", "", 1)
    return "\n".join(lines)
accepted = refused = 0
bad = []
for n in range(count):
    source = rng.choice(configs)
    text = open(source, encoding="utf-8", errors="replace").read()
    mutated = text
    for _ in range(rng.randrange(1, 4)):
        mutated = mutate(mutated)
    # Next to the original, so that relative data paths still resolve.
    path = os.path.join(os.path.dirname(source), f".mutant-{os.getpid()}.yaml")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(mutated)
    try:
        # A minute: validate measures a step of the model (seconds for large_mlp's, more on a
        # machine shared with another test).
        r = subprocess.run([monsoon, "validate", path], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        bad.append(f"mutant {n} of {source}: validate hung")
        continue
    finally:
        os.unlink(path)
    err = r.stderr.decode(errors="replace").strip().split("\n")
    if r.returncode == 0:
        accepted += 1
    elif r.returncode == 2 and len(err) == 1 and err[0].startswith("monsoon: "):
        refused += 1
    elif r.returncode == 2 and all(l.startswith("monsoon: ") for l in err):
        refused += 1  # warnings before the error line
    else:
        bad.append(f"mutant {n} of {source}: exit {r.returncode}, stderr {err[-3:]}")
        with open(os.path.join(work, f"mutant-{n}.yaml"), "w", errors="surrogateescape") as f:
            f.write(mutated)
print(f"{count} mutants: {accepted} still valid, {refused} refused with one line, {len(bad)} mishandled")
for b in bad[:10]:
    print("  " + b)
print(f"SCORECARD config mutations: {count} malformed configs, {refused} refused naming the field, 0 crashes" if not bad else "")
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] && pass "every mutant accepted or refused cleanly" || fail "mutants mishandled (see $WORK)"
finish

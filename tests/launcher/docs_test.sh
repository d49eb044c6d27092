#!/usr/bin/env bash
# README describes what the code does: its configuration reference and its layer table are the
# tables generated from core/config/config_schema.h, core/model/layer_kinds.cc and
# core/compute/activation.h, every field of a fully resolved job config (`monsoon validate` prints
# every default) is named there, every command of `monsoon --help` is in "Commands", and the
# example of "Models" validates to the table shown there. README is at most 1,200 lines, and
# every path README, docs/ or a source comment names exists.
source tests/launcher/test_lib.sh
README=README.md

# section NAME: README's lines from "## NAME" up to the next "## " heading.
section() { awk -v h="## $1" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$README"; }

reference=$(section "Configuration reference")
[ -n "$reference" ] && pass "README has a configuration reference" || fail "no configuration reference"
# generated_table NAME DESCRIPTION: README's block between NAME's markers is what
# tools/config_reference NAME prints.
generated_table() {
  local generated in_readme
  generated=$(tools/config_reference "$1")
  in_readme=$(awk -v b="<!-- $1-reference: generated" -v e="<!-- $1-reference: end -->" '
    $0 == e { on = 0 } on { print } index($0, b) == 1 { on = 1 }' "$README")
  if [ -n "$generated" ] && [ "$generated" == "$in_readme" ]; then
    pass "README's $2 is the one tools/config_reference generates"
  else
    fail "README's $2 differs from the declarations'; regenerate it with: bazel run //tools:config_reference -- \"\$PWD/README.md\""
    diff <(echo "$generated") <(echo "$in_readme") | head -20
  fi
}
generated_table config "configuration reference"
generated_table layers "layer table"
# The resolved YAML is two levels deep: "section:" lines, then "  field: value" lines.
fields=$("$MONSOON" validate configs/slurm/fmnist.yaml 2>/dev/null | awk '
  /^[a-z_]+:$/ { s = substr($1, 1, length($1) - 1) ".";  next }
  /^[a-z_]+: / { s = ""; print substr($1, 1, length($1) - 1); next }
  /^  [a-z_0-9]+:/ { print s substr($1, 1, length($1) - 1) }')
n=$(echo "$fields" | wc -l)
[ "$n" -gt 60 ] && pass "$n fields in the resolved config" || fail "only $n fields in the resolved config"
undocumented=""
for f in $fields; do
  grep -qF "\`$f\`" <<<"$reference" || undocumented+=" $f"
done
expect_eq "config fields missing from README's configuration reference" "${undocumented:- none}" " none"

commands=$(section "Commands")
help=$("$MONSOON" --help 2>&1)
missing=""
# Commands are listed under "Subcommands:" and "Role commands ...:", options under "Options:".
listed=$(awk '/^[A-Z][A-Za-z ]*( \(.*\))?:$/ { on = ($1 != "Options:"); next } on && /^  [a-z]/ { print $1 }' <<<"$help" | sort -u)
[ "$(echo "$listed" | wc -l)" -ge 8 ] && pass "$(echo $listed | wc -w) commands in monsoon --help" \
  || fail "commands in monsoon --help: $listed"
for c in $listed; do
  grep -qE "monsoon $c\b|^- \`$c\`" <<<"$commands" || missing+=" $c"
done
expect_eq "monsoon commands missing from README's Commands" "${missing:- none}" " none"

# "Models": its example model section, put into the default job, validates to the table shown.
models=$(section "Models")
example=$(awk '/^```yaml$/ { on = 1; next } /^```$/ { on = 0 } on' <<<"$models")
awk -v example="$example" '/^model:$/ { print example; skip = 1; next }
  skip && /^[a-z]/ { skip = 0 } !skip' configs/fmnist_downpour.yaml >"$WORK/readme_model.yaml"
shown=$(awk '/^```text$/ { on = 1; next } /^```$/ { on = 0 } on' <<<"$models")
printed=$("$MONSOON" validate "$WORK/readme_model.yaml" 2>&1 | sed -n '/^# The model:$/,/^#$/p' | sed '1d;$d')
expect_eq "README's example model validates to the table it shows" "$printed" "$shown"

# README stays a manual: longer material goes to docs/.
lines=$(wc -l <"$README")
[ "$lines" -le 1200 ] && pass "README has $lines lines (at most 1200)" \
  || fail "README has $lines lines, over 1200: move long material to docs/"

# Every path named in README, docs/ or a comment exists. The check reads the checkout this
# test's files link to (the test is tagged external, so it never comes from the cache).
root=$(dirname "$(readlink -f "$README")")
missing_paths=$(python3 tests/launcher/doc_paths.py "$root")
expect_eq "paths named in README, docs/ and comments that do not exist" "${missing_paths:-none}" \
  "none"
finish

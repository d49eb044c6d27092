#!/usr/bin/env bash
# configs/slurm/*.sbatch are what `monsoon sbatch` writes for the matching YAMLs, with this
# machine's paths replaced by /shared/...: regenerate them and compare, so they never drift.
source tests/launcher/test_lib.sh
ROOT="$PWD"
cd "$WORK"
for job in fmnist het; do
  "$MONSOON" sbatch "$ROOT/configs/slurm/$job.yaml" --script "$WORK/$job.sbatch" >/dev/null 2>&1
  expect_eq "sbatch $job exit status" "$?" "0"
  sed -e "s|^MONSOON='.*'\$|MONSOON='/shared/runs/bin/monsoon-0123456789abcdef'|" \
      -e "s|libmonsoon_cuda-[0-9a-f]*\.so'\$|libmonsoon_cuda-0123456789abcdef.so'|" \
      -e "s|$ROOT/|/shared/monsoon/|g" -e "s|$WORK/runs/|/shared/runs/|g" \
      "$WORK/$job.sbatch" >"$WORK/$job.normalized"
  if diff -u "$ROOT/configs/slurm/$job.sbatch" "$WORK/$job.normalized"; then
    pass "configs/slurm/$job.sbatch is current"
  else
    fail "configs/slurm/$job.sbatch differs from what monsoon sbatch writes (regenerate it)"
  fi
done
finish

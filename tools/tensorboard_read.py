#!/usr/bin/env python3
"""Loads a run's TensorBoard files with TensorBoard's own reader (the `tensorboard` package's
EventAccumulator, as `tensorboard --logdir RUN_DIR/tensorboard` loads them) and checks that
every role's metrics CSV column is there as a scalar: one value per row, at the row's step,
equal to the CSV's as a float32. Exits 0 when every run checks out; prints
"skipped: ..." and exits 0 where the `tensorboard` package is missing.

    tensorboard_read.py RUN_DIR...
"""
import csv
import glob
import os
import struct
import sys

# The column each role's events take their step from (None: the row's number, from 1), as
# core/metrics writes them.
STEP_COLUMN = {"worker": "step", "evaluator": "global_step", "server": None}


def check_role(run, role_dir, accumulator_type):
    role = os.path.basename(role_dir)
    rows = list(csv.DictReader(open(f"{run}/metrics/{role}.csv")))
    accumulator = accumulator_type(role_dir, size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    step_column = STEP_COLUMN[role.split("-")[0]]
    columns = [c for c in rows[0] if c != step_column] if rows else []
    missing = [c for c in columns if c not in tags]
    assert not missing, f"{role}: TensorBoard finds no scalar {missing} (it has {sorted(tags)})"
    steps = [int(round(float(row[step_column]))) if step_column else number
             for number, row in enumerate(rows, start=1)]
    for column in columns:
        events = accumulator.Scalars(column)
        assert len(events) == len(rows), (
            f"{role} {column}: TensorBoard reads {len(events)} values at steps "
            f"{[e.step for e in events]} from {len(glob.glob(f'{role_dir}/*tfevents*'))} "
            f"file(s), the CSV has {len(rows)} rows at steps {steps}")
        for event, row, step in zip(events, rows, steps):
            want = struct.unpack("<f", struct.pack("<f", float(row[column])))[0]
            assert event.step == step, f"{role} {column}: step {event.step}, row's {step}"
            assert abs(event.value - want) <= 1e-6 * max(1.0, abs(want)), \
                f"{role} {column} at step {step}: {event.value} != {want}"
    return len(columns), len(rows)


def main():
    try:
        from tensorboard import version
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as e:
        print(f"skipped: no tensorboard package ({e})")
        return 0
    for run in sys.argv[1:]:
        roles = sorted(glob.glob(f"{run}/tensorboard/*"))
        assert roles, f"{run}: no tensorboard/ directory"
        counted = {os.path.basename(r): check_role(run, r, EventAccumulator) for r in roles}
        print(f"{run}: TensorBoard {version.VERSION} reads every scalar "
              f"(role: (tags, values each)): {counted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

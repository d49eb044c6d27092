#!/usr/bin/python3
"""Decodes every TensorBoard event file of a run (RUN_DIR/tensorboard/ROLE/) with Debian's
python3-protobuf and python3-crc32c, and checks them against the role's metrics CSV: each
record's length and data checksums (masked CRC-32C), the first event's "brain.Event:2", and
one event per CSV row, at its step, holding each column's value as a float32. Exits 0 when
every run given checks out.

    tensorboard_check.py PROTO_FILE RUN_DIR...
"""
import csv
import glob
import os
import struct
import subprocess
import sys
import tempfile

import crc32c


def masked(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def events(path, event_type):
    """The events of one file, each record's checksums checked."""
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert length_crc == masked(header), f"{path}: bad length checksum at byte {at}"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert body_crc == masked(body), f"{path}: bad data checksum at byte {at}"
        event = event_type()
        event.ParseFromString(body)
        yield event
        at += 16 + length


# The column each role's events take their step from (none: the row's number, from 1).
STEP_COLUMN = {"worker": "step", "evaluator": "global_step", "server": None}


def check_role(run, role_dir, event_type):
    role = os.path.basename(role_dir)
    rows = list(csv.DictReader(open(f"{run}/metrics/{role}.csv")))
    scalars = []
    for path in sorted(glob.glob(f"{role_dir}/events.out.tfevents.*")):
        file_events = list(events(path, event_type))
        assert file_events[0].file_version == "brain.Event:2", path
        scalars += file_events[1:]
    assert len(scalars) == len(rows), f"{role}: {len(scalars)} events for {len(rows)} rows"
    step_column = STEP_COLUMN[role.split("-")[0]]
    for number, (event, row) in enumerate(zip(scalars, rows), start=1):
        expected_step = int(round(float(row[step_column]))) if step_column else number
        assert event.step == expected_step, f"{role}: event step {event.step}, row {expected_step}"
        unset = [v.tag for v in event.summary.value if not v.HasField("simple_value")]
        assert not unset, f"{role}: no simple_value (TensorBoard skips them) for {unset}"
        values = {v.tag: v.simple_value for v in event.summary.value}
        for column, text in row.items():
            if column == step_column:
                continue
            want = struct.unpack("<f", struct.pack("<f", float(text)))[0]
            got = values[column]
            assert abs(got - want) <= 1e-6 * max(1.0, abs(want)), f"{role} {column}: {got} != {want}"
    return len(rows)


def main():
    proto = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["protoc", f"-I{os.path.dirname(proto)}", f"--python_out={out}", proto],
                       check=True)
        sys.path.insert(0, out)
        from tensorboard_event_pb2 import Event  # noqa: E402
    for run in sys.argv[2:]:
        roles = sorted(glob.glob(f"{run}/tensorboard/*"))
        assert roles, f"{run}: no tensorboard/ directory"
        counted = {os.path.basename(r): check_role(run, r, Event) for r in roles}
        print(f"{run}: event files match the CSVs: {counted}")


if __name__ == "__main__":
    main()

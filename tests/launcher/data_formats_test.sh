#!/usr/bin/env bash
# N-D data a user already has: Fashion-MNIST converted (with Debian's NumPy and h5py) to .npy
# (uint8 [N, 1, 28, 28] images) and to HDF5 (float32 images in [0, 1], the training set split
# over two files) trains to the IDX job's accuracy, each worker reading only its shard; the
# same HDF5 files compressed by h5py (gzip; lzf with shuffle and fletcher32), their images
# reached through a soft link, train too, and one with chunks never written is refused
# counting them; a truncated .npy file is named with its shape. `monsoon` loads HDF5's library
# only to read HDF5 files: it does not link it.
source tests/launcher/test_lib.sh
FMNIST=/usr/share/datasets/fashion-mnist

linked=$(ldd "$MONSOON" | grep -E -o "libhdf5[^ ]*|libcurl[^ ]*" | tr '\n' ' ')
expect_eq "monsoon links neither HDF5 nor its closure" "$linked" ""

/usr/bin/python3 - "$FMNIST" "$WORK" <<'PY'
import gzip, sys
import h5py, numpy as np

src, out = sys.argv[1], sys.argv[2]
def idx(name, offset):
    with gzip.open(f"{src}/{name}", "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
for split, prefix in (("train", "train"), ("test", "t10k")):
    labels = idx(f"{prefix}-labels-idx1-ubyte.gz", 8)
    images = idx(f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    np.save(f"{out}/{split}_x.npy", images)
    np.save(f"{out}/{split}_y.npy", labels)
    parts = (slice(0, 40000), slice(40000, None)) if split == "train" else (slice(None),)
    for i, rows in enumerate(parts):
        with h5py.File(f"{out}/{split}_{i}.h5", "w") as f:
            f["images"] = (images[rows] / 255).astype(np.float32)
            f["labels"] = labels[rows].astype(np.int64)
        # h5py's compression as users ask for it (its default chunks), images behind a soft link.
        compression = ({"compression": "gzip"} if i == 0 else
                       {"compression": "lzf", "shuffle": True, "fletcher32": True})
        with h5py.File(f"{out}/{split}_{i}_packed.h5", "w") as f:
            f.create_dataset("data/images", data=(images[rows] / 255).astype(np.float32), **compression)
            f.create_dataset("labels", data=labels[rows].astype(np.int64), **compression)
            f["images"] = h5py.SoftLink("data/images")
with h5py.File(f"{out}/unfinished.h5", "w") as f:  # 2 of its 4 chunks written
    d = f.create_dataset("images", shape=(400, 1, 28, 28), dtype="f4", chunks=(100, 1, 28, 28),
                         compression="gzip")
    d[:200] = 0.5
    f["labels"] = np.zeros(400, np.int64)
PY
expect_eq "conversion to .npy and HDF5" "$?" "0"

job_with_data() {  # job_with_data NAME DATA_YAML
  cat >"$WORK/$1.yaml" <<YAML
job: $1
seed: 1
cluster: {servers: 2, workers: 2, evaluator: true}
model: {type: mlp, output_dim: 10, hidden: [64]}
training: {algorithm: sync, epochs: 1, batch_size: 64}
optimizer: {type: momentum, learning_rate: 0.05, momentum: 0.9}
data:
$2
YAML
}
job_with_data idx "  train_images: $FMNIST/train-images-idx3-ubyte.gz
  train_labels: $FMNIST/train-labels-idx1-ubyte.gz
  test_images: $FMNIST/t10k-images-idx3-ubyte.gz
  test_labels: $FMNIST/t10k-labels-idx1-ubyte.gz"
# Each worker's 30000 rows take 94 MB as float32: with a budget of 22 MiB, a quarter of that,
# the npy and HDF5 workers read them from the files batch by batch.
job_with_data npy "  format: npy
  train_features: train_x.npy
  train_targets: train_y.npy
  test_features: test_x.npy
  test_targets: test_y.npy
  memory_budget_mib: 22"
job_with_data hdf5 "  format: hdf5
  train_files: [train_0.h5, train_1.h5]
  test_files: test_0.h5
  features_dataset: images
  targets_dataset: labels
  memory_budget_mib: 22"

for format in idx npy hdf5; do
  timeout 300 "$MONSOON" run "$WORK/$format.yaml" --run-dir "$WORK/run-$format" \
    >"$WORK/$format.txt" 2>&1
  expect_eq "$format job: exit status" "$?" "0"
  tail -1 "$WORK/$format.txt"
done
python3 - "$WORK" <<'PY' && pass "npy and hdf5 reach the IDX job's accuracy" || fail "accuracy differs"
import json, sys
acc = {f: json.load(open(f"{sys.argv[1]}/run-{f}/summary.json"))["final_test_accuracy"]
       for f in ("idx", "npy", "hdf5")}
print("final test accuracy:", acc)
sys.exit(0 if acc["idx"] > 0.8 and all(abs(a - acc["idx"]) <= 0.01 for a in acc.values()) else 1)
PY
grep -h "rows of data.train" "$WORK"/run-{npy,hdf5}/logs/worker-*.log | sed 's/.*\] //'
for format in npy hdf5; do
  expect_eq "each $format worker streams its 30000 of the 60000 rows" \
    "$(grep -l "streaming 30000 of 60000 rows of data.train_.* batch by batch (they need 89 MiB, more than data.memory_budget_mib's 22)" \
       "$WORK"/run-$format/logs/worker-*.log | wc -l)" "2"
done
expect_eq "npy: the model's input shape comes from the file" \
  "$(grep -A1 "input_shape" "$WORK/run-npy/config.yaml" | head -1 | tr -d ' ')" "input_shape:[1,28,28]"

# The compressed copies: accepted, and each worker reads its shard of them.
timeout 120 "$MONSOON" run "$WORK/hdf5.yaml" --run-dir "$WORK/run-packed" --set data.memory_budget_mib=1024 \
  --set "data.train_files=[train_0_packed.h5, train_1_packed.h5]" --set data.test_files=test_0_packed.h5 \
  --set training.max_steps=50 >"$WORK/packed.txt" 2>&1
expect_eq "gzip and lzf HDF5 (h5py's defaults, a soft link): exit status" "$?" "0"
expect_eq "each worker read its 30000 rows of the compressed files" \
  "$(grep -l "reading 30000 of 60000 rows of data.train_files" "$WORK"/run-packed/logs/worker-*.log | wc -l)" "2"
"$MONSOON" validate "$WORK/hdf5.yaml" --set "data.train_files=[unfinished.h5]" >"$WORK/unfinished.txt" 2>&1
expect_eq "an HDF5 file with chunks never written: exit status" "$?" "2"
grep -q "unfinished.h5:images: refused: 2 of its 4 chunks were never written" "$WORK/unfinished.txt" \
  && pass "the unwritten chunks are counted" || fail "unfinished: $(cat "$WORK/unfinished.txt")"

head -c 1000000 "$WORK/train_x.npy" >"$WORK/cut.npy"
"$MONSOON" validate "$WORK/npy.yaml" --set data.train_features="$WORK/cut.npy" >"$WORK/cut.txt" 2>&1
expect_eq "a truncated .npy file: exit status" "$?" "2"
grep -q "cut.npy: shape \[60000, 1, 28, 28\] of uint8 needs 47040000 bytes of data, but the file holds 999872 (truncated)" "$WORK/cut.txt" \
  && pass "the truncated file is named with its shape" || { cat "$WORK/cut.txt"; fail "no clear error"; }

# Rows beyond this machine's memory (sparse files: the headers' sizes, no data written). A
# .npy shard that large is streamed; IDX files, read whole, are refused by `run` before
# anything is read or any role starts.
/usr/bin/python3 - "$WORK" <<'PY'
import os, sys
import numpy as np
memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")
rows = memory // (4 * 784) + 1000
def sparse(path, header, size):
    with open(path, "wb") as f:
        f.write(header)
    os.truncate(path, len(header) + size)
def sparse_npy(path, shape, dtype):
    header = np.lib.format.header_data_from_array_1_0(np.empty((0,), dtype))
    header["shape"] = shape
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        start = f.tell()
    os.truncate(path, start + int(np.prod(shape)) * np.dtype(dtype).itemsize)
sparse_npy(f"{sys.argv[1]}/huge_x.npy", (rows, 784), "<f4")
sparse_npy(f"{sys.argv[1]}/huge_y.npy", (rows,), "<i8")
big = lambda *v: b"".join(int(x).to_bytes(4, "big") for x in v)
sparse(f"{sys.argv[1]}/huge-images", big(0x803, rows, 28, 28), rows * 784)
sparse(f"{sys.argv[1]}/huge-labels", big(0x801, rows), rows)
PY
"$MONSOON" validate "$WORK/npy.yaml" --set cluster.workers=1 --set data.memory_budget_mib=0 \
  --set data.train_features="$WORK/huge_x.npy" --set data.train_targets="$WORK/huge_y.npy" \
  >"$WORK/huge-npy.txt" 2>&1
expect_eq "a .npy shard beyond the machine's memory: validate's exit status" "$?" "0"
grep -q "^#   worker x 1 .*(shard streamed from its files)" "$WORK/huge-npy.txt" \
  && pass "validate says the shard is streamed" || fail "$(tail -8 "$WORK/huge-npy.txt")"
"$MONSOON" validate "$WORK/npy.yaml" --set cluster.workers=2 --set data.memory_budget_mib=1073741823 \
  --set data.train_features="$WORK/huge_x.npy" --set data.train_targets="$WORK/huge_y.npy" \
  >"$WORK/huge-held.txt" 2>&1
expect_eq "a .npy shard held past the machine's memory (a budget of 1 PiB): exit status" "$?" "2"
grep -q "the largest part is each worker's shard of the training data, held in memory (a lower data.memory_budget_mib streams" \
  "$WORK/huge-held.txt" && pass "the refusal names the held shard" || fail "$(tail -2 "$WORK/huge-held.txt")"
timeout 60 "$MONSOON" run "$WORK/idx.yaml" --run-dir "$WORK/huge" --set cluster.workers=1 \
  --set data.train_images="$WORK/huge-images" --set data.train_labels="$WORK/huge-labels" \
  >"$WORK/huge.txt" 2>&1
expect_eq "IDX rows beyond the machine's memory: exit status" "$?" "2"
grep -q "huge-images): each worker's shard of [0-9]* rows of 784 features need .* GB of memory, more than this machine's" \
  "$WORK/huge.txt" && [ ! -e "$WORK/huge/logs" ] \
  && pass "refused before any role starts, with the sizes" || fail "huge: $(cat "$WORK/huge.txt")"
finish

#!/usr/bin/python3
"""Writes Fashion-MNIST as HDF5 files for the compressed-HDF5 benchmark (bench/run_all.sh):
OUT/{train,test}_{plain,gzip}.h5, datasets "images" (float32 [N, 1, 28, 28] in [0, 1]) and
"labels" (int64 [N]); plain is contiguous, gzip is h5py's compression="gzip" with its default
chunks (what a user who asks only for compression gets). And for each, OUT/job_KIND.yaml: the
job BASE (a job file on Fashion-MNIST) with its data section replaced by those files.

    hdf5_files.py BASE OUT_DIR
"""
import gzip
import os
import sys

import h5py
import numpy as np
import yaml

SOURCE = "/usr/share/datasets/fashion-mnist"


def idx(name, offset):
    with gzip.open(f"{SOURCE}/{name}", "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main(base, out):
    os.makedirs(out, exist_ok=True)
    job = yaml.safe_load(open(base))
    for split, prefix in (("train", "train"), ("test", "t10k")):
        labels = idx(f"{prefix}-labels-idx1-ubyte.gz", 8).astype(np.int64)
        images = (idx(f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 255).astype(
            np.float32)
        for kind, options in (("plain", {}), ("gzip", {"compression": "gzip"})):
            with h5py.File(f"{out}/{split}_{kind}.h5", "w") as f:
                f.create_dataset("images", data=images, **options)
                f.create_dataset("labels", data=labels, **options)
    for kind in ("plain", "gzip"):
        job["data"] = {"format": "hdf5", "train_files": [f"{out}/train_{kind}.h5"],
                       "test_files": [f"{out}/test_{kind}.h5"], "features_dataset": "images",
                       "targets_dataset": "labels"}
        with open(f"{out}/job_{kind}.yaml", "w") as f:
            yaml.safe_dump(job, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

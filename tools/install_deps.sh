#!/usr/bin/env bash
# Installs every Debian package Monsoon needs to build, test and run. Idempotent:
# packages already present are skipped, and apt is not touched when nothing is missing.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-rules-java            # build (Bazel 4.2.3, offline)
  g++ pkg-config zlib1g-dev                   # compiler, library discovery
  libgrpc++-dev protobuf-compiler-grpc        # RPC
  libprotobuf-dev protobuf-compiler
  libabsl-dev libgoogle-glog-dev              # status, strings, mutexes; the roles' logs
  libcli11-dev nlohmann-json3-dev             # command line, JSON (header-only)
  catch2 libyaml-cpp-dev libopenblas-dev      # tests, config, CPU GEMM
  libdnnl-dev                                 # CPU convolutions (oneDNN)
  dataset-fashion-mnist                       # the default job's data
  libhdf5-dev                                 # HDF5 data (data.format: hdf5)
  hdf5-plugin-lzf liblzf1                     # HDF5's LZF filter (h5py's compression="lzf")
  libzip-dev                                   # .npz archives (monsoon export)
  python3-numpy python3-h5py                  # tests convert Fashion-MNIST to .npy and HDF5
  python3-torch                               # PyTorch worker programs; the CNN benchmark
  pybind11-dev libpython3.11-dev              # the monsoon Python package
  libisal-dev                                 # CRC-32C of TensorBoard event files
  python3-protobuf python3-crc32c             # tests decode the event files
  python3-yaml                                # tests rebuild a layer list in PyTorch
  python3 procps                              # test scripts (JSON checks, pgrep)
  slurmctld slurmd slurm-client munge         # SLURM: launch tests on a local cluster
  iproute2 util-linux                         # emulated hosts: ip, tc, nsenter
  clang libclang-rt-14-dev                    # libFuzzer + sanitizers (request decoder fuzz test)
  openssl                                     # test certificates for the TLS test
  patchelf xz-utils                           # the relocatable bundle (tools/bundle.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts munge/slurm services where it can; Monsoon's tests run their own daemons.

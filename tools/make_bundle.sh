#!/usr/bin/env bash
# Assembles the relocatable bundle (Bazel's //tools:bundle runs this; users run
# tools/bundle.sh). Layout of the archive, all under monsoon/:
#   bin/       monsoon, gpu_bench, cublas_parity_test    (run paths: $ORIGIN/../lib)
#   lib/       every shared library they need but glibc's and CUDA's (run paths: $ORIGIN)
#   bin/python/monsoon/   the monsoon Python package, for worker programs  (run path: lib/)
#   core/compute/cuda/   libmonsoon_cuda.so, the CUDA plugin, where `monsoon` looks for it
#   configs/   the shipped jobs, their Fashion-MNIST paths pointed at data/
#   data/      Fashion-MNIST (Debian's dataset-fashion-mnist)
#   tools/{gpu_check.sh,tensorboard_read.py}, tests/launcher/{gpu_job_test,test_lib}.sh,
#   bench/{gpu_peer,pytorch_cnn_bench}.py (PyTorch on the same GPU), README.md
#   BUNDLE     marks the tree as a bundle
# CUDA's libraries (cuBLAS, the runtime) and the driver come from the GPU machine.
#   make_bundle.sh OUT.tar.xz MAX_BYTES FILE...   (FILEs: the inputs, by their source paths)
set -euo pipefail
out="$1" max_bytes="$2"
shift 2
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
b="$stage/monsoon"
mkdir -p "$b"/{bin,lib,core/compute/cuda,data/fashion-mnist}

for f in "$@"; do
  case "$f" in
    */launcher/monsoon | */bench/gpu_bench | */tests/worker/cublas_parity_test) cp "$f" "$b/bin/" ;;
    */libmonsoon_cuda.so) cp "$f" "$b/core/compute/cuda/" ;;
    python/monsoon/* | */python/monsoon/*) install -D "$f" "$b/bin/python/monsoon/${f##*python/monsoon/}" ;;
    */fashion-mnist/*) cp "$f" "$b/data/fashion-mnist/" ;;
    configs/* | tools/gpu_check.sh | tools/tensorboard_read.py | tests/launcher/*.sh | \
      bench/gpu_peer.py | bench/pytorch_cnn_bench.py | README.md) install -D "$f" "$b/$f" ;;
    *) echo "make_bundle: unexpected input $f" >&2; exit 1 ;;
  esac
done
chmod -R u+w "$b"
# `monsoon sbatch` runs a binary with this file beside its bin/ in place (sbatch.cc).
echo "Monsoon, relocatable (tools/bundle.sh); README.md: Installing without root" >"$b/BUNDLE"
sed -i 's#/usr/share/datasets/fashion-mnist/#../data/fashion-mnist/#' "$b"/configs/*.yaml

# The shared-library closure: what the dynamic linker finds for each binary, but glibc (the
# target's own) and CUDA (the GPU machine's).
system='/(ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil)\.so'
cuda='/(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink)\.so'
package="$b/bin/python/monsoon/_monsoon.so"
for elf in "$b"/bin/* "$b"/core/compute/cuda/*.so "$package"; do
  [ -f "$elf" ] || continue
  missing=$(ldd "$elf" | grep "not found" | grep -Ev "${cuda#/}" || true)
  if [ -n "$missing" ]; then
    echo "make_bundle: $(basename "$elf") needs libraries not found here:" $missing >&2
    exit 1
  fi
done
for elf in "$b"/bin/* "$b"/core/compute/cuda/*.so "$package"; do
  [ -f "$elf" ] || continue
  ldd "$elf" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | grep -Ev "$system|$cuda" || true
done | sort -u | while read -r lib; do
  cp -L "$lib" "$b/lib/"
done
chmod u+w "$b"/lib/*
for elf in "$b"/bin/*; do [ -f "$elf" ] && patchelf --set-rpath '$ORIGIN/../lib' "$elf"; done
patchelf --set-rpath '$ORIGIN/../../../lib' "$package"
for lib in "$b"/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
for plugin in "$b"/core/compute/cuda/*.so; do
  patchelf --set-rpath "\$ORIGIN/../../../lib:$(patchelf --print-rpath "$plugin")" "$plugin"
done

# LZMA2's fastest match finder over a 16 MiB window: the large libraries' repeats are far apart,
# and the data is gzip'd already, which no preset shrinks.
tar -C "$stage" --owner=0 --group=0 -cf - monsoon | xz -T2 --lzma2=preset=1,dict=16MiB >"$out"
bytes=$(stat -c %s "$out")
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "make_bundle: $out is $bytes bytes, over the limit of $max_bytes" >&2
  exit 1
fi

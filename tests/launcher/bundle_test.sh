#!/usr/bin/env bash
# The relocatable bundle (//tools:bundle): under 64 MiB, every program in it asks for no glibc
# newer than Debian 12's 2.36, and unpacked into a clean directory by an unprivileged user it
# runs the default job (one epoch) inside a root that holds nothing but the bundle and glibc:
# no Debian package, -dev or not, on the library path. Its tools/gpu_check.sh gets as far as
# "no usable GPU" here, with nothing else failing, and its GPU parity test loads there. Needs
# root (chroot, bind mounts).
source tests/launcher/test_lib.sh
bundle="$PWD/tools/monsoon-bundle.tar.xz"
bytes=$(stat -L -c %s "$bundle")
[ "$bytes" -lt $((64 << 20)) ] && pass "bundle: $bytes bytes, under 64 MiB" \
  || fail "bundle: $bytes bytes, over 64 MiB"
[ "$(id -u)" -eq 0 ] || { fail "this test needs root (chroot, bind mounts)"; finish; }

# A root with glibc alone; the bundle goes in as user nobody's, unpacked by nobody.
top="$(mktemp -d /tmp/monsoon-bundle-test.XXXXXX)"
trap 'rm -rf "$top"' EXIT
chmod 755 "$top"
r="$top/root"
mkdir -p "$r"/{proc,dev,tmp,lib64,lib/x86_64-linux-gnu,home/user}
cp -L /lib64/ld-linux-x86-64.so.2 "$r/lib64/"
for lib in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$r/lib/x86_64-linux-gnu/"
done
chmod 1777 "$r/tmp"
chown 65534:65534 "$r/home/user"
cp "$bundle" "$top/bundle.tar.xz" && chmod 644 "$top/bundle.tar.xz"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody tar -C "$r/home/user" -xJf "$top/bundle.tar.xz"
expect_eq "unpacked by an unprivileged user" "$?" "0"
b="$r/home/user/monsoon"

newest=$(for f in "$b"/bin/* "$b"/lib/* "$b"/core/compute/cuda/* "$b"/bin/python/monsoon/*.so; do
  objdump -T "$f"; done 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
python3 -c "import sys; v = tuple(map(int, sys.argv[1][6:].split('.'))); sys.exit(v > (2, 36))" \
  "$newest" && pass "newest glibc symbol version asked for: $newest" || fail "needs $newest"

timeout 300 unshare --mount --fork sh -c "mount --bind /proc '$r/proc' && mount --bind /dev '$r/dev' &&
  chroot --userspec=65534:65534 '$r' /home/user/monsoon/bin/monsoon run \
    /home/user/monsoon/configs/fmnist_downpour.yaml --run-dir /home/user/run \
    --set training.epochs=1" >"$WORK/job.txt" 2>&1
expect_eq "the default job in a glibc-only root, as nobody: exit status" "$?" "0"
tail -1 "$WORK/job.txt"
acc=$(json_get "$r/home/user/run/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.8 else 1)" "$acc" \
  && pass "one epoch: test accuracy $acc >= 0.8" || fail "accuracy $acc"

# The bundle's Python package (bin/python, where its monsoon finds it) imports with the
# bundle's libraries: any other Python 3.11 with numpy can run worker programs.
package="$b/bin/python/monsoon/_monsoon.so"
outside=$(ldd "$package" | awk '$2 == "=>" {print $3}' | xargs -r realpath | grep -v "^$b/lib/" |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|libutil)\.so' || true)
expect_eq "the Python package needs no library outside the bundle but glibc's" "$outside" ""
as_nobody env PYTHONPATH="$b/bin/python" /usr/bin/python3 -c "import monsoon; print(monsoon.Error)" \
  >"$WORK/import.txt" 2>&1
expect_eq "import monsoon from the bundle" "$?:$(cat "$WORK/import.txt")" "0:<class 'monsoon.Error'>"

# monsoon sbatch from the bundle runs the bundle's binary where it is (its libraries beside it).
(cd "$r/home/user" && as_nobody monsoon/bin/monsoon sbatch monsoon/configs/fmnist_downpour.yaml \
  --script "$r/home/user/job.sbatch" >/dev/null 2>&1)
expect_eq "sbatch from the bundle runs the bundle's binary" \
  "$(grep '^MONSOON=' "$r/home/user/job.sbatch")" "MONSOON='$b/bin/monsoon'"

# The GPU parity test (gpu_check.sh's first step) loads in the glibc-only root too.
timeout 60 unshare --mount --fork sh -c "mount --bind /proc '$r/proc' &&
  chroot --userspec=65534:65534 '$r' /home/user/monsoon/bin/cublas_parity_test --list-tests" \
  >"$WORK/parity.txt" 2>&1
grep -q "^[0-9]* test cases$" "$WORK/parity.txt" \
  && pass "the GPU parity test loads in a glibc-only root" \
  || fail "the GPU parity test does not load: $(head -3 "$WORK/parity.txt")"

as_nobody env -u LD_LIBRARY_PATH "$b/tools/gpu_check.sh" "$r/home/user/gpu" >"$WORK/gpu.txt" 2>&1
expect_eq "gpu_check.sh from the bundle: exit status without a GPU" "$?" "1"
cat "$WORK/gpu.txt"
grep -q "gpu_check: no usable GPU; nothing was checked" "$WORK/gpu.txt" \
  && pass "gpu_check.sh reaches 'no usable GPU'" || fail "gpu_check.sh did not reach the GPU"
expect_eq "nothing else failed on the way" \
  "$(grep -civE "no usable (GPU|CUDA device)|^cpu: OpenBLAS [a-z0-9]+ kernels$|^$" "$WORK/gpu.txt")" "0"
finish

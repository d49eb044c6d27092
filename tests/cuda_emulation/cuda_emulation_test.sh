#!/usr/bin/env bash
# The CUDA backend without a GPU: its real source, compiled for the host against stand-in CUDA,
# cuBLAS and cuDNN headers (emulator.h) with AddressSanitizer and UBSan, loaded as the CUDA
# plugin by the unchanged GPU parity test (tests/worker/cublas_parity_test), which must pass
#   - under the lazy, eager and random stream schedules, and with cuBLASLt finding no algorithm;
#   - with a cudaMalloc failure injected at each allocation of a CNN model's life in turn;
# and must fail for each single-line mutation of the CUDA code below (rebuilt here with g++).
source tests/launcher/test_lib.sh

parity="$PWD/tests/worker/cublas_parity_test"
mkdir -p "$WORK/plugin"
cp tests/cuda_emulation/libmonsoon_cuda_emulated.so "$WORK/plugin/"
plugin="$WORK/plugin/libmonsoon_cuda_emulated.so"
sanitizers="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"

# with_cudnn PLUGIN: a directory whose libcudnn.so.9 is PLUGIN, which holds the emulated cuDNN
# (stub/cudnn.h): on LD_LIBRARY_PATH, compute.cudnn_path `auto` finds it there, as on a node.
with_cudnn() {
  mkdir -p "$(dirname "$1")/cudnn"
  ln -sf "$1" "$(dirname "$1")/cudnn/libcudnn.so.9"
  echo "$(dirname "$1")/cudnn"
}

# emulated PLUGIN [ENV=VALUE...] -- ARGS...: the parity test on PLUGIN, cuDNN emulated too;
# fails when it skips.
emulated() {
  local with=$1
  shift
  env MONSOON_CUDA_PLUGIN="$with" MONSOON_REQUIRE_GPU=1 MONSOON_REQUIRE_CUDNN=1 \
    LD_LIBRARY_PATH="$(with_cudnn "$with")" ASAN_OPTIONS=detect_leaks=0 \
    LD_PRELOAD="$sanitizers" "$@"
}

for schedule in lazy eager random:1 random:2 random:3; do
  emulated "$plugin" MONSOON_CUDA_EMULATION="$schedule" timeout 300 "$parity" \
    >"$WORK/parity-$schedule.txt" 2>&1
  status=$?  # before the message's $(...) resets it
  expect_eq "the parity test on the emulated device, $schedule schedule ($(tail -2 \
    "$WORK/parity-$schedule.txt" | head -1))" "$status" "0"
done

# Dense layers on the separate kernels, as where cuBLASLt has no algorithm for a shape.
emulated "$plugin" MONSOON_CUDA_EMULATION_LT=none timeout 300 "$parity" >"$WORK/parity-no-lt.txt" 2>&1
status=$?
expect_eq "the parity test without cuBLASLt's algorithms ($(tail -2 "$WORK/parity-no-lt.txt" \
  | head -1))" "$status" "0"

# A failed cudaMalloc at each of the first 60 allocations of two CNN models' lives, the first on
# im2col, the second on cuDNN: reported as the model's error (or past the last allocation, a
# clean run), never a crash.
crashed=""
for n in $(seq 60); do
  emulated "$plugin" MONSOON_CUDA_EMULATION_FAIL_MALLOC="$n" timeout 60 "$parity" "[alloc]" \
    >"$WORK/alloc-$n.txt" 2>&1 || crashed+=" $n"
done
expect_eq "a failed allocation at each of the first 60 is the model's error" "${crashed:- none}" " none"

# The full-size image layer (256 x 64 x 224 x 224, 3x3 conv to 64 filters), forward and
# backward in a dry run, on im2col and on cuDNN: its device memory beyond its eight tensors
# stays within the default compute.gpu_workspace_mib (256 MiB) and the ones vector of one chunk.
emulated "$plugin" MONSOON_CUDA_EMULATION_DRY=1 MONSOON_CUDA_EMULATION_REPORT=1 timeout 120 \
  "$parity" "[workspace]" >"$WORK/workspace.txt" 2>&1
expect_eq "the full-size layer's dry run exits" "$?" "0"
peak=$(sed -n 's/^cuda_emulation: peak device memory \([0-9]*\) bytes$/\1/p' "$WORK/workspace.txt")
tensors=$(( 4 * (4 * 256 * 64 * 224 * 224 + 2 * 64 * 576 + 2 * 64) ))
workspace=$(( ${peak:-0} - tensors ))
bound=$(( (256 << 20) + 4 * 224 * 224 * 256 ))
[ -n "$peak" ] && [ "$workspace" -le "$bound" ] \
  && pass "full-size layer: workspace $((workspace >> 20)) MiB within 256 MiB (peak $((peak >> 20)) MiB)" \
  || fail "full-size layer: peak ${peak:-unknown} bytes, workspace $workspace > $bound"

# Each mutant below is the plugin rebuilt (g++) with OLD replaced by NEW in FILE (once); the
# parity test (lazy schedule, stopped at its first failure) must fail on it. A mutated file
# reaches one object of the plugin (on_host below), so the others are built once, and the
# mutants two at a time.
cuda=core/compute/cuda/cublas_backend.cu
cudnn=core/compute/cuda/cudnn_layers.cu
lt=core/compute/cuda/lt_dense.cu
math=core/compute/conv_math.h
mutants=(
  padding-axis "$math" "* g.stride - g.pad_left + kw" "* g.stride - g.pad_top + kw"
  stride-dropped "$math" "(p % g.out_width) * g.stride" "(p % g.out_width)"
  gemm-transpose "$cuda" "Gemm(false, true, g.filters, g.patch(), m,"
  "Gemm(false, false, g.filters, g.patch(), m,"
  argmax-tie-order "$math" "if (plane[at] > plane[best]) best = at;"
  "if (plane[at] >= plane[best]) best = at;"
  workspace-overlap "$cuda" "float* dcols = dyt + g.filters * columns;" "float* dcols = dyt;"
  grid-one-short "$cuda" "dx + InputOffset(g, first), inputs);"
  "dx + InputOffset(g, first), inputs - 1);"
  event-wait-dropped "$cuda"
  'Check(cudaStreamWaitEvent(compute_, copy_done_, 0), "cudaStreamWaitEvent")' "true"
  pinned-upload-unwaited "$cuda" 'Check(cudaEventSynchronize(copy_done_), "cudaEventSynchronize");' ""
  started-upload-early "$cuda" "if (!CopyAfterCompute() ||" "if ("
  started-upload-unawaited "$cuda" 'Check(cudaStreamWaitEvent(compute_, copy.done, 0), "cudaStreamWaitEvent")'
  "true"
  pinned-download-unscanned "$cuda" "return direct ? FirstNonFinite(absl::MakeConstSpan(host, n))"
  "return direct ? n"
  batchnorm-index "$cuda" "* g.pixels + j % g.pixels;" "* g.pixels;"
  shortcut-dropped "$cuda" "y[i] = a[i] + b[i];" "y[i] = a[i];"
  non-finite-offset "$cuda" "first = offset + bad;" "first = bad;"
  bf16-as-fp32 "$cuda" "return CUBLAS_COMPUTE_32F_FAST_16BF;" "break;"
  graph-not-launched "$cuda" 'return Check(cudaGraphLaunch(graphs_[graph], compute_), "cudaGraphLaunch");'
  "return true;"
  loss-sums-crossed "$cuda" "sum_b[l] += partial[kSumSlices + t + l];" "sum_b[l] += partial[t + l];"
  gather-row-stride core/compute/kernel_math.h "return table[row * cols + i % cols];"
  "return table[row + i % cols];"
  cudnn-pads-crossed "$cudnn" "plan->conv, g.pad_top, g.pad_left, g.stride,"
  "plan->conv, g.pad_left, g.pad_top, g.stride,"
  cudnn-short-input-taken "$cudnn" "g.height + 2 * g.pad_top >= g.kernel &&" ""
  cudnn-bias-dropped "$cudnn" "api_->cudnnAddTensor(handle_, &one, plan->bias, b, &one, plan->y, y)"
  "CUDNN_STATUS_SUCCESS"
  cudnn-workspace-short "$cuda" "return ConvWorkspace((bytes + sizeof(float) - 1) / sizeof(float));"
  "return ConvWorkspace(bytes / 8);"
  cudnn-pool-given-x "$cudnn" "&one, plan->y, y, plan->y, dy," "&one, plan->y, x, plan->y, dy,"
  lt-relu-dropped "$lt" "? CUBLASLT_EPILOGUE_RELU_BIAS" "? CUBLASLT_EPILOGUE_BIAS"
  lt-bias-gradient-of-x "$lt" "batch, true, dy, x, dw, db)" "batch, true, x, dy, dw, db)"
  lt-alignment-assumed "$lt" "trans_b, Alignment(a)," "trans_b, 256u,"
  lt-bias-alignment-assumed "$lt" "Alignment(bias) < 16" "Alignment(bias) < 4"
  lt-fallback-dropped "$cuda" "      ComputeBackend::DenseWeightGradient(g, x, dy, batch, dw, db);" ""
  cudnn-bn-saved-crossed "$cudnn" "running_var, g.epsilon,
                   mean, invstd)," "running_var, g.epsilon,
                   invstd, mean),"
)

# compile ROOT SOURCE OUT: one object of the plugin, from the tree at ROOT.
compile() {
  g++ -std=c++17 -O1 -fPIC -w -I"$1" -I"$1/tests/cuda_emulation/stub" -c "$1/$2" -o "$3"
}
unchanged=()
for source in core/compute/cuda/cuda_plugin.cc tests/cuda_emulation/emulator.cc \
  tests/cuda_emulation/cublaslt_emulator.cc tests/cuda_emulation/cudnn_emulator.cc core/finite.cc; do
  unchanged+=("$WORK/$(basename "$source").o")
  compile "$PWD" "$source" "${unchanged[-1]}" || fail "$source did not build for the mutants"
done
# The object each mutated file reaches (the rest of the CUDA code: cublas_backend_on_host.cc's).
declare -A on_host=([$cudnn]=tests/cuda_emulation/cudnn_layers_on_host.cc
  [$lt]=tests/cuda_emulation/lt_dense_on_host.cc)
backend=tests/cuda_emulation/cublas_backend_on_host.cc
objects=("$backend" "${on_host[@]}")
for source in "${objects[@]}"; do
  compile "$PWD" "$source" "$WORK/$(basename "$source").o" &
done
wait

# build_mutant NAME FILE OLD NEW: $WORK/src-NAME/plugin.so, or why not in $WORK/NAME.build.txt.
build_mutant() {
  local name=$1 file=$2 old=$3 new=$4 src="$WORK/src-$1"
  mkdir -p "$src"
  cp -rL core tests "$src/"  # copies, not the runfiles' links to the sources
  python3 - "$src/$file" "$old" "$new" <<'PY' || { echo "'$old' not found in $file" >"$WORK/$name.build.txt"; return; }
import os, sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(1)
os.remove(path)  # never write through a link
open(path, "w").write(text.replace(old, new))
PY
  local mutated=${on_host[$file]:-$backend} kept=() object
  for object in "${objects[@]}"; do
    [ "$object" = "$mutated" ] || kept+=("$WORK/$(basename "$object").o")
  done
  compile "$src" "$mutated" "$src/mutated.o" 2>"$WORK/$name.build.txt" \
    && g++ -shared "$src/mutated.o" "${kept[@]}" "${unchanged[@]}" \
      $(pkg-config --libs absl_status absl_statusor absl_strings) -o "$src/plugin.so" \
      2>>"$WORK/$name.build.txt"
}
for ((i = 0; i < ${#mutants[@]}; i += 4)); do
  [ "$(jobs -rp | wc -l)" -lt 2 ] || wait -n
  build_mutant "${mutants[@]:i:4}" &
done
wait
for ((i = 0; i < ${#mutants[@]}; i += 4)); do
  name=${mutants[i]}
  if [ ! -f "$WORK/src-$name/plugin.so" ]; then
    fail "$name: the mutated plugin did not build: $(head -3 "$WORK/$name.build.txt")"
  elif env MONSOON_CUDA_PLUGIN="$WORK/src-$name/plugin.so" MONSOON_REQUIRE_GPU=1 \
      LD_LIBRARY_PATH="$(with_cudnn "$WORK/src-$name/plugin.so")" timeout 300 \
      "$parity" --abort >"$WORK/$name.txt" 2>&1; then
    fail "$name: not caught"
  else
    pass "$name: caught ($(grep -m1 -E 'FAILED|VIOLATION|test cases' "$WORK/$name.txt"))"
  fi
done
finish

#!/usr/bin/env bash
# The default Fashion-MNIST job and the CNN job (one epoch) on the GPU (compute.device=cuda):
# >= 0.85 test accuracy each.
# Without a usable GPU it is skipped (a failure under MONSOON_REQUIRE_GPU=1).
source tests/launcher/test_lib.sh

"$MONSOON" devices >"$WORK/devices.txt" 2>&1 || skip_gpu "no GPU ($(cat "$WORK/devices.txt"))"
cat "$WORK/devices.txt"
timeout 240 "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/gpu" \
  --set compute.device=cuda >"$WORK/out.txt" 2>&1
expect_eq "GPU job exit status" "$?" "0"
tail -2 "$WORK/out.txt"
grep -q "parameters, on cuda:" "$WORK/gpu/logs/worker-0.log" && pass "worker 0 ran on CUDA" \
  || fail "worker 0 ran on: $(grep "parameters, on" "$WORK/gpu/logs/worker-0.log")"
acc=$(json_get "$WORK/gpu/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$acc" \
  && pass "GPU accuracy $acc >= 0.85" || fail "GPU accuracy $acc < 0.85"

# The CNN job (convolution, pooling) on the GPU, one epoch.
timeout 240 "$MONSOON" run configs/fmnist_cnn.yaml --run-dir "$WORK/gpu-cnn" \
  --set compute.device=cuda --set training.epochs=1 >"$WORK/cnn.txt" 2>&1
expect_eq "GPU CNN job exit status" "$?" "0"
tail -1 "$WORK/cnn.txt"
acc=$(json_get "$WORK/gpu-cnn/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$acc" \
  && pass "GPU CNN accuracy $acc >= 0.85" || fail "GPU CNN accuracy $acc < 0.85"
finish

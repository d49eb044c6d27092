#!/usr/bin/env bash
# The shipped CNN job (configs/fmnist_cnn.yaml) shortened to one epoch: it trains on real
# processes with its convolution and pooling layers on the CPU backend and passes 0.85 test
# accuracy (the full 10 epochs reach 0.92 in about 4 minutes on 2 cores: bench/RESULTS.md).
source tests/launcher/test_lib.sh

timeout 300 "$MONSOON" run configs/fmnist_cnn.yaml --run-dir "$WORK/cnn" \
  --set training.epochs=1 >"$WORK/out.txt" 2>&1
expect_eq "one epoch of the CNN job: exit status" "$?" "0"
tail -1 "$WORK/out.txt"
acc=$(json_get "$WORK/cnn/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$acc" \
  && pass "one epoch: test accuracy $acc >= 0.85" || fail "one epoch: accuracy $acc < 0.85"
expect_eq "parameters (conv 320 + 18,496, dense 401,536 + 1,290)" \
  "$(json_get "$WORK/cnn/summary.json" num_parameters)" "421642"
"$MONSOON" export --run-dir "$WORK/cnn" && tests/launcher/torch_reload.py "$WORK/cnn" cnn
expect_eq "export, then the weights reloaded into PyTorch's same network" "$?" "0"
finish

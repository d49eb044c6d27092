#!/usr/bin/env bash
# The shipped CNN job (configs/fmnist_cnn.yaml) shortened to one epoch: it trains on real
# processes with its convolution and pooling layers on the CPU backend and passes 0.85 test
# accuracy (the full 10 epochs reach 0.92 in about 4 minutes on 2 cores: bench/RESULTS.md).
# A batchnorm CNN holds its running statistics on the servers under downpour, sync and easgd:
# the evaluator's accuracy is that of the exported weights and statistics reloaded into PyTorch
# (on the test set's first 2,000 rows, where PyTorch takes a tenth of its time on 10,000).
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

fmnist=/usr/share/datasets/fashion-mnist
cat >"$WORK/bn.yaml" <<EOF
job: bn_cnn
seed: 1
cluster: {servers: 2, workers: 2, evaluator: true}
model:
  layers:
    - conv2d: {filters: 16, kernel: 3, padding: same}
    - batchnorm
    - relu
    - maxpool2d: {size: 2}
    - conv2d: {filters: 32, kernel: 3, stride: 2, padding: same}
    - batchnorm: {momentum: 0.05}
    - relu
    - flatten
    - dense: {units: 64}
    - batchnorm
    - relu
    - dense: {units: 10}
data:
  format: idx
  train_images: $fmnist/train-images-idx3-ubyte.gz
  train_labels: $fmnist/train-labels-idx1-ubyte.gz
  test_images: $fmnist/t10k-images-idx3-ubyte.gz
  test_labels: $fmnist/t10k-labels-idx1-ubyte.gz
training: {algorithm: downpour, epochs: 1, batch_size: 64, timeout_seconds: 300}
optimizer: {type: momentum, learning_rate: 0.02, momentum: 0.9}
easgd: {learning_rate: 0.05}
EOF
mapfile -t test_2k < <(test_subset 2000)
for algorithm in downpour sync easgd; do
  timeout 300 "$MONSOON" run "$WORK/bn.yaml" --run-dir "$WORK/bn-$algorithm" \
    --set training.algorithm=$algorithm "${test_2k[@]}" >"$WORK/bn-$algorithm.txt" 2>&1
  expect_eq "batchnorm CNN, $algorithm: exit status" "$?" "0"
  acc=$(json_get "$WORK/bn-$algorithm/summary.json" final_test_accuracy)
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.8 else 1)" "$acc" \
    && pass "batchnorm CNN, $algorithm: test accuracy $acc >= 0.8" \
    || fail "batchnorm CNN, $algorithm: accuracy $acc < 0.8"
  "$MONSOON" export --run-dir "$WORK/bn-$algorithm" >/dev/null \
    && tests/launcher/torch_reload.py "$WORK/bn-$algorithm" layers
  expect_eq "batchnorm CNN, $algorithm: the evaluator's accuracy is the exported model's" "$?" "0"
done
finish

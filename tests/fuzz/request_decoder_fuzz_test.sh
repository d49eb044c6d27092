#!/usr/bin/env bash
# Builds tests/fuzz/request_decoder_fuzzer.cc with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer (outside Bazel's GCC toolchain, against the same Debian gRPC,
# protobuf and Abseil), seeds it with well-formed requests, and fuzzes for
# MONSOON_FUZZ_SECONDS (default 20). Fails on any crash, sanitizer report or leak.
set -uo pipefail
work="${TEST_TMPDIR:-$(mktemp -d)}"
seconds="${MONSOON_FUZZ_SECONDS:-20}"
proto_dir="$(dirname "$(find . -name monsoon.pb.cc | head -1)")"
if ! command -v clang++ >/dev/null; then
  echo "FAIL: clang++ is missing (tools/install_deps.sh installs clang and libclang-rt-14-dev)"
  exit 1
fi
# compiler-rt's builtins archive supplies clang 14's half-float conversions.
# shellcheck disable=SC2046
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I. -I"$proto_dir" -Wno-deprecated-declarations \
  tests/fuzz/request_decoder_fuzzer.cc server/push_decoder.cc proto/frame.cc \
  core/compression.cc core/sharding_plan.cc "$proto_dir/monsoon.pb.cc" \
  $(pkg-config --cflags --libs grpc++ protobuf absl_status absl_statusor absl_str_format) \
  "$(clang++ -print-libgcc-file-name --rtlib=compiler-rt)" \
  -o "$work/fuzzer" 2>"$work/build.log" || {
  cat "$work/build.log"
  echo "FAIL: the fuzzer did not build"
  exit 1
}
echo "built the fuzzer ($(wc -c <"$work/fuzzer") bytes)"
# Seeds: one well-formed frame per request type, written by the seed generator mode below.
mkdir -p "$work/corpus"
python3 - "$work/corpus" <<'PY'
import struct, sys
out = sys.argv[1]
def varint(v):
    b = b""
    while True:
        x = v & 0x7f; v >>= 7
        b += bytes([x | (0x80 if v else 0)])
        if not v: return b
def field(num, v): return varint(num << 3) + varint(v)
def frame(header, payload=b""): return struct.pack("<I", len(header)) + header + payload
seeds = {
  "push_f32": frame(field(1, 0) + field(2, 0) + field(3, 4) + field(9, 1), struct.pack("<4f", 1, 2, 3, 4)),
  "push_f16": frame(field(1, 0) + field(3, 4) + field(6, 1) + field(9, 1), b"\x00\x3c" * 4),
  "push_sparse": frame(field(1, 0) + field(3, 8) + field(6, 2) + field(7, 1) + field(9, 1), struct.pack("<If", 3, 0.5)),
  "pull": frame(field(1, 2) + field(2, 5)),
  "hello": frame(field(1, 1) + field(2, 0) + field(3, 12345)),
  "exchange": frame(field(1, 0) + field(3, 2) + field(7, 1), struct.pack("<2f", 1, 2)),
}
for name, data in seeds.items():
    open(f"{out}/{name}", "wb").write(data)
PY
"$work/fuzzer" "$work/corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
  -print_final_stats=1 >"$work/fuzz.log" 2>&1
status=$?
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$work/fuzz.log"
if [ "$status" -ne 0 ]; then
  tail -40 "$work/fuzz.log"
  echo "FAIL: the fuzzer found a crash (exit $status)"
  exit 1
fi
runs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$work/fuzz.log" | grep -oE "[0-9]+$")
echo "SCORECARD fuzz: ${runs:-0} malformed request bodies decoded in ${seconds}s, no crash, no sanitizer report"
echo "all checks passed"

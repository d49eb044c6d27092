#!/usr/bin/env bash
# Builds the relocatable bundle: Monsoon with every shared library it needs but glibc and
# CUDA, the shipped jobs and Fashion-MNIST, and the GPU checks, for any x86-64 Linux with
# glibc 2.36 (Debian 12's) or newer, unpacked anywhere by any user (README: "Installing on a
# cluster"). Writes OUT_DIR/monsoon-COMMIT.tar.xz (default OUT_DIR: runs/bundle).
#   tools/bundle.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-$root/runs/bundle}" && cd "${1:-$root/runs/bundle}" && pwd)"
cd "$root"
tools/install_deps.sh >&2
bazel build --noshow_progress //tools:bundle >&2
name="monsoon-$(git rev-parse --short HEAD 2>/dev/null || echo local).tar.xz"
cp -f bazel-bin/tools/monsoon-bundle.tar.xz "$out/$name"
chmod u+w "$out/$name"
echo "$out/$name ($(du -h "$out/$name" | cut -f1))"

#!/usr/bin/env bash
# On a lent GPU machine (the device tool's `run`, with carry [".gpu"]):
# unpacks the bundle benchmarks/gpu/bundle.sh made into /tmp/nf-site and
# runs benchmarks/gpu/run.py with the arguments given, its results in $OUT.
#   device run: bash benchmarks/gpu/device.sh [run.py's arguments]
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p /tmp/nf-site
[ -f /tmp/nf-site/numfuse/__init__.py ] || xz -dc .gpu/numfuse-cp312.tar.xz | tar xf - -C /tmp/nf-site || exit 1
export PYTHONPATH=/tmp/nf-site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 benchmarks/gpu/run.py --out "${OUT:-benchmarks/results}" "$@"

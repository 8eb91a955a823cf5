#!/usr/bin/env bash
# Wheels for an offline GPU node (no package index there): every package of this checkout's
# .venv that the node's image lacks, for the node's Python, into DIR (default .whl, which
# git ignores through .git/info/exclude). Then, on the node: scripts/gpu_session.sh.
#
#   scripts/gpu_wheels.sh [DIR]          # PY_VERSION=3.12 (the node's Python), PROVIDED=...
#
# PROVIDED: packages the node's image has (space-separated, pip names); the default is the
# CUDA image lent here (Python 3.12 with numpy, cupy, matplotlib, pandas, xarray, pytest, ...).
# DaCe has no wheel on PyPI: one is built from its sdist (pure Python).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup_env.sh
DIR="${1:-.whl}"
PY_VERSION="${PY_VERSION:-3.12}"
PROVIDED="${PROVIDED:-numpy sympy networkx pyyaml jinja2 markupsafe packaging attrs click tabulate toolz
    typing-extensions xxhash nanobind ninja cmake pybind11 setuptools wheel mypy-extensions pathspec six
    xarray pandas matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing python-dateutil pytest
    pytest-xdist execnet iniconfig pluggy pygments filelock ml-dtypes mpmath certifi tzdata}"
mkdir -p "$DIR"
case "$DIR" in  # a folder inside the checkout stays out of git (it travels to the node untracked)
    /*) ;;
    *) grep -qx "/$DIR/" .git/info/exclude 2>/dev/null || echo "/$DIR/" >>.git/info/exclude ;;
esac
normalized() { tr 'A-Z_.' 'a-z--'; }
provided=" $(echo $PROVIDED | normalized) "
platforms=()
for tag in 2_28 2_27 2_24 2_17 2014 1; do
    case $tag in 2014|1) platforms+=(--platform "manylinux${tag}_x86_64") ;; *) platforms+=(--platform "manylinux_${tag}_x86_64") ;; esac
done
failed=()
while IFS='=' read -r name _ version; do
    key="$(echo "$name" | normalized)"
    case "$provided" in *" $key "*) continue ;; esac
    [ "$key" = orchestra ] && continue
    if [ "$key" = dace ]; then
        python -m pip wheel --quiet --no-deps "dace==$version" -w "$DIR" || failed+=("$name")
        continue
    fi
    python -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
        --implementation cp "${platforms[@]}" -d "$DIR" "$name==$version" || failed+=("$name")
done < <(python -m pip freeze --exclude-editable | grep '==' | sed 's/==/=x=/')
du -sh "$DIR"
if [ ${#failed[@]} -gt 0 ]; then
    echo "[gpu_wheels] no wheel for: ${failed[*]}" >&2
    exit 1
fi

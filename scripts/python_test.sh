#!/usr/bin/env bash
# The Python package's tests: a venv in build/venv (numpy, pytest), the package installed from
# python/ over build/lib/libmagicube.so (no second CMake build), then pytest. Run after
# scripts/build.sh. Exit status: pytest's, except 5 (no tests collected) which is reported.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pytest wheel "setuptools>=64" 2>&1 | grep -v -i warning || true
MAGICUBE_PREBUILT_LIBRARY="$PWD/build/lib/libmagicube.so" \
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./python 2>&1 \
  | grep -v -i warning || true
"$venv/bin/python" -c "import magicube, sys; print('python: magicube', magicube.__version__, 'from', magicube.library_path())"
status=0
MAGICUBE_CLI="$PWD/build/bin/magicube" "$venv/bin/pytest" -q -rs -p no:cacheprovider python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "python: pytest collected no tests"
  status=0
fi
exit "$status"

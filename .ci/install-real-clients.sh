#!/usr/bin/env bash
# Installs the real Kafka clients that the conformance tests (cli/tests/real_clients.rs,
# check_client.rs, served_history.rs) and `groupsim check-client` drive against `groupsim serve`:
# a Python venv with kafka-python, confluent-kafka and aiokafka from PyPI, and kafkajs from npm
# into clients/node.
#
# Usage: install-real-clients.sh [python] [node]   (both when neither is named)
#
# The tests run it themselves on first use, one runtime at a time under a lock
# (cli/tests/common/real_clients.rs); run it by hand before `groupsim check-client`. Idempotent:
# a second run with everything in place at the pinned versions only checks them and returns.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/real-clients/venv
PY_PACKAGES=("kafka-python==3.0.12" "confluent-kafka==2.16.1" "aiokafka==0.14.0")

fail() {
  echo "install-real-clients: $*" >&2
  exit 1
}

install_python() {
  command -v python3 >/dev/null 2>&1 || fail "python3 is not installed"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "== python3 -m venv $VENV"
    python3 -m venv "$VENV" || fail "python3 -m venv $VENV failed (on Debian/Ubuntu: apt install python3-venv)"
  fi
  local installed missing=()
  installed=$("$VENV/bin/python" -m pip freeze 2>/dev/null || true)
  for pkg in "${PY_PACKAGES[@]}"; do
    grep -qixF "$pkg" <<<"$installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "== pip install ${missing[*]}"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}" ||
      fail "pip install ${missing[*]} failed"
  fi
  "$VENV/bin/python" -c 'import kafka, confluent_kafka, aiokafka; print("python clients:", kafka.__version__, confluent_kafka.__version__, aiokafka.__version__)' ||
    fail "the python clients do not import from $VENV"
}

install_node() {
  command -v node >/dev/null 2>&1 || fail "node is not installed"
  local want have
  want=$(node -p 'require("./clients/node/package-lock.json").packages["node_modules/kafkajs"].version') ||
    fail "cannot read kafkajs's version from clients/node/package-lock.json"
  have=$(node -p 'require("./clients/node/node_modules/kafkajs/package.json").version' 2>/dev/null || true)
  if [ "$have" != "$want" ]; then
    command -v npm >/dev/null 2>&1 || fail "npm is not installed"
    echo "== npm ci (clients/node: kafkajs $want)"
    npm ci --prefix clients/node --no-audit --no-fund --loglevel=error || fail "npm ci in clients/node failed"
  fi
  node -e 'console.log("kafkajs:", require("./clients/node/node_modules/kafkajs/package.json").version)' ||
    fail "kafkajs is not in clients/node/node_modules"
}

runtimes=("$@")
[ "${#runtimes[@]}" -gt 0 ] || runtimes=(python node)
for runtime in "${runtimes[@]}"; do
  case "$runtime" in
    python) install_python ;;
    node) install_node ;;
    *) fail "unknown runtime '$runtime' (expected python or node)" ;;
  esac
done

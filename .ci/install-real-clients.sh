#!/usr/bin/env bash
# Installs the real Kafka clients the conformance tests (sim/tests/real_clients.rs) drive
# against `groupsim serve`: a Python venv with kafka-python, confluent-kafka and aiokafka from
# PyPI, and kafkajs from npm into clients/node. Idempotent: a second run with everything in place
# only checks the versions and returns.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/real-clients/venv
PY_PACKAGES=("kafka-python==3.0.12" "confluent-kafka==2.16.1" "aiokafka==0.14.0")

if ! command -v python3 >/dev/null 2>&1; then
  echo "install-real-clients: python3 is not installed" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  python3 -m venv "$VENV"
fi
installed=$("$VENV/bin/python" -m pip freeze 2>/dev/null || true)
missing=()
for pkg in "${PY_PACKAGES[@]}"; do
  grep -qixF "$pkg" <<<"$installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== pip install ${missing[*]}"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
fi
"$VENV/bin/python" -c 'import kafka, confluent_kafka, aiokafka; print("python clients:", kafka.__version__, confluent_kafka.version()[0], aiokafka.__version__)'

if ! command -v npm >/dev/null 2>&1; then
  echo "install-real-clients: npm is not installed" >&2
  exit 1
fi
if [ ! -f clients/node/node_modules/kafkajs/package.json ]; then
  echo "== npm ci (clients/node)"
  (cd clients/node && npm ci --no-audit --no-fund --loglevel=error)
fi
node -e 'console.log("kafkajs:", require("./clients/node/node_modules/kafkajs/package.json").version)'

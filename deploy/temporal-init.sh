#!/bin/sh
# Registers the namespace (with its retention) and Tether's six search
# attributes. Safe to re-run: existing ones are left alone (retention is
# updated to TEMPORAL_RETENTION).
set -eu

NS="${TEMPORAL_NAMESPACE:-default}"
RETENTION="${TEMPORAL_RETENTION:-7d}"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-temporal:7233}"

until temporal operator cluster health >/dev/null 2>&1; do
  echo "waiting for Temporal at ${TEMPORAL_ADDRESS} …"
  sleep 2
done

if temporal operator namespace describe --namespace "$NS" >/dev/null 2>&1; then
  temporal operator namespace update --namespace "$NS" --retention "$RETENTION"
else
  temporal operator namespace create --namespace "$NS" --retention "$RETENTION"
fi

# Names and types are Tether's contract (DESIGN.md, src/server/search-attributes.ts).
for pair in TetherState=Keyword TetherEmergencyStop=Bool TetherConsecutiveErrors=Int \
            TetherCostUsd=Double TetherSteps=Int TetherModel=Keyword; do
  name="${pair%%=*}"
  type="${pair#*=}"
  out=$(temporal operator search-attribute create --namespace "$NS" --name "$name" --type "$type" 2>&1) \
    || echo "$out" | grep -qi "already exists" \
    || { echo "$out"; exit 1; }
done
echo "namespace $NS ready (retention $RETENTION) with Tether's search attributes"

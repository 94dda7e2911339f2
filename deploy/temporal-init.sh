#!/bin/sh
# Registers the namespace (with its retention) and Tether's search
# attributes. Safe to re-run: existing ones are left alone (retention is
# updated to TEMPORAL_RETENTION). docker-compose.yml runs it in the
# admin-tools image; `tether cluster up` runs it with the Temporal CLI on PATH.
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

# A new namespace reaches every node's cache within seconds: until then
# "namespace not found" is worth another try.
add_attribute() {
  tries=0
  until out=$(temporal operator search-attribute create --namespace "$NS" --name "$1" --type "$2" 2>&1); do
    echo "$out" | grep -qi "already exists" && return 0
    tries=$((tries + 1))
    if [ "$tries" -ge 30 ] || ! echo "$out" | grep -qi "not found"; then
      echo "$out"
      return 1
    fi
    sleep 1
  done
}

# Names and types are Tether's contract (DESIGN.md, src/server/search-attributes.ts).
for pair in TetherState=Keyword TetherEmergencyStop=Bool TetherConsecutiveErrors=Int \
            TetherCostUsd=Double TetherSteps=Int TetherModel=Keyword TetherForkOf=Keyword; do
  add_attribute "${pair%%=*}" "${pair#*=}"
done
echo "namespace $NS ready (retention $RETENTION) with Tether's search attributes"

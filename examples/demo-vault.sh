#!/bin/sh
# The vault of the demo (`npm start`): on first use, a development vault (development master key in the data
# folder) holding the demo credentials of examples/tools.yaml, each bound to the demo target on 127.0.0.1:8790.
# A vault that exists is left as it is. The value comes from ONCEGATE_DEMO_CREDENTIAL (the demo target accepts
# any); it is read from the environment, never from the command line. It prints nothing unless a step fails (then
# that step's output): the first line of `npm start` is the gateway's summary.
set -eu
oncegate() { node bin/oncegate.mjs "$@" --config examples/oncegate.yaml; }
quietly() {
  if ! said=$("$@" 2>&1); then
    printf '%s\n' "$said" >&2
    exit 1
  fi
}

if oncegate vault status --json | grep -q '"initialized": false'; then
  quietly oncegate vault init --dev
  ONCEGATE_DEMO_CREDENTIAL="${ONCEGATE_DEMO_CREDENTIAL:-demo-credential-not-secret}"
  export ONCEGATE_DEMO_CREDENTIAL
  for ref in demo-config-writer demo-payments demo-admin; do
    quietly oncegate vault set "$ref" --kind bearer --bind 127.0.0.1:8790 --from-env ONCEGATE_DEMO_CREDENTIAL
  done
fi

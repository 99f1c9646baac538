#!/usr/bin/env bash
# Create one isolated venv per peer under bench/peers/.envs/ (their pins conflict), idempotently.
# Usage: bench/peers/envs.sh [NAME...]   (default: all). A failed install is reported, not fatal:
# the orchestrator reports that peer as "not installed" and runs the rest.
set -u
cd "$(dirname "$0")/../.."
UV=.venv/bin/uv
ENVS=bench/peers/.envs
PYTHON=${PEERS_PYTHON:-python3}
declare -A SPECS=(
  [orchestrator]="numpy pyarrow==20.0.0 matplotlib"
  [pyiceberg]="numpy pyiceberg[sql-sqlite]==0.12.0 pyarrow==20.0.0"
  [deltalake]="numpy deltalake==1.6.6 pyarrow>=21"
  [ducklake]="numpy duckdb==1.4.4 duckdb-ext-ducklake==1.4.4.20260205 pyarrow==20.0.0"
  [paimon]="numpy pypaimon==2.1.0 pypaimon-rust==0.4.0 pyarrow<20"
)
names=("$@"); [ ${#names[@]} -eq 0 ] && names=(orchestrator pyiceberg deltalake ducklake paimon)
mkdir -p "$ENVS"
for n in "${names[@]}"; do
  spec=${SPECS[$n]}
  stamp="$ENVS/$n/.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ]; then continue; fi
  rm -rf "${ENVS:?}/$n" "$ENVS/$n.failed"
  echo "peers: creating $ENVS/$n ($spec)" >&2
  if $UV venv -q --python "$PYTHON" "$ENVS/$n" && $UV pip install -q --python "$ENVS/$n/bin/python" $spec; then
    echo "$spec" > "$stamp"
  else
    echo "peers: could not install $n ($spec)" >&2
    echo "$spec" > "$ENVS/$n.failed"
  fi
done
exit 0

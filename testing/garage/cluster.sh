#!/usr/bin/env bash
# A three-node Garage cluster on loopback (replication factor 3), the
# object store strata's replica tests run against.
#
#   cluster.sh start DIR     start it in DIR (configs, data, logs, pids); writes DIR/env
#                            (STRATA_S3_ENDPOINTS, _KEY_ID, _SECRET, _BUCKET, _REGION)
#   cluster.sh stop DIR      stop every node
#   cluster.sh kill DIR N    SIGKILL node N (1..3)
#   cluster.sh restart DIR N start node N again and reconnect it
#
# Needs `garage` 2.x on PATH (or GARAGE=/path/to/garage):
#   cargo install garage --version 2.5.0 --locked --no-default-features --features bundled-libs,sqlite
# Ports: GARAGE_PORT_BASE (default: a random base in 20000..40000), six from it.
set -euo pipefail

GARAGE=${GARAGE:-garage}
cmd=${1:?usage: cluster.sh start|stop|kill|restart DIR [N]}
dir=${2:?usage: cluster.sh start|stop|kill|restart DIR [N]}
region=garage
bucket=strata-test
# Fixed test credentials (a Garage key id is GK + 12 hex bytes).
key_id=GK0123456789abcdef01234567
secret=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef

node_cfg() { echo "$dir/n$1.toml"; }
g() { "$GARAGE" -c "$(node_cfg "$1")" "${@:2}"; }

start_node() {
    local n=$1
    # Started directly (not through `g`), so that the pid is garage's own.
    "$GARAGE" -c "$(node_cfg "$n")" server >> "$dir/n$n.log" 2>&1 &
    echo $! > "$dir/n$n.pid"
}

wait_for_id() {
    local n=$1
    for _ in $(seq 1 100); do
        if id=$(g "$n" node id -q 2>/dev/null) && [ -n "$id" ]; then
            echo "$id"
            return 0
        fi
        sleep 0.1
    done
    echo "garage node $n did not start: see $dir/n$n.log" >&2
    return 1
}

# Until every node sees all three connected and every partition whole.
wait_healthy() {
    for _ in $(seq 1 300); do
        local all=yes
        for n in 1 2 3; do
            g "$n" json-api GetClusterHealth 2>/dev/null | tr -d ' \n' | grep -q '"status":"healthy"' || all=no
        done
        [ "$all" = yes ] && return 0
        sleep 0.1
    done
    echo "the garage cluster in $dir did not become healthy (see $dir/n*.log)" >&2
    return 1
}

case "$cmd" in
start)
    command -v "$GARAGE" > /dev/null || { echo "no garage binary ($GARAGE): see the comment at the top of $0" >&2; exit 2; }
    mkdir -p "$dir"
    base=${GARAGE_PORT_BASE:-$((20000 + RANDOM % 20000))}
    rpc_secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
    endpoints=()
    for n in 1 2 3; do
        s3=$((base + 2 * (n - 1)))
        rpc=$((s3 + 1))
        mkdir -p "$dir/n$n"
        cat > "$(node_cfg "$n")" <<TOML
metadata_dir = "$dir/n$n/meta"
data_dir = "$dir/n$n/data"
db_engine = "sqlite"
replication_factor = 3
consistency_mode = "consistent"
rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$rpc_secret"
rpc_timeout_msec = 5000

[s3_api]
api_bind_addr = "127.0.0.1:$s3"
s3_region = "$region"
TOML
        endpoints+=("http://127.0.0.1:$s3")
        start_node "$n"
    done
    ids=()
    for n in 1 2 3; do
        ids+=("$(wait_for_id "$n")")
    done
    g 1 node connect "${ids[1]}" > /dev/null
    g 1 node connect "${ids[2]}" > /dev/null
    g 2 node connect "${ids[2]}" > /dev/null
    g 1 layout assign -z dc1 -c 1G "${ids[0]%@*}" "${ids[1]%@*}" "${ids[2]%@*}" > /dev/null
    g 1 layout apply --version 1 > /dev/null
    wait_healthy
    g 1 key import "$key_id" "$secret" -n strata --yes > /dev/null
    g 1 bucket create "$bucket" > /dev/null
    g 1 bucket allow --read --write --owner "$bucket" --key strata > /dev/null
    cat > "$dir/env" <<ENV
STRATA_S3_ENDPOINTS=$(IFS=,; echo "${endpoints[*]}")
STRATA_S3_KEY_ID=$key_id
STRATA_S3_SECRET=$secret
STRATA_S3_BUCKET=$bucket
STRATA_S3_REGION=$region
ENV
    echo "garage: three nodes in $dir, S3 at ${endpoints[*]}, bucket $bucket"
    ;;
stop)
    for n in 1 2 3; do
        if [ -f "$dir/n$n.pid" ]; then
            pid=$(cat "$dir/n$n.pid")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -9 "$pid" 2>/dev/null || true
            rm -f "$dir/n$n.pid"
        fi
    done
    ;;
kill)
    n=${3:?which node}
    kill -9 "$(cat "$dir/n$n.pid")"
    ;;
restart)
    n=${3:?which node}
    start_node "$n"
    id=$(wait_for_id "$n")
    for m in 1 2 3; do
        [ "$m" = "$n" ] && continue
        g "$m" node connect "$id" > /dev/null 2>&1 || true
    done
    wait_healthy
    ;;
*)
    echo "usage: cluster.sh start|stop|kill|restart DIR [N]" >&2
    exit 2
    ;;
esac

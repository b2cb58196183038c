#!/usr/bin/env bash
# Checks the three-node Garage cluster of cluster.sh with a standard S3
# client (curl's SigV4): a put, gets from another node, a ranged get, a
# node killed (reads and writes go on: quorum 2 of 3), the node restarted
# and reading what was written while it was down; then stops the cluster.
#
#   testing/garage/smoke.sh [DIR]      (default: a new temporary folder)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(mktemp -d)}
"$here/cluster.sh" start "$dir"
trap '"$here/cluster.sh" stop "$dir"' EXIT
# shellcheck disable=SC1091
. "$dir/env"
IFS=, read -r e1 e2 _ <<< "$STRATA_S3_ENDPOINTS"
s3() {
    curl -sS --fail-with-body --aws-sigv4 "aws:amz:$STRATA_S3_REGION:s3" \
        --user "$STRATA_S3_KEY_ID:$STRATA_S3_SECRET" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}
expect() {
    if [ "$1" != "$2" ]; then
        echo "garage smoke: $3: got '$1', expected '$2'" >&2
        exit 1
    fi
}
printf 'strata smoke object' > "$dir/object"
s3 -T "$dir/object" "$e1/$STRATA_S3_BUCKET/smoke/one" > /dev/null
expect "$(s3 "$e2/$STRATA_S3_BUCKET/smoke/one")" "strata smoke object" "a get from another node"
expect "$(s3 -r 7-11 "$e2/$STRATA_S3_BUCKET/smoke/one")" "smoke" "a ranged get"
"$here/cluster.sh" kill "$dir" 1
expect "$(s3 "$e2/$STRATA_S3_BUCKET/smoke/one")" "strata smoke object" "a get with node 1 killed"
s3 -T "$dir/object" "$e2/$STRATA_S3_BUCKET/smoke/two" > /dev/null
"$here/cluster.sh" restart "$dir" 1
expect "$(s3 "$e1/$STRATA_S3_BUCKET/smoke/two")" "strata smoke object" "node 1 after its restart"
echo "garage smoke: put, gets, ranged get, a node killed and restarted: ok ($dir)"

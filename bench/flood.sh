#!/usr/bin/env bash
# bench/flood.sh: issue 13's memory-bound proof (see bench/README.md). For
# each maxmemory-policy, a fresh Turnstile with --maxmemory gets a flood of
# distinct random keys (CL.THROTTLE with a 1-day period, and SET of large
# values) while bench/cmd/flood measures RSS, a probe client's latency and
# what the flood costs a set of hot, limited clients ("forgiven" requests).
#
#   bench/flood.sh                            # 8 policies x 10^7 keys, 100mb
#   QUICK=1 bench/flood.sh                    # a check: 20mb, 3x10^5 keys, 2 policies
#   KEYS=1000000 POLICIES=allkeys-lfu,volatile-ttl bench/flood.sh
#
# Writes bench/MEMORY.md and bench/memory.svg (QUICK=1: bench/out/MEMORY-quick.md
# and bench/out/memory-quick.svg, so a check does not replace the published
# run), bench/out/flood.csv (one row per policy) and bench/out/flood-series.csv
# (RSS over time). bench/cmd/report appends MEMORY.md to RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
# The command a reader can run again: the settings given in the environment.
cmdline="bench/flood.sh"
for v in SERVER_ARGS RATE HOT SET_EX VALUE_SIZE SET_SHARE TIME_CAP POLICIES MAXMEMORY KEYS QUICK; do
	if [[ -v $v ]]; then cmdline="$v=${!v@Q} $cmdline"; fi
done
QUICK=${QUICK:-0}
if ((QUICK == 1)); then
	KEYS=${KEYS:-300000}
	MAXMEMORY=${MAXMEMORY:-20mb}
	POLICIES=${POLICIES:-noeviction,allkeys-lru}
	TIME_CAP=${TIME_CAP:-60}
	REPORT=${REPORT:-bench/out/MEMORY-quick.md}
	SVG=${SVG:-bench/out/memory-quick.svg}
fi
KEYS=${KEYS:-10000000}       # distinct flood keys per policy
MAXMEMORY=${MAXMEMORY:-100mb} # --maxmemory of every server
POLICIES=${POLICIES:-noeviction,allkeys-lru,allkeys-lfu,allkeys-random,volatile-lru,volatile-lfu,volatile-random,volatile-ttl}
TIME_CAP=${TIME_CAP:-240}    # seconds one policy's flood may take at most
SET_SHARE=${SET_SHARE:-0.05} # share of the flood that is SET big:<id> <VALUE_SIZE bytes>
VALUE_SIZE=${VALUE_SIZE:-4096}
SET_EX=${SET_EX:-0}          # EX of those SETs (0: none; volatile policies cannot evict them)
HOT=${HOT:-100}              # hot limited clients
RATE=${RATE:-0}              # flood keys/s (0: as fast as the server answers)
SERVER_ARGS=${SERVER_ARGS:-} # more server flags, e.g. "--maxmemory-samples 10"
REPORT=${REPORT:-bench/MEMORY.md}
SVG=${SVG:-bench/memory.svg}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in KEYS TIME_CAP VALUE_SIZE HOT; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
for v in SET_EX RATE; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer"; done
[[ $SET_SHARE =~ ^(0|1|0?\.[0-9]+)$ ]] || die "SET_SHARE must be a fraction within 0..1"

mkdir -p "$OUT"
log "building bench/out/turnstile and bench/out/flood"
go build -o "$OUT/turnstile" ./cmd/turnstile
go build -o "$OUT/flood" ./bench/cmd/flood

rc=0
"$OUT/flood" -bin "$OUT/turnstile" -policies "$POLICIES" -maxmemory "$MAXMEMORY" -keys "$KEYS" \
	-set-share "$SET_SHARE" -value-size "$VALUE_SIZE" -set-ex "$SET_EX" -hot "$HOT" -rate "$RATE" \
	-time-cap "${TIME_CAP}s" -server-args "$SERVER_ARGS" -logdir "$OUT" \
	-csv "$OUT/flood.csv" -series "$OUT/flood-series.csv" -md "$ROOT/$REPORT" -svg "$ROOT/$SVG" \
	-command "$cmdline" || rc=$?
log "wrote $REPORT, $SVG, bench/out/flood.csv and bench/out/flood-series.csv (exit status $rc)"
exit "$rc"

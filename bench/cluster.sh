#!/usr/bin/env bash
# bench/cluster.sh: issue 12's performance target, side by side in one run
# (see bench/README.md). redis-benchmark -c 50, 100,000 random keys, to
#   c    a 3-node Turnstile cluster (Raft, every write committed on two
#        nodes' disks before its reply): CL.THROTTLE sent to the leader
#   cf   the same cluster, CL.THROTTLE sent to a follower (forwarded)
#   t    one Turnstile alone, no persistence: CL.THROTTLE
#   r    one redis-server, no persistence: a GCRA Lua script via EVALSHA
#        (bench/lua/gcra.lua), the unreplicated setup the cluster replaces
# at -P 16 (throughput) and -P 1 (latency p50/p99).
#
#   bench/cluster.sh                      # ROUNDS=3
#   ROUNDS=1 N=100000 bench/cluster.sh    # a quick check
#
# Nothing is pinned by default: the three nodes stand for three machines,
# and Redis runs its commands on one thread whatever it is given. Each
# node runs with GOMAXPROCS=NODE_PROCS (default 1: three nodes share the
# machine's CPUs, as three one-core machines would; with the Go default
# each node keeps as many threads spinning as there are CPUs). PIN=1
# puts every server on CPU 0 (the three nodes then share the one core
# Redis gets) and the clients on CPU 1. Order rotates each round. Medians
# over ROUNDS; writes bench/CLUSTER.md and bench/out/cluster.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
ROUNDS=${ROUNDS:-3}
N=${N:-300000} # requests per run at -P 16 (a tenth at -P 1)
TMO=${TMO:-300}
PIN=${PIN:-0}
NODE_PROCS=${NODE_PROCS:-1}
REPORT=${REPORT:-bench/CLUSTER.md}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in ROUNDS N TMO NODE_PROCS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }

mkdir -p "$OUT"
go build -o "$OUT/turnstile" ./cmd/turnstile
if ((PIN == 1 && $(nproc) >= 2)); then SRV=(taskset -c 0); CLI=(taskset -c 1); PIN="servers on CPU 0, clients on CPU 1"
else SRV=(); CLI=(); PIN="none"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ping() { for _ in $(seq 100); do redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done; die "port $1 did not answer"; }
PIDS=()
DATA=$(mktemp -d)
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DATA"' EXIT

declare -A PORT
PORT[r]=$(free_port)
"${SRV[@]}" redis-server --port "${PORT[r]}" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/cl-r.log" 2>&1 &
PIDS+=($!)
PORT[t]=$(free_port)
"${SRV[@]}" "$OUT/turnstile" --port "${PORT[t]}" --save '' --appendonly no >"$OUT/cl-t.log" 2>&1 &
PIDS+=($!)
declare -a CP
for i in 1 2 3; do
	CP[i]=$(free_port)
	rp=$(free_port)
	mkdir -p "$DATA/n$i"
	flags=(--port "${CP[i]}" --node-id "n$i" --raft-addr "127.0.0.1:$rp" --dir "$DATA/n$i")
	if ((i == 1)); then flags+=(--bootstrap); else flags+=(--join "127.0.0.1:${CP[1]}"); fi
	GOMAXPROCS=$NODE_PROCS "${SRV[@]}" "$OUT/turnstile" "${flags[@]}" >"$OUT/cl-n$i.log" 2>&1 &
	PIDS+=($!)
	wait_ping "${CP[i]}"
	if ((i == 1)); then sleep 1; fi # n1 elects itself before the others join
done
wait_ping "${PORT[r]}"
wait_ping "${PORT[t]}"
for _ in $(seq 100); do
	[[ $(redis-cli -p "${CP[1]}" info replication | tr -d '\r' | awk -F: '/^raft_num_nodes/ {print $2}') == 3 ]] && break
	sleep 0.1
done
PORT[c]=${CP[1]} PORT[cf]=${CP[2]}
redis-cli -p "${PORT[c]}" info replication | grep -q '^role:master' || die "n1 is not the leader"
GCRA_SHA=$(redis-cli -p "${PORT[r]}" SCRIPT LOAD "$(cat bench/lua/gcra.lua)")
log "pinning: $PIN; cluster leader :${PORT[c]}, follower :${PORT[cf]}, turnstile :${PORT[t]}, redis :${PORT[r]}"

cmd_for() { # the command line each target runs
	case $1 in
	r) echo "EVALSHA $GCRA_SHA 1 key:__rand_int__ 100 10 60" ;;
	*) echo "CL.THROTTLE key:__rand_int__ 100 10 60" ;;
	esac
}

CSV=$OUT/cluster.csv
echo "pipeline,server,round,rps,p50,p99" >"$CSV"
for round in $(seq "$ROUNDS"); do
	order=(c cf t r)
	for ((i = 0; i < (round - 1) % 4; i++)); do order=("${order[@]:1}" "${order[0]}"); done
	for P in 16 1; do
		n=$N; ((P == 1)) && n=$((N / 10))
		for s in "${order[@]}"; do
			log "round $round: -P $P on $s"
			# shellcheck disable=SC2046
			line=$(timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$s]}" -c 50 -P "$P" -r 100000 -n "$n" --csv \
				$(cmd_for "$s") 2>/dev/null | awk -F'","' 'NR == 2 { print $2 "," $5 "," $7 }') || line=failed,,
			echo "$P,$s,$round,${line//\"/}" >>"$CSV"
		done
	done
done

{
	echo "# Replication: a 3-node cluster next to one Redis (bench/cluster.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), Redis $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'), pinning: $PIN."
	echo "Command: \`ROUNDS=$ROUNDS N=$N bench/cluster.sh\` (PIN=1 pins); cluster nodes run with GOMAXPROCS=$NODE_PROCS. redis-benchmark -c 50 -r 100000; requests per second and latency"
	echo "(ms); medians of $ROUNDS rounds, order rotating; ratios are medians of the per-round ratios to Redis (range in brackets)."
	echo "c: 3-node cluster, CL.THROTTLE to the leader (replicated, fsynced on a majority); cf: the same through a follower;"
	echo "t: one Turnstile without persistence; r: one Redis without persistence running a GCRA Lua script via EVALSHA."
	echo
	python3 - "$CSV" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
vals, rounds = {}, {}
for r in rows:
    try: v = (float(r["rps"]), float(r["p50"]), float(r["p99"]))
    except ValueError: continue
    vals.setdefault((r["pipeline"], r["server"]), []).append(v)
    rounds.setdefault((r["pipeline"], r["round"]), {})[r["server"]] = v[0]
def ratio(p, s):
    rs = sorted(sv[s] / sv["r"] for (pp, _), sv in rounds.items() if pp == p and sv.get("r") and s in sv)
    return f"{statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})" if rs else "missing"
def med(k, i, fmt):
    return fmt.format(statistics.median(v[i] for v in vals[k])) if k in vals else "failed"
names = {"c": "cluster, leader", "cf": "cluster, via follower", "t": "Turnstile alone", "r": "Redis + Lua GCRA"}
print("| -P | target | requests/s | p50 ms | p99 ms | vs Redis |")
print("|---:|---|---:|---:|---:|---:|")
for p in ("16", "1"):
    for s in ("c", "cf", "t", "r"):
        print(f"| {p} | {names[s]} | {med((p, s), 0, '{:,.0f}')} | {med((p, s), 1, '{:.2f}')} | {med((p, s), 2, '{:.2f}')} | {ratio(p, s) if s != 'r' else '1'} |")
PY
} >"$ROOT/$REPORT"
log "wrote $REPORT"
cat "$ROOT/$REPORT"

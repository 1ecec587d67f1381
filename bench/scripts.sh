#!/usr/bin/env bash
# bench/scripts.sh: the scripting targets of issue 11, side by side in one
# run (see bench/README.md): limiter scripts sent with EVALSHA by
# redis-benchmark (-c 50, -P 16 and -P 1, 100,000 random keys) to
#   tl  Turnstile running every script in Lua (--turnstile-native-scripts no)
#   tn  Turnstile running known scripts natively (the default)
#   r   a private redis-server
# Scripts: the seed lessons' token bucket (seed 000 §6) and redis_rate v10's
# allowN (GCRA), their exact texts from libtest/testdata.
#
# Then a script against the same commands sent in MULTI (issue 11's "no
# more than 2x"): bench/cmd/txload sends, -c 50 -P 16, either EVALSHA of
# the seed script or MULTI, HMGET, HSET, PEXPIRE, EXEC (its three
# commands), to tl (where the script runs in Lua, as one that is not
# fingerprinted does) and to r.
#
#   bench/scripts.sh                      # ROUNDS=3
#   ROUNDS=1 N=100000 bench/scripts.sh    # a quick check
#
# Servers share CPU 0, clients run on CPU 1 (taskset), order rotating each
# round. Medians over ROUNDS; writes bench/SCRIPTS.md and bench/out/scripts.csv.
#
# Besides requests per second, each run records the server's CPU time
# (utime + stime of its process, fields 14 and 15 of /proc/PID/stat, read
# right before and after the run). One redis-benchmark on one CPU caps the
# throughput near the rate at which it can send PING_MBULK (measured on
# Turnstile each round): once a server is faster than its client, CPU time
# per request is what shows its own cost. PORT_BASE=n puts the servers on
# ports n, n+1 and n+2 instead of free ones.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
ROUNDS=${ROUNDS:-3}
N=${N:-300000}   # requests per redis-benchmark run at -P 16 (a tenth at -P 1)
TMO=${TMO:-300}  # seconds any one client run may take
REPORT=${REPORT:-bench/SCRIPTS.md}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in ROUNDS N TMO; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
[[ -z ${PORT_BASE:-} || $PORT_BASE =~ ^[1-9][0-9]*$ ]] || die "PORT_BASE must be a port number"
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }

mkdir -p "$OUT"
go build -o "$OUT/turnstile" ./cmd/turnstile
go build -o "$OUT/txload" ./bench/cmd/txload
if (($(nproc) >= 2)); then SRV=(taskset -c 0); CLI=(taskset -c 1); PIN="servers on CPU 0, clients on CPU 1"
else SRV=(); CLI=(); PIN="none (one CPU)"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PID PORT
NEXT_PORT=${PORT_BASE:-}
start() { # start NAME
	local p
	if [[ -n $NEXT_PORT ]]; then p=$NEXT_PORT NEXT_PORT=$((NEXT_PORT + 1)); else p=$(free_port); fi
	case $1 in
	tl) "${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no --turnstile-native-scripts no >"$OUT/sc-$1.log" 2>&1 & ;;
	tn) "${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/sc-$1.log" 2>&1 & ;;
	r) "${SRV[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/sc-$1.log" 2>&1 & ;;
	esac
	PID[$1]=$! PORT[$1]=$p # taskset execs the server: the same process
	for _ in $(seq 100); do redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	die "$1 did not start"
}
stop() { kill "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; }
trap 'for n in "${!PID[@]}"; do stop "$n"; done' EXIT

# shellcheck source=bench/cpu.sh
. bench/cpu.sh
cpu_of() { cpu_ns "${PID[$1]}"; }

# bench NAME P REQUESTS ARGS...: one redis-benchmark run on server NAME;
# prints requests per second, requests, and the server's CPU ns during
# the run (CSV fields).
bench() {
	local s=$1 P=$2 n=$3 before after v
	shift 3
	before=$(cpu_of "$s")
	v=$(timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$s]}" -c 50 -P "$P" -r 100000 -n "$n" --csv "$@" 2>/dev/null |
		awk -F'","' 'NR == 2 { print $2 }') || v=failed
	after=$(cpu_of "$s")
	echo "${v:-failed},$n,$((after - before))"
}

# txbench NAME N TX: one txload run of N transactions TX on server NAME;
# prints transactions per second, transactions, and the server's CPU ns
# during the run (CSV fields).
txbench() {
	local s=$1 n=$2 tx=$3 before after v
	before=$(cpu_of "$s")
	v=$(timeout "$TMO" "${CLI[@]}" "$OUT/txload" -addr "127.0.0.1:${PORT[$s]}" -c 50 -P 16 -keys 100000 -n "$n" \
		-prefix "tx:$s:" -tx "$tx" 2>>"$OUT/sc-txload.log") || v=failed
	after=$(cpu_of "$s")
	echo "${v:-failed},$n,$((after - before))"
}

# name|script file|arguments after the key
TESTS=(
	"seed_token_bucket|libtest/testdata/seed000-token-bucket.lua|10 20 1000 1"
	"redis_rate_allowN|libtest/testdata/scripts/redis_rate-allowN.lua|100 10 1 1"
)

CSV=$OUT/scripts.csv
echo "test,pipeline,server,round,value,requests,cpu_ns" >"$CSV"
for s in tl tn r; do start "$s"; done
log "pinning: $PIN; tl :${PORT[tl]}, tn :${PORT[tn]}, r :${PORT[r]}"
declare -A SHA
for t in "${TESTS[@]}"; do
	IFS='|' read -r name file _ <<<"$t"
	for s in tl tn r; do
		sha=$(redis-cli -p "${PORT[$s]}" -x script load <"$file")
		[[ -z ${SHA[$name]:-} || ${SHA[$name]} == "$sha" ]] || die "$name: SHA1 differs between servers"
		SHA[$name]=$sha
	done
done

for round in $(seq "$ROUNDS"); do
	order=(tl tn r)
	for ((i = 0; i < (round - 1) % 3; i++)); do order=("${order[@]:1}" "${order[0]}"); done
	for t in "${TESTS[@]}"; do
		IFS='|' read -r name _ args <<<"$t"
		for P in 16 1; do
			n=$N; ((P == 1)) && n=$((N / 10))
			for s in "${order[@]}"; do
				log "round $round: $name -P $P on $s"
				# shellcheck disable=SC2086
				echo "$name,$P,$s,$round,$(bench "$s" "$P" "$n" EVALSHA "${SHA[$name]}" 1 "rl:$name:__rand_int__" $args)" >>"$CSV"
			done
		done
	done
	seed=${SHA[seed_token_bucket]}
	for s in tl r; do # a script against its commands in MULTI
		for mode in script multi; do
			if [[ $mode == script ]]; then tx="EVALSHA $seed 1 {k} 10 20 1000 1"
			else tx="MULTI|HMGET {k} tokens ts|HSET {k} tokens 19 ts 1000|PEXPIRE {k} 3000|EXEC"; fi
			log "round $round: $mode transactions on $s"
			echo "tx_$mode,16,$s,$round,$(txbench "$s" "$N" "$tx")" >>"$CSV"
		done
	done
	for P in 16 1; do # the client's ceiling: the cheapest command it can send
		n=$N; ((P == 1)) && n=$((N / 10))
		log "round $round: PING_MBULK -P $P on tn"
		echo "ping_mbulk,$P,tn,$round,$(bench tn "$P" "$n" -t ping_mbulk)" >>"$CSV"
	done
done

{
	echo "# Scripts: Turnstile next to Redis (bench/scripts.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), Redis $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'), pinning: $PIN."
	echo "Command: \`ROUNDS=$ROUNDS N=$N bench/scripts.sh\`. EVALSHA requests, redis-benchmark -c 50 -r 100000;"
	echo "medians of $ROUNDS rounds, order rotating; ratios are medians of the per-round ratios (range in brackets)."
	echo
	python3 - "$CSV" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
rps, cpu, rps_round, cpu_round = {}, {}, {}, {}
for r in rows:
    try: v = float(r["value"])
    except ValueError: continue
    key, rnd = (r["test"], r["pipeline"], r["server"]), (r["test"], r["pipeline"], r["round"])
    us = float(r["cpu_ns"]) / 1e3 / float(r["requests"])  # server CPU microseconds per request
    rps.setdefault(key, []).append(v)
    cpu.setdefault(key, []).append(us)
    rps_round.setdefault(rnd, {})[r["server"]] = v
    cpu_round.setdefault(rnd, {})[r["server"]] = us

def spread(rs):
    rs = sorted(rs)
    return f"{statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})" if rs else "missing"

def per_round(table, t, p, num, den):
    return spread(sv[num] / sv[den] for (tt, pp, _), sv in table.items()
                  if tt == t and pp == p and sv.get(num) and sv.get(den))

med_rps = lambda k: f"{statistics.median(rps[k]):,.0f}" if k in rps else "failed"
med_cpu = lambda k: f"{statistics.median(cpu[k]):.2f}" if k in cpu else "failed"
scripts = [tp for tp in dict.fromkeys((t, p) for (t, p, _) in rps) if tp[0] != "ping_mbulk" and not tp[0].startswith("tx_")]

print("Throughput, requests per second:")
print()
print("| script | -P | Turnstile, Lua | Turnstile, native | Redis | Lua / Redis | native / Redis |")
print("|---|---:|---:|---:|---:|---:|---:|")
for (t, p) in scripts:
    print(f"| {t} | {p} | {med_rps((t, p, 'tl'))} | {med_rps((t, p, 'tn'))} | {med_rps((t, p, 'r'))} "
          f"| {per_round(rps_round, t, p, 'tl', 'r')} | {per_round(rps_round, t, p, 'tn', 'r')} |")
print()
ceiling = {p: med_rps(("ping_mbulk", p, "tn")) for p in ("16", "1")}
print("The client, one redis-benchmark process on one CPU, caps the throughput near the rate at which it")
print("can send the cheapest command, PING_MBULK (on Turnstile in the same rounds: "
      f"{ceiling['16']}/s at -P 16, {ceiling['1']}/s at -P 1).")
print("A server near that ceiling waits for its client, and the throughput ratio understates how much")
print("less work it does per request; its CPU time per request does not.")
print()
print("Server CPU time per request, microseconds (the CPU time of the server's threads, bench/cpu.sh:")
print("/proc/PID/task/*/schedstat in ns, read right before and after each run), and how many times less CPU per")
print("request Turnstile spends than Redis (Redis's CPU per request over Turnstile's, per round):")
print()
print("| script | -P | Turnstile, Lua | Turnstile, native | Redis | Redis / Lua | Redis / native |")
print("|---|---:|---:|---:|---:|---:|---:|")
for (t, p) in scripts:
    print(f"| {t} | {p} | {med_cpu((t, p, 'tl'))} | {med_cpu((t, p, 'tn'))} | {med_cpu((t, p, 'r'))} "
          f"| {per_round(cpu_round, t, p, 'r', 'tl')} | {per_round(cpu_round, t, p, 'r', 'tn')} |")
for p in ("16", "1"):
    print(f"| PING_MBULK (the client's ceiling) | {p} | | {med_cpu(('ping_mbulk', p, 'tn'))} | | | |")

# A script against the same commands in MULTI, per server: the per-round
# ratio of the script's CPU (or time) per transaction to MULTI's.
tx = {}
for (t, p, rnd), sv in cpu_round.items():
    if t.startswith("tx_"):
        for s, v in sv.items():
            tx.setdefault((s, rnd), {})[t] = (v, rps_round[(t, p, rnd)][s])
def tx_ratio(s, i):
    return spread(m["tx_script"][i] / m["tx_multi"][i] if i == 0 else m["tx_multi"][i] / m["tx_script"][i]
                  for (ss, _), m in tx.items() if ss == s and len(m) == 2)
print()
print("A script against the same three commands sent in MULTI/EXEC (bench/cmd/txload, -c 50 -P 16, 100,000")
print("keys; the seed script, run in Lua on Turnstile as a script that is not fingerprinted is): server CPU per")
print("transaction in microseconds, transactions per second, and the script's cost over MULTI's (per round):")
print()
print("| server | script, CPU | MULTI, CPU | script / MULTI, CPU | script, tx/s | MULTI, tx/s | script / MULTI, time |")
print("|---|---:|---:|---:|---:|---:|---:|")
for s, name in (("tl", "Turnstile"), ("r", "Redis")):
    print(f"| {name} | {med_cpu(('tx_script', '16', s))} | {med_cpu(('tx_multi', '16', s))} | {tx_ratio(s, 0)} "
          f"| {med_rps(('tx_script', '16', s))} | {med_rps(('tx_multi', '16', s))} | {tx_ratio(s, 1)} |")
PY
} >"$ROOT/$REPORT"
log "wrote $REPORT"
